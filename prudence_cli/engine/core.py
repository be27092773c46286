"""The counting engine: exact support of knowledge instances (DESIGN.md section 6).

The problem is stated in `problem.py`. Two exact strategies, chosen per query size by
estimated cost, and one seeded approximation:

- ``keyed``: enumerate the s-subsets of every user's list (members) and the targets'
  queries, sort both by key, pair equal keys, and count the members inside each query's
  bounds within the key group (sorted search, Fenwick sweeps). Work is split into
  partitions by the key's first element, balanced from exact per-element counts, so
  memory is bounded by a partition, not by the data.
- ``posting``: for each query, scan the posting list of its rarest element and check the
  other elements of each candidate. Used when member enumeration would be combinatorial.

A target whose query is its whole record (h = all, or h at or above its length) is one
explicit query checked against the posting lists (`whole.py`), before any plan: nothing
is enumerated for it, whatever the record's length. Instance counts are binomials decided
in log space and saturating (`plan.py`), each distinct (length, size) worked out once.

When a level would enumerate more than `max_instances` and `sample` is set, it is sampled
(`sampling.py`): a target with at most `sample` instances has them all checked (exact);
every other one gets its rarest-elements query and up to `sample` random ones (seeded),
drawn in rounds and stopped once its support is 1. The result is a lower bound of risk
and is reported as sampled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from prudence_cli.engine import compiled, jit, ranged, ranged_sampled
from prudence_cli.engine.indexes import _by_rarity, _Indexes, _n_elements, _query_sizes_ok
from prudence_cli.engine.jit import set_threads
from prudence_cli.engine.plan import (
    _BYTES_PER_INSTANCE,
    _BYTES_PER_KEY_ELEMENT,
    STRATEGIES,
    SizePlan,
    _gb,
    _partitions,
    _query_sizes,
    drawing_targets,
    level_bytes,
    plan_cost,
    shard_bytes,
    size_plans,
    size_work,
    work_cost,
)
from prudence_cli.engine.problem import CountingProblem, Support
from prudence_cli.engine.ranged import RangedProblem
from prudence_cli.engine.runner import DaskRunner, LocalRunner
from prudence_cli.engine.sampling import sample_support
from prudence_cli.engine.shards import (
    Shard,
    ShardBudget,
    fitted_shards,
    reached,
    shard,
    shard_positions,
)
from prudence_cli.engine.tasks import (
    _keyed_self_task,
    _keyed_task,
    _posting_task,
    _whole_task,
    _with_postings,
    fold_results,
)
from prudence_cli.engine.whole import whole_in_keyed, whole_targets, without_whole
from prudence_cli.errors import BudgetError

_OVERHEAD_PER_ELEMENT = 1.5  # see Engine.overhead

# a level: whole here, or held in ranges of users (engine/ranged.py)
Level = CountingProblem | RangedProblem


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
    # an exact level whose `cost` is at least `prune_from` first counts the next smaller h
    # when that costs `prune_gain` times less, and skips the people it puts at risk 1
    # (prune_from 0: never; see attacks/base.py)
    prune_from: int = 2_000_000
    prune_gain: float = 2.0
    _last_work: tuple[Level, Any] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def sample_key(self) -> int:
        """The key of the random numbers of this level's sampled draws
        (sampling.uniforms): drawn from the config's seed and the level's place in the
        run (`seed_key`)."""
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=self.seed_key))
        return int(rng.integers(0, 2**64, dtype=np.uint64))

    def worker(self) -> tuple[int | None, bool]:
        """How a task's kernels run: numba's threads in it, and compiled or not (as here:
        a Dask worker's process has chosen nothing). A choice left pending until the
        first kernel is called (jit.choose) is made now, on the presence of the kernels
        in numba's cache: a level counted only in tasks calls none here first."""
        return self.worker_threads, jit.runs_compiled(compiled.kernels.candidates)

    def plan(self, problem: CountingProblem) -> list[SizePlan]:
        """Estimate the work per query size before any enumeration (whole-record queries
        aside: see `whole_targets`)."""
        holders = np.bincount(problem.members.elements, minlength=_n_elements(problem))
        sizes = _query_sizes(problem.queries)
        work = size_work(problem, holders, sizes)
        return size_plans(sizes, work, problem.self_queries, self.strategy)

    def instances(self, problem: Level) -> int:
        """The instances an exact count of `problem` enumerates (what the budget bounds):
        one per whole-record query, and the plan's of the rest."""
        if isinstance(problem, RangedProblem):
            return self._ranged_work(problem).total
        return self._work(problem)[3]

    def cost(self, problem: Level) -> int:
        """The work of an exact count of `problem` by the strategies `plan` chooses: the
        instances enumerated by keyed sizes, the candidate checks of posting sizes, and the
        elements of the whole-record queries (saturating)."""
        if isinstance(problem, RangedProblem):
            planned = self._ranged_work(problem)
            return work_cost(problem.match, planned.whole_elements, planned.plans)
        whole, _, plans, _ = self._work(problem)
        return plan_cost(problem, whole, plans)

    def overhead(self, problem: Level) -> int:
        """What counting `problem` costs whatever its instances, in the units of `cost`:
        relabelling, start indexes, posting lists and plans over every element of its
        lists — about 1.5 instances' worth per element (measured on 1M people)."""
        if isinstance(problem, RangedProblem):
            return int(_OVERHEAD_PER_ELEMENT * self._ranged_work(problem).lists)
        lists = problem.members.elements.shape[0]
        if not problem.self_queries:
            lists += problem.queries.elements.elements.shape[0]
        return int(_OVERHEAD_PER_ELEMENT * lists)

    def samples(self, problem: Level) -> bool:
        """True when counting `problem` would be sampled (some risk a lower bound): it is
        over the budget, `sample` is set, and some target has more than `sample`
        instances, not a whole record."""
        if isinstance(problem, RangedProblem):
            planned = self._ranged_work(problem)
            over = bool(self.sample) and planned.total > self.max_instances
            return over and bool(planned.plans) and ranged.draws(self, problem)
        _, rest, plans, total = self._work(problem)
        over = bool(self.sample) and total > self.max_instances and bool(plans)
        return over and bool(self._drawn(rest).any())

    def _drawn(self, problem: CountingProblem) -> np.ndarray:
        """The targets a sampled count draws queries for (plan.drawing_targets)."""
        return drawing_targets(problem.queries, self.sample or 0)

    def _work(
        self, problem: CountingProblem
    ) -> tuple[np.ndarray, CountingProblem, list[SizePlan], int]:
        """The whole-record targets, the problem left without them, its plans, and the
        instances of it all (one per whole record): the budget's measure. The last
        problem's are kept: an attack asks for its cost, then counts it."""
        if self._last_work is not None and self._last_work[0] is problem:
            return self._last_work[1]
        whole = whole_targets(problem)
        rest = without_whole(problem, whole) if whole.any() else problem
        plans = self.plan(rest)
        work = whole, rest, plans, int(whole.sum()) + sum(plan.instances for plan in plans)
        self._last_work = (problem, work)
        return work

    def forget(self) -> None:
        """Keeps no plan of the last level asked about (`_work`): of a level held on the
        workers, that would keep it there."""
        self._last_work = None

    def _ranged_work(self, problem: RangedProblem) -> ranged.Work:
        """A ranged level's plan (ranged.work), the last one's kept as `_work` does."""
        if self._last_work is not None and self._last_work[0] is problem:
            planned: ranged.Work = self._last_work[1]
            return planned
        planned = ranged.work(self, problem)
        self._last_work = (problem, planned)
        return planned

    def min_support(self, problem: Level, floats: bool = False) -> Support:
        """Minimum support per user over each user's queries (see problem.py); of a level
        held in ranges of users, counted from them (engine/ranged.py). With `floats`, the
        supports of a level counted in ranges (held in them, or split into the runner's
        shards) are float64 (whole numbers, exact): a vector its caller may turn into
        the risks in place (attacks/base.py), with none beside it; others stay int64."""
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown engine strategy {self.strategy!r}")
        if isinstance(problem, RangedProblem):
            planned = self._ranged_work(problem)
            self._last_work = None
            self._within_budget(planned.total)
            # over the budget, with sizes to draw from (whole records never are sampled)
            over = planned.total > self.max_instances and bool(planned.plans)
            if over:
                return ranged_sampled.sampled_support(self, problem, planned, floats)
            return ranged.support(self, problem, planned, floats)
        whole, rest, plans, total = self._work(problem)
        self._last_work = None  # counted now: nothing to keep alive
        self._within_budget(total)
        if self.jobs:
            set_threads(self.jobs)
        # as Python, a unit of work counted by bounds costs about four by containment
        jit.choose(plan_cost(problem, whole, plans, bounded=4))
        sampling = total > self.max_instances and bool(plans)  # whole records never are
        if not sampling and self.runner.shards > 1:
            # in ranges of users, one per worker: the level's lists are not kept here
            self._last_work = None
            del whole, rest, plans
            split = ranged.split(problem, self.runner, self.runner.shards)
            return ranged.support(self, split, floats=floats)
        support = np.full(problem.n_users, compiled.kernels.UNSET, dtype=np.int64)
        if not sampling and any(plan.strategy == "keyed" for plan in plans):
            # only keyed partitions depend on the labels; supports do not
            problem = _by_rarity(problem)
            rest = without_whole(problem, whole) if whole.any() else problem
        if not sampling:
            whole, rest = whole_in_keyed(problem, whole, plans)
        indexes = _Indexes(problem)
        if whole.any():
            self._whole(problem, np.flatnonzero(whole), support, indexes)
        if sampling:
            checked, sampled = self._sampled(rest, support, indexes)
            instances = int(whole.sum()) + checked
        else:
            for plan in plans:
                if plan.strategy == "keyed":
                    self._keyed(rest, plan.size, support, indexes)
                else:
                    self._posting(rest, plan.size, support, indexes)
            instances, sampled = total, False
        support[support == compiled.kernels.UNSET] = 0
        return Support(support, instances, sampled)

    def _within_budget(self, total: int) -> None:
        """BudgetError when `total` instances are over the budget and nothing is sampled."""
        if total > self.max_instances and not self.sample:
            raise BudgetError(
                f"would enumerate about {total:,} knowledge instances, more than "
                f"engine.max_instances = {self.max_instances:,}. Use a smaller h, or set "
                "engine.sample: N to check N random instances per person (risks are then "
                "lower bounds, and the catalog says so)"
            )

    # --- strategies: plan partitions here, run them as tasks on the runner -------------

    def _partition_budget(self, problem: CountingProblem, s: int, weights: np.ndarray) -> int:
        """Instances per partition: `partition_instances`, or fewer to fit `memory`."""
        elements = problem.members.elements.shape[0] + problem.queries.elements.elements.shape[0]
        heaviest = float(weights.max(initial=0))
        return self.partition_budget(elements, problem.n_users, s, heaviest)

    def partition_budget(self, elements: int, users: int, s: int, heaviest: float) -> int:
        """Instances per partition of a level of `elements` positions (members and queries)
        and `users`: `partition_instances`, or fewer to fit `memory` (BudgetError where
        even the `heaviest` element's partition would not)."""
        if self.memory is None:
            return self.partition_instances
        base = level_bytes(elements, users)
        per_instance = _BYTES_PER_INSTANCE + _BYTES_PER_KEY_ELEMENT * s
        room = self.memory - base
        if room < per_instance:
            raise BudgetError(
                f"the data of this level alone needs about {_gb(base)} in memory, more than "
                f"engine.memory = {_gb(self.memory)}: raise engine.memory"
            )
        budget = int(min(self.partition_instances, room // per_instance))
        if heaviest > budget:
            raise BudgetError(
                f"at size {s}, one element alone has {heaviest:,.0f} instances (about "
                f"{_gb(base + heaviest * per_instance)} in one partition), more than "
                f"engine.memory = {_gb(self.memory)} allows: raise engine.memory or use a "
                "smaller h"
            )
        return max(budget, 1)

    def _keyed(
        self, problem: CountingProblem, s: int, support: np.ndarray, indexes: _Indexes
    ) -> None:
        members, spec = problem.members, problem.queries
        n_elements, worker = indexes.n_elements, self.worker()
        m_index = indexes.starts(members)
        if problem.self_queries:
            weights = m_index.weights(s, n_elements)
            budget = self._partition_budget(problem, s, weights)
            per_position = m_index.subsets(s)

            def own(piece: Shard | None, lo: int, hi: int) -> tuple[Any, ...]:
                starts = m_index.starts(lo, hi)
                at = starts if piece is None else piece.member_positions(starts)
                return (at, per_position[starts], s, n_elements, self.brute_limit, worker)

            parts = _partitions(weights, budget)
            fold_results(support, self._run(_keyed_self_task, problem, parts, weights, own))
            return
        q_index = indexes.starts(spec.elements)
        weights = m_index.weights(s, n_elements)
        weights += q_index.weights(s, n_elements, _query_sizes_ok(spec, s))
        budget = self._partition_budget(problem, s, weights)

        def pair(piece: Shard | None, lo: int, hi: int) -> tuple[Any, ...]:
            m_starts, q_starts = m_index.starts(lo, hi), q_index.starts(lo, hi)
            if piece is not None:
                m_starts = piece.member_positions(m_starts)
                q_starts = piece.query_positions(q_starts)
            return (m_starts, q_starts, s, n_elements, self.brute_limit, worker)

        parts = _partitions(weights, budget)
        fold_results(support, self._run(_keyed_task, problem, parts, weights, pair))

    def _posting(
        self, problem: CountingProblem, s: int, support: np.ndarray, indexes: _Indexes
    ) -> None:
        spec = problem.queries
        q_index = indexes.starts(spec.elements)
        weights = q_index.weights(s, indexes.n_elements, _query_sizes_ok(spec, s))
        budget = self._partition_budget(problem, s, weights * s)
        worker = self.worker()

        def checks(piece: Shard | None, lo: int, hi: int) -> tuple[Any, ...]:
            starts = q_index.starts(lo, hi)
            return (starts if piece is None else piece.query_positions(starts), s, worker)

        parts = _partitions(weights, max(budget // max(s, 1), 1))
        postings = (indexes, indexes.n_elements)
        fold_results(support, self._run(_posting_task, problem, parts, weights, checks, postings))

    def _run(
        self,
        task: Callable[..., tuple[np.ndarray, np.ndarray]],
        problem: CountingProblem,
        parts: list[tuple[int, int]],
        weights: np.ndarray,
        arguments: Callable[[Shard | None, int, int], tuple[Any, ...]],
        postings: tuple[_Indexes, int] | None = None,
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """`task` over the partitions `parts` (element ranges) on the runner: each with
        the level's whole data, or, on a runner of several workers, each worker with the
        shard of the data its partitions read (engine/shards.py). `arguments` gives a
        partition's, its positions numbered as its shard numbers them (None: whole);
        with `postings` (the indexes and the number of elements) the tasks also take the
        posting lists of the data they have."""
        if self.runner.shards <= 1 or len(parts) <= 1:
            shared: Any = problem if postings is None else (problem, postings[0].postings())
            return self.runner.run(task, shared, (arguments(None, lo, hi) for lo, hi in parts))
        budget, ceiling = self.runner.shard_limits()
        users, n_elements = problem.n_users, _n_elements(problem)
        fit = ShardBudget(
            budget, ceiling, lambda size: shard_bytes(size, users, n_elements), problem.ordered
        )
        measure = partial(shard_positions, problem)

        def sharded() -> Iterator[tuple[Any, list[tuple[Any, ...]]]]:
            reaches = reached(parts, weights)
            for (lo, hi), group in fitted_shards(parts, reaches, self.runner.shards, measure, fit):
                piece = shard(problem, lo, hi)
                yield piece.problem, [arguments(piece, a, b) for a, b in group]

        # a shard's posting lists are built where it is, not sent with it
        prepare = None if postings is None else partial(_with_postings, postings[1])
        return self.runner.run_sharded(task, sharded(), prepare)

    def _whole(
        self, problem: CountingProblem, users: np.ndarray, support: np.ndarray, indexes: _Indexes
    ) -> None:
        """Each of `users`' whole-record query, checked once against the posting lists:
        in chunks of users; on several workers, in partitions by the query's first
        element, so that each worker receives the shard of the level they read (a member
        holding a whole query holds its first element, and every later one after it: see
        engine/shards.py)."""
        q = problem.queries.elements
        if self.runner.shards <= 1:  # chunks of about equal work
            lengths = q.lengths[users].astype(float)
            chunks = _partitions(lengths, max(self.partition_instances, 1))
            tasks = ((users[lo:hi], self.worker()) for lo, hi in chunks)
            shared = (problem, indexes.postings())
            fold_results(support, self.runner.run(_whole_task, shared, tasks))
            return
        first = q.elements[q.offsets[users]]  # a whole record is never empty
        order = np.argsort(first, kind="stable")
        by_first, firsts = users[order], first[order]
        weights = np.bincount(first, weights=q.lengths[users], minlength=indexes.n_elements)
        # at least a partition per shard: a worker receives its shard, not the whole level
        share = int(np.ceil(weights.sum() / max(self.runner.shards, 1)))
        parts = _partitions(weights, max(min(self.partition_instances, share), 1))

        def targets(piece: Shard | None, lo: int, hi: int) -> tuple[Any, ...]:
            a, b = np.searchsorted(firsts, [lo, hi])
            return (by_first[a:b], self.worker())

        postings = (indexes, indexes.n_elements)
        fold_results(support, self._run(_whole_task, problem, parts, weights, targets, postings))

    def _sampled(
        self, problem: CountingProblem, support: np.ndarray, indexes: _Indexes
    ) -> tuple[int, bool]:
        """Sampling (see the module): targets with at most `sample` instances exactly, by
        postings; the others by drawn queries. Returns the instances checked and whether
        any target drew (else every support is exact)."""
        drawn = self._drawn(problem)
        spec = problem.queries
        exact = replace(
            problem,
            queries=replace(
                spec,
                size_lo=np.where(drawn, 0, spec.size_lo),
                size_hi=np.where(drawn, 0, spec.size_hi),
            ),
        )
        checked = 0
        for plan in self.plan(exact):
            self._posting(exact, plan.size, support, indexes)
            checked += plan.queries
        users = np.flatnonzero(drawn)
        postings = indexes.postings()
        shared = self.runner.share((problem, postings)) if users.size else None
        checked += sample_support(
            problem,
            postings,
            users,
            self.sample or 0,
            self.sample_key(),
            support,
            self.partition_instances,
            (self.runner.run, shared, self.worker()),
        )
        return checked, bool(users.size)
