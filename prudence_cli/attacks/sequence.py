"""Attacks on the order of places (seed 002, section 4.1): subsequence matching.

- `location_sequence` (Definitions 9-10), on trajectory dataviews: the attacker knows an
  h-subsequence of the target's visited locations, in time order (a place visited twice
  may appear twice); candidates have it as a subsequence of theirs.
- `unique_location_sequence` (Frequent Location Sequence), on presence dataviews: the
  attacker knows h distinct locations of the target ordered by descending visit count
  (ties: smaller location id first); candidates hold them in that relative order in
  their own ranking.
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
from prudence_cli.engine import Engine

if TYPE_CHECKING:
    from prudence_cli.dataviews.presence import PresenceView
    from prudence_cli.dataviews.trajectory import TrajectoryView


class LocationSequenceAttack(Attack):
    name: ClassVar[str] = "location_sequence"

    def risks(
        self,
        view: TrajectoryView,  # type: ignore[override]
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
    ) -> AttackResult:
        sequences = view.sequences()
        sizes = sizes_for(level["h"], sequences.lengths)
        return count_risks(
            view,
            sequences,
            subsets(sequences, sizes),
            engine,
            known_ones,
            match="contains",
            ordered=True,
        )


class UniqueLocationSequenceAttack(Attack):
    name: ClassVar[str] = "unique_location_sequence"

    def risks(
        self,
        view: PresenceView,  # type: ignore[override]
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
    ) -> AttackResult:
        ranked = view.ranked()
        sizes = sizes_for(level["h"], ranked.lengths)
        return count_risks(
            view, ranked, subsets(ranked, sizes), engine, known_ones, match="contains", ordered=True
        )
