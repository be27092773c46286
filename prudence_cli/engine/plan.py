"""Work planning of the counting engine: per-size instance counts and strategy, exact
binomials (saturating), the memory model of a partition and the greedy partitioning of
element ranges."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

STRATEGIES = ("auto", "keyed", "posting")
_SATURATE = 2**62
# memory model of a partition (bytes), measured on the kernels' arrays with sort buffers
_BYTES_PER_INSTANCE = 64  # owner, bounds reference, order and packed keys, sort scratch
_BYTES_PER_KEY_ELEMENT = 40  # per element of a key: id, value, bounds, a sorted copy
_BYTES_PER_ELEMENT = 48  # the level's data: lists, values, posting lists, start index
_BYTES_PER_USER = 40  # offsets, supports, partial results


@dataclass(frozen=True)
class SizePlan:
    """The work for one query size: instance counts and the chosen strategy."""

    size: int
    members: int  # s-subsets of every user (keyed strategy)
    queries: int  # the targets' queries of this size
    posting_cost: int  # candidate checks of the posting strategy (estimate)
    strategy: str
    self_queries: bool = False  # keyed: the queries are the member subsets themselves

    @property
    def instances(self) -> int:
        if self.strategy == "posting":
            return self.queries
        return self.members + (0 if self.self_queries else self.queries)


def _partitions(weights: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Contiguous element ranges [lo, hi) with at most `budget` instances each (greedy).

    A single element with more instances than the budget forms a partition of its own.
    """
    ranges = []
    lo = 0
    acc = 0.0
    for e, w in enumerate(weights.tolist()):
        if acc > 0 and acc + w > budget:
            ranges.append((lo, e))
            lo, acc = e, 0.0
        acc += w
    if acc > 0:
        ranges.append((lo, len(weights)))
    return ranges


def _binomial_table(n_max: int, s: int) -> np.ndarray:
    """binom[n, k] = C(n, k) for n ≤ n_max, k < s, saturating at 2**62."""
    table = np.zeros((n_max + 1, max(s, 1)), dtype=np.int64)
    for n in range(n_max + 1):
        for k in range(min(s, n + 1)):
            table[n, k] = min(math.comb(n, k), _SATURATE)
    return table


def _binomials(n: np.ndarray, s: int) -> np.ndarray:
    """C(n, s) per entry, exact, saturating at 2**62."""
    out = np.zeros(n.shape[0], dtype=np.int64)
    for value in np.unique(n).tolist():
        out[n == value] = min(math.comb(int(value), s), _SATURATE) if value >= 0 else 0
    return out


def _saturating_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.minimum(a.astype(float) * b.astype(float), _SATURATE).astype(np.int64)


def _sum_binomials(n: np.ndarray, s: int) -> int:
    values, counts = np.unique(n, return_counts=True)
    total = sum(math.comb(int(v), s) * int(c) for v, c in zip(values, counts, strict=True))
    return min(total, _SATURATE)


def _gb(n_bytes: float) -> str:
    if n_bytes >= 1e9:
        return f"{n_bytes / 1e9:.2f} GB"
    return f"{n_bytes / 1e6:.1f} MB"
