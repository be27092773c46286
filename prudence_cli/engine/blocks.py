"""A level's weights per element (the work of the partitions beginning at each) in blocks
of consecutive element ids, each added up and kept where the runner adds it: on a Dask
cluster, no worker makes or holds the level's whole vector (at a billion distinct visits,
8 GB, and three times that while two are added), only blocks of `CLUSTER_BLOCK` elements.

Each range cuts its own vector into the blocks (`in_blocks`); the runner adds each
block's pieces over the ranges (`Runner.summed_blocks`). What the engine needs of the
weights comes from the blocks in turn, each read where it is kept:
- their extent: the heaviest weight and their sum (`extent`, added up: `Extent`);
- their greedy partitions and the running sum at each one's end (`partitioned`): the
  cut is carried from a block to the next (plan.Cutting), so the partitions are those
  of the whole vector, found a block at a time.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from prudence_cli.engine.per_element import PerElement, _id_type
from prudence_cli.engine.plan import _CHUNK, _EXACT, Cutting, exact_extent

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
    return Extent(float(values.max(initial=0)), float(values.sum()), exact)


def partitioned(
    runner: Any, blocks: list[Any], at: np.ndarray, budget: int, of: Extent
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The partitions of the weights in `blocks` (cut at `at`, kept by `runner`, of
    extent `of`) with at most `budget` instances each, and the running sum at each one's
    end and in all last (shards.reached): the cut carried from a block to the next,
    each block read where it is kept. Blocks past the last partition's work are not."""
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
