"""What `sanitize` releases from a dataview of a catalog: the suppression fixpoint at the
tolerated risk R under the counted attack levels, started from the catalog's risks.

`sanitize` runs it on the dataview it releases; `catalog best` runs it on every dataview
to rank them by what a release would really keep, and `sanitize` without `--dataview`
chooses by the same ranking. One code path, so `best` never promises more than
`sanitize` delivers: removing risky people can make others unique, pass after pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from prudence_cli.catalog import Catalog
from prudence_cli.catalog.query import (
    Levels,
    counted_levels,
    dataview_entries,
    max_risk_over,
    sampled_level_keys,
)
from prudence_cli.catalog.release_records import LevelRisk
from prudence_cli.dataviews.base import Dataview
from prudence_cli.engine import Engine
from prudence_cli.sanitize.suppress import (
    Assessment,
    Joiner,
    Outcome,
    Step,
    assess_levels,
    sanitize,
)


@dataclass(frozen=True)
class Suppressed:
    """One dataview before and after the fixpoint."""

    before: Dataview
    user_ids: np.ndarray  # the universe U, original ids
    outcome: Outcome

    @property
    def released(self) -> np.ndarray:
        """Per user of U: still in the view after suppression."""
        return np.diff(self.outcome.view.offsets) > 0

    def share_released(self, kind: str) -> float:
        """The share of the dataview's data (`kind`: the catalog's coverage) released."""
        everyone = np.ones(self.before.n_users, dtype=bool)
        total = self.before.data_of(everyone, kind)
        return float(self.outcome.view.data_of(everyone, kind) / total) if total else 0.0


def catalog_engine(catalog: Catalog) -> Engine:
    """An engine with the catalog's settings and seed, as the assessment had."""
    settings = catalog.record.engine
    return Engine(
        max_instances=settings.max_instances,
        sample=settings.sample,
        seed=int(catalog.record.seed),
    )


def suppress_dataview(
    catalog: Catalog,
    view_id: str,
    levels: Levels,
    threshold: float,
    method: str = "suppress-users",
    join: Joiner | None = None,
    progress: Callable[[Step], None] | None = None,
) -> Suppressed:
    """The fixpoint on one dataview. Without `join` (data released earlier to the same
    recipient), the first pass takes the catalog's per-user risks instead of counting
    them again; with it, every pass counts on the joined data."""
    view, user_ids = catalog.view(view_id)
    start = None if join is not None else _catalog_risks(catalog, view, levels)
    outcome = sanitize(
        view, levels, catalog_engine(catalog), threshold, method, join, progress, start
    )
    return Suppressed(view, user_ids, outcome)


def every_level(
    catalog: Catalog,
    outcome: Outcome,
    counted: Levels,
    threshold: float,
    join: Joiner | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[LevelRisk, ...]:
    """Every attack level assessed in the catalog, counted or not, on the released data
    of `outcome`: the counted ones from the fixpoint's last pass, the others counted
    now (on the data joined with earlier releases, with `join`; `progress` hears each)."""
    counted_keys = {level.key for _, level in counted}
    assessed = counted_levels(catalog)
    others = [(a, lv) for a, lv in assessed if lv.key not in counted_keys]
    per_level = dict(outcome.per_level)
    sampled = set(outcome.sampled)
    if others:
        engine = catalog_engine(catalog)
        _, more, more_sampled = assess_levels(outcome.view, others, engine, join, progress)
        per_level.update(more)
        sampled |= more_sampled
    released = np.diff(outcome.view.offsets) > 0
    rows = []
    for _, level in assessed:
        risk = per_level[level.key][released]
        rows.append(
            LevelRisk(
                level=level.key,
                counted=level.key in counted_keys,
                max_risk=float(risk.max(initial=0.0)),
                mean_risk=float(risk.mean()) if risk.size else 0.0,
                users_above=int(np.count_nonzero(risk > threshold)),
                sampled=level.key in sampled,
            )
        )
    return tuple(rows)


def blind_levels(catalog: Catalog, view_id: str, levels: Levels) -> tuple[str, ...]:
    """Notes on counted levels that cannot single anyone out on this dataview by their
    definition, so that they never stand alone unseen: the presence attack with unknown
    visit counts (`visits: none`) knows each place with count 1, below a frequency
    threshold f > 1, so its knowledge is never usable and every risk is 1/|people|
    (Pratesi et al., PRUDEnce, section 4.1.1). An attacker who knows the same places
    without counts is `unique_location`; the note says whether it was assessed."""
    dimensions = catalog.dataview_entry(view_id).dimensions
    frequency = int(str(dimensions.get("frequency", 1)))
    assessed = {entry.attack for entry in catalog.record.attacks}
    notes = []
    for attack, level in levels:
        values = dict(level.values)
        if attack.name == "presence" and values.get("visits") == "none" and frequency > 1:
            other = (
                "its risks on the release are reported with the other levels"
                if "unique_location" in assessed
                else "it was not assessed: add it to the config's attacks"
            )
            notes.append(
                f"{level.key} cannot single anyone out on {view_id}: the attacker knows "
                f"each place with count 1, below the frequency threshold {frequency}, so "
                "every risk is 1/(people in the dataview) by definition. It says nothing "
                "about an attacker who knows the same places, which is unique_location: "
                + other
                + "."
            )
    return tuple(notes)


def forecast(
    catalog: Catalog,
    levels: Levels,
    threshold: float,
    where: Sequence[str] = (),
    method: str = "suppress-users",
    progress: Callable[[int, int, str], None] | None = None,
    measure: Callable[[Suppressed], dict[str, float]] | None = None,
) -> pd.DataFrame:
    """Per dataview kept by `where`: what `sanitize --method method` would release at R.

    Columns: dataview, users_released, released (share of the data), passes (suppression
    passes), max_risk_after (over the counted levels, on the released data), and the
    columns `measure` gives of each release."""
    entries = dataview_entries(catalog, where)
    rows = []
    for done, entry in enumerate(entries):
        if progress is not None:
            progress(done, len(entries), f"suppressing {entry.id} to risk ≤ {threshold:g}")
        result = suppress_dataview(catalog, entry.id, levels, threshold, method)
        rows.append(
            {
                "dataview": entry.id,
                "users_released": int(result.released.sum()),
                "released": result.share_released(catalog.record.coverage),
                "passes": len(result.outcome.steps),
                "max_risk_after": float(result.outcome.risk.max(initial=0.0)),
                **(measure(result) if measure is not None else {}),
            }
        )
    if progress is not None:
        progress(len(entries), len(entries), "suppressed")
    columns = ["dataview", "users_released", "released", "passes", "max_risk_after"]
    return pd.DataFrame(
        rows, columns=[*columns, *[c for c in (rows[0] if rows else {}) if c not in columns]]
    )


def _catalog_risks(catalog: Catalog, view: Dataview, levels: Levels) -> Assessment:
    """The first pass of the fixpoint as the catalog holds it: per-user max risk over the
    levels, the risk per level, and the levels that were sampled."""
    risks = catalog.risks(view.id)
    max_risk_over(risks, levels, view.id)  # every level present, else CatalogError
    in_view = np.diff(view.offsets) > 0
    per_level = {
        level.key: np.where(in_view, risks[level.key].to_numpy(dtype=float), 0.0)
        for _, level in levels
    }
    combined = np.max(list(per_level.values()), axis=0)
    return combined, per_level, frozenset(sampled_level_keys(catalog, view.id) & per_level.keys())
