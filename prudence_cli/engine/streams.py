"""Dask futures as a stream: a window of tasks in flight, or one shard of a level a
worker at a time; each result released once read, and whatever is left cancelled when
the reader stops (engine/runner.py)."""

from __future__ import annotations

import contextlib
import itertools
import operator
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol


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
            yield taken(future)  # not kept here while the reader holds it
            for args in itertools.islice(following, 1):
                submitted = submit(args)
                running.add(submitted)
                completed.add(submitted)
    finally:
        for future in running:
            future.cancel()
        handles.clear()


def two_by_two(
    client: Any, join: Callable[[Any, Any], Any], futures: list[Any], **last: Any
) -> Any:
    """`futures` joined two by two on the workers (`join(a, b)`, each where Dask places
    it, the last with `last`'s arguments of submit) until one is left: its future, None
    for none. No task holds more than two of them and their join; nothing comes to the
    caller."""
    while len(futures) > 1:
        where = last if len(futures) == 2 else {}
        pairs = [
            client.submit(join, a, b, pure=False, **where)
            for a, b in zip(futures[0::2], futures[1::2], strict=False)
        ]
        futures = pairs + futures[len(pairs) * 2 :]
    return futures[0] if futures else None


def blockwise(
    client: Any, futures: list[Any], count: int, homes: list[Any], workers: list[str]
) -> list[Any]:
    """Of `futures`, each a tuple of `count` blocks kept where `homes` says (`stay`):
    each block's sum, added on the workers `two_by_two` (a future per block), the b-th
    on the b-th of `workers` in turn, so that a level's blocks spread evenly over them
    (preferred: on another if that one left; of a single tuple, each block stays where
    that is, none being added). A block is taken from its tuple where that is, which is
    let go of once its blocks are taken."""
    blocks = [
        [
            client.submit(operator.getitem, future, b, pure=False, **stay(where))
            for future, where in zip(futures, homes, strict=True)
        ]
        for b in range(count)
    ]
    for future in futures:
        future.release()
    totals = []
    for b, pieces in enumerate(blocks):
        there = {"workers": [workers[b % len(workers)]], "allow_other_workers": True}
        totals.append(two_by_two(client, operator.add, pieces, **(there if workers else {})))
        for piece in pieces:
            if piece is not totals[-1]:
                piece.release()  # the sums' tasks hold them until they have run
    return totals


def taken(future: Any) -> Any:
    """The result of a future, which is then released, also when it failed: its error
    goes up with nothing of it kept here."""
    try:
        return future.result()
    finally:
        future.release()


def taken_in_pieces(
    client: Any, future: Any, size: int, address: str | None
) -> Iterator[tuple[Any, Any]]:
    """A partition's result (owners, counts: as many entries as people of its shard) read
    `size` entries at a time by tasks where it is (`address`), then released: the reader
    holds a piece at a time, never the whole result. Its error, if it failed, goes up
    from the first piece."""
    there = stay(None if address is None else [address])
    try:
        first, count = taken(client.submit(_head, future, size, pure=False, **there))
        yield first
        del first
        for k in range(1, count):
            yield taken(client.submit(_piece, future, k, size, pure=False, **there))
    finally:
        future.release()


def _head(result: tuple[Any, Any], size: int) -> tuple[tuple[Any, Any], int]:
    """The first `size` entries of `result`, and its number of pieces of `size`."""
    return _piece(result, 0, size), max(-(-len(result[0]) // size), 1)


def _piece(result: tuple[Any, Any], k: int, size: int) -> tuple[Any, Any]:
    owners, counts = result
    return owners[k * size : (k + 1) * size], counts[k * size : (k + 1) * size]


class Joiner(Protocol):
    """How a shard's data is joined from its pieces, one piece at a time: `join_start`
    makes the (empty) join of pieces of the sizes `piece_size` gives, `join_piece` adds
    the k-th piece to it (in place, returning it), `join_finish` makes what the shard's
    tasks take of it."""

    def piece_size(self, piece: Any) -> Any: ...

    def join_start(self, sizes: list[Any]) -> Any: ...

    def join_piece(self, joining: Any, piece: Any, k: int) -> Any: ...

    def join_finish(self, joining: Any) -> Any: ...


@dataclass(frozen=True)
class Joined:
    """A shard's data made where it goes, by `joiner` from its `pieces` (results of
    `each_kept`, each where its range is): never in the planning process, and on the
    shard's worker one piece at a time besides the join (each `join_piece` is a task of
    its own, whose piece arrives as its argument and goes once it is joined)."""

    joiner: Joiner
    pieces: list[Any]

    def here(self) -> Any:
        """The shard's data joined in this process (the pieces are here)."""
        joiner = self.joiner
        joining = joiner.join_start([joiner.piece_size(piece) for piece in self.pieces])
        for k, piece in enumerate(self.pieces):
            joining = joiner.join_piece(joining, piece, k)
        return joiner.join_finish(joining)


def stay(where: list[str] | None) -> dict[str, Any]:
    """Where a task that takes much data kept on a worker runs: on that worker only
    (the caller watches it: connect.Watcher). Dask steals a task merely preferring
    a worker when another is idle, and the data it takes goes along: the ranges a worker
    holds, or a shard. None: anywhere (no such data)."""
    return {} if where is None else {"workers": where, "allow_other_workers": False}


# the priority of a shard's tasks: behind the cutting and joining of the next shard,
# which then runs on a busy worker between them, not after them all
BEHIND = -1


def one_shard_a_worker(
    client: Any,
    addresses: list[str],
    task: Callable[..., Any],
    shards: Iterable[tuple[Any, Iterable[tuple[Any, ...]]]],
    send: Callable[[Any, list[str] | None], Any],
    pieces: int | None = None,
) -> Iterator[Any]:
    """The results of `task(handle, *args)` for each (data, arguments) of `shards`, as
    they complete, each shard's data sent to one of the workers at `addresses` (any:
    none) by `send(data, [address])`, which returns the future (`handle`) its tasks
    take there. A worker holds one shard at a time: the next shard is taken from
    `shards` (cut) only when a worker's tasks are all read, goes to that worker, and the
    last one's data is let go first; its tasks run on that worker only (`stay`), behind
    other work there (`BEHIND`): the next shard's pieces are cut there while they run.
    With `pieces`, a result (a partition's owners and counts) is read that many entries
    at a time (`taken_in_pieces`). Whatever is not done is cancelled if the reader stops
    early."""
    from distributed import as_completed

    free: list[str | None] = list(addresses) if addresses else [None]
    left: dict[int, int] = {}  # per shard in flight: its tasks not read yet
    held: dict[int, tuple[str | None, Any]] = {}  # per shard in flight: worker, data
    of: dict[Any, int] = {}  # per task in flight: its shard
    completed = as_completed()

    def done(k: int) -> None:
        """Shard k's tasks all read: its data let go, its worker free."""
        del left[k]
        address, handle = held.pop(k)
        handle.release()
        free.append(address)

    def read(future: Any) -> Iterator[Any]:
        k = of.pop(future)
        if pieces is None:
            yield taken(future)
        else:
            yield from taken_in_pieces(client, future, pieces, held[k][0])
        left[k] -= 1
        if left[k] == 0:
            done(k)

    following = iter(shards)
    try:
        for k in itertools.count():
            while not free:  # results until a worker's shard is done
                yield from read(next(completed))
            step = next(following, None)
            if step is None:
                break
            address = free.pop(0)
            on = [address] if address is not None else None
            handle = send(step[0], on)
            held[k], left[k] = (address, handle), 0
            with arrays_as_arguments():
                for args in step[1]:
                    future = client.submit(
                        task, handle, *args, pure=False, priority=BEHIND, **stay(on)
                    )
                    of[future] = k
                    left[k] += 1
                    completed.add(future)
            del step
            if not left[k]:  # nothing to run: its worker is free again
                done(k)
        for future in completed:
            yield from read(future)
    finally:
        for future in of:
            future.cancel()
            future.release()
        for _, handle in held.values():
            handle.release()
        held.clear()
