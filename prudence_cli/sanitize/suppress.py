"""Suppression to a fixpoint: every remaining user at or below the tolerated risk.

A user's risk is the maximum over the counted attack levels. Suppression changes the
data, and with it everyone's candidates: removing a person can raise the risk of those
left. Both methods therefore re-assess the whole view after every step, until nobody
left is above the threshold. Each step removes at least one row, so they terminate.

- `suppress-users` (Pratesi et al., PRUDEnce, section 2 step 7): remove every user above the
threshold.
- `suppress-locations`: from every user above the threshold, remove their rarest
  location — the one held by the fewest users of the current view (ties: smaller
  location id), the place most likely to single them out. A user whose locations are all
  gone leaves the view. It keeps more data than removing whole users.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from prudence_cli.arrays import distinct
from prudence_cli.attacks.base import Attack, KnowledgeLevel
from prudence_cli.dataviews.base import Dataview
from prudence_cli.engine import Engine

# (view, data released earlier to the same recipient) -> the view to assess
Joiner = Callable[[Dataview], Dataview]
# per-user max risk over the levels, the risk per level, the levels that were sampled
Assessment = tuple[np.ndarray, dict[str, np.ndarray], frozenset[str]]


@dataclass(frozen=True)
class Step:
    """One pass: who was above the threshold and what was removed."""

    iteration: int
    users_above: int
    max_risk: float
    users_removed: int
    rows_removed: int


@dataclass
class Outcome:
    view: Dataview  # the sanitized view (same universe U)
    risk: np.ndarray  # per user of U, max over the counted levels, on the final view
    initial_risk: np.ndarray  # the same, before any suppression
    per_level: dict[str, np.ndarray]
    steps: list[Step] = field(default_factory=list)
    sampled: frozenset[str] = frozenset()  # levels sampled on some pass: lower bounds


def assess_levels(
    view: Dataview,
    levels: Sequence[tuple[Attack, KnowledgeLevel]],
    engine: Engine,
    join: Joiner | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> Assessment:
    """Per-user max risk over the levels, the risk per level, and the levels that had
    to be sampled. With `join`, the attacks see the view joined with earlier releases;
    the returned risks are those of the users of `view`. `progress` hears each level
    before it is counted."""
    target = join(view) if join is not None else view
    per_level: dict[str, np.ndarray] = {}
    sampled: set[str] = set()
    for done, (attack, level) in enumerate(levels):
        if progress is not None:
            progress(done, len(levels), f"assessing {level.key}")
        lower = attack.lower_level(level)
        known = per_level[lower.key] >= 1.0 if lower and lower.key in per_level else None
        # a joined view has more people than `view`: its risks are not those of per_level
        computed = per_level if join is None else None
        result = attack.risks(target, level, engine, known, computed=computed)
        per_level[level.key] = result.risk[: view.n_users]
        if result.sampled:
            sampled.add(level.key)
    in_view = np.diff(view.offsets) > 0  # risks are those of the people of `view`
    combined = np.zeros(view.n_users)
    for risk in per_level.values():
        combined = np.maximum(combined, np.where(in_view, risk, 0.0))
    per_user = {k: np.where(in_view, v, 0.0) for k, v in per_level.items()}
    return combined, per_user, frozenset(sampled)


def sanitize(
    view: Dataview,
    levels: Sequence[tuple[Attack, KnowledgeLevel]],
    engine: Engine,
    threshold: float,
    method: str,
    join: Joiner | None = None,
    progress: Callable[[Step], None] | None = None,
    start: Assessment | None = None,
) -> Outcome:
    """Suppress until every user of the view is at or below `threshold` (see module).

    `start` is the first pass's assessment when it is already known (the catalog's)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    steps: list[Step] = []
    sampled: frozenset[str] = frozenset()
    iteration = 0
    initial: np.ndarray | None = None
    while True:
        if start is not None:
            (risk, per_level, was_sampled), start = start, None
        else:
            risk, per_level, was_sampled = assess_levels(view, levels, engine, join)
        initial = risk if initial is None else initial
        sampled |= was_sampled
        above = risk > threshold
        if not above.any():
            return Outcome(view, risk, initial, per_level, steps, sampled)
        iteration += 1
        drop = SUPPRESSIONS[method](view, above[view.user])
        users_before = np.count_nonzero(np.diff(view.offsets))
        view = view.keep(~drop)
        step = Step(
            iteration=iteration,
            users_above=int(above.sum()),
            max_risk=float(risk.max()),
            users_removed=int(users_before - np.count_nonzero(np.diff(view.offsets))),
            rows_removed=int(drop.sum()),
        )
        steps.append(step)
        if progress is not None:
            progress(step)


def _every_row(view: Dataview, rows_above: np.ndarray) -> np.ndarray:
    """suppress-users: every row of every user above the threshold."""
    return rows_above


def _rarest_of_each_user(view: Dataview, candidate_rows: np.ndarray) -> np.ndarray:
    """suppress-locations: of each user above the threshold, every row at their location
    held by the fewest users."""
    n_locations = max(len(view.locations), 1)
    pairs = distinct(view.user.astype(np.int64) * n_locations + view.location)
    holders = np.bincount(pairs % n_locations, minlength=n_locations)
    rows = np.flatnonzero(candidate_rows)
    # per user: smallest (holders, location id) among their rows
    key = holders[view.location[rows]].astype(np.int64) * n_locations + view.location[rows]
    best = np.full(view.n_users, np.iinfo(np.int64).max)
    np.minimum.at(best, view.user[rows], key)
    chosen = best[view.user] % n_locations
    return candidate_rows & (view.location == chosen) & (best[view.user] != np.iinfo(np.int64).max)


# Suppression methods by name: which rows of the users above the threshold one pass
# removes. A new method is one function and one line here.
SUPPRESSIONS: dict[str, Callable[[Dataview, np.ndarray], np.ndarray]] = {
    "suppress-users": _every_row,
    "suppress-locations": _rarest_of_each_user,
}
METHODS = tuple(SUPPRESSIONS)
