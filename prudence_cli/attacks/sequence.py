"""Attacks on the order of places (Pellungrini et al., Analyzing Privacy Risk in Human Mobility
Data, section 4.1): subsequence matching.

- `location_sequence` (Definitions 9-10), on trajectory dataviews: the attacker knows an
  h-subsequence of the target's visited locations, in time order (a place visited twice
  may appear twice); candidates have it as a subsequence of theirs.
- `unique_location_sequence` (Frequent Location Sequence), on presence dataviews: the
  attacker knows h distinct locations of the target ordered by descending visit count
  (ties: smaller location id first); candidates hold them in that relative order in
  their own ranking.
"""

from __future__ import annotations

from typing import ClassVar

from prudence_cli.attacks.base import CountingAttack, h_subsets
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.dataviews.presence import PresenceView
from prudence_cli.dataviews.trajectory import TrajectoryView
from prudence_cli.engine import Elements, QuerySpec


class LocationSequenceAttack(CountingAttack[TrajectoryView]):
    name: ClassVar[str] = "location_sequence"
    local: ClassVar[bool] = True
    match: ClassVar[str] = "contains"
    ordered: ClassVar[bool] = True

    def instances(self, view: TrajectoryView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        sequences = view.sequences()
        return sequences, h_subsets(sequences, level["h"])


class UniqueLocationSequenceAttack(CountingAttack[PresenceView]):
    name: ClassVar[str] = "unique_location_sequence"
    local: ClassVar[bool] = True
    match: ClassVar[str] = "contains"
    ordered: ClassVar[bool] = True

    def instances(self, view: PresenceView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        ranked = view.ranked()
        return ranked, h_subsets(ranked, level["h"])
