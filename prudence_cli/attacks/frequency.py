"""Attacks on frequency vectors (seed 002, section 4.1), on presence dataviews.

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
from prudence_cli.engine import Elements, Engine

if TYPE_CHECKING:
    from prudence_cli.dataviews.presence import PresenceView


class FrequencyAttack(Attack):
    name: ClassVar[str] = "frequency"

    def risks(
        self,
        view: PresenceView,  # type: ignore[override]
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
    ) -> AttackResult:
        members = view.elements()
        sizes = sizes_for(level["h"], members.lengths)
        return count_risks(view, members, subsets(members, sizes), engine, known_ones)


class HomeWorkAttack(Attack):
    name: ClassVar[str] = "home_work"

    def risks(
        self,
        view: PresenceView,  # type: ignore[override]
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
    ) -> AttackResult:
        members = view.elements()
        ranked = view.ranked()
        rank = np.arange(ranked.elements.shape[0]) - np.repeat(ranked.offsets[:-1], ranked.lengths)
        top = ranked.select(rank < 2)
        order = np.lexsort((top.elements, np.repeat(np.arange(top.n_users), top.lengths)))
        queries = Elements(top.offsets, top.elements[order], top.values[order])
        sizes = sizes_for(2, queries.lengths)
        return count_risks(view, members, subsets(queries, sizes), engine, known_ones)


class UniqueLocationAttack(Attack):
    name: ClassVar[str] = "unique_location"

    def risks(
        self,
        view: PresenceView,  # type: ignore[override]
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
    ) -> AttackResult:
        members = view.elements()
        sizes = sizes_for(level["h"], members.lengths)
        return count_risks(
            view, members, subsets(members, sizes), engine, known_ones, match="contains"
        )
