"""Work planning of the counting engine: per-size instance counts and strategy, binomial
counts (decided in log space, saturating, never a table), the memory model of a partition
and the greedy partitioning of element ranges."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

STRATEGIES = ("auto", "keyed", "posting")
_SATURATE = 2**62
_LOG_SATURATE = math.log(_SATURATE)
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


@lru_cache(maxsize=1 << 16)
def binomial(n: int, k: int) -> int:
    """C(n, k), saturating at 2**62. Whether it fits is decided from the closed form in log
    space (lgamma), so a count that would not fit is never formed; below that it is exact,
    by the multiplicative formula with every intermediate under 2**63 (no big integers).
    Cached: each distinct (n, k) is worked out once."""
    if n < 0 or k < 0 or k > n:
        return 0
    k = min(k, n - k)
    log = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    if log > _LOG_SATURATE + 1e-9:
        return _SATURATE
    value = 1
    for i in range(1, k + 1):  # value = C(n - k + i, i), exactly; k < 63 here
        m = n - k + i
        value = (value // i) * m + (value % i) * m // i
        if value >= _SATURATE:
            return _SATURATE
    return value


def _binomials(n: np.ndarray, s: int) -> np.ndarray:
    """C(n, s) per entry, saturating at 2**62: one `binomial` per distinct value (or per
    value up to the largest, when that is fewer than the entries: no sort then)."""
    n = np.asarray(n, dtype=np.int64)
    top = int(n.max(initial=-1))
    if top < n.shape[0]:
        table = np.array([binomial(v, s) for v in range(top + 1)] + [0], dtype=np.int64)
        return table[np.where(n >= 0, n, top + 1)]
    values, inverse = np.unique(n, return_inverse=True)
    counts = np.array([binomial(int(v), s) for v in values.tolist()], dtype=np.int64)
    return counts[inverse.reshape(-1)]


def _saturating_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.minimum(a.astype(float) * b.astype(float), _SATURATE).astype(np.int64)


def _sum_binomials(n: np.ndarray, s: int) -> int:
    """Σ C(n_i, s), saturating at 2**62 (summed in floating point)."""
    values, counts = np.unique(np.asarray(n, dtype=np.int64), return_counts=True)
    total = sum(float(binomial(int(v), s)) * int(c) for v, c in zip(values, counts, strict=True))
    return int(min(total, _SATURATE))


def _gb(n_bytes: float) -> str:
    if n_bytes >= 1e9:
        return f"{n_bytes / 1e9:.2f} GB"
    return f"{n_bytes / 1e6:.1f} MB"
