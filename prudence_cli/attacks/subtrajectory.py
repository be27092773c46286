"""The sub-trajectory linking attack on road segments (seed 000, section 4.2.1).

The attacker knows h elements (segment, t_origin, t_destination) of the target's
trajectory, in order — an h-subsequence, e.g. from shadowing them for a while — and
looks for the trajectories holding it as a subsequence (Definition 10), times compared at
the dataview's `time` granularity. h = 1, 2, ... or all (the whole trajectory).
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
    from prudence_cli.dataviews.segments import SegmentView


class SubtrajectoryAttack(Attack):
    name: ClassVar[str] = "subtrajectory"

    def risks(
        self,
        view: SegmentView,  # type: ignore[override]
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
    ) -> AttackResult:
        triples = view.triples()
        sizes = sizes_for(level["h"], triples.lengths)
        return count_risks(
            view,
            triples,
            subsets(triples, sizes),
            engine,
            known_ones,
            match="contains",
            ordered=True,
        )
