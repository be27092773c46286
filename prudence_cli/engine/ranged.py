"""A level held in ranges of users, each range where it is kept (on a Dask cluster: a
worker), counted without the level's lists ever being whole in the planning process.

Users are numbered in range order: range r holds users [first[r], first[r + 1]), as a
counting problem of its own users (numbered from 0). What the engine decides about a
level is made of sums over users or of vectors per element, so each range gives its
share and the runner adds them up (on a Dask cluster, on the workers, in blocks of
elements: engine/blocks.py):

- the plan (plan.size_work), from how many users hold each element;
- the relabelling by rarity (indexes.rarity_rank), from the same counts, applied by
  each range to its own lists;
- the partitions, from the number of keys beginning at each element.

A range is given a vector per element whole when it is one block, else its own
elements' values (blocks.looked_up). A shard of consecutive partitions (elements
[L, H)) is cut by each range from its own lists — a list's suffix depends on that list
alone (engine/shards.py) — and the pieces are joined, in range order, on the worker the
shard goes to (streams.Joined). That worker numbers the elements its shard holds among
themselves (`numbered`) and finds each partition's first positions in it (`Firsts`).
The planning process holds a vector per user only, the supports, and the plan's sums.
A level over the budget is sampled in its ranges (engine/ranged_sampled.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from prudence_cli.engine import compiled, jit
from prudence_cli.engine.blocks import (
    Extent,
    cuts,
    extent,
    in_blocks,
    looked_up,
    partitioned,
    ranked,
)
from prudence_cli.engine.indexes import (
    rarity_rank,
    relabelled,
    relabels,
)
from prudence_cli.engine.jit import set_threads
from prudence_cli.engine.per_element import Held, PerElement, whole_of
from prudence_cli.engine.plan import (
    SizePlan,
    _query_sizes,
    drawing_targets,
    numbered_shard_bytes,
    size_plans,
    size_work,
    work_cost,
)
from prudence_cli.engine.problem import CountingProblem, Elements, Support
from prudence_cli.engine.ranged_shards import (
    Part,
    ShardJoiner,
    _cut,
    _first_weights,
    _keyed_part,
    _measured,
    _posting_part,
    _whole_part,
    surveyed,
)
from prudence_cli.engine.shards import ShardBudget, fitted_shards
from prudence_cli.engine.streams import Joined
from prudence_cli.engine.tasks import Worker, _as_planned, fold_results
from prudence_cli.engine.whole import whole_in_keyed


class Engine(Protocol):
    """What a ranged level needs of the engine counting it (core.Engine)."""

    runner: Any
    max_instances: int
    sample: int | None
    jobs: int
    strategy: str
    partition_instances: int
    brute_limit: int

    def worker(self) -> tuple[int | None, bool]: ...

    def sample_key(self) -> int: ...

    def partition_budget(self, elements: int, users: int, s: int, heaviest: float) -> int: ...

    def min_support(self, problem: CountingProblem, floats: bool = False) -> Support: ...


@dataclass(frozen=True)
class RangedProblem:
    """A level in ranges of users: `parts` (each a `Part`, or where the runner keeps it),
    `first` the first user of each range and the number of users last."""

    parts: list[Any]
    first: np.ndarray
    match: str
    ordered: bool
    mode: str
    self_queries: bool

    @property
    def n_users(self) -> int:
        return int(self.first[-1])


def split(problem: CountingProblem, runner: Any, count: int) -> RangedProblem:
    """`problem` in `count` ranges of users of about equal lists, each kept by the runner
    on its own worker (one range here at a time)."""
    first = user_ranges(problem.members.offsets, count)
    ranges = zip(first[:-1].tolist(), first[1:].tolist(), strict=True)
    placed = runner.place(users_of(problem, a, b) for a, b in ranges)
    parts = runner.each_kept(surveyed, placed)
    del placed  # each range is kept as its Part
    return of_parts(parts, first, runner)


def user_ranges(offsets: np.ndarray, count: int) -> np.ndarray:
    """The first user of each of `count` ranges of consecutive users holding about as many
    positions of the CSR `offsets` each, and the number of users last (some ranges may be
    empty)."""
    users = offsets.shape[0] - 1
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], count + 1)[1:-1])
    first = np.r_[0, np.minimum(cuts, users), users].astype(np.int64)
    return np.maximum.accumulate(first)


def of_parts(parts: list[Any], first: np.ndarray, runner: Any) -> RangedProblem:
    """The ranged level of `parts` (kept by `runner`), users [first[r], first[r + 1]) each:
    how it counts, as its ranges say (queries are the members' own when every range's
    are)."""
    shapes = runner.each(_shape, parts)
    match, ordered, mode, _ = shapes[0] if shapes else ("contains", False, "subsets", True)
    own = all(shape[3] for shape in shapes)
    return RangedProblem(parts, first, match, ordered, mode, own)


def _shape(part: Part) -> tuple[str, bool, str, bool]:
    problem = part.problem
    return problem.match, problem.ordered, problem.queries.mode, problem.self_queries


def asked(ranged: RangedProblem, runner: Any) -> Iterator[tuple[int, int, np.ndarray]]:
    """Per range, as they come: its first user, its last + 1, and whether each of its
    users asks any query (a range's mask at a time here, not a vector of every user)."""
    found = runner.each_streamed(_asked, ranged.parts)
    yield from zip(ranged.first[:-1].tolist(), ranged.first[1:].tolist(), found, strict=True)


def _asked(part: Part) -> np.ndarray:
    return np.asarray(part.problem.queries.size_hi > 0)


def draws(engine: Engine, ranged: RangedProblem) -> bool:
    """Whether a sampled count would draw queries for some target (Engine._drawn)."""
    return any(engine.runner.each(_draws, ranged.parts, engine.sample or 0))


def _draws(part: Part, sample: int) -> bool:
    return bool(drawing_targets(part.rest.queries, sample).any())


def users_of(problem: CountingProblem, a: int, b: int) -> CountingProblem:
    """The problem of users [a, b), numbered from 0."""
    spec = problem.queries
    members = _lists_of(problem.members, a, b)
    queries = members if spec.elements is problem.members else _lists_of(spec.elements, a, b)
    upper = None
    if spec.upper is not None:
        upper = spec.upper[spec.elements.offsets[a] : spec.elements.offsets[b]]
    totals = None if spec.list_totals is None else spec.list_totals[a:b]
    sized = replace(
        spec,
        elements=queries,
        size_lo=spec.size_lo[a:b],
        size_hi=spec.size_hi[a:b],
        upper=upper,
        list_totals=totals,
    )
    return replace(problem, members=members, queries=sized)


def _lists_of(lists: Elements, a: int, b: int) -> Elements:
    lo, hi = int(lists.offsets[a]), int(lists.offsets[b])
    return Elements(lists.offsets[a : b + 1] - lo, lists.elements[lo:hi], lists.values[lo:hi])


# --- the plan, from each range's sums ---------------------------------------------------


@dataclass(frozen=True)
class Census:
    """What planning a level needs of one range (of its `rest`), but its holders."""

    top: int  # the largest element id of its lists, -1 for none
    sizes: np.ndarray  # the query sizes its targets ask
    whole: int  # whole-record targets
    whole_elements: float  # their query elements
    members: int  # positions of the members' lists
    queries: int  # positions of the queries' lists (the members' again when their own)

    def __add__(self, other: Census) -> Census:
        """The census of the two ranges together."""
        return Census(
            max(self.top, other.top),
            np.union1d(self.sizes, other.sizes),
            self.whole + other.whole,
            self.whole_elements + other.whole_elements,
            self.members + other.members,
            self.queries + other.queries,
        )

    @classmethod
    def none(cls) -> Census:
        """The census of no range."""
        return cls(-1, np.zeros(0, dtype=np.int64), 0, 0.0, 0, 0)


def census(part: Part) -> Census:
    problem = part.problem
    members, queries = problem.members.elements, problem.queries.elements.elements
    top = int(max(members.max(initial=-1), queries.max(initial=-1)))
    return Census(
        top,
        _query_sizes(part.rest.queries),
        int(part.whole.sum()),
        float(problem.queries.elements.lengths[part.whole].sum()),
        int(members.shape[0]),
        int(queries.shape[0]),
    )


@dataclass(frozen=True)
class Work:
    """A ranged level's plan: its sizes' plans and what they add up to."""

    # per element, the users holding it, kept where the runner made it: the whole vector
    # when it is one block (`blocks`), else a vector per block (blocks.py)
    holders: Held
    blocks: np.ndarray  # where the level's vectors per element are cut (blocks.cuts)
    n_elements: int
    plans: list[SizePlan]
    total: int  # instances, one per whole-record query
    whole: int
    whole_elements: float
    members: int  # positions of the members' lists (the holders' sum)
    elements: int  # positions of members and of queries (what a partition's budget counts)
    lists: int  # positions of the lists counted, the members' once when queries are theirs
    own: bool  # the queries are the members' own subsets (Problem.self_queries)


def work(engine: Engine, ranged: RangedProblem) -> Work:
    """The plan of a ranged level, as `Engine.plan` makes it of the whole level. Its
    vector per element (the holders) is added up and kept where the runner adds the
    ranges' (on a Dask cluster: on the workers, in blocks of elements when it is
    longer than one); only the plan's sums come here."""
    runner, parts = engine.runner, ranged.parts
    c = runner.summed(census, parts) or Census.none()
    at = cuts(c.top + 1, runner.element_block)
    found = runner.summed_blocks(_holder_blocks, parts, at.shape[0] - 1, at)
    if found is None:  # no range
        found = [PerElement.of(np.zeros(size, np.int64)) for size in np.diff(at).tolist()]
    if len(found) == 1:  # whole, as each range is given it
        kept = [runner.kept_on(found[0], whole_of)]
        given = kept * len(parts)
    else:  # each range given its own elements' holders only
        kept = list(found)
        given = looked_up(runner, kept, at, parts)
    del found
    sizes = c.sizes
    sums = sum(runner.each(_size_work, parts, sizes, paired=given), np.zeros((sizes.size, 3)))
    del given
    plans = size_plans(sizes, sums, ranged.self_queries, engine.strategy)
    total = c.whole + sum(plan.instances for plan in plans)
    lists = c.members + (0 if ranged.self_queries else c.queries)
    own = ranged.self_queries
    elements = c.members + c.queries
    return Work(
        Held(kept), at, c.top + 1, plans, total, c.whole, c.whole_elements, c.members,
        elements, lists, own,
    )  # fmt: skip


def _holder_blocks(part: Part, at: np.ndarray) -> tuple[PerElement, ...]:
    """The users of the range holding each of the level's elements, cut in blocks `at`."""
    return in_blocks(PerElement.counted(part.problem.members.elements, int(at[-1])), at)


def _size_work(part: Part, holders: Any, sizes: np.ndarray) -> np.ndarray:
    return size_work(part.rest, holders, sizes)


# --- counting --------------------------------------------------------------------------


def support(
    engine: Engine, ranged: RangedProblem, planned: Work | None = None, floats: bool = False
) -> Support:
    """Minimum support per user of a ranged level counted exactly (`Engine.min_support`
    samples one over the budget in its ranges, engine/ranged_sampled.py), from its plan
    (`work`, made here when not given); as float64 with `floats` (`counted`)."""
    planned = planned or work(engine, ranged)
    minimum = counted(engine, ranged, planned, floats)
    minimum[minimum == unset(minimum.dtype)] = 0
    return Support(minimum, planned.total, False)


def counted(
    engine: Engine, ranged: RangedProblem, planned: Work, floats: bool = False
) -> np.ndarray:
    """The minimum support per user of every query the plan counts (whole records, then
    each size's partitions), `unset` for a user without any. In 32 bits when the people
    are fewer than 2^31 − 1 (a support is at most their number); with `floats`, in
    float64 (exact: whole numbers below 2^53), the vector that becomes the level's risks
    in the assessing process, with no other beside it."""
    runner = engine.runner
    if engine.jobs:
        set_threads(engine.jobs)
    jit.choose(work_cost(ranged.match, planned.whole_elements, planned.plans, bounded=4))
    ranks: list[Any] = [None] * len(ranged.parts)  # each range's: none, as they are
    keyed = any(plan.strategy == "keyed" for plan in planned.plans)
    if keyed and relabels(ranged.ordered, ranged.mode, planned.members):
        ranks = _ranks(runner, planned, ranged.parts, engine.worker())
    # an unordered level that samples reads its holders again, from its own plan;
    # this plan's go: on the workers, 8 bytes an element while the level is counted
    planned.holders.release()
    worker = engine.worker()
    parts = runner.each_kept(_prepared, ranged.parts, planned.plans, worker, paired=ranks)
    del ranks
    # the level is kept as prepared (relabelled: the same supports, the same queries),
    # so that the workers do not hold it twice
    ranged.parts[:] = parts
    level = _Level(engine, parts, planned, ranged.n_users, ranged.ordered)
    dtype: np.dtype = np.dtype(np.int32 if ranged.n_users < np.iinfo(np.int32).max else np.int64)
    if floats:
        dtype = np.dtype(np.float64)
    minimum = np.full(ranged.n_users, unset(dtype), dtype=dtype)
    level.whole(minimum)
    for plan in planned.plans:
        level.count(plan, minimum)
    return minimum


def unset(dtype: np.dtype) -> int:
    """What `counted` leaves in a minimum of `dtype` for a user without a query counted:
    the largest 32-bit integer, or UNSET in 64 bits (a power of two: a float64, too)."""
    if dtype == np.int32:
        return int(np.iinfo(np.int32).max)
    return int(compiled.kernels.UNSET)


def _ranks(runner: Any, planned: Work, parts: list[Any], worker: Worker) -> list[Any]:
    """What each range is given of the rank by rarity of the level's elements: the whole
    vector, made where the holders are, when they are one block; else each range's own
    elements' ranks, from the ranks made in blocks where the holders' are."""
    holders = planned.holders.kept
    if len(holders) == 1:
        return [runner.kept_on(holders[0], _ranked, worker)] * len(parts)
    return looked_up(runner, ranked(runner, holders, planned.blocks, worker), planned.blocks, parts)


def _ranked(holders: np.ndarray, worker: Worker) -> np.ndarray:
    """`rarity_rank`, its kernels run as the engine planned (Engine.worker)."""
    _as_planned(worker)
    return rarity_rank(holders)


def _prepared(part: Part, rank: Any, plans: list[SizePlan], worker: Worker) -> Part:
    """The range relabelled by `rank` (None: as it is), and its whole records as long as
    a keyed size counted with the keys (whole.whole_in_keyed); kernels as planned."""
    _as_planned(worker)
    problem = part.problem if rank is None else relabelled(part.problem, rank)
    whole, rest = whole_in_keyed(problem, part.whole, plans)
    return Part(problem, whole, rest)


class _Level:
    """The partitions of a ranged level, run shard by shard on the engine's runner."""

    def __init__(
        self, engine: Engine, parts: list[Any], planned: Work, users: int, ordered: bool
    ) -> None:
        self.engine, self.runner, self.parts, self.planned = engine, engine.runner, parts, planned
        self.n, self.users, self.ordered = planned.n_elements, users, ordered
        self.blocks = cuts(self.n, engine.runner.element_block)  # of the weights (blocks.py)

    def whole(self, minimum: np.ndarray) -> None:
        """Whole-record queries, in partitions by their first element."""
        weights = self._weights("whole", 0)
        of = self._extent(weights)
        if of.total <= 0:  # no weight (none is negative)
            return
        share = int(np.ceil(of.total / max(self.runner.shards, 1)))
        budget = max(min(self.engine.partition_instances, share), 1)
        parts, reaches = self._partitioned(weights, budget, of)
        del weights
        worker = self.engine.worker()
        self._fold(minimum, _whole_part, "whole", parts, reaches, lambda lo, hi: (lo, hi, worker))

    def count(self, plan: SizePlan, minimum: np.ndarray) -> None:
        """The partitions of one size: keyed, or checked against the posting lists."""
        s, engine, worker = plan.size, self.engine, self.engine.worker()
        elements, users = self.planned.elements, self.users
        keyed = plan.strategy == "keyed"
        weights = self._weights("keyed" if keyed else "posting", s)
        of = self._extent(weights)
        heaviest = of.heaviest
        if keyed:
            budget = engine.partition_budget(elements, users, s, heaviest)
            parts, reaches = self._partitioned(weights, budget, of)
            del weights
            limit = engine.brute_limit
            self._fold(
                minimum, _keyed_part, "keyed", parts, reaches,
                lambda lo, hi: (lo, hi, s, limit, worker),
            )  # fmt: skip
            return
        budget = engine.partition_budget(elements, users, s, heaviest * s)
        parts, reaches = self._partitioned(weights, max(budget // max(s, 1), 1), of)
        del weights
        self._fold(
            minimum, _posting_part, "posting", parts, reaches, lambda lo, hi: (lo, hi, s, worker)
        )

    def _weights(self, kind: str, s: int) -> list[Any]:
        """Per element, the work of the partitions beginning there: the ranges' added up
        in blocks of elements (blocks.py), each kept where the runner adds it."""
        own, at = self.planned.own, self.blocks
        count = at.shape[0] - 1
        found = self.runner.summed_blocks(_weight_blocks, self.parts, count, kind, s, own, at)
        if found is None:  # no range
            return [PerElement.of(np.zeros(size)) for size in np.diff(at).tolist()]
        return list(found)

    def _extent(self, weights: list[Any]) -> Extent:
        """The extent of the weights, of each block where it is kept."""
        return sum((self.runner.on(block, extent) for block in weights), Extent(0.0, 0.0, True))

    def _partitioned(
        self, weights: list[Any], budget: int, of: Extent
    ) -> tuple[list[tuple[int, int]], np.ndarray]:
        """The partitions of the weights (of extent `of`) with at most `budget` instances
        each, and the weight up to each one's end and in all (shards.reached)."""
        return partitioned(self.runner, weights, self.blocks, budget, of)

    def _fold(
        self,
        minimum: np.ndarray,
        task: Any,
        kind: str,
        parts: list[tuple[int, int]],
        reaches: np.ndarray,
        arguments: Any,
    ) -> None:
        budget, ceiling = self.runner.shard_limits()
        fit = ShardBudget(
            budget,
            ceiling,
            # a shard holds the people with a position in it (people_held): one at most
            # a position, never more than the level's
            lambda size: numbered_shard_bytes(size, min(size, self.users), self.n),
            self.ordered,
        )

        def measure(starts: Sequence[int], ends: np.ndarray) -> np.ndarray:
            total = np.zeros((len(starts), ends.shape[0]), dtype=np.int64)
            for found in self.runner.each_streamed(_measured, self.parts, kind, starts, ends):
                total += found
            return total

        def shards() -> Iterator[tuple[Joined, list[tuple[Any, ...]]]]:
            for (lo, hi), group in fitted_shards(parts, reaches, self.runner.shards, measure, fit):
                pieces = self.runner.each_kept(_cut, self.parts, lo, hi, kind)
                shared = Joined(ShardJoiner(kind, self.engine.worker()), pieces)
                yield shared, [arguments(a, b) for a, b in group]
                del shared, pieces  # joined: the pieces go before the next shard's are cut

        # a result holds up to an entry for each of the shard's people: read in pieces
        # when that could be more than a piece (the assessing process's memory)
        pieces = RESULT_PIECE if self.users > RESULT_PIECE else None
        fold_results(minimum, self.runner.run_sharded(task, shards(), pieces=pieces))


# entries of a partition's result read at a time, at most (8 MB of 32-bit owners and counts)
RESULT_PIECE = 1 << 20


def _weight_blocks(
    part: Part, kind: str, s: int, own: bool, at: np.ndarray
) -> tuple[PerElement, ...]:
    """The range's `_first_weights`, over the level's elements, cut in the blocks `at`."""
    return in_blocks(_first_weights(part, kind, s, int(at[-1]), own), at)
