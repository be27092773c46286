"""The counting engine: exact support of knowledge instances (DESIGN.md section 6).

The problem the engine solves, in its own words (no attack, no dataview):

  Every user v holds a sorted list of elements (e.g. locations), each with a value
  (e.g. a visit count). A *query* of user u is an s-subset S of u's eligible elements with
  a threshold per element. Its support is the number of users v that hold every element
  of S with a value at least the threshold. The engine returns, per user, the minimum
  support over all of that user's queries — so an attack's risk is 1 / minimum.

Two exact strategies, chosen per subset size by estimated cost:

- ``keyed``: enumerate the s-subsets of every user (members) and of every target (queries),
  sort both by key, pair equal keys, and count dominance between member values and query
  thresholds inside each key group. Work is split into partitions by the subset's smallest
  element (balanced from exact per-element counts), so memory is bounded by a partition.
- ``posting``: for each query, scan the posting list of its rarest element and check the
  other elements by binary search. Used when member enumeration would be combinatorial
  (e.g. h = all on users with many elements).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from prudence_cli.engine import kernels
from prudence_cli.errors import BudgetError

STRATEGIES = ("auto", "keyed", "posting")
_SATURATE = 2**62


@dataclass(frozen=True)
class SubsetProblem:
    """Arrays of a dominance-support problem; see the module docstring.

    offsets: int64, n_users + 1 — user u's elements are elements[offsets[u]:offsets[u+1]]
    elements: int32, ascending within each user; values: int32 per element
    thresholds: int32 per element (the known value); eligible: bool per element
    sizes: int64 per user — the subset size s_u of u's queries; 0 = no query
    """

    offsets: np.ndarray
    elements: np.ndarray
    values: np.ndarray
    thresholds: np.ndarray
    eligible: np.ndarray
    sizes: np.ndarray

    @property
    def n_users(self) -> int:
        return int(self.offsets.shape[0] - 1)


@dataclass(frozen=True)
class SizePlan:
    """The work for one subset size: instance counts and the chosen strategy."""

    size: int
    members: int  # s-subsets of every user (keyed strategy)
    queries: int  # s-subsets of the targets' eligible elements
    posting_cost: int  # candidate checks of the posting strategy (upper estimate)
    strategy: str

    @property
    def instances(self) -> int:
        return self.members + self.queries if self.strategy == "keyed" else self.queries


@dataclass
class Engine:
    """Settings of the local engine; `min_support` is its one job."""

    max_instances: int = 1_000_000_000
    jobs: int = 0  # threads; 0 = every core
    partition_instances: int = 8_000_000
    brute_limit: int = 4096  # groups with members × queries up to this are counted naively
    strategy: str = "auto"

    def plan(self, problem: SubsetProblem) -> list[SizePlan]:
        """Estimate the work per subset size before any enumeration."""
        p = problem
        lengths = np.diff(p.offsets)
        eligible_counts = _segment_sums(p.eligible.astype(np.int64), p.offsets)
        post_len = np.bincount(p.elements, minlength=int(p.elements.max(initial=-1)) + 1)
        plans = []
        for s in np.unique(p.sizes[p.sizes > 0]).tolist():
            targets = p.sizes == s
            members = _sum_binomials(lengths, s)
            queries = _sum_binomials(eligible_counts[targets], s)
            rarest = _segment_min(np.where(p.eligible, post_len[p.elements], _SATURATE), p.offsets)[
                targets
            ]
            per_query = _binomials(eligible_counts[targets], s)
            posting = int(min(_SATURATE, float(np.dot(per_query.astype(float), rarest * s))))
            strategy = self.strategy
            if strategy == "auto":
                strategy = "posting" if posting < members + queries else "keyed"
            plans.append(SizePlan(s, members, queries, posting, strategy))
        return plans

    def min_support(
        self,
        problem: SubsetProblem,
        progress: Callable[[float], None] | None = None,
    ) -> np.ndarray:
        """Minimum support per user (int64; 0 for users without a query)."""
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown engine strategy {self.strategy!r}")
        plans = self.plan(problem)
        total = sum(plan.instances for plan in plans)
        if total > self.max_instances:
            raise BudgetError(
                f"would enumerate about {total:,} knowledge instances, more than "
                f"engine.max_instances = {self.max_instances:,}: use a smaller h, or raise "
                "engine.max_instances if the machine has the time"
            )
        if self.jobs:
            numba.set_num_threads(min(self.jobs, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
        support = np.full(problem.n_users, kernels.UNSET, dtype=np.int64)
        done = 0
        for plan in plans:
            if plan.strategy == "keyed":
                self._keyed(problem, plan.size, support)
            else:
                self._posting(problem, plan.size, support)
            done += plan.instances
            if progress is not None and total:
                progress(done / total)
        support[support == kernels.UNSET] = 0
        return support

    def _keyed(self, p: SubsetProblem, s: int, support: np.ndarray) -> None:
        query = _query_table(p, s)
        n_elements = int(p.elements.max(initial=-1)) + 1
        binom = _binomial_table(int(np.diff(p.offsets).max(initial=0)), s)
        weights = _first_element_counts(p.offsets, p.elements, s, binom, n_elements)
        weights += _first_element_counts(query[0], query[1], s, binom, n_elements)
        for lo, hi in _partitions(weights, self.partition_instances):
            mkeys, mvals, _ = _enumerate(p.offsets, p.elements, p.values, s, lo, hi, binom)
            qkeys, qvals, owners = _enumerate(*query, s, lo, hi, binom)
            if qkeys.shape[0] == 0:
                continue
            m_order = _key_order(mkeys, n_elements)
            q_order = _key_order(qkeys, n_elements)
            mkeys, mvals = mkeys[m_order], mvals[m_order]
            qkeys, qvals, owners = qkeys[q_order], qvals[q_order], owners[q_order]
            qs, qe, ms, me = kernels.match_groups(mkeys, qkeys)
            counts = kernels.grouped_dominance(mvals, qvals, qs, qe, ms, me, self.brute_limit)
            kernels.scatter_min(support, owners, counts)

    def _posting(self, p: SubsetProblem, s: int, support: np.ndarray) -> None:
        qoffsets, qelements, qthresholds = _query_table(p, s)
        order = np.argsort(p.elements, kind="stable")
        owners = np.repeat(np.arange(p.n_users, dtype=np.int64), np.diff(p.offsets))
        n_elements = int(p.elements.max(initial=-1)) + 1
        post_offsets = np.zeros(n_elements + 1, dtype=np.int64)
        np.cumsum(np.bincount(p.elements, minlength=n_elements), out=post_offsets[1:])
        targets = np.flatnonzero(p.sizes == s).astype(np.int64)
        result = np.full(p.n_users, kernels.UNSET, dtype=np.int64)
        kernels.posting_support(
            p.offsets,
            p.elements,
            p.values,
            post_offsets,
            owners[order],
            p.values[order],
            qoffsets,
            qelements,
            qthresholds,
            s,
            targets,
            result,
        )
        np.minimum(support, result, out=support)


def _query_table(p: SubsetProblem, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR of the eligible elements of the users whose queries have size s."""
    owners = np.repeat(np.arange(p.n_users), np.diff(p.offsets))
    keep = p.eligible & (p.sizes[owners] == s)
    offsets = np.zeros(p.n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(owners[keep], minlength=p.n_users), out=offsets[1:])
    return offsets, p.elements[keep], p.thresholds[keep]


def _enumerate(
    offsets: np.ndarray,
    elements: np.ndarray,
    values: np.ndarray,
    s: int,
    lo: int,
    hi: int,
    binom: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = int(kernels.count_subsets(offsets, elements, s, binom, lo, hi))
    keys = np.empty((n, s), dtype=np.int32)
    vals = np.empty((n, s), dtype=np.int32)
    owners = np.empty(n, dtype=np.int64)
    written = kernels.enumerate_subsets(offsets, elements, values, s, lo, hi, keys, vals, owners)
    assert written == n
    return keys, vals, owners


def _key_order(keys: np.ndarray, n_elements: int) -> np.ndarray:
    """Row order that sorts keys lexicographically (packed into int64 when it fits)."""
    s = keys.shape[1]
    bits = max(1, int(n_elements).bit_length())
    if bits * s <= 63:
        packed = np.zeros(keys.shape[0], dtype=np.int64)
        for j in range(s):
            packed = (packed << bits) | keys[:, j].astype(np.int64)
        return np.argsort(packed, kind="stable")
    return np.lexsort(keys.T[::-1])


def _first_element_counts(
    offsets: np.ndarray, elements: np.ndarray, s: int, binom: np.ndarray, n_elements: int
) -> np.ndarray:
    """Exact number of s-subsets per smallest element (for balanced partitions)."""
    lengths = np.diff(offsets)
    position = np.arange(elements.shape[0]) - np.repeat(offsets[:-1], lengths)
    remaining = np.repeat(lengths, lengths) - 1 - position
    weights = binom[remaining, s - 1]
    return np.bincount(elements, weights=weights.astype(float), minlength=n_elements)


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
        out[n == value] = min(math.comb(int(value), s), _SATURATE)
    return out


def _sum_binomials(n: np.ndarray, s: int) -> int:
    values, counts = np.unique(n, return_counts=True)
    total = sum(math.comb(int(v), s) * int(c) for v, c in zip(values, counts, strict=True))
    return min(total, _SATURATE)


def _segment_sums(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    cumulative = np.concatenate([[0], np.cumsum(values)])
    return cumulative[offsets[1:]] - cumulative[offsets[:-1]]


def _segment_min(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Minimum per CSR segment; _SATURATE for empty segments."""
    out = np.full(offsets.shape[0] - 1, _SATURATE, dtype=np.int64)
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    if nonempty.size:
        out[nonempty] = np.minimum.reduceat(values, offsets[nonempty])
    return out
