"""Where the engine's partition tasks run: in this process, or on a Dask cluster.

A partition task takes the level's shared data (the counting problem, and for the posting
strategy its posting lists) and one partition's arguments, and returns the partial
minimum support of the users it touched: (user codes, supports). Partitions share no
key, so the engine combines them with an element-wise minimum in any order — the result
is the same, bit for bit, wherever the tasks ran (DESIGN.md section 6).

The Dask runner scatters the shared data to every worker once per level, submits one
future per partition and folds results in as they complete; no dataframe shuffle. On
several workers the engine gives it shards instead (engine/shards.py): each worker
receives only the part of the level its partitions read, and runs those partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prudence_cli.errors import PrudenceError

Task = Callable[..., Any]
# (data shared by a group of tasks, each task's arguments)
Shards = Iterable[tuple[Any, Iterable[tuple[Any, ...]]]]


class LocalRunner:
    """Runs every task here, one after the other (each kernel uses the engine's threads)."""

    name = "local"
    workers = 1

    def __init__(self, shards: int = 1) -> None:
        self.shards = shards  # more than 1: the engine cuts levels into shards (tests)

    def run(self, task: Task, shared: Any, arguments: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        for args in arguments:
            yield task(shared, *args)

    def share(self, data: Any) -> Any:
        """`data` as `run` takes it for several runs (here: itself)."""
        return data

    def run_sharded(self, task: Task, shards: Shards) -> Iterator[Any]:
        for shared, arguments in shards:
            yield from self.run(task, shared, arguments)

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"backend": "local"}


class DaskRunner:
    """Runs tasks as dask.distributed futures on `scheduler`, or on a LocalCluster of
    `workers` single-threaded worker processes when no address is given."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int = 2) -> None:
        try:
            import dask
            from distributed import Client, LocalCluster
        except ImportError:
            raise PrudenceError(
                "engine backend dask needs the dask extra: pip install 'prudence-cli[dask]' "
                "(or pip install 'dask[distributed]')"
            ) from None
        self.cluster = None
        try:
            if scheduler:
                # dask's own setting, e.g. DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=60s
                timeout = dask.config.get("distributed.comm.timeouts.connect")
                self.client = Client(scheduler, timeout=timeout)
            else:
                self.cluster = LocalCluster(
                    n_workers=max(workers, 1),
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",  # any free port: runs never collide
                )
                self.client = Client(self.cluster)
        except OSError as exc:
            where = scheduler or "a LocalCluster"
            raise PrudenceError(f"cannot reach the Dask scheduler {where}: {exc}") from None
        info = self.client.scheduler_info()
        self.addresses = sorted(info.get("workers", {}))
        self.workers = len(self.addresses)
        self.shards = self.workers  # a shard of each level per worker
        self.scheduler = scheduler or "LocalCluster"

    def run(self, task: Task, shared: Any, arguments: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        """Each task on some worker, `shared` sent to every worker once (not again when
        it is already there: `share`)."""
        from distributed import Future

        handle = shared if isinstance(shared, Future) else self.share(shared)
        futures = [self.client.submit(task, handle, *args, pure=False) for args in arguments]
        return _gathered(futures, [handle])

    def share(self, data: Any) -> Any:
        """`data` sent to every worker once, for several runs."""
        (handle,) = self.client.scatter([data], broadcast=True, hash=False)
        return handle

    def run_sharded(self, task: Task, shards: Shards) -> Iterator[Any]:
        """Each shard's data sent to one worker (in turn) and its tasks run there, where
        the data is: no worker holds another's shard. One shard is built at a time here,
        and dropped once sent."""
        futures: list[Any] = []
        handles: list[Any] = []
        for k, (shared, arguments) in enumerate(shards):
            where = [self.addresses[k % len(self.addresses)]] if self.addresses else None
            handle = self.client.scatter(shared, workers=where, hash=False)
            del shared
            handles.append(handle)
            futures.extend(
                self.client.submit(
                    task, handle, *args, pure=False, workers=where, allow_other_workers=False
                )
                for args in arguments
            )
        return _gathered(futures, handles)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "dask",
            "scheduler": self.scheduler,
            "workers": self.workers,
            "sharded": self.shards > 1,
        }


def _gathered(futures: list[Any], handles: list[Any]) -> Iterator[Any]:
    """The futures' results as they complete, each released once read; whatever is not
    done is cancelled if the caller stops early, and the data they shared let go."""
    from distributed import as_completed

    try:
        for future in as_completed(futures):
            yield future.result()
            future.release()
    finally:
        for future in futures:
            future.cancel()
        handles.clear()
