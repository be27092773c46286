"""The attack interface and knowledge levels (DESIGN.md section 5)."""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from prudence_cli.engine import CountingProblem, Elements, Engine, QuerySpec

if TYPE_CHECKING:
    from prudence_cli.dataviews.base import Dataview


@dataclass(frozen=True)
class KnowledgeDimension:
    """One background-knowledge dimension of an attack: h, visits, delta, ..."""

    name: str
    parse: Callable[[object], Any]
    default: tuple[Any, ...]
    names: bool = False  # values are names (scenario "1"), text even when they look numeric


@dataclass(frozen=True, order=True)
class KnowledgeLevel:
    """One configuration of an attack's knowledge dimensions."""

    attack: str
    values: tuple[tuple[str, Any], ...]

    def __getitem__(self, name: str) -> Any:
        return dict(self.values)[name]

    @property
    def label(self) -> str:
        """A stable text id: h=2,visits=half."""
        return ",".join(f"{k}={v}" for k, v in self.values)

    @property
    def key(self) -> str:
        """Attack and level: presence[h=2,visits=half]."""
        return f"{self.attack}[{self.label}]"


def parse_h(value: object) -> int | str:
    """h is a positive whole number of known elements, or 'all' (the whole record)."""
    if value == "all":
        return "all"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{value!r} is not a number of known elements (1, 2, ... or all)")
    return value


H = KnowledgeDimension("h", parse_h, (1, 2, 3))


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


class AttackSpec(ABC):
    """What every attack declares: its name, the dataview formats it applies to and its
    knowledge dimensions, whose combinations are its levels."""

    name: ClassVar[str]
    formats: ClassVar[frozenset[str]]
    knowledge: ClassVar[tuple[KnowledgeDimension, ...]]
    monotone_in_h: ClassVar[bool] = True  # risk never decreases when h grows

    def levels(self, values: Mapping[str, tuple[Any, ...]]) -> tuple[KnowledgeLevel, ...]:
        """Every combination of the configured knowledge values, h varying slowest."""
        names = [d.name for d in self.knowledge]
        combos = itertools.product(*(values[n] for n in names))
        return tuple(KnowledgeLevel(self.name, tuple(zip(names, c, strict=True))) for c in combos)

    def lower_level(self, level: KnowledgeLevel) -> KnowledgeLevel | None:
        """The same level with the next smaller numeric h, whose risk-1 users stay at 1.

        Risk is non-decreasing in h (DESIGN.md section 6) for every attack whose larger
        instances contain smaller ones, so users at risk 1 at a lower level need no second
        enumeration. None when h is 1, absent, or the attack is not monotone.
        """
        values = dict(level.values)
        h = values.get("h")
        if not self.monotone_in_h or not isinstance(h, int) or h <= 1:
            return None
        values["h"] = h - 1
        return KnowledgeLevel(level.attack, tuple(values.items()))


class Attack(AttackSpec):
    """A background-knowledge category: how instances are drawn and how candidates match.

    Subclasses set the class attributes and implement `risks`, their one public method.
    """

    @abstractmethod
    def risks(
        self,
        view: Dataview,
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
    ) -> AttackResult:
        """Risk of every user of U at this level (0 for users absent from the view).

        `known_ones` marks users already known to be at risk 1 at this level.
        """


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
    if known_ones is not None:
        spec = replace(
            spec,
            size_lo=np.where(known_ones, 0, spec.size_lo),
            size_hi=np.where(known_ones, 0, spec.size_hi),
        )
    support = engine.min_support(CountingProblem(members, spec, match=match, ordered=ordered))
    queried = spec.size_hi > 0
    in_view = np.diff(view.offsets) > 0
    risk = np.zeros(view.n_users, dtype=float)
    risk[queried] = 1.0 / support.minimum[queried]
    blind = in_view & ~queried
    risk[blind] = 1.0 / max(view.users_in_view, 1)
    if known_ones is not None:
        risk[known_ones & in_view] = 1.0
    return AttackResult(risk, support.instances, support.sampled)


def subsets(queries: Elements, sizes: np.ndarray, upper: np.ndarray | None = None) -> QuerySpec:
    """Queries = every sizes[u]-subset of u's query elements."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return QuerySpec(queries, size_lo=sizes, size_hi=sizes, upper=upper)
