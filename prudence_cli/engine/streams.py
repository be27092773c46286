"""Dask futures as a stream: a window of tasks in flight, each result released once
read, and whatever is left cancelled when the reader stops (engine/runner.py)."""

from __future__ import annotations

import contextlib
import itertools
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any


@contextlib.contextmanager
def arrays_as_arguments() -> Iterator[None]:
    """A task's own arrays (a partition's start positions, a chunk of drawn queries) go
    with it, as its arguments, once: Dask's advice on large task graphs ("Sending large
    graph ... Consider loading the data with Dask directly") is for data several tasks
    read, which `share` and `run_sharded` scatter; it would only puzzle the user."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        yield


# tasks submitted and not yet read, per worker thread, when `run` streams its arguments:
# one running, the next ready to start
IN_FLIGHT = 2


def streamed(
    submit: Callable[[tuple[Any, ...]], Any],
    arguments: Iterable[tuple[Any, ...]],
    window: int,
    handles: list[Any],
) -> Iterator[Any]:
    """The results of `submit(args)` for each of `arguments` as they complete, each
    released once read, with at most `window` submitted and not read: the next
    arguments are taken only then. Whatever is not done is cancelled if the caller
    stops early, and the data the tasks shared let go."""
    from distributed import as_completed

    following = iter(arguments)
    running = {submit(args) for args in itertools.islice(following, window)}
    completed = as_completed(list(running))
    try:
        for future in completed:
            running.discard(future)
            result = future.result()
            future.release()
            for args in itertools.islice(following, 1):
                submitted = submit(args)
                running.add(submitted)
                completed.add(submitted)
            yield result
    finally:
        for future in running:
            future.cancel()
        handles.clear()


def gathered(futures: list[Any], handles: list[Any]) -> Iterator[Any]:
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
