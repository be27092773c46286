"""Attacks on frequency vectors (Pellungrini et al., Analyzing Privacy Risk in Human Mobility Data,
section 4.1), on presence dataviews.

- `frequency` (Definitions 13-14): the attacker knows h (location, count) pairs of the
  target; candidates hold each location with a count ≥ the known count. Unlike the
  presence attack, the attacker does not discard pairs below the frequency threshold
  (every pair of the dataview is at or above it anyway).
- `home_work`: the target's two most visited locations with their counts (ties broken
  by the smaller location id), matched as in `frequency`; one instance, no h. A user with
  a single location is known by that one.
- `unique_location` (Frequent Location): h distinct locations of the target;
  candidates visited all of them.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from prudence_cli.attacks.base import CountingAttack, h_subsets
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.dataviews.presence import PresenceView
from prudence_cli.engine import Elements, QuerySpec


class FrequencyAttack(CountingAttack[PresenceView]):
    name: ClassVar[str] = "frequency"
    local: ClassVar[bool] = True

    def instances(self, view: PresenceView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        members = view.elements()
        return members, h_subsets(members, level["h"])


class HomeWorkAttack(CountingAttack[PresenceView]):
    name: ClassVar[str] = "home_work"
    local: ClassVar[bool] = True

    def instances(self, view: PresenceView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        members = view.elements()
        ranked = view.ranked()
        rank = np.arange(ranked.elements.shape[0]) - np.repeat(ranked.offsets[:-1], ranked.lengths)
        top = ranked.select(rank < 2)
        order = np.lexsort((top.elements, np.repeat(np.arange(top.n_users), top.lengths)))
        queries = Elements(top.offsets, top.elements[order], top.values[order])
        return members, h_subsets(queries, 2)


class UniqueLocationAttack(CountingAttack[PresenceView]):
    name: ClassVar[str] = "unique_location"
    local: ClassVar[bool] = True
    match: ClassVar[str] = "contains"

    def instances(self, view: PresenceView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        members = view.elements()
        return members, h_subsets(members, level["h"])
