"""What a release at each risk threshold still tells an analyst, from a catalog: per
dataview and counted attack level, the mobility measures (measures/mobility.py) on the
people at risk ≤ t against the whole dataview, and their correlation with risk
(Pellungrini et al., Analyzing Privacy Risk in Human Mobility Data, sections 5.2–5.3)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from prudence_cli.catalog import Catalog
from prudence_cli.catalog.query import Levels, dataview_entries
from prudence_cli.errors import CatalogError
from prudence_cli.measures.mobility import THRESHOLDS, Profile, visits_of


@dataclass(frozen=True)
class Mobility:
    distortion: pd.DataFrame  # dataview, dimensions, level, threshold, kind, measure, ks, ...
    correlation: pd.DataFrame  # dataview, dimensions, level, measure, pearson, spearman, people
    skipped: tuple[str, ...]  # dataviews whose format has no places to measure


def catalog_mobility(
    catalog: Catalog,
    levels: Levels,
    where: Sequence[str] = (),
    thresholds: Sequence[float] = THRESHOLDS,
    measures: Sequence[str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> Mobility:
    """The distortion tables of every dataview kept by `where`, under each level of
    `levels` (a person's risk at that level decides whether they are in D_t)."""
    crs = catalog.record.selection.crs
    if crs is None:
        raise CatalogError(
            f"{catalog.path}: the catalog records no projection; run prudence assess again"
        )
    entries = dataview_entries(catalog, where)
    distortion, correlation, skipped = [], [], []
    for done, entry in enumerate(entries):
        if progress is not None:
            progress(done, len(entries), f"measuring {entry.id}")
        view = catalog.view(entry.id)[0]
        visits = visits_of(view, crs)
        if visits is None:
            skipped.append(entry.id)
            continue
        profile = Profile(visits, measures)
        risks = catalog.risks(entry.id)
        keys = {"dataview": entry.id, **{k: str(v) for k, v in entry.dimensions.items()}}
        for _, level in levels:
            risk = risks[level.key].to_numpy(dtype=float)
            named = {**keys, "level": level.key}
            distortion.append(_first(profile.by_threshold(risk, thresholds), named))
            correlation.append(_first(profile.correlation(risk), named))
    if progress is not None:
        progress(len(entries), len(entries), "measured")
    return Mobility(_joined(distortion), _joined(correlation), tuple(skipped))


def _first(frame: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    for position, (name, value) in enumerate(columns.items()):
        frame.insert(position, name, value)
    return frame


def _joined(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
