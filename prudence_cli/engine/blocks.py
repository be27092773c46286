"""A level's vectors per element (place or distinct visit) in blocks of consecutive
element ids, each added up and kept where the runner adds it: on a Dask cluster, no
task adds two whole vectors of a level (at a billion distinct visits, 8 GB each), only
blocks of `CLUSTER_BLOCK` elements. (A range's own share is counted over all the
level's elements, whole when it is dense: then at most 32 bytes a position of it.)

Each range cuts its own vector into the blocks (`in_blocks`); the runner adds each
block's pieces over the ranges (`Runner.summed_blocks`). What the engine needs of them
comes from the blocks in turn, each read where it is kept:
- of the partition weights, their extent (`extent`, added up: `Extent`), and their
  greedy partitions with the running sum at each one's end (`partitioned`): the cut is
  carried from a block to the next (plan.Cutting), so they are the whole vector's;
- of the holders, the rank by rarity (`ranked`): each block counts its elements by
  holders, and ranks its own from where each count begins in the whole order;
- of the holders and the rank, what each range reads of them (`looked_up`: to plan,
  relabel, or draw a sampled level's queries): its own elements' values, each block read
  where it is, once for the ranges of each worker.
A level of one block is given to each range whole, as on one machine. On a cluster, the
b-th block added from two ranges or more is kept on the b-th worker in turn
(streams.blockwise)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from prudence_cli.arrays import distinct
from prudence_cli.engine.indexes import rarity_rank
from prudence_cli.engine.per_element import PerElement, _id_type
from prudence_cli.engine.plan import _CHUNK, _EXACT, Cutting, exact_extent
from prudence_cli.engine.tasks import Worker, _as_planned

# the elements of a block on a cluster: 64 MB a block of float64 weights, 200 MB while
# two are added; a multiple of plan._CHUNK, so that running sums are made in the same
# chunks as over the whole vector
CLUSTER_BLOCK = 1 << 23
assert CLUSTER_BLOCK % _CHUNK == 0


def cuts(n: int, block: int | None) -> np.ndarray:
    """The first element of each block of `block` elements (None: one block of all), and
    `n` last."""
    if not block or n <= block:
        return np.array([0, n], dtype=np.int64)
    return np.r_[np.arange(0, n, block, dtype=np.int64), n]


def in_blocks(vector: PerElement, at: np.ndarray) -> tuple[PerElement, ...]:
    """`vector` cut at `at` (`cuts` of its size): a vector over each block's elements,
    numbered from the block's first, in the smaller form (PerElement). One block: the
    vector itself."""
    if at.shape[0] <= 2:
        return (vector,)
    blocks = []
    if vector.ids is None:
        whole = vector.whole()
        for lo, hi in zip(at[:-1].tolist(), at[1:].tolist(), strict=True):
            blocks.append(PerElement.of(whole[lo:hi].copy()))  # not a view of the whole
        return tuple(blocks)
    ends = np.searchsorted(vector.ids, at)
    for b, (lo, hi) in enumerate(zip(at[:-1].tolist(), at[1:].tolist(), strict=True)):
        ids = (vector.ids[ends[b] : ends[b + 1]] - lo).astype(_id_type(hi - lo))
        values = vector.values[ends[b] : ends[b + 1]].copy()
        blocks.append(PerElement.of_entries(ids, values, hi - lo))
    return tuple(blocks)


@dataclass(frozen=True)
class Extent:
    """Of a vector of weights: the heaviest, their sum, and whether running sums of them
    are exact (plan.exact_extent)."""

    heaviest: float
    total: float
    exact: bool

    def __add__(self, other: Extent) -> Extent:
        """The extent of the two blocks together."""
        total = self.total + other.total
        exact = self.exact and other.exact and total < _EXACT
        return Extent(max(self.heaviest, other.heaviest), total, exact)


def extent(weights: PerElement) -> Extent:
    """The extent of a block: of the entries held when their sum is the same in any
    order, else of the whole vector (numpy's pairwise sum, as its whole vector gives)."""
    values = weights.values
    exact = exact_extent(values)
    if weights.ids is not None and not exact:
        values = weights.whole()
    return Extent(float(values.max(initial=0)), float(values.sum(dtype=np.float64)), exact)


def partitioned(
    runner: Any, blocks: list[Any], at: np.ndarray, budget: int, of: Extent
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The partitions of the weights in `blocks` (cut at `at`, kept by `runner`, of
    extent `of`) with at most `budget` instances each, and the running sum at each one's
    end and in all last (shards.reached): the cut carried from a block to the next,
    each block read where it is kept. Where the sums are exact, blocks past the last
    partition's work are not read."""
    cutting = Cutting(int(at[-1]), of.total, budget, of.exact)
    parts: list[tuple[int, int]] = []
    reaches: list[float] = []
    for block, start in zip(blocks, at[:-1].tolist(), strict=True):
        cutting, found, sums = runner.on(block, _cut_block, cutting, start)
        parts += found
        reaches += sums
        if cutting.done:
            break
    found, sums = cutting.finish()
    return parts + found, np.array(reaches + sums, dtype=np.float64)


def _cut_block(
    weights: PerElement, cutting: Cutting, start: int
) -> tuple[Cutting, list[tuple[int, int]], list[float]]:
    """The partitions closed in a block, from its elements `start`, and the cut carried
    on: of the entries it holds where those give the same (exact sums), else of its
    whole vector (a block's length at most)."""
    cutting = copy.copy(cutting)  # the task's input, not changed (here: the caller's)
    if weights.ids is not None and cutting.exact:
        found = cutting.feed(weights.values, start, weights.ids)
    else:
        found = cutting.feed(weights.whole(), start)
    return cutting, *found


# --- the holders in blocks: their rank by rarity, and each range's own values ----------


def ranked(runner: Any, holders: list[Any], at: np.ndarray, worker: Worker) -> list[Any]:
    """The rank by rarity of the elements whose holders are in `blocks` (cut at `at`),
    as `indexes.rarity_rank` of the whole vector makes it (by how few hold each, ties
    by id): a block of ranks kept where each block of holders is. Each block counts its
    elements by holders (`_histogram`); here they are added up into where each count's
    elements begin in the whole order, and where each block's begin among them (a block
    after those before it: ties by id); each block ranks its own from that."""
    found = [runner.on(block, _histogram) for block in holders]
    values = np.unique(np.concatenate([v for v, _ in found] or [np.zeros(0, np.int64)]))
    per_block = np.zeros((len(found), values.shape[0]), dtype=np.int64)
    for b, (v, counts) in enumerate(found):
        per_block[b, np.searchsorted(values, v)] = counts
    totals = per_block.sum(axis=0)
    begins = np.cumsum(totals) - totals  # where each count's elements begin in all
    before = np.cumsum(per_block, axis=0) - per_block  # of them, in the blocks before
    rank = np.int32 if int(at[-1]) < 2**31 else np.int64
    return [
        runner.kept_on(block, _ranked_block, values, begins + before[b], rank, worker)
        for b, block in enumerate(holders)
    ]


def _histogram(block: PerElement) -> tuple[np.ndarray, np.ndarray]:
    """The distinct holders of the block's elements, and how many elements hold each."""
    values, index = _value_index(block.whole())
    return values, np.bincount(index, minlength=values.shape[0])


def _value_index(whole: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, index = np.unique(whole, return_inverse=True)
    return values, index.reshape(-1)


def _ranked_block(
    block: PerElement, values: np.ndarray, begins: np.ndarray, rank: type, worker: Worker
) -> np.ndarray:
    """The block's ranks: an element holding `values[i]` is ranked from `begins[i]`, in
    the block's order (ties by id), as `rarity_rank` ranks the block's elements among
    themselves (kernels as the engine planned them)."""
    _as_planned(worker)
    held, index = _value_index(block.whole())
    at = np.searchsorted(values, held)  # the block's values among all the blocks'
    counts = np.bincount(index, minlength=held.shape[0])
    first = np.cumsum(counts) - counts  # where each value's elements begin in the block
    within = rarity_rank(index).astype(np.int64) - first[index]
    return (begins[at][index] + within).astype(rank)


def looked_up(runner: Any, blocks: list[Any], at: np.ndarray, parts: list[Any]) -> list[Any]:
    """Each range's values of the vector in `blocks` (cut at `at`) at the elements its
    lists hold: a PerElement of those elements only, kept where the range is, which a
    task of the range indexes by its elements as it would the whole vector (no worker
    receives the whole vector: `read_where_kept`)."""
    held = runner.each_kept(_held_in_blocks, parts, at)
    return read_where_kept(runner, blocks, held, _values_at, _assembled, at)


def read_where_kept(
    runner: Any, blocks: list[Any], held: list[Any], read: Any, assemble: Any, *args: Any
) -> list[Any]:
    """What each range makes of `blocks` (kept by `runner`), kept where the range is:
    `assemble(held[r], given, *args)`, where `held[r]` (kept there) is the sorted keys
    the range asks of each block, and `given` what `read(block, keys)` found at them
    (`own_values`). The ranges kept on a worker ask together (`Runner.grouped`): their
    keys of a block go to it in one task, which reads the block where it is kept for
    each of them, and the values go back to that worker. So a lookup is two tasks a
    block and worker, not a block and range (at a billion people, hundreds of ranges),
    and no worker receives the blocks whole."""
    given: list[Any] = [None] * len(held)
    for group in runner.grouped(held):
        values = []
        for b, block in enumerate(blocks):
            asked = runner.kept_on(held[group[0]], _pieces, b, *(held[r] for r in group[1:]))
            values.append(runner.kept_on(block, _read_each, read, asked))
            del asked
        for k, r in enumerate(group):
            given[r] = (values, k)
        del values
    return runner.each_kept(assemble, held, *args, paired=given)


def own_values(given: tuple[list[Any], int]) -> list[np.ndarray]:
    """Of what a range's group was `given` (`read_where_kept`: per block, the values at
    each range's keys), the range's own, a block at a time."""
    values, k = given
    return [found[k] for found in values]


def _pieces(first: tuple[np.ndarray, ...], b: int, *others: tuple[np.ndarray, ...]) -> tuple:
    """The keys of block `b` each range of a group asks (in the group's order)."""
    return tuple(keys[b] for keys in (first, *others))


def _read_each(block: Any, read: Any, asked: tuple[np.ndarray, ...]) -> tuple:
    """`read(block, keys)` for each range's `keys` of the block (`_pieces`)."""
    return tuple(read(block, keys) for keys in asked)


def _held_in_blocks(part: Any, at: np.ndarray) -> tuple[np.ndarray, ...]:
    """The distinct elements of the range's lists (members' and queries'), in each block
    of `at`, numbered from the block's first."""
    problem = part.problem
    members, queries = problem.members.elements, problem.queries.elements.elements
    lists = members if queries is members else np.concatenate((members, queries))
    ids = distinct(lists)
    ends = np.searchsorted(ids, at)
    return tuple(
        (ids[ends[b] : ends[b + 1]] - at[b]).astype(_id_type(int(at[b + 1] - at[b])))
        for b in range(at.shape[0] - 1)
    )


def _values_at(block: PerElement, ids: np.ndarray) -> np.ndarray:
    """The block's values at `ids` (of its elements)."""
    return block[ids]


def _assembled(
    held: tuple[np.ndarray, ...],
    given: tuple[list[Any], int],
    at: np.ndarray,
) -> PerElement:
    """The range's elements (`held`, per block) and their values, over the level's."""
    ids = np.concatenate([ids.astype(np.int64) + at[b] for b, ids in enumerate(held)])
    own = own_values(given)
    return PerElement(ids.astype(_id_type(int(at[-1]))), np.concatenate(own), int(at[-1]))
