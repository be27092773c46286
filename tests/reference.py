"""Literal, slow implementations of the papers' definitions, for the tests only."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping


def known_count(count: int, visits: str) -> int:
    if visits == "exact":
        return count
    if visits == "half":
        return math.ceil(count / 2)
    return 1


def presence_risks(
    view: Mapping[object, Mapping[object, int]],
    universe: list[object],
    f: int,
    h: int | str,
    visits: str,
) -> dict[object, float]:
    """Seed 000, section 4.1.1, as written: every h-combination of the target's
    (location, known count) pairs, L_s = pairs with known count ≥ f, candidates R = users
    of the dataview holding each location of L_s with count ≥ the known count (all users
    of the dataview when L_s is empty); Risk = max 1/|R|; 0 for users not in the view."""
    in_view = [u for u in universe if view.get(u)]
    risks: dict[object, float] = {}
    for u in universe:
        pairs = sorted(view.get(u, {}).items())
        if not pairs:
            risks[u] = 0.0
            continue
        size = len(pairs) if h == "all" or len(pairs) < h else h
        best = 0.0
        for instance in itertools.combinations(pairs, size):
            known = [(loc, known_count(c, visits)) for loc, c in instance]
            usable = [(loc, k) for loc, k in known if k >= f]
            candidates = [v for v in in_view if all(view[v].get(loc, 0) >= k for loc, k in usable)]
            best = max(best, 1.0 / len(candidates))
        risks[u] = best
    return risks
