"""Connecting to a Dask scheduler for the Dask runner (engine/runner.py): what answers at
the address is asked first, then the client waits for a worker and checks that every
worker runs this Prudence — each failure a PrudenceError saying what to do (exit 2)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from prudence_cli.errors import PrudenceError

# how long a scheduler that accepts the connection may take to answer as one, and how
# long to wait for a first worker
ANSWER_SECONDS = 10.0
WORKER_SECONDS = 30.0


async def _identity(address: str, seconds: float) -> str:
    """What answers at `address`: "Scheduler" for a Dask scheduler."""
    from distributed.comm import connect
    from distributed.security import Security

    # TLS as Dask's configuration sets it (distributed.comm.tls.*), as the client's
    comm = await connect(address, timeout=seconds, **Security().get_connection_args("client"))
    try:
        await comm.write({"op": "identity", "reply": True})
        reply = await comm.read()
    finally:
        await comm.close()
    return str(reply.get("type", "")) if isinstance(reply, dict) else ""


def connected(address: str, timeout: object) -> Any:
    """A client of the Dask scheduler at `address`, with a worker, running this version
    of Prudence; PrudenceError saying what to do otherwise (exit code 2)."""
    import asyncio

    import dask.utils
    from distributed import Client

    from prudence_cli import __version__

    seconds = dask.utils.parse_timedelta(str(timeout), default="s") or 30.0
    where = f"the Dask scheduler {address}"
    try:  # asked first, on its own: a client would wait forever on what is not a scheduler
        kind = asyncio.run(asyncio.wait_for(_identity(address, seconds), seconds + ANSWER_SECONDS))
    except (TimeoutError, asyncio.TimeoutError):
        raise PrudenceError(
            f"{where} accepted the connection but did not answer as a Dask scheduler within "
            f"{seconds + ANSWER_SECONDS:.0f} s: give the scheduler's own address (tcp://HOST:8786 "
            "by default), not its dashboard's (port 8787)"
        ) from None
    except OSError as error:
        raise PrudenceError(
            f"cannot reach {where}: {error}; check that it runs and that this machine reaches "
            "it (one still starting: wait longer with DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT"
            "=60s)"
        ) from None
    except (ValueError, TypeError) as error:
        if "ssl_context" in str(error):  # a tls:// or wss:// address, and no TLS set
            raise PrudenceError(
                f"{address} is reached over TLS, and Dask's configuration gives no TLS "
                "certificate: set distributed.comm.tls.ca-file, .client.cert and .client.key "
                "(e.g. DASK_DISTRIBUTED__COMM__TLS__CA_FILE=ca.pem, "
                "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT=..., "
                "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY=...)"
            ) from None
        raise PrudenceError(
            f"{address!r} is not the address of a Dask scheduler ({error}): give "
            "tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786"
        ) from None
    if kind != "Scheduler":
        raise PrudenceError(
            f"{address} is a Dask {kind}, not a scheduler: give the scheduler's address "
            "(tcp://HOST:8786 by default)"
        )
    client = Client(address, timeout=timeout)
    try:
        client.wait_for_workers(1, timeout=WORKER_SECONDS)
    except (OSError, TimeoutError):
        client.close()
        raise PrudenceError(
            f"{where} has no worker (none joined within {WORKER_SECONDS:.0f} s): start "
            f"workers with `dask worker {address} --nworkers 1 --nthreads 1`"
        ) from None

    def version() -> str:  # sent by value: a worker without Prudence answers too
        try:
            from prudence_cli import __version__ as theirs
        except ImportError:
            return "none"
        return str(theirs)

    versions = client.run(version)
    other = {worker: v for worker, v in versions.items() if v != __version__}
    if other:
        client.close()
        shown = ", ".join(f"{w} has {v}" for w, v in sorted(other.items()))
        raise PrudenceError(
            f"the workers of {where} run another Prudence than this one ({__version__}): "
            f"{shown}; install the same version on every machine"
        )
    return client


def smallest_limit(client: Any) -> int:
    """The smallest memory limit of the workers (Dask's, bytes; 0: some have none), of
    those scheduler_info describes (some versions of distributed cap them at five)."""
    limits = [w.get("memory_limit") or 0 for w in client.scheduler_info()["workers"].values()]
    return min(limits) if limits and min(limits) > 0 else 0


def cluster_failure(error: BaseException, scheduler: str) -> PrudenceError | None:
    """What a failure of the cluster of `scheduler` during a run means for the user (exit
    code 2); None for anything else."""
    import asyncio
    from concurrent.futures import CancelledError

    from distributed.comm import CommClosedError
    from distributed.scheduler import KilledWorker

    where = f"the Dask scheduler {scheduler}"
    if isinstance(error, (CancelledError, KilledWorker, CommClosedError)):
        return PrudenceError(
            f"a worker of {where} was lost during the run (stopped, or restarted by Dask "
            f"past 95 % of its memory limit: {error}); nothing was written. Run again with "
            "more memory per worker (dask worker --memory-limit), more workers, or a "
            "smaller engine.memory"
        )
    if isinstance(error, (TimeoutError, asyncio.TimeoutError)):  # 3.10: two classes
        return PrudenceError(
            f"{where} stopped answering during the run ({error}); nothing "
            "was written: check the scheduler and its workers, then run again"
        )
    return None


def sent_to(client: Any, value: Any, workers: list[str] | None) -> Any:
    """A future of `value` scattered to `workers` (None: wherever Dask puts it);
    CancelledError (a lost worker: `cluster_failure`) when one of them has left the
    cluster (stopped, or restarted by Dask past its memory limit, with another address),
    of which the scheduler says no more than a KeyError of its address."""
    from concurrent.futures import CancelledError

    try:
        # in a list: Dask would scatter a dict's values one by one, by its keys
        (future,) = client.scatter([value], workers=workers, hash=False)
    except KeyError as exc:
        gone = set(workers or ()) - set(client.nthreads())
        if gone:
            raise CancelledError(f"the worker {sorted(gone)[0]} left") from exc
        raise
    return future


class Watcher:
    """The workers a client's run has pinned tasks to (`workers`), watched by a thread
    (`watch_workers`, started with the first): a task pinned to a worker that left would
    wait for it forever, and so would every task using its result. Once one has left,
    what waits raises CancelledError, which DaskRunner.explained tells."""

    def __init__(self, client: Any, seconds: float) -> None:
        self.client, self.seconds = client, seconds
        self.workers: set[str] = set()
        self.stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, worker: str) -> None:
        """`worker` watched from now on (until the run unpins: DaskRunner.unpin)."""
        self.workers.add(worker)
        if self._thread is None:
            watching = (self.client, self.workers, self.stopped, self.seconds)
            self._thread = threading.Thread(
                target=watch_workers, args=watching, name="prudence-watch", daemon=True
            )
            self._thread.start()

    @contextlib.contextmanager
    def during(self, workers: Iterable[str]) -> Iterator[None]:
        """`workers` watched while the block runs, not after it: a later worker leaving
        stops nothing of this run (those already watched stay so)."""
        added = [w for w in workers if w not in self.workers]
        for worker in added:
            self.watch(worker)
        try:
            yield
        finally:
            self.workers.difference_update(added)


def watch_workers(client: Any, watched: set[str], stopped: threading.Event, seconds: float) -> None:
    """A thread's loop, every `seconds` until `stopped`: whether a worker of `watched` (a
    run's tasks are pinned to it: Watcher) has left. Once one has, `watched` is emptied
    (a next run watches afresh) and every future of `client` cancelled, saying which
    worker left: what waits for one raises CancelledError."""
    while not stopped.wait(seconds):
        try:
            gone = watched - set(client.nthreads())
        except Exception:  # noqa: BLE001 - the scheduler slow to answer, or gone
            if client.status in ("closing", "closed"):
                return  # the run has ended
            continue  # asked again next time: a run that waits is still watched
        if gone:
            watched.clear()
            reason = f"the worker {sorted(gone)[0]} left, with this run's files on its disk"
            _cancel_all(client, reason)


def _cancel_all(client: Any, reason: str) -> None:
    """Every future of `client` cancelled, for `reason`."""
    from distributed import Future

    with contextlib.suppress(Exception):  # a client closing meanwhile: nothing waits
        keys = list(client.futures)
        client.cancel([Future(key, client) for key in keys], reason=reason)
