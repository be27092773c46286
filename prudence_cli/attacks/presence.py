"""The presence attack of PRUDEnce (Pratesi et al., section 4.1.1).

The attacker knows h of the target's locations, each with a minimum number of visits
(`visits`: `exact` = the true count, `half` = ceil(count / 2), `none` = presence only,
count 1), and knows the frequency threshold f of the dataview, so only known pairs with
count ≥ f are usable (L_s). Candidates R: users of the dataview holding every location of
L_s with a count ≥ the known count; if L_s is empty, every user of the dataview.
Risk(u) = max over u's instances of 1 / |R|; 0 for a user absent from the dataview.

Instances are every h-combination of u's (location, known count) pairs, or all of them
when u has fewer than h. Since R only shrinks as L_s grows, the maximum is reached on the
min(h, |E_u|)-subsets of u's usable pairs E_u — the engine enumerates exactly those.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from prudence_cli.attacks.base import CountingAttack, h_subsets
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.dataviews.presence import PresenceView
from prudence_cli.engine import Elements, QuerySpec


def known_counts(count: np.ndarray, visits: str) -> np.ndarray:
    """The minimum number of visits the attacker knows per pair (rounding: ceil)."""
    if visits == "exact":
        return count.astype(np.int32)
    if visits == "half":
        return ((count.astype(np.int64) + 1) // 2).astype(np.int32)
    return np.ones_like(count, dtype=np.int32)


class PresenceAttack(CountingAttack[PresenceView]):
    name: ClassVar[str] = "presence"
    local: ClassVar[bool] = True

    def instances(self, view: PresenceView, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]:
        known = known_counts(view.count, level["visits"])
        usable = known >= view.thresholds
        members = view.elements()
        if level["visits"] == "exact" and usable.all():
            queries = members  # the targets' knowledge is their own pairs: count them once
        else:
            queries = Elements(members.offsets, members.elements, known.astype(float))
            queries = queries.select(usable)
        return members, h_subsets(queries, level["h"])
