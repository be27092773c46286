"""Attacks with a tolerance δ (seed 002, section 4.1).

- `probability` (Definitions 15-16), on probability dataviews: the attacker knows h
  (location, share of visits) pairs of the target; a candidate matches when, at each
  known location, its share lies in [known share − δ, known share + δ].
- `proportion` (Definitions 17-18), on presence dataviews: the attacker knows h
  locations of the target and, for each, its count divided by the count of the most
  visited of them (the reference; ties: smaller location id). A candidate holds every
  known location and, dividing its own counts by its count at the same reference
  location, lands within ±δ of each known proportion. Because the reference can change
  when a location is added, risk need not grow with h: no level is skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from prudence_cli.attacks.base import (
    Attack,
    AttackResult,
    KnowledgeLevel,
    count_risks,
    sizes_for,
    subsets,
)
from prudence_cli.engine import Elements, Engine, QuerySpec

if TYPE_CHECKING:
    from prudence_cli.dataviews.presence import PresenceView, ProbabilityView


class ProbabilityAttack(Attack):
    name: ClassVar[str] = "probability"

    def risks(
        self,
        view: ProbabilityView,  # type: ignore[override]
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
    ) -> AttackResult:
        members = view.elements()
        delta = level["delta"]
        queries = Elements(members.offsets, members.elements, members.values - delta)
        sizes = sizes_for(level["h"], members.lengths)
        spec = subsets(queries, sizes, upper=members.values + delta)
        return count_risks(view, members, spec, engine, known_ones, match="box")


class ProportionAttack(Attack):
    name: ClassVar[str] = "proportion"

    def risks(
        self,
        view: PresenceView,  # type: ignore[override]
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
    ) -> AttackResult:
        members = view.elements()
        sizes = sizes_for(level["h"], members.lengths)
        spec = QuerySpec(members, size_lo=sizes, size_hi=sizes, mode="ratios", delta=level["delta"])
        return count_risks(view, members, spec, engine, known_ones, match="ratio")
