"""Attacks with a tolerance δ (Pellungrini et al., Analyzing Privacy Risk in Human Mobility Data,
section 4.1).

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

from typing import ClassVar

from prudence_cli.attacks.base import CountingAttack, h_subsets, sizes_for
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.dataviews.presence import PresenceView, ProbabilityView
from prudence_cli.engine import Elements, QuerySpec


class ProbabilityAttack(CountingAttack[ProbabilityView]):
    name: ClassVar[str] = "probability"
    local: ClassVar[bool] = True
    match: ClassVar[str] = "box"

    def instances(self, view: ProbabilityView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        members = view.elements()
        delta = level["delta"]
        queries = Elements(members.offsets, members.elements, members.values - delta)
        return members, h_subsets(queries, level["h"], upper=members.values + delta)


class ProportionAttack(CountingAttack[PresenceView]):
    name: ClassVar[str] = "proportion"
    local: ClassVar[bool] = True
    match: ClassVar[str] = "ratio"

    def instances(self, view: PresenceView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        members = view.elements()
        sizes = sizes_for(level["h"], members.lengths)
        spec = QuerySpec(members, size_lo=sizes, size_hi=sizes, mode="ratios", delta=level["delta"])
        return members, spec
