"""Running a run's tasks on the Dask workers that hold its files: each task pinned to its
worker, a few in flight at a time, and the run stopped as soon as such a worker leaves
(its files went with it; a task pinned there would wait for it forever)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError
from typing import Any


def pinned(client: Any, worker: str, task: Callable[..., Any], *args: Any) -> Any:
    """`task(*args)` run on `worker` only: the one that holds the run's files it reads
    (`windowed` stops the run when that worker is gone)."""
    return client.submit(task, *args, pure=False, workers=[worker], allow_other_workers=False)


def windowed(
    client: Any, ranges: Iterable[int], submit: Callable[[int], Any], needed: set[str]
) -> Iterator[Any]:
    """The results of `submit(k)` for each of `ranges`, as they complete, with at most
    `in_flight` submitted and not yet read at once (each released once read). Raises
    CancelledError (a lost worker, for the user) when one of the `needed` workers is
    gone: the tasks are pinned to the workers that hold the run's files on their disks,
    and would wait for it forever."""
    from distributed import wait

    following = iter(ranges)
    running = {submit(k) for k in itertools.islice(following, in_flight(len(client.nthreads())))}
    while running:
        try:
            done, _ = wait(list(running), timeout=WATCH_SECONDS, return_when="FIRST_COMPLETED")
        except (TimeoutError, asyncio.TimeoutError):  # nothing done yet (3.10: not the same)
            still_there(client, needed)
            continue
        for future in done:
            running.discard(future)
            try:
                result = future.result()
            except BaseException:
                # its traceback holds this frame, and Dask keeps the error (with it) while
                # the future is held: the run's futures are let go of here
                for held in (future, *running):
                    held.release()
                raise
            future.release()
            running.update(submit(k) for k in itertools.islice(following, 1))
            yield result


def still_there(client: Any, workers: set[str]) -> None:
    """CancelledError when one of `workers` has left the cluster (stopped, or restarted
    by Dask past its memory limit, with another address): its files went with it."""
    gone = workers - set(client.nthreads())  # every worker (scheduler_info: only 5, at times)
    if gone:
        raise CancelledError(
            f"the worker {sorted(gone)[0]} left, and with it the files of this run on its disk"
        )


# how often a run whose tasks are pinned to workers checks that they are still there
WATCH_SECONDS = 2.0


def in_flight(workers: int) -> int:
    """Ranges worked on at once: two per worker, so that a worker loads the pieces of
    its next range while it selects one."""
    return 2 * max(workers, 1)
