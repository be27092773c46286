"""The attack interface and knowledge levels (DESIGN.md section 5)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import pandas as pd

from prudence_cli.attacks.ranged import in_ranges, level_problem, ranged_level
from prudence_cli.config.knowledge import (
    ATTACK_SCHEMAS,
    AttackSchema,
    KnowledgeDimension,
    KnowledgeLevel,
)
from prudence_cli.dataviews.base import Dataview
from prudence_cli.engine import CountingProblem, Elements, Engine, QuerySpec
from prudence_cli.engine.ranged import RangedProblem, asked

__all__ = [
    "Attack",
    "AttackResult",
    "AttackSpec",
    "CountingAttack",
    "KnowledgeDimension",
    "KnowledgeLevel",
    "count_risks",
    "h_subsets",
    "sizes_for",
    "subsets",
]

# the dataview type an attack reads
V = TypeVar("V", bound=Dataview)


@dataclass(frozen=True)
class AttackResult:
    """Risk per user code of U, with how many instances were checked and whether they
    were sampled (then every risk is a lower bound)."""

    risk: np.ndarray
    instances: int
    sampled: bool
    # level-wide measures beyond risk (e.g. unicity, EM-disclosure), for the i-RAC table
    measures: dict[str, float] = field(default_factory=dict)
    # per-location tables (e.g. EM per bin), written next to the catalog's curves
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    # a sampled level (or one that needed them to find out): the keys of the smaller h of
    # the same attack whose risks floor it
    floor: tuple[str, ...] = ()
    # of those, the levels nobody asked for, computed for the floor (key -> their result)
    computed_for_floor: dict[str, AttackResult] = field(default_factory=dict)


class AttackSpec(ABC):
    """What every attack declares: its name, from which the rest of its declaration (the
    dataview formats it applies to and its knowledge dimensions, whose combinations are
    its levels) is read in the light table of config/knowledge.py."""

    name: ClassVar[str]
    schema: ClassVar[AttackSchema]
    formats: ClassVar[frozenset[str]]
    knowledge: ClassVar[tuple[KnowledgeDimension, ...]]
    monotone_in_h: ClassVar[bool]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            cls.schema = ATTACK_SCHEMAS[cls.name]
            cls.formats = cls.schema.formats
            cls.knowledge = cls.schema.knowledge
            cls.monotone_in_h = cls.schema.monotone_in_h

    def levels(self, values: Mapping[str, tuple[Any, ...]]) -> tuple[KnowledgeLevel, ...]:
        """Every combination of the configured knowledge values, h varying slowest."""
        return self.schema.levels(values)

    def lower_level(self, level: KnowledgeLevel) -> KnowledgeLevel | None:
        """The same level with the next smaller numeric h (see AttackSchema.lower_level)."""
        return self.schema.lower_level(level)


class Attack(AttackSpec, Generic[V]):
    """A background-knowledge category on dataviews of type V: how instances are drawn
    and how candidates match.

    Subclasses set `name` and implement `risks`, their one public method; most count
    candidates with the engine and derive from `CountingAttack` instead.
    """

    @abstractmethod
    def risks(
        self,
        view: V,
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
        computed: Mapping[str, np.ndarray] | None = None,
    ) -> AttackResult:
        """Risk of every user of U at this level (0 for users absent from the view).

        `known_ones` marks users already known to be at risk 1 at this level; `computed`
        holds the risks already computed on this view, by level key (see CountingAttack).
        """


class CountingAttack(Attack[V]):
    """An attack whose risk is 1 / the number of candidates (see `count_risks`).

    Subclasses set `match` and `ordered` (the candidate predicate, see engine/problem.py)
    and implement `instances`: the lists candidates are drawn from and each target's
    instances of knowledge.
    """

    match: ClassVar[str] = "dominance"
    ordered: ClassVar[bool] = False
    # each person's instances are made of that person's rows alone, with the view's
    # location codes as elements: on several workers, levels are made in ranges of users
    # where they are counted (attacks/ranged.py)
    local: ClassVar[bool] = False
    # elements numbered over the whole view (Dataview.numberings), given to each range
    numbering: ClassVar[str | None] = None

    @abstractmethod
    def instances(self, view: V, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        """Every user's member list (what a candidate holds) and the queries drawn from
        each target's knowledge at this level."""

    def risks(
        self,
        view: V,
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
        computed: Mapping[str, np.ndarray] | None = None,
    ) -> AttackResult:
        """Risk per user (see `count_risks`). With a monotone attack, the risks `computed`
        at its smaller h (any of them; `known_ones` too) mark users at 1, who are not
        queried again; and when this level is sampled, they floor its risks: a sampled
        risk is a lower bound, and so is the larger of it and the risk at a smaller h.
        When the next smaller h was not computed, it is computed here first, exactly if it
        fits the budget, else sampled with its own floor (`computed_for_floor` says so).

        An exact level that costs the engine at least `engine.prune_from`, whose next
        smaller h was not computed, computes that h first when it is much cheaper
        (`_pays_to_prune`; it may prune by its own smaller h in turn), and skips
        the people it puts at risk 1: the risks are the same, only cheaper to get, so
        nothing records it."""
        computed = computed or {}
        n = view.n_users
        floor, keys = _floor_of(self, level, n, known_ones, computed)
        # at 1 (not queried): the floor's ones, or `known_ones` while nothing else floors
        ones = known_ones if floor is None else floor >= 1
        below = self.lower_level(level)
        extra: dict[str, AttackResult] = {}
        problem = self.problem(view, level, ones, engine)
        # a level held on the workers is let go before the next is made (`del problem`)
        if below is not None and below.key not in computed and engine.samples(problem):
            del problem
            engine.forget()
            lower = self.risks(view, below, engine, ones, computed)
            extra = {below.key: lower, **lower.computed_for_floor}
            floor = np.maximum(_made(floor, n, known_ones), lower.risk)
            keys = (below.key, *lower.floor, *keys)
            ones = floor >= 1
            problem = self.problem(view, level, ones, engine)
        elif (
            below is not None
            and below.key not in computed
            and _pays_to_prune(self, view, below, ones, problem, engine)
        ):
            del problem
            engine.forget()
            smaller = self.risks(view, below, engine, ones, computed).risk
            ones = _at_one(smaller, ones)
            del smaller  # only who is at 1 there was needed
            problem = self.problem(view, level, ones, engine)
            # the level did not sample, and pruning only takes queries away: it is counted
            # exactly, and nothing floors its risks
            floor = None
        if floor is not None and not engine.samples(problem):
            floor = None  # counted exactly, nothing raises its risks: not held meanwhile
        result = _counted(view, problem, engine, ones)
        if not (result.sampled or extra):
            return result
        return replace(
            result,
            risk=np.maximum(result.risk, _made(floor, n, known_ones))
            if result.sampled
            else result.risk,
            floor=tuple(dict.fromkeys(keys)),
            computed_for_floor=extra,
        )

    def problem(
        self, view: V, level: KnowledgeLevel, known_ones: np.ndarray | None, engine: Engine
    ) -> CountingProblem | RangedProblem:
        """The level's counting problem (`known_ones` ask nothing): here, or in ranges of
        users made on the engine's workers (attacks/ranged.py)."""
        if in_ranges(self, engine):
            return ranged_level(self, view, level, known_ones, engine)
        members, spec = self.instances(view, level)
        return level_problem(members, spec, known_ones, self.match, self.ordered)


def _pays_to_prune(
    attack: CountingAttack[V],
    view: V,
    below: KnowledgeLevel,
    known_ones: np.ndarray | None,
    problem: CountingProblem | RangedProblem,
    engine: Engine,
) -> bool:
    """Whether to count `below` (the next smaller h) before the exact `problem`: the
    level costs at least `engine.prune_from`, and `engine.prune_gain` times more than
    `below`. With the default 2, pruning pays off once half of the level's work belongs
    to people at risk 1 at `below`, and costs at most half as much again otherwise.
    Costs are the engine's estimates from instance counts, made before any enumeration,
    each with the overhead of a count (`Engine.overhead`): on short records a smaller h
    saves instances but not its indexes."""
    if not engine.prune_from:
        return False
    cost = engine.cost(problem)
    if cost < engine.prune_from:
        return False
    lower = attack.problem(view, below, known_ones, engine)
    overhead = engine.overhead(problem)
    pays = (engine.cost(lower) + overhead) * engine.prune_gain <= cost + overhead
    pays = pays and not engine.samples(lower)
    engine.forget()  # the smaller level is made again if it pays: not held meanwhile
    return pays


def _floor_of(
    attack: AttackSpec,
    level: KnowledgeLevel,
    n_users: int,
    known_ones: np.ndarray | None,
    computed: Mapping[str, np.ndarray],
) -> tuple[np.ndarray | None, tuple[str, ...]]:
    """The largest risk per user at the smaller h of `level` found in `computed` (1 for
    `known_ones`), and their keys; nothing for an attack whose risk may fall with h. No
    floor (None) when none is found: a vector of a number a person is made only when
    there is one (`_made`)."""
    floor = None
    keys = []
    lower = attack.lower_level(level)
    while lower is not None:
        if lower.key in computed:
            floor = np.maximum(_made(floor, n_users, known_ones), computed[lower.key])
            keys.append(lower.key)
        lower = attack.lower_level(lower)
    return floor, tuple(keys)


def _at_one(lower: np.ndarray, ones: np.ndarray | None) -> np.ndarray:
    """The people at risk 1 at the smaller h (`lower`) or already known to be (`ones`):
    a byte a person, made with no other vector."""
    found = np.greater_equal(lower, 1.0)
    if ones is not None:
        np.logical_or(found, ones, out=found)
    return found


def _made(floor: np.ndarray | None, n_users: int, known_ones: np.ndarray | None) -> np.ndarray:
    """The floor, or where there is none, 1 for `known_ones` and 0 for everyone else."""
    if floor is not None:
        return floor
    made = np.zeros(n_users)
    if known_ones is not None:
        made[known_ones] = 1.0
    return made


def sizes_for(h: int | str, lengths: np.ndarray) -> np.ndarray:
    """Instance size per user: h elements, or all of them when fewer (or h = all)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return lengths.copy() if h == "all" else np.minimum(lengths, int(h))


def count_risks(
    view: Dataview,
    members: Elements,
    spec: QuerySpec,
    engine: Engine,
    known_ones: np.ndarray | None = None,
    match: str = "dominance",
    ordered: bool = False,
) -> AttackResult:
    """Risk per user = 1 / the minimum support of the user's queries (see engine).

    A user of the view without any query is hidden among every user of the view; users
    absent from the view have risk 0; `known_ones` users are not queried and stay at 1.
    """
    problem = level_problem(members, spec, known_ones, match, ordered)
    return _counted(view, problem, engine, known_ones)


def _counted(
    view: Dataview,
    problem: CountingProblem | RangedProblem,
    engine: Engine,
    known_ones: np.ndarray | None,
) -> AttackResult:
    """`count_risks` of a problem already made (its `known_ones` ask nothing). The
    supports become the risks piece by piece, as a ranged level's ranges tell who asked
    and a view kept in ranges who is in it: no other vector of every person beside them
    (the assessing process's memory at 1B people)."""
    support = engine.min_support(problem, floats=True)
    instances, sampled = support.instances, support.sampled
    minimum = support.minimum
    del support
    if isinstance(problem, RangedProblem):
        queried = asked(problem, engine.runner)
    else:
        queried = iter([(0, view.n_users, problem.queries.size_hi > 0)])
    # a ranged level's supports, as floats, become the risks in place
    risk = minimum if minimum.dtype == np.float64 else np.zeros(view.n_users, dtype=float)
    for a, b, asks in queried:
        part = risk[a:b]
        np.divide(1.0, minimum[a:b], out=part, where=asks)
        np.copyto(part, _UNASKED, where=~asks)  # a risk is never negative: placed below
    del minimum
    hidden = 1.0 / max(view.users_in_view, 1)  # among every user of the view
    for a, b, held in view.in_view_pieces():
        part = risk[a:b]
        np.copyto(part, hidden, where=(part == _UNASKED) & held)
        if known_ones is not None:
            np.copyto(part, 1.0, where=known_ones[a:b] & held)
    np.maximum(risk, 0.0, out=risk)  # absent from the view, not asked: 0
    return AttackResult(risk, instances, sampled)


_UNASKED = -1.0  # what a user who asks no query holds until the view places them


def subsets(queries: Elements, sizes: np.ndarray, upper: np.ndarray | None = None) -> QuerySpec:
    """Queries = every sizes[u]-subset of u's query elements."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return QuerySpec(queries, size_lo=sizes, size_hi=sizes, upper=upper)


def h_subsets(queries: Elements, h: int | str, upper: np.ndarray | None = None) -> QuerySpec:
    """Queries = every h-subset of u's query elements, or all of them when fewer."""
    return subsets(queries, sizes_for(h, queries.lengths), upper)
