"""The Python ways of a few counting kernels, with numpy's loops over whole arrays.

As Python, a kernel's loops run one element at a time; where the engine would call one
of these kernels as Python (`jit.runs_compiled` says it would not run compiled), it
calls the numpy way here instead, which gives the same outputs in the same order and
dtypes (tests/engine/test_orders.py holds each to its kernel):

- `subset_positions`: the s-subsets of positions beginning at given starts, in the
  enumeration kernels' order (`enumerate_members`, `enumerate_packed`);
- `queries_by_numpy`: `enumerate_queries` in its three modes (subsets with bounds,
  compositions of min(H, total) visits, ratios);
- `counts_by_numpy`: `match_groups` then `grouped_counts`, each query's support checked
  pair by pair, as the kernels' brute force does; large key groups are left to the
  kernels' sweeps;
- `least_owners`: `self_containment`, the least support of each queried owner.

Each works a block of about a million rows at a time (`blocks`), or hands back to the
kernel where laying its rows out would take too much memory.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from prudence_cli.engine.problem import MATCHES, QuerySpec


def blocks(first: np.ndarray, rows: int = 1 << 20) -> list[tuple[int, int]]:
    """Consecutive ranges [lo, hi) of items (starts, queries) whose rows (`first`: where
    each item's begin, and the end) fill about `rows` rows each (one item's own rows may
    exceed it): how numpy's loops bound their memory."""
    bounds = [0]
    while bounds[-1] < first.shape[0] - 1:
        lo = bounds[-1]
        hi = int(np.searchsorted(first, first[lo] + rows, side="right")) - 1
        bounds.append(min(max(hi, lo + 1), first.shape[0] - 1))
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def subset_positions(ends: np.ndarray, starts: np.ndarray, s: int) -> np.ndarray:
    """The positions (one row each) of every s-subset of positions that begins at one of
    `starts` and ends before that position's `ends[p]`, in the enumeration kernels'
    order: by start, then lexicographic. numpy's loops, for the kernels' Python way."""
    return _subsets(ends, starts, s)[0]


def _subsets(ends: np.ndarray, starts: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """`subset_positions`, and the index in `starts` of each row's start: the subsets of
    a start p are p followed by the (s - 1)-subsets beginning at p + 1, ..., up to the
    last position that leaves room for them (so no row is made that cannot finish)."""
    if s == 1:
        return starts.astype(np.int64)[:, None], np.arange(starts.shape[0])
    after = np.maximum(ends[starts] - starts - (s - 1), 0)
    parent = np.repeat(np.arange(starts.shape[0]), after)
    before = np.cumsum(after) - after
    children = starts[parent] + 1 + np.arange(parent.shape[0]) - before[parent]
    tails, heads = _subsets(ends, children, s - 1)
    rows = parent[heads]
    return np.column_stack((starts[rows], tails)), rows


# compositions × queries above which the queries are left to the kernel's loops
_COMPOSED_CELLS = 1 << 22


def queries_by_numpy(
    spec: QuerySpec,
    owners: np.ndarray,
    upper: np.ndarray,
    totals: np.ndarray,
    starts: np.ndarray,
    s: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The queries of `enumeration_kernels.enumerate_queries` (keys, lo, hi, ref, own), in
    its order, with numpy's loops; None when the compositions are too many to lay out
    (or their total is not a whole number), which the kernel enumerates instead."""
    q = spec.elements
    asked = owners[starts]
    asked = (spec.size_lo[asked] <= s) & (s <= spec.size_hi[asked])
    positions = subset_positions(q.offsets[owners + 1], starts[asked], s)
    own = owners[positions[:, 0]]
    keys = q.elements[positions].astype(np.int32)
    lower = q.values[positions]
    if spec.mode == "compositions":
        return _compositions(keys, lower, own, np.minimum(spec.compose, totals[own]), s)
    ref = np.zeros(own.shape[0], np.int64)
    if spec.mode == "ratios":
        ref = np.argmax(lower, axis=1).astype(np.int64)  # the first largest
        x = lower / lower[np.arange(own.shape[0]), ref][:, None]
        return keys, x - spec.delta, x + spec.delta, ref, own
    return keys, lower.astype(float), upper[positions].astype(float), ref, own


def _compositions(
    keys: np.ndarray, lower: np.ndarray, own: np.ndarray, target: np.ndarray, s: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Each subset (row) with every way to write its target as s positive whole parts,
    part j at most lower[row, j]: rows in order, each row's ways in lexicographic order
    of the parts (the order of the kernel's depth-first search)."""
    if target.size and not np.all(target == np.floor(target)):
        return None
    totals = np.unique(target).astype(np.int64).tolist()
    if keys.shape[0] * sum(math.comb(max(t - 1, 0), s - 1) for t in totals) > _COMPOSED_CELLS:
        return None
    ways, of_target = [], []
    for total in totals:
        found = list(combinations(range(1, total), s - 1))
        cuts = np.array(found, dtype=np.int64).reshape(len(found), s - 1)
        edges = np.column_stack((np.zeros(len(cuts), np.int64), cuts, np.full(len(cuts), total)))
        parts = np.diff(edges, axis=1)
        whole = np.all(parts >= 1, axis=1)  # a target below 1 has no way
        ways.append(parts[whole])
        of_target.append(np.full(int(whole.sum()), total))
    if not ways:
        ways, of_target = [np.empty((0, s), np.int64)], [np.empty(0, np.int64)]
    parts, of = np.concatenate(ways), np.concatenate(of_target)
    fits = (of[None, :] == target[:, None]) & np.all(parts[None, :, :] <= lower[:, None, :], axis=2)
    row, way = np.nonzero(fits)
    n = row.shape[0]
    lo = parts[way].astype(float)
    return keys[row], lo, np.full((n, s), np.inf), np.zeros(n, np.int64), own[row]


# pairs per member and query row up to which checking every pair beats the kernels'
# sweeps run as Python (a pair costs numpy about a hundredth of what a row costs Python)
_PAIRS_PER_ROW = 64


def counts_by_numpy(
    match: int,
    mkeys: np.ndarray,
    mvals: np.ndarray,
    qkeys: np.ndarray,
    qlo: np.ndarray,
    qhi: np.ndarray,
    qref: np.ndarray,
) -> np.ndarray | None:
    """`match_groups` then `grouped_counts` with numpy's loops: each query's support, the
    member rows of its key (both sorted by key) inside its bounds, every pair checked as
    the kernels' brute force checks it (their sweeps count the same), a block of about
    a million pairs at a time; None when the pairs are many more than the rows (large
    key groups), which the kernels count instead."""
    if qkeys.shape[0] == 0:
        return np.zeros(0, np.int64)
    rank = row_ranks(np.concatenate((mkeys, qkeys)))
    mrank, qrank = rank[: mkeys.shape[0]], rank[mkeys.shape[0] :]
    first = np.searchsorted(mrank, qrank, side="left")
    size = np.searchsorted(mrank, qrank, side="right") - first
    if match == MATCHES.index("contains"):
        return size.astype(np.int64)
    if int(size.sum()) > _PAIRS_PER_ROW * (mkeys.shape[0] + qkeys.shape[0]):
        return None  # large groups: the kernels' sweeps count in about m + q steps
    counts = np.zeros(qkeys.shape[0], np.int64)
    pairs = np.zeros(size.shape[0] + 1, np.int64)
    np.cumsum(size, out=pairs[1:])
    for lo, hi in blocks(pairs):
        query = np.repeat(np.arange(lo, hi), size[lo:hi])
        member = first[query] + np.arange(query.shape[0]) - (pairs[query] - pairs[lo])
        values = mvals[member]
        if match == MATCHES.index("ratio"):
            values = values / values[np.arange(query.shape[0]), qref[query]][:, None]
        outside = np.any((values < qlo[query]) | (values > qhi[query]), axis=1)  # as _brute
        counts[lo:hi] = np.bincount(query - lo, weights=~outside, minlength=hi - lo)
    return counts


def self_dominance_by_numpy(
    mvals: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> np.ndarray | None:
    """`group_kernels.self_dominance` with numpy's loops: per member row, the rows of
    its key group (the groups `starts`/`ends` cut the rows into, in order) whose values
    are nowhere below its own, every pair checked as the kernel's brute force checks
    it; None when the pairs are many more than the rows (large key groups) or the
    groups do not cut every row, which the kernel counts instead."""
    n = mvals.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    cut = starts.shape[0] > 0 and starts[0] == 0 and ends[-1] == n
    if not (cut and np.array_equal(starts[1:], ends[:-1])):
        return None
    size = ends - starts
    per_row = np.repeat(size, size)  # each row meets every row of its group
    if int(per_row.sum()) > _PAIRS_PER_ROW * n:
        return None
    group_start = np.repeat(starts, size)
    pairs = np.zeros(n + 1, np.int64)
    np.cumsum(per_row, out=pairs[1:])
    counts = np.zeros(n, np.int64)
    for lo, hi in blocks(pairs):
        row = np.repeat(np.arange(lo, hi), per_row[lo:hi])
        other = group_start[row] + np.arange(row.shape[0]) - (pairs[row] - pairs[lo])
        # as the kernel's brute force (NaN is not below; its sweeps of larger groups
        # differ on NaN, which counts never hold)
        below = np.any(mvals[other] < mvals[row], axis=1)
        counts[lo:hi] = np.bincount(row - lo, weights=~below, minlength=hi - lo)
    return counts


def row_ranks(keys: np.ndarray) -> np.ndarray:
    """Per row of `keys` (2-D integers), its rank among the distinct rows in
    lexicographic order: `np.unique(keys, axis=0, return_inverse=True)[1]`. Rows of
    non-negative values that fit in 62 bits together are packed into one integer each,
    which sort as the rows do (numpy's rows are sorted as records, a hundred times
    slower: 18 ms for 10,000 pairs)."""
    width = keys.shape[1]
    if keys.shape[0] == 0 or width == 0:
        rows: np.ndarray = np.unique(keys, axis=0, return_inverse=True)[1]
        return rows.reshape(-1)
    low, high = int(keys.min()), int(keys.max())
    bits = max(high.bit_length(), 1)
    if low < 0 or bits * width > 62:
        rows = np.unique(keys, axis=0, return_inverse=True)[1]
        return rows.reshape(-1)
    packed = np.zeros(keys.shape[0], np.int64)
    for column in range(width):  # the first column the most significant
        packed <<= bits
        packed |= keys[:, column].astype(np.int64)
    ranks: np.ndarray = np.unique(packed, return_inverse=True)[1]
    return ranks.reshape(-1)


def least_owners(
    codes: np.ndarray, owner_bits: int, queried: np.ndarray, support: np.ndarray
) -> None:
    """`group_kernels.self_containment` with numpy's loops: from sorted (key, owner)
    codes, the support of a key is its number of distinct owners, and each queried owner
    takes the least support over its keys (in place)."""
    if codes.shape[0] == 0:
        return
    key = codes >> owner_bits
    new_key = np.r_[True, key[1:] != key[:-1]]
    new_code = np.r_[True, codes[1:] != codes[:-1]]
    group = np.cumsum(new_key) - 1
    distinct = np.bincount(group, weights=new_code).astype(np.int64)[group]
    owner = codes & ((np.int64(1) << owner_bits) - 1)
    asked = queried[owner]
    np.minimum.at(support, owner[asked], distinct[asked])
