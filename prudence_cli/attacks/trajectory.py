"""Attacks on trajectories (Pellungrini et al., Analyzing Privacy Risk in Human Mobility Data,
section 4.1), on trajectory dataviews.

- `location` (Definitions 7-8): the attacker knows an h-sub-multiset of the locations the
  target visited, without order; candidates visited each location at least as many
  times. The instances are the distinct sub-multisets of size h (all of the target's
  visits when fewer than h).
- `visit` (Definitions 11-12): the attacker knows h of the target's visits (location,
  time bin); candidates made every one of those visits. Seed 002 prints the time test as
  t ≤ t'; Prudence matches the visit's time bin exactly, at the dataview's `time`
  granularity, as the trajectory dataview defines it. Instances are sets of distinct
  visits (a repeated visit adds no knowledge).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from prudence_cli.attacks.base import CountingAttack, h_subsets
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.dataviews.trajectory import TrajectoryView
from prudence_cli.engine import Elements, QuerySpec
from prudence_cli.engine.problem import EVERY


class LocationAttack(CountingAttack[TrajectoryView]):
    name: ClassVar[str] = "location"
    local: ClassVar[bool] = True

    def instances(self, view: TrajectoryView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        multisets = view.multisets()
        h = level["h"]
        distinct = multisets.lengths
        compose = EVERY if h == "all" else int(h)  # all: each target's every visit
        size_hi = distinct if h == "all" else np.minimum(distinct, h)
        size_lo = distinct if h == "all" else np.minimum(distinct, 1)
        spec = QuerySpec(
            multisets, size_lo=size_lo, size_hi=size_hi, mode="compositions", compose=compose
        )
        return multisets, spec


class VisitAttack(CountingAttack[TrajectoryView]):
    name: ClassVar[str] = "visit"
    local: ClassVar[bool] = True
    numbering: ClassVar[str | None] = "visits"  # a range numbers them as the whole view
    match: ClassVar[str] = "contains"

    def instances(self, view: TrajectoryView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        visits = view.visit_sets()
        return visits, h_subsets(visits, level["h"])
