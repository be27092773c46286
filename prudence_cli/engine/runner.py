"""Where the engine's partition tasks run: in this process, or on a Dask cluster.

A partition task takes the level's shared data (the counting problem, and for the posting
strategy its posting lists) and one partition's arguments, and returns the partial
minimum support of the users it touched: (user codes, supports). Partitions share no
key, so the engine combines them with an element-wise minimum in any order — the result
is the same, bit for bit, wherever the tasks ran (DESIGN.md section 6).

The Dask runner scatters the shared data to every worker once per level, submits one
future per partition, a few per worker at a time, and folds results in as they complete;
no dataframe shuffle. On several workers the engine gives it shards instead
(engine/shards.py): each worker receives only the part of the level its partitions
read. A level held in ranges of users on the workers (engine/ranged.py) is kept there by
`place`, worked on by `each`, `each_kept` and `summed_blocks`, and each of its shards
joined on its worker from the ranges' pieces (`streams.Joined`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from prudence_cli.engine.blocks import CLUSTER_BLOCK
from prudence_cli.engine.connect import (
    Watcher,
    cluster_failure,
    connected,
    sent_to,
    smallest_limit,
)
from prudence_cli.engine.streams import (
    IN_FLIGHT,
    Joined,
    arrays_as_arguments,
    blockwise,
    one_shard_a_worker,
    stay,
    streamed,
    taken,
    two_by_two,
)
from prudence_cli.errors import PrudenceError

Task = Callable[..., Any]
# (data shared by a group of tasks, each task's arguments)
Shards = Iterable[tuple[Any, Iterable[tuple[Any, ...]]]]
Prepare = Callable[[Any], Any] | None  # of a shard's data, on its worker (`run_sharded`)
Paired = Sequence[Any] | None  # an argument of each item's task (`each`)


def _own(paired: Paired, k: int) -> tuple[Any, ...]:
    return () if paired is None else (paired[k],)


class LocalRunner:
    """Runs every task here, one after the other (each kernel uses the engine's threads)."""

    name = "local"
    workers = 1

    def __init__(self, shards: int = 1, element_block: int | None = None) -> None:
        self.shards = shards  # more than 1: the engine cuts levels into shards (tests)
        self.element_block = element_block  # blocks.py: None, a block of all (here: tests)

    def shard_limits(self) -> tuple[int, int]:
        """What a shard may cost a worker, and the worker's limit (shards.ShardBudget):
        here none, a level is cut in as many shards as the runner was given."""
        return 0, 0

    def run(self, task: Task, shared: Any, arguments: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        for args in arguments:
            yield task(shared, *args)

    def share(self, data: Any) -> Any:
        """`data` as `run` takes it for several runs (here: itself)."""
        return data

    def run_sharded(
        self, task: Task, shards: Shards, prepare: Prepare = None, pieces: int | None = None
    ) -> Iterator[Any]:  # each result whole: it is here already (`pieces`: DaskRunner's)
        for shared, arguments in shards:
            if isinstance(shared, Joined):
                shared = shared.here()
            yield from self.run(task, shared if prepare is None else prepare(shared), arguments)

    def place(self, items: Iterable[Any]) -> list[Any]:
        """Each of `items` kept where ranges of a level are (here: itself)."""
        return list(items)

    def checked(
        self,
        draw: Task,
        calls: Iterable[tuple[Any, tuple[Any, ...]]],
        count: Task,
        kept: list[Any],
        fold: Task,
    ) -> Iterator[Any]:
        """For each (item, args) of `calls`: `queries = draw(item, *args)` where the item
        is; `count(queries, *kept there)` on every worker holding some of `kept` (here:
        all of them); `fold(queries, *counts)` where the queries are: its results, in
        turn."""
        for item, args in calls:
            queries = draw(item, *args)
            yield fold(queries, count(queries, *kept))

    def each(self, task: Task, placed: list[Any], *args: Any, paired: Paired = None) -> list[Any]:
        """`task(item, *args)` of each item `placed`, in order; with `paired`, the k-th's
        `task(item, paired[k], *args)`."""
        return [task(item, *_own(paired, k), *args) for k, item in enumerate(placed)]

    def each_streamed(self, task: Task, placed: list[Any], *args: Any) -> Iterator[Any]:
        """As `each`, one result at a time."""
        return (task(item, *args) for item in placed)

    def summed(self, task: Task, placed: list[Any], *args: Any, keep: bool = False) -> Any:
        """The sum of `task(item, *args)` over the items `placed` (None for none): a
        range's vector per element each, added here one after the other. With `keep`,
        kept where it was added (here: itself), for `on` and `kept_on`."""
        total = None
        for item in placed:
            found = task(item, *args)
            if isinstance(total, np.ndarray) and np.result_type(total, found) == total.dtype:
                total += found  # in place (the first result is the task's own)
            else:
                total = found if total is None else total + found
            del found
        return total

    def summed_blocks(self, task: Task, placed: list[Any], count: int, *args: Any) -> Any:
        """`summed` of tasks each giving a tuple of `count` blocks (blocks.in_blocks):
        each block's sum, kept where it was added (here: listed); None for no items."""
        totals = None
        for item in placed:
            found = task(item, *args)
            totals = list(found) if totals is None else list(map(operator.add, totals, found))
        return totals

    def each_kept(self, task: Task, placed: list[Any], *args: Any, paired: Paired = None) -> list:
        """As `each`, each result kept where its item is (here: returned)."""
        return self.each(task, placed, *args, paired=paired)

    def grouped(self, placed: list[Any]) -> list[list[int]]:
        """The indices of the items `placed` kept on each worker (here: one)."""
        return [list(range(len(placed)))] if placed else []

    def on(self, kept: Any, task: Task, *args: Any) -> Any:
        """`task(kept, *args)` where `kept` (of `summed(keep=True)` or `kept_on`) is."""
        return task(kept, *args)

    def kept_on(self, kept: Any, task: Task, *args: Any) -> Any:
        """As `on`, its result kept there (here: returned)."""
        return task(kept, *args)

    def unpin(self) -> None:
        """Nothing is pinned here (DaskRunner.unpin)."""

    def explained(self, error: BaseException) -> PrudenceError | None:
        return None  # nothing here fails but the work itself

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"backend": "local"}


class DaskRunner:
    """Runs tasks as dask.distributed futures on `scheduler`, or on a LocalCluster of
    `workers` single-threaded worker processes when no address is given."""

    name = "dask"
    element_block: int | None = CLUSTER_BLOCK  # of a level's weights: blocks.py

    def __init__(self, scheduler: str | None = None, workers: int = 2) -> None:
        try:
            import dask
            from distributed import LocalCluster
        except ImportError:
            raise PrudenceError(
                "engine backend dask needs the dask extra: pip install 'prudence-cli[dask]' "
                "(from a clone: pip install -e '.[dask]')"
            ) from None
        self.cluster = None
        if scheduler:
            # dask's own setting, e.g. DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=60s
            timeout = dask.config.get("distributed.comm.timeouts.connect")
            self.client = connected(scheduler, timeout)
        else:
            try:
                self.cluster = LocalCluster(
                    n_workers=max(workers, 1),
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",  # any free port: runs never collide
                    # its workers share the user's terminal: a task's error (a bad row) is
                    # said once, by the run, not also logged there with Dask's traceback
                    silence_logs=logging.CRITICAL,
                )
            except OSError as exc:
                raise PrudenceError(f"cannot start a Dask LocalCluster: {exc}") from None
            from distributed import Client

            self.client = Client(self.cluster)
        # every worker (scheduler_info describes only five on some versions of distributed)
        nthreads = self.client.nthreads()
        self.addresses = sorted(nthreads)
        self.workers = len(self.addresses)
        self.threads = sum(nthreads.values())  # tasks the workers run at once
        # a shard of each level per worker, or more (`shard_limits`); two on one worker, so
        # that its levels are made in ranges there too, never from the whole view here
        self.shards = max(self.workers, 2)
        self.memory_limit = smallest_limit(self.client)
        self.scheduler = scheduler or "LocalCluster"
        # where futures kept by `pinned` and `each_kept` are, by key (a few per level),
        # and whether they are there for sure (pinned there, or made from such a future)
        self._homes: dict[str, tuple[list[str] | None, bool]] = {}
        self.watcher = Watcher(self.client, _WATCH_SECONDS)  # the workers tasks are pinned to

    def run(self, task: Task, shared: Any, arguments: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        """Each task on some worker, `shared` sent to every worker once (not again when
        it is already there: `share`). The arguments are taken as tasks are submitted, a
        few per worker at a time (`IN_FLIGHT`): what a generator makes for them (a
        sampled level's drawn queries) is never all held here at once."""
        handle = self.share(shared)

        def submit(args: tuple[Any, ...]) -> Any:
            with arrays_as_arguments():
                return self.client.submit(task, handle, *args, pure=False)

        return streamed(submit, arguments, IN_FLIGHT * max(self.threads, 1), [handle])

    def share(self, data: Any) -> Any:
        """`data` sent to every worker once, for several runs (a future: as it is)."""
        from distributed import Future

        return data if isinstance(data, Future) else self._scattered(data)

    def _scattered(self, data: Any, workers: list[str] | None = None) -> Any:
        """One future of `data` (a tuple too), on `workers` (`sent_to`) or on all."""
        if workers is not None:
            return sent_to(self.client, data, workers)
        (handle,) = self.client.scatter([data], broadcast=True, hash=False)
        return handle

    def shard_limits(self) -> tuple[int, int]:
        """What a shard may cost a worker: a `SHARD_SHARE` of the smallest worker's memory
        limit (Dask's), and the limit itself (0, 0: none). A level is cut in a shard per
        worker, more where one would not fit (shards.fitted_shards); a worker holds one
        shard at a time (`run_sharded`)."""
        if self.memory_limit <= 0:
            return 0, 0
        return self.memory_limit // SHARD_SHARE, self.memory_limit

    def run_sharded(
        self, task: Task, shards: Shards, prepare: Prepare = None, pieces: int | None = None
    ) -> Iterator[Any]:
        """Each shard's data sent to one worker and its tasks run there, where the data
        is, a worker holding one shard at a time (streams.one_shard_a_worker). A
        `Joined` shard is joined there from its pieces, and they go before the next
        shard's are cut. `prepare` (of a shard's data) runs once on its worker, and its
        tasks take what it gives: what can be derived there is not sent; `pieces` as there."""
        from distributed import wait

        def send(shared: Any, where: list[str] | None) -> Any:
            if isinstance(shared, Joined):  # joined there, from the workers of its pieces
                handle = self._joined(shared, where)
                wait([handle])  # its pieces go before the next shard's are cut
            else:
                handle = self._scattered(shared, where)
            if prepare is not None:  # the shard as sent goes once prepared (a dependency)
                handle = self.client.submit(prepare, handle, pure=False, **stay(where))
            return handle

        # the workers there now: one Dask restarted since (past its memory limit) has
        # another address, and a shard sent to the old one would wait for it
        self.addresses = sorted(self.client.nthreads())
        with self.watcher.during(self.addresses):  # the shards' tasks run on their workers only
            yield from one_shard_a_worker(self.client, self.addresses, task, shards, send, pieces)

    def _joined(self, shared: Joined, where: list[str] | None) -> Any:
        """A future of the shard's data joined on `where` from its pieces, a task each."""
        joiner, client = shared.joiner, self.client
        sizes = self.each(joiner.piece_size, shared.pieces)
        joining = client.submit(joiner.join_start, sizes, pure=False, **stay(where))
        for k, piece in enumerate(shared.pieces):
            join = joiner.join_piece
            joining = client.submit(join, joining, piece, k, pure=False, **stay(where))
        return client.submit(joiner.join_finish, joining, pure=False, **stay(where))

    def place(self, items: Iterable[Any]) -> list[Any]:
        """Each of `items` sent to one worker, the k-th to the k-th worker (in turn), and
        kept there: a future of each (one item here at a time, if `items` makes them)."""
        self.addresses = sorted(self.client.nthreads())  # as `run_sharded`
        return [self._scattered(item, self._where(k)) for k, item in enumerate(items)]

    def checked(
        self,
        draw: Task,
        calls: Iterable[tuple[Any, tuple[Any, ...]]],
        count: Task,
        kept: list[Any],
        fold: Task,
    ) -> Iterator[Any]:
        """LocalRunner.checked on the workers: each draw where its item is, each chunk of
        queries counted on every worker holding some of `kept` against those it holds
        (the chunk travels there, not what it is counted against), folded where it was
        drawn; a few calls a worker thread in flight, results as they come."""
        held = {w: [kept[k] for k in ks] for w, ks in self._by_worker(kept).items()}
        client = self.client

        def submit(call: tuple[Any, tuple[Any, ...]]) -> Any:
            item, args = call
            home = self._placed(item, 0)
            with arrays_as_arguments():
                queries = client.submit(draw, item, *args, pure=False, **home)
            counts = [
                client.submit(
                    count, queries, *futures, pure=False, **stay([worker] if worker else None)
                )
                for worker, futures in held.items()
            ]
            return client.submit(fold, queries, *counts, pure=False, **home)

        with self.watcher.during([w for w in held if w]):  # counts run there only (`streams.stay`)
            yield from streamed(submit, calls, IN_FLIGHT * max(self.threads, 1), [])

    def each(self, task: Task, placed: list[Any], *args: Any, paired: Paired = None) -> list[Any]:
        """LocalRunner.each, each item's task on its worker."""
        futures = self.each_kept(task, placed, *args, paired=paired)
        try:
            return list(self.client.gather(futures))
        finally:
            for future in futures:
                self._homes.pop(future.key, None)
                future.release()

    def each_streamed(self, task: Task, placed: list[Any], *args: Any) -> Iterator[Any]:
        """As `each`, the results one at a time, in order, each fetched once the previous
        one is read and let go of: a large result (a range's vector per element) is not
        held here with all the others."""
        futures = self.each_kept(task, placed, *args)
        try:
            for future in futures:
                result = future.result()
                future.release()
                yield result
        finally:
            for future in futures:
                self._homes.pop(future.key, None)
                future.release()

    def summed(self, task: Task, placed: list[Any], *args: Any, keep: bool = False) -> Any:
        """LocalRunner.summed, added on the workers two by two: only the total comes here,
        not a range's vector per element at a time; with `keep`, not even that: its
        future. Added in another order than there: the same sums for whole numbers (below
        2^53 as floats)."""
        futures = self.each_kept(task, placed, *args)
        total = two_by_two(self.client, operator.add, futures)
        for future in futures:
            self._homes.pop(future.key, None)
            if future is not total:
                future.release()  # the sums' tasks hold them until they have run
        return total if keep or total is None else taken(total)

    def summed_blocks(self, task: Task, placed: list[Any], count: int, *args: Any) -> Any:
        """LocalRunner.summed_blocks, each block added two by two on the workers: a future
        per block (no task adds two whole vectors)."""
        futures = self.each_kept(task, placed, *args)
        homes = [self._homes.pop(future.key) for future in futures]
        kept = [where if there else None for where, there in homes]
        return blockwise(self.client, futures, count, kept, self.addresses) if futures else None

    def grouped(self, placed: list[Any]) -> list[list[int]]:
        """LocalRunner.grouped: by the worker each item's task runs on (`_by_worker`)."""
        return list(self._by_worker(placed).values())

    def on(self, kept: Any, task: Task, *args: Any) -> Any:
        """LocalRunner.on, where Dask keeps `kept` (a future): only its result comes here."""
        return taken(self.kept_on(kept, task, *args))

    def kept_on(self, kept: Any, task: Task, *args: Any) -> Any:
        """LocalRunner.kept_on, the result kept where `kept` is: its future."""
        return self.client.submit(task, kept, *args, pure=False)

    def each_kept(self, task: Task, placed: list[Any], *args: Any, paired: Paired = None) -> list:
        """As `each`, each result kept on its item's worker: their futures. Large arrays
        among `args` go to each worker once (`paired`'s k-th to the k-th item's only)."""
        shared = [
            self._scattered(a) if isinstance(a, np.ndarray) and a.nbytes > _SCATTER_FROM else a
            for a in args
        ]
        kept = []
        with arrays_as_arguments():
            for k, item in enumerate(placed):
                where = self._placed(item, k)
                own = _own(paired, k)
                if own and isinstance(own[0], np.ndarray) and own[0].nbytes > _SCATTER_FROM:
                    own = (sent_to(self.client, own[0], where["workers"]),)  # there only
                future = self.client.submit(task, item, *own, *shared, pure=False, **where)
                self._homes[future.key] = (where["workers"], not where["allow_other_workers"])
                kept.append(future)
        return kept

    def pinned(self, task: Task, calls: Iterable[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """`task(*args)` for each (worker, args) of `calls`, run on that worker only (it
        holds what the task reads on its disk), its result kept there: their futures,
        whose results `each` and `each_kept` then take where they are."""
        futures = []
        for worker, args in calls:
            self.watcher.watch(worker)
            future = self.client.submit(
                task, *args, pure=False, workers=[worker], allow_other_workers=False
            )
            self._homes[future.key] = ([worker], True)
            futures.append(future)
        return futures

    def unpin(self) -> None:
        """The run whose tasks were pinned to workers has ended (its files there are
        gone): those workers are no longer watched, nor its futures' homes kept."""
        self.watcher.workers.clear()
        self._homes.clear()

    def _home(self, item: Any, k: int) -> tuple[list[str] | None, bool]:
        """Where the k-th item's task runs: where the item was kept (`pinned`, or of
        `each_kept` of such an item), else the k-th worker; and whether it is there."""
        key = getattr(item, "key", None)
        found = self._homes.get(key) if isinstance(key, str) else None
        return found if found is not None and found[0] else (self._where(k), False)

    def _by_worker(self, placed: list[Any]) -> dict[str, list[int]]:
        """The indices of the items `placed` by the worker each is kept on (`_home`; "":
        any worker)."""
        groups: dict[str, list[int]] = {}
        for k, item in enumerate(placed):
            where, _ = self._home(item, k)
            groups.setdefault(where[0] if where else "", []).append(k)
        return groups

    def _placed(self, item: Any, k: int) -> dict[str, Any]:
        """Where the task of the k-th item runs (`_home`), as `submit`'s arguments: there
        only when the item is there for sure and the run watches that worker (`Watcher`):
        Dask steals a task that merely prefers a worker, and the item goes along (a
        worker would then hold another's ranges). Else preferred (it may leave)."""
        where, there = self._home(item, k)
        strict = there and where is not None and set(where) <= self.watcher.workers
        return {"workers": where, "allow_other_workers": not strict and where is not None}

    def _where(self, k: int) -> list[str] | None:
        """The k-th worker, in turn (None: any)."""
        return [self.addresses[k % len(self.addresses)]] if self.addresses else None

    def explained(self, error: BaseException) -> PrudenceError | None:
        """What a failure of the cluster during a run means for the user (exit code 2);
        None for anything else."""
        return cluster_failure(error, self.scheduler)

    def close(self) -> None:
        self.watcher.stopped.set()
        self.client.close()
        if self.cluster is not None:
            # a worker slow to exit is killed by its nanny: its end unseen within the
            # second after (a loaded machine) is no failure of the run
            with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                self.cluster.close()

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "dask",
            "scheduler": self.scheduler,
            "workers": self.workers,
            "sharded": self.shards > 1,
        }


# how often a runner whose tasks are pinned to workers checks that they are still there
_WATCH_SECONDS = 2.0

# arguments of `each` from this size are sent to each worker once, not with every task
_SCATTER_FROM = 1 << 20

# a level's shard is sized to this share of the smallest worker's memory limit: the rest
# is for its partitions' tasks, the pieces of the next shard and Dask itself
SHARD_SHARE = 3
