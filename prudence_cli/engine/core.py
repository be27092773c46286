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

from collections.abc import Iterator
from dataclasses import dataclass, field

import numba
import numpy as np

from prudence_cli.engine import enumeration_kernels, group_kernels, kernels
from prudence_cli.engine.indexes import (
    _by_rarity,
    _n_elements,
    _Postings,
    _query_sizes_ok,
    _segment_min,
    _segment_sums,
    _StartIndex,
)
from prudence_cli.engine.plan import (
    _BYTES_PER_ELEMENT,
    _BYTES_PER_INSTANCE,
    _BYTES_PER_KEY_ELEMENT,
    _BYTES_PER_USER,
    _SATURATE,
    STRATEGIES,
    SizePlan,
    _binomial_table,
    _binomials,
    _gb,
    _partitions,
    _saturating_mul,
    _sum_binomials,
)
from prudence_cli.engine.problem import MODES, CountingProblem
from prudence_cli.engine.runner import DaskRunner, LocalRunner
from prudence_cli.engine.tasks import _keyed_self_task, _keyed_task, _posting_task
from prudence_cli.errors import BudgetError


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
            group_kernels.scatter_min(support, users, values)

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
            enumeration_kernels.sample_queries(
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
            group_kernels.scatter_min(support, q_owner, counts)
        return int(users.shape[0]) * n
