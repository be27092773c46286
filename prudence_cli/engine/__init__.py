"""The counting engine: exact support of knowledge instances (DESIGN.md section 6).

The problem is stated in `problem.py`. Two exact strategies, chosen per query size by
estimated cost, and one seeded approximation:

- ``keyed``: enumerate the s-subsets of every user's list (members) and the targets'
  queries, sort both by key, pair equal keys, and count the members inside each query's
  bounds within the key group (sorted search, Fenwick sweeps). Work is split into
  partitions by the key's first element, balanced from exact per-element counts, so
  memory is bounded by a partition, not by the data.
- ``posting``: for each query, scan the posting list of its rarest element and check the
  other elements of each candidate. Used when member enumeration would be combinatorial
  (e.g. h = all on people with many places).
- sampling: when a level would enumerate more than `max_instances` and `sample` is set,
  each target gets `sample` random instances (seeded), checked exactly with postings; the
  result is then a lower bound of the risk and is reported as sampled.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numba
import numpy as np

from prudence_cli.engine import kernels
from prudence_cli.engine.problem import MATCHES, MODES, CountingProblem, Elements, QuerySpec
from prudence_cli.engine.runner import DaskRunner, LocalRunner
from prudence_cli.errors import BudgetError

__all__ = ["CountingProblem", "Elements", "Engine", "QuerySpec", "Support", "STRATEGIES"]

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


@dataclass(frozen=True)
class Support:
    """The engine's answer: minimum support per user (0 = no query) and how it was got."""

    minimum: np.ndarray
    instances: int  # instances enumerated or sampled
    sampled: bool  # True: `sample` random instances per target, a lower bound of risk


@dataclass
class Engine:
    """Settings of the local engine; `min_support` is its one job."""

    max_instances: int = 1_000_000_000
    jobs: int = 0  # threads; 0 = every core
    sample: int | None = None  # instances per target when a level is over the budget
    seed: int = 0
    partition_instances: int = 8_000_000
    brute_limit: int = 4096  # groups with members × queries up to this are counted naively
    strategy: str = "auto"
    seed_key: tuple[int, ...] = field(default=())
    memory: int | None = None  # bytes a partition may use with the level's data; None: no cap
    runner: LocalRunner | DaskRunner = field(default_factory=LocalRunner, repr=False)
    worker_threads: int | None = None  # numba threads inside each task (None: as set here)

    def plan(self, problem: CountingProblem) -> list[SizePlan]:
        """Estimate the work per query size before any enumeration."""
        spec = problem.queries
        q = spec.elements
        member_lengths = problem.members.lengths
        query_lengths = q.lengths
        post_len = np.bincount(problem.members.elements, minlength=_n_elements(problem))
        rarest = _segment_min(
            post_len[q.elements] if q.elements.size else q.elements.astype(np.int64), q.offsets
        )
        totals = _segment_sums(q.values, q.offsets)
        plans = []
        sizes = np.arange(1, int(spec.size_hi.max(initial=0)) + 1)
        for s in sizes.tolist():
            targets = (spec.size_lo <= s) & (s <= spec.size_hi) & (query_lengths >= s)
            if not targets.any():
                continue
            per_target = _binomials(query_lengths[targets], s)
            if spec.mode == "compositions":
                h_u = np.minimum(spec.compose, totals[targets]).astype(np.int64)
                per_target = _saturating_mul(per_target, _binomials(np.maximum(h_u - 1, 0), s - 1))
            queries = int(min(_SATURATE, per_target.astype(float).sum()))
            members = _sum_binomials(member_lengths, s)
            posting = int(
                min(_SATURATE, float(np.dot(per_target.astype(float), rarest[targets] * s)))
            )
            keyed = members + (0 if problem.self_queries else queries)
            strategy = self.strategy
            if strategy == "auto":
                strategy = "posting" if posting < keyed else "keyed"
            plans.append(SizePlan(s, members, queries, posting, strategy, problem.self_queries))
        return plans

    def min_support(self, problem: CountingProblem) -> Support:
        """Minimum support per user over each user's queries (see problem.py)."""
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown engine strategy {self.strategy!r}")
        plans = self.plan(problem)
        if any(plan.strategy == "keyed" for plan in plans):
            problem = _by_rarity(problem)  # only keyed partitions depend on the labels
        total = sum(plan.instances for plan in plans)
        if self.jobs:
            numba.set_num_threads(min(self.jobs, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
        support = np.full(problem.n_users, kernels.UNSET, dtype=np.int64)
        if total > self.max_instances:
            if not self.sample:
                raise BudgetError(
                    f"would enumerate about {total:,} knowledge instances, more than "
                    f"engine.max_instances = {self.max_instances:,}. Use a smaller h, or set "
                    "engine.sample: N to check N random instances per person (risks are then "
                    "lower bounds, and the catalog says so)"
                )
            instances = self._sampled(problem, support)
            sampled = True
        else:
            for plan in plans:
                if plan.strategy == "keyed":
                    self._keyed(problem, plan.size, support)
                else:
                    self._posting(problem, plan.size, support)
            instances, sampled = total, False
        support[support == kernels.UNSET] = 0
        return Support(support, instances, sampled)

    # --- strategies: plan partitions here, run them as tasks on the runner -------------

    def _partition_budget(self, problem: CountingProblem, s: int, weights: np.ndarray) -> int:
        """Instances per partition: `partition_instances`, or fewer to fit `memory`."""
        if self.memory is None:
            return self.partition_instances
        base = (
            _BYTES_PER_ELEMENT
            * (problem.members.elements.shape[0] + problem.queries.elements.elements.shape[0])
            + _BYTES_PER_USER * problem.n_users
        )
        per_instance = _BYTES_PER_INSTANCE + _BYTES_PER_KEY_ELEMENT * s
        room = self.memory - base
        if room < per_instance:
            raise BudgetError(
                f"the data of this level alone needs about {_gb(base)} in memory, more than "
                f"engine.memory = {_gb(self.memory)}: raise engine.memory"
            )
        budget = int(min(self.partition_instances, room // per_instance))
        heaviest = float(weights.max(initial=0))
        if heaviest > budget:
            raise BudgetError(
                f"at size {s}, one element alone has {heaviest:,.0f} instances (about "
                f"{_gb(base + heaviest * per_instance)} in one partition), more than "
                f"engine.memory = {_gb(self.memory)} allows: raise engine.memory or use a "
                "smaller h"
            )
        return max(budget, 1)

    def _fold(self, support: np.ndarray, results: Iterator[tuple[np.ndarray, np.ndarray]]) -> None:
        for users, values in results:
            kernels.scatter_min(support, users, values)

    def _keyed(self, problem: CountingProblem, s: int, support: np.ndarray) -> None:
        members, spec = problem.members, problem.queries
        n_elements = _n_elements(problem)
        if problem.self_queries:
            index = _StartIndex(members)
            binom = _binomial_table(int(members.lengths.max(initial=0)), s)
            weights = index.weights(s, binom, n_elements)
            budget = self._partition_budget(problem, s, weights)
            tasks = (
                (index.starts(lo, hi), s, n_elements, self.brute_limit, self.worker_threads)
                for lo, hi in _partitions(weights, budget)
            )
            self._fold(support, self.runner.run(_keyed_self_task, problem, tasks))
            return
        binom = _binomial_table(
            int(max(members.lengths.max(initial=0), spec.elements.lengths.max(initial=0))), s
        )
        m_index = _StartIndex(members)
        q_index = _StartIndex(spec.elements)
        weights = m_index.weights(s, binom, n_elements)
        weights += q_index.weights(s, binom, n_elements, _query_sizes_ok(spec, s))
        budget = self._partition_budget(problem, s, weights)
        pairs = (
            (
                m_index.starts(lo, hi),
                q_index.starts(lo, hi),
                s,
                n_elements,
                self.brute_limit,
                self.worker_threads,
            )
            for lo, hi in _partitions(weights, budget)
        )
        self._fold(support, self.runner.run(_keyed_task, problem, pairs))

    def _posting(self, problem: CountingProblem, s: int, support: np.ndarray) -> None:
        spec = problem.queries
        n_elements = _n_elements(problem)
        binom = _binomial_table(int(spec.elements.lengths.max(initial=0)), s)
        q_index = _StartIndex(spec.elements)
        weights = q_index.weights(s, binom, n_elements, _query_sizes_ok(spec, s))
        postings = _Postings(problem.members, n_elements, not problem.ordered)
        budget = self._partition_budget(problem, s, weights * s)
        tasks = (
            (q_index.starts(lo, hi), s, self.worker_threads)
            for lo, hi in _partitions(weights, max(budget // max(s, 1), 1))
        )
        self._fold(support, self.runner.run(_posting_task, (problem, postings), tasks))

    def _sampled(self, problem: CountingProblem, support: np.ndarray) -> int:
        spec = problem.queries
        q = spec.elements
        n = self.sample or 0
        lengths = q.lengths
        totals = _segment_sums(q.values, q.offsets)
        if spec.mode == "compositions":
            width = np.minimum(spec.compose, totals).astype(np.int64)
            usable = (spec.size_hi > 0) & (lengths > 0)
        else:
            width = np.minimum(spec.size_hi, lengths).astype(np.int64)
            usable = (width >= np.maximum(spec.size_lo, 1)) & (width > 0)
        users = np.flatnonzero(usable)
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=self.seed_key))
        postings = _Postings(problem.members, _n_elements(problem), not problem.ordered)
        mode = MODES.index(spec.mode)
        upper = spec.upper if spec.upper is not None else np.full(q.values.shape, np.inf)
        per_chunk = max(1, self.partition_instances // max(n * int(width.max(initial=1)), 1))
        for start in range(0, users.shape[0], per_chunk):
            chunk = users[start : start + per_chunk]
            sizes = width[chunk]
            n_queries = chunk.shape[0] * n
            randoms = rng.random((n_queries, int(sizes.max(initial=1))))
            capacity = int(sizes.sum()) * n
            q_offsets = np.zeros(n_queries + 1, dtype=np.int64)
            q_elements = np.empty(capacity, dtype=np.int32)
            q_lo = np.empty(capacity)
            q_hi = np.empty(capacity)
            q_ref = np.empty(n_queries, dtype=np.int64)
            q_owner = np.empty(n_queries, dtype=np.int64)
            kernels.sample_queries(
                q.offsets,
                q.elements,
                q.values,
                upper,
                chunk,
                sizes,
                n,
                mode,
                spec.compose,
                totals,
                spec.delta,
                randoms,
                q_offsets,
                q_elements,
                q_lo,
                q_hi,
                q_ref,
                q_owner,
            )
            counts = postings.verify(problem, q_offsets, q_elements, q_lo, q_hi, q_ref)
            kernels.scatter_min(support, q_owner, counts)
        return int(users.shape[0]) * n


# --- partition tasks: module-level functions of (shared data, partition arguments), so
# that they pickle; each returns the partial minimum support of the users it touched.


def _partial(n_users: int, owners: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    local = np.full(n_users, kernels.UNSET, dtype=np.int64)
    kernels.scatter_min(local, owners, counts)
    touched = np.flatnonzero(local != kernels.UNSET)
    return touched, local[touched]


def _set_threads(threads: int | None) -> None:
    if threads:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]


def _keyed_task(
    problem: CountingProblem,
    m_starts: np.ndarray,
    q_starts: np.ndarray,
    s: int,
    n_elements: int,
    brute_limit: int,
    threads: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """One partition of keyed counting: the members' and queries' keys starting in it."""
    _set_threads(threads)
    qkeys, qlo, qhi, qref, owners = _enumerate_queries(problem.queries, q_starts, s)
    if qkeys.shape[0] == 0:
        return _partial(problem.n_users, owners, np.zeros(0, dtype=np.int64))
    mkeys, mvals, mown = _enumerate_members(problem.members, m_starts, s)
    m_order = _key_order(mkeys, n_elements, mown if problem.ordered else None)
    mkeys, mvals, mown = mkeys[m_order], mvals[m_order], mown[m_order]
    if problem.ordered:
        keep = kernels.distinct_rows(mkeys, mown)
        mkeys, mvals = mkeys[keep], mvals[keep]
    q_order = _key_order(qkeys, n_elements)
    qkeys, qlo, qhi = qkeys[q_order], qlo[q_order], qhi[q_order]
    qref, owners = qref[q_order], owners[q_order]
    qs, qe, ms, me = kernels.match_groups(mkeys, qkeys)
    match = MATCHES.index(problem.match)
    counts = kernels.grouped_counts(match, mvals, qlo, qhi, qref, qs, qe, ms, me, brute_limit)
    return _partial(problem.n_users, owners, counts)


def _keyed_self_task(
    problem: CountingProblem,
    starts: np.ndarray,
    s: int,
    n_elements: int,
    brute_limit: int,
    threads: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """One partition of keyed counting when the queries are the members' own subsets:
    each key group is counted once, and every queried member row takes its count."""
    _set_threads(threads)
    members, spec = problem.members, problem.queries
    queried = (spec.size_lo <= s) & (s <= spec.size_hi)
    bits = max(1, int(n_elements).bit_length())
    owner_bits = max(1, int(members.n_users).bit_length())
    if problem.match == "contains" and bits * s + owner_bits <= 63:
        owners = np.repeat(np.arange(members.n_users, dtype=np.int64), members.lengths)
        codes = _enumerate_codes(members, owners, starts, s, bits, owner_bits)
        codes.sort()
        local = np.full(problem.n_users, kernels.UNSET, dtype=np.int64)
        kernels.self_containment(codes, owner_bits, queried, local)
        touched = np.flatnonzero(local != kernels.UNSET)
        return touched, local[touched]
    keys, vals, own = _enumerate_members(members, starts, s)
    order = _key_order(keys, n_elements, own if problem.ordered else None)
    keys, vals, own = keys[order], vals[order], own[order]
    if problem.ordered:
        keep = kernels.distinct_rows(keys, own)
        keys, vals, own = keys[keep], vals[keep], own[keep]
    group_starts, group_ends = kernels.runs(keys)
    if problem.match == "contains":
        counts = np.repeat(group_ends - group_starts, group_ends - group_starts)
    else:
        counts = kernels.self_dominance(vals, group_starts, group_ends, brute_limit)
    rows = queried[own]
    return _partial(problem.n_users, own[rows], counts[rows])


def _posting_task(
    shared: tuple[CountingProblem, _Postings],
    q_starts: np.ndarray,
    s: int,
    threads: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """One partition of posting-list checks: the queries whose keys start in it."""
    _set_threads(threads)
    problem, postings = shared
    qkeys, qlo, qhi, qref, owners = _enumerate_queries(problem.queries, q_starts, s)
    if qkeys.shape[0] == 0:
        return _partial(problem.n_users, owners, np.zeros(0, dtype=np.int64))
    offsets = np.arange(0, qkeys.size + 1, s, dtype=np.int64)
    counts = postings.verify(problem, offsets, qkeys.ravel(), qlo.ravel(), qhi.ravel(), qref)
    return _partial(problem.n_users, owners, counts)


class _StartIndex:
    """Positions of a CSR list ordered by element, so that a partition [lo, hi) of element
    ids is a contiguous slice of first positions."""

    def __init__(self, lists: Elements) -> None:
        self.lists = lists
        self.order = np.argsort(lists.elements, kind="stable")
        self.sorted = lists.elements[self.order]
        self.owners = np.repeat(np.arange(lists.n_users, dtype=np.int64), lists.lengths)

    def starts(self, lo: int, hi: int) -> np.ndarray:
        a, b = np.searchsorted(self.sorted, [lo, hi])
        return self.order[a:b]

    def weights(
        self, s: int, binom: np.ndarray, n_elements: int, users: np.ndarray | None = None
    ) -> np.ndarray:
        """Exact number of s-subsets per first element (optionally only for `users`)."""
        ends = self.lists.offsets[1:][self.owners]
        remaining = ends - 1 - np.arange(self.lists.elements.shape[0])
        w = binom[np.maximum(remaining, 0), s - 1].astype(float)
        w[remaining < s - 1] = 0
        if users is not None:
            w *= users[self.owners]
        return np.bincount(self.lists.elements, weights=w, minlength=n_elements)


class _Postings:
    """Distinct (element, user) pairs grouped by element, for candidate scans."""

    def __init__(self, members: Elements, n_elements: int, distinct: bool = False) -> None:
        """`distinct`: no list repeats an element (unordered problems), so every
        (element, user) pair is already distinct and a stable sort suffices."""
        owners = np.repeat(np.arange(members.n_users, dtype=np.int64), members.lengths)
        if distinct:
            self.users = owners[np.argsort(members.elements, kind="stable")]
            counts = np.bincount(members.elements, minlength=n_elements)
        else:
            n = max(members.n_users, 1)
            pairs = np.unique(members.elements.astype(np.int64) * n + owners)
            self.users = pairs % n
            counts = np.bincount(pairs // n, minlength=n_elements)
        self.offsets = np.zeros(n_elements + 1, dtype=np.int64)
        np.cumsum(counts, out=self.offsets[1:])
        self.members = members

    def verify(
        self,
        problem: CountingProblem,
        q_offsets: np.ndarray,
        q_elements: np.ndarray,
        q_lo: np.ndarray,
        q_hi: np.ndarray,
        q_ref: np.ndarray,
    ) -> np.ndarray:
        counts = np.zeros(q_offsets.shape[0] - 1, dtype=np.int64)
        m = self.members
        kernels.verify_queries(
            MATCHES.index(problem.match),
            problem.ordered,
            m.offsets,
            m.elements,
            m.values,
            self.offsets,
            self.users,
            q_offsets,
            q_elements,
            q_lo,
            q_hi,
            q_ref,
            counts,
        )
        return counts


def _enumerate_members(
    members: Elements, starts: np.ndarray, s: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    owners = np.repeat(np.arange(members.n_users, dtype=np.int64), members.lengths)
    empty_keys = np.empty((0, s), dtype=np.int32)
    n = kernels.enumerate_members(
        members.offsets,
        owners,
        members.elements,
        members.values,
        starts,
        s,
        empty_keys,
        np.empty((0, s)),
        np.empty(0, np.int64),
    )
    keys = np.empty((n, s), dtype=np.int32)
    vals = np.empty((n, s))
    own = np.empty(n, dtype=np.int64)
    kernels.enumerate_members(
        members.offsets, owners, members.elements, members.values, starts, s, keys, vals, own
    )
    return keys, vals, own


def _enumerate_codes(
    members: Elements,
    owners: np.ndarray,
    starts: np.ndarray,
    s: int,
    bits: int,
    owner_bits: int,
) -> np.ndarray:
    args = (members.offsets, owners, members.elements, starts, s, bits, owner_bits)
    n = kernels.enumerate_codes(*args, np.empty(0, np.int64))
    codes = np.empty(n, dtype=np.int64)
    kernels.enumerate_codes(*args, codes)
    return codes


def _enumerate_queries(
    spec: QuerySpec, starts: np.ndarray, s: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    q = spec.elements
    owners = np.repeat(np.arange(q.n_users, dtype=np.int64), q.lengths)
    upper = spec.upper if spec.upper is not None else np.full(q.values.shape, np.inf)
    totals = _segment_sums(q.values, q.offsets)
    mode = MODES.index(spec.mode)

    def run(
        keys: np.ndarray, lo: np.ndarray, hi: np.ndarray, ref: np.ndarray, own: np.ndarray
    ) -> int:
        return int(
            kernels.enumerate_queries(
                q.offsets,
                owners,
                q.elements,
                q.values,
                upper,
                starts,
                s,
                spec.size_lo,
                spec.size_hi,
                totals,
                mode,
                spec.compose,
                spec.delta,
                keys,
                lo,
                hi,
                ref,
                own,
            )
        )

    n = run(
        np.empty((0, s), np.int32),
        np.empty((0, s)),
        np.empty((0, s)),
        np.empty(0, np.int64),
        np.empty(0, np.int64),
    )
    out = (
        np.empty((n, s), np.int32),
        np.empty((n, s)),
        np.empty((n, s)),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
    )
    run(*out)
    return out


def _by_rarity(problem: CountingProblem) -> CountingProblem:
    """The same problem with element ids ranked by how few users hold them (rarest = 0).

    Keys are partitioned by their first element, which for unordered problems is the
    smallest id: ranked this way it is the key's rarest element, so no partition is made
    of one very popular place. Supports do not depend on the labels. Not for ordered
    problems (their first element is fixed by the order) nor ratios (their reference
    breaks ties by position).
    """
    spec = problem.queries
    if problem.ordered or spec.mode == "ratios" or not problem.members.elements.size:
        return problem
    n = _n_elements(problem)
    popularity = np.bincount(problem.members.elements, minlength=n)
    rank = np.empty(n, dtype=np.int32)
    rank[np.argsort(popularity, kind="stable")] = np.arange(n, dtype=np.int32)
    members, _ = _relabel(problem.members, rank, None)
    if problem.self_queries:
        return replace(problem, members=members, queries=replace(spec, elements=members))
    queries, upper = _relabel(spec.elements, rank, spec.upper)
    return replace(problem, members=members, queries=replace(spec, elements=queries, upper=upper))


def _relabel(
    lists: Elements, rank: np.ndarray, upper: np.ndarray | None
) -> tuple[Elements, np.ndarray | None]:
    """Lists with elements renamed by `rank`, re-sorted within each user."""
    owners = np.repeat(np.arange(lists.n_users, dtype=np.int64), lists.lengths)
    renamed = rank[lists.elements]
    order = np.argsort(owners * len(rank) + renamed)  # elements are distinct per user
    relabelled = Elements(lists.offsets, renamed[order], lists.values[order])
    return relabelled, (upper[order] if upper is not None else None)


def _query_sizes_ok(spec: QuerySpec, s: int) -> np.ndarray:
    return ((spec.size_lo <= s) & (s <= spec.size_hi)).astype(float)


def _n_elements(problem: CountingProblem) -> int:
    return (
        int(
            max(
                problem.members.elements.max(initial=-1),
                problem.queries.elements.elements.max(initial=-1),
            )
        )
        + 1
    )


def _key_order(keys: np.ndarray, n_elements: int, owners: np.ndarray | None = None) -> np.ndarray:
    """Row order sorting keys lexicographically (then by owner when given); keys are
    packed into one int64 when they fit."""
    s = keys.shape[1]
    bits = max(1, int(n_elements).bit_length())
    if bits * s <= 63:
        packed = np.zeros(keys.shape[0], dtype=np.int64)
        for j in range(s):
            packed = (packed << bits) | keys[:, j].astype(np.int64)
        if owners is None:
            return np.argsort(packed, kind="stable")
        return np.lexsort((owners, packed))
    columns = [keys[:, j] for j in range(s - 1, -1, -1)]
    return np.lexsort(([owners] if owners is not None else []) + columns)


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


def _segment_sums(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    cumulative = np.concatenate([[0.0], np.cumsum(values, dtype=float)])
    return cumulative[offsets[1:]] - cumulative[offsets[:-1]]


def _segment_min(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Minimum per CSR segment; _SATURATE for empty segments."""
    out = np.full(offsets.shape[0] - 1, _SATURATE, dtype=np.int64)
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    if nonempty.size:
        out[nonempty] = np.minimum.reduceat(values, offsets[nonempty])
    return out


def distinct_subsequences(lists: Elements, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct h-subsequence of the lists (rows of a (k, h) array, sorted) and the
    number of lists holding it."""
    n_elements = int(lists.elements.max(initial=-1)) + 1
    starts = np.arange(lists.elements.shape[0], dtype=np.int64)
    keys, _, owners = _enumerate_members(lists, starts, h)
    order = _key_order(keys, n_elements, owners)
    keys, owners = keys[order], owners[order]
    keep = kernels.distinct_rows(keys, owners)
    keys = keys[keep]
    run_starts, run_ends = kernels.runs(keys)
    return keys[run_starts], (run_ends - run_starts).astype(np.int64)


def containment_counts(lists: Elements, queries: np.ndarray, ordered: bool = True) -> np.ndarray:
    """For each query (a row of `queries`), the number of lists holding it (as a
    subsequence when `ordered`, else as a subset of a sorted list)."""
    if queries.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    n_elements = max(int(lists.elements.max(initial=-1)), int(queries.max(initial=-1))) + 1
    h = queries.shape[1]
    offsets = np.arange(0, queries.size + 1, h, dtype=np.int64)
    flat = queries.ravel().astype(np.int32)
    spec = QuerySpec(
        lists, size_lo=np.zeros(lists.n_users, np.int64), size_hi=np.zeros(lists.n_users, np.int64)
    )
    problem = CountingProblem(lists, spec, match="contains", ordered=ordered)
    inf = np.full(flat.shape, np.inf)
    return _Postings(lists, n_elements, not ordered).verify(
        problem, offsets, flat, -inf, inf, np.zeros(queries.shape[0], dtype=np.int64)
    )


def max_over_containing(lists: Elements, queries: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per list: the largest value of the queries it holds as a subsequence (0 if none)."""
    out = np.zeros(lists.n_users)
    if queries.shape[0] == 0:
        return out
    n_elements = max(int(lists.elements.max(initial=-1)), int(queries.max(initial=-1))) + 1
    postings = _Postings(lists, n_elements)
    h = queries.shape[1]
    offsets = np.arange(0, queries.size + 1, h, dtype=np.int64)
    order = np.argsort(-values, kind="stable")  # largest first: later ones rarely matter
    kernels.spread_max(
        lists.offsets,
        lists.elements,
        postings.offsets,
        postings.users,
        offsets,
        queries[order].ravel().astype(np.int32),
        values[order].astype(float),
        out,
    )
    return out


def _gb(n_bytes: float) -> str:
    if n_bytes >= 1e9:
        return f"{n_bytes / 1e9:.2f} GB"
    return f"{n_bytes / 1e6:.1f} MB"
