"""The attack interface and knowledge levels (DESIGN.md section 5)."""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from prudence_cli.dataviews.presence import PresenceView
    from prudence_cli.engine import Engine


@dataclass(frozen=True)
class KnowledgeDimension:
    """One background-knowledge dimension of an attack: h, visits, delta, ..."""

    name: str
    parse: Callable[[object], Any]
    default: tuple[Any, ...]


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


class Attack(ABC):
    """A background-knowledge category: how instances are drawn and how candidates match.

    Subclasses set the class attributes and implement `risks`, their one public method.
    """

    name: ClassVar[str]
    formats: ClassVar[frozenset[str]]
    knowledge: ClassVar[tuple[KnowledgeDimension, ...]]

    def levels(self, values: Mapping[str, tuple[Any, ...]]) -> tuple[KnowledgeLevel, ...]:
        """Every combination of the configured knowledge values, h varying slowest."""
        names = [d.name for d in self.knowledge]
        combos = itertools.product(*(values[n] for n in names))
        return tuple(KnowledgeLevel(self.name, tuple(zip(names, c, strict=True))) for c in combos)

    def lower_level(self, level: KnowledgeLevel) -> KnowledgeLevel | None:
        """The same level with the next smaller numeric h, whose risk-1 users stay at 1.

        Risk is non-decreasing in h (DESIGN.md section 6), so users at risk 1 at a lower
        level need no second enumeration. None when h is 1 or the attack has no h.
        """
        values = dict(level.values)
        h = values.get("h")
        if not isinstance(h, int) or h <= 1:
            return None
        values["h"] = h - 1
        return KnowledgeLevel(level.attack, tuple(values.items()))

    @abstractmethod
    def risks(
        self,
        view: PresenceView,
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
    ) -> np.ndarray:
        """Risk per user code in [0, 1] (0 for users absent from the view).

        `known_ones` marks users already known to be at risk 1 at this level.
        """
