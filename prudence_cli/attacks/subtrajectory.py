"""The sub-trajectory linking attack on road segments (Pratesi et al., PRUDEnce, section 4.2.1).

The attacker knows h elements (segment, t_origin, t_destination) of the target's
trajectory, in order — an h-subsequence, e.g. from shadowing them for a while — and
looks for the trajectories holding it as a subsequence (Definition 10), times compared at
the dataview's `time` granularity. h = 1, 2, ... or all (the whole trajectory).
"""

from __future__ import annotations

from typing import ClassVar

from prudence_cli.attacks.base import CountingAttack, h_subsets
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.dataviews.segments import SegmentView
from prudence_cli.engine import Elements, QuerySpec


class SubtrajectoryAttack(CountingAttack[SegmentView]):
    name: ClassVar[str] = "subtrajectory"
    match: ClassVar[str] = "contains"
    ordered: ClassVar[bool] = True
    local: ClassVar[bool] = True
    numbering: ClassVar[str | None] = "triples"  # a range numbers them as the whole view

    def instances(self, view: SegmentView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        triples = view.triples()
        return triples, h_subsets(triples, level["h"])
