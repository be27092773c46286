"""The attacker's background knowledge, as the config declares it: each attack's name,
the dataview formats it applies to and its knowledge dimensions (DESIGN.md section 5).

A light table of names and parsers, so that a config is validated without loading any
attack; each attack class takes its declaration from here (attacks/base.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


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


@dataclass(frozen=True)
class AttackSchema:
    """What an attack declares: the formats it applies to, its knowledge dimensions (whose
    combinations are its levels), and whether its risk never decreases when h grows."""

    name: str
    formats: frozenset[str]
    knowledge: tuple[KnowledgeDimension, ...]
    monotone_in_h: bool = True

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


def _whole(minimum: int, what: str) -> Callable[[object], int]:
    def parse(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{value!r} is not {what}")
        return value

    return parse


def _one_of(options: tuple[str, ...]) -> Callable[[object], str]:
    def parse(value: object) -> str:
        if not isinstance(value, str) or value not in options:
            raise ValueError(f"{value!r} is not one of: {', '.join(options)}")
        return value

    return parse


def parse_h(value: object) -> int | str:
    """h is a positive whole number of known elements, or 'all' (the whole record)."""
    if value == "all":
        return "all"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{value!r} is not a number of known elements (1, 2, ... or all)")
    return value


def parse_tolerance(value: object) -> float:
    """δ of the probability and proportion attacks: a relative tolerance in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{value!r} is not a tolerance δ (a number in [0, 1))")
    return float(value)


def parse_samples(value: object) -> int | str:
    if value == "all":
        return "all"
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"{value!r} is not a number of people to sample (≥ 2) or all")
    return value


SCENARIOS = ("1", "2.1", "2.2")


def parse_scenario(value: object) -> str:
    text = str(value)
    if text not in SCENARIOS:
        raise ValueError(f"{value!r} is not a scenario (1, 2.1 or 2.2)")
    return text


def parse_distance(value: object) -> float | str:
    """δ of the attacks on noisy profiles: an ℓ1 distance ≥ 0, or 'P%' of the noisy
    profile's norm."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            share = float(value[:-1])
        except ValueError:
            share = -1.0
        if not 0 <= share <= 100:
            raise ValueError(f"{value!r} is not a percentage between 0% and 100%")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{value!r} is not an ℓ1 distance (a number ≥ 0) or a percentage")
    return float(value) if isinstance(value, float) else value


def _share(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValueError(f"{value!r} is not a share in (0, 1]")
    return value


def _threshold(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{value!r} is not an affinity threshold in [0, 1]")
    return value


VISITS = ("exact", "half", "none")
DRAWS = ("activity", "uniform")

H = KnowledgeDimension("h", parse_h, (1, 2, 3))
VISIT_KNOWLEDGE = KnowledgeDimension("visits", _one_of(VISITS), VISITS)
TOLERANCE = KnowledgeDimension("delta", parse_tolerance, (0.1,))
SCENARIO = KnowledgeDimension("scenario", parse_scenario, ("2.2",), names=True)
DISTANCE = KnowledgeDimension("delta", parse_distance, (2,))
M = KnowledgeDimension("M", _whole(1, "a whole number ≥ 1"), (1,))

_PROFILES = frozenset({"profiles"})


def _schema(
    name: str, formats: str, *knowledge: KnowledgeDimension, monotone: bool = True
) -> AttackSchema:
    return AttackSchema(name, frozenset(formats.split()), knowledge, monotone)


ATTACK_SCHEMAS: dict[str, AttackSchema] = {
    s.name: s
    for s in (
        _schema("presence", "presence", H, VISIT_KNOWLEDGE),
        _schema("location", "trajectory", H),
        _schema("location_sequence", "trajectory", H),
        _schema("visit", "trajectory", H),
        _schema("unique_location", "presence", H),
        _schema("unique_location_sequence", "presence", H),
        _schema("frequency", "presence", H),
        _schema("home_work", "presence"),
        _schema("probability", "probability", H, TOLERANCE),
        _schema("proportion", "presence", H, TOLERANCE, monotone=False),
        _schema("subtrajectory", "segments", H),
        _schema("cluster", "clusters"),
        _schema(
            "unicity",
            "bins",
            KnowledgeDimension(
                "points", _whole(1, "a number of known points (1, 2, ...)"), (2, 3, 4)
            ),
            KnowledgeDimension("draw", _one_of(DRAWS), ("activity",)),
            KnowledgeDimension("samples", parse_samples, (1000,)),
        ),
        # attacks on noisy profiles (randomized sanitization): success rates, not risks
        _schema("reidentification", "profiles", SCENARIO, DISTANCE, M, monotone=False),
        _schema(
            "consistent_reidentification",
            "profiles",
            SCENARIO,
            DISTANCE,
            M,
            KnowledgeDimension("tau", _threshold, (0.01,)),
            KnowledgeDimension("N", _whole(1, "a whole number ≥ 1"), (2,)),
            monotone=False,
        ),
        _schema(
            "noise_estimate",
            "profiles",
            SCENARIO,
            KnowledgeDimension("within", _share, (0.1,)),
            monotone=False,
        ),
        _schema("significant_poi", "profiles", SCENARIO, DISTANCE, monotone=False),
    )
}
