"""A trajectory's visits, or a segments view's triples, kept on the workers
(dataviews/on_workers.py), numbered in blocks of their distinct elements as a local run
numbers them (TrajectoryView.visit_sets, SegmentView.triples: an element's code is its
rank among the whole view's), with no worker holding every element.

Joined two by two, the whole view's elements would be held by every worker numbering a
range (8 bytes or more each), and three times that by the worker joining the last two:
at a billion distinct visits, 8 and 24 GB. Here each range tells its own elements, as
64-bit keys that sort as the elements do (VisitCodes, TripleKeys), kept where it is.
The whole view's distinct elements are estimated from a sketch of each range's (the
smallest hashes of its keys); their keys, in the frame of the whole view, are cut at
splitters chosen from a sample of each range's, so that a block holds about
`blocks.CLUSTER_BLOCK` of them; each block's pieces are joined where the runner adds
them (`Runner.summed_blocks`: from two ranges or more, the b-th block on the b-th worker
in turn); and each range is given its own elements' codes — the elements of the blocks
before, and the rank in its block — each block read where it is kept
(`blocks.read_where_kept`). A view of about a block of distinct elements or fewer, or
whose keys would not fit 64 bits in the whole view's frame, is numbered whole, as
before.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from prudence_cli.arrays import distinct, mixed
from prudence_cli.engine.blocks import own_values, read_where_kept

# the smallest hashes of its elements' keys each range tells (a bottom-k sketch): the
# whole view's distinct elements are estimated from them (a standard error of 3 %)
SKETCH = 1024
# keys of each range's own elements the splitters are chosen from (its every k-th): this
# many at least, and eight a block
SAMPLED = 1024


def numbered_in_blocks(
    runner: Any, codes: Any, told: list[Any], block: int | None
) -> list[Any] | None:
    """Each range's codes (of the class `codes`: VisitCodes or TripleKeys, a range's own
    elements with their codes in the whole view), kept where the range is, from the
    ranges' own elements `told` (`codes` each, kept by `runner`); None when the whole
    view holds about `block` distinct elements or fewer (one held by several ranges
    counts once), `block` is None, or its elements do not pack into 64-bit keys in the
    whole view's frame (`codes.frame_of`): then the view is numbered whole."""
    if not block:
        return None
    bounds = [b for b in runner.each(_bounds, told) if b is not None]
    frame = codes.frame_of(bounds) if bounds else None
    if frame is None:
        return None
    elements = _distinct_keys(runner.each(_sketch, told, frame))
    if elements <= block:
        return None
    count = -(-elements // block)
    samples = runner.each(_sampled, told, frame, max(SAMPLED, 8 * count))
    splitters = _splitters(samples, count)
    keys = runner.each_kept(_cut, told, frame, splitters)
    pieces = runner.summed_blocks(_as_codes, keys, splitters.shape[0] + 1, codes, frame)
    sizes = np.array(runner.each(_size, pieces), dtype=np.int64)  # read back together
    before = np.cumsum(sizes) - sizes  # the elements of the blocks before each
    total = int(sizes.sum())
    return read_where_kept(runner, pieces, keys, _ranks, _own_codes, codes, frame, before, total)


def _bounds(told: Any) -> tuple[int, ...] | None:
    """What frames a range's own elements (`codes.frame_of`); None when it holds none."""
    return told.bounds()


def _sketch(told: Any, frame: tuple[int, ...]) -> np.ndarray:
    """The `SKETCH` smallest distinct hashes (arrays.mixed) of the range's keys in the
    whole view's `frame`, all of them when it holds fewer."""
    hashes = mixed(told.keys_in(frame).astype(np.uint64))
    if hashes.shape[0] > SKETCH:
        hashes = np.partition(hashes, SKETCH - 1)[:SKETCH]
    return np.sort(hashes)


def _distinct_keys(sketches: list[np.ndarray]) -> int:
    """How many distinct keys the ranges whose `sketches` these are hold together: the
    k-th smallest of all their hashes, k = `SKETCH`, falls at about k / n of the range
    of hashes for n distinct keys (the estimate (k − 1) / that fraction is unbiased,
    its standard error about 1 / sqrt(k − 2): 3 %); exact when they are fewer than k."""
    hashes = distinct(np.concatenate(sketches or [np.zeros(0, np.uint64)]))
    if hashes.shape[0] < SKETCH:
        return int(hashes.shape[0])
    kth = float(hashes[SKETCH - 1]) + 1.0
    return int(round((SKETCH - 1) * 2.0**64 / kth))


def _sampled(told: Any, frame: tuple[int, ...], size: int) -> tuple[np.ndarray, int]:
    """Every k-th key of the range's own elements in the whole view's `frame`, about
    `size` of them, and k: how many of its keys each stands for."""
    step = max(1, -(-told.keys.shape[0] // size))
    every = replace(told, keys=told.keys[::step])
    return every.keys_in(frame).copy(), step


def _splitters(samples: list[tuple[np.ndarray, int]], count: int) -> np.ndarray:
    """The keys at which to cut the ranges' keys into `count` blocks of about as many
    (each sample weighed by the keys it stands for): ascending, `count` − 1 of them."""
    keys = np.concatenate([k for k, _ in samples])
    weights = np.concatenate([np.full(k.shape[0], step, np.int64) for k, step in samples])
    order = np.argsort(keys, kind="stable")
    keys, reached = keys[order], np.cumsum(weights[order])
    wanted = np.arange(1, count, dtype=np.int64) * (int(reached[-1]) / count)
    return keys[np.minimum(np.searchsorted(reached, wanted), keys.shape[0] - 1)]


def _cut(told: Any, frame: tuple[int, ...], splitters: np.ndarray) -> tuple[np.ndarray, ...]:
    """The range's keys in the whole view's `frame`, in each block of `splitters` (a
    block's keys are below its splitter, and at or above the one before)."""
    keys = told.keys_in(frame)
    ends = np.r_[0, np.searchsorted(keys, splitters), keys.shape[0]]
    return tuple(keys[a:b].copy() for a, b in zip(ends[:-1], ends[1:], strict=True))


def _as_codes(keys: tuple[np.ndarray, ...], codes: Any, frame: tuple[int, ...]) -> tuple:
    """A range's keys of each block as `codes`, which join as its parts do (+)."""
    return tuple(codes(*frame, block) for block in keys)


def _size(piece: Any) -> int:
    return int(piece.keys.shape[0])


def _ranks(piece: Any, keys: np.ndarray) -> np.ndarray:
    """The rank of each of `keys` (ascending, all there) among the block's elements."""
    return np.searchsorted(piece.keys, keys)


def _own_codes(
    keys: tuple[np.ndarray, ...],
    given: tuple[list[Any], int],
    codes: Any,
    frame: tuple[int, ...],
    before: np.ndarray,
    total: int,
) -> Any:
    """The range's elements (`keys`, per block) and their codes in the whole view: the
    elements of the blocks before each, and the rank in it."""
    ranks = own_values(given)
    numbers = np.concatenate([r + before[b] for b, r in enumerate(ranks)])
    return codes(*frame, np.concatenate(keys), numbers, total)
