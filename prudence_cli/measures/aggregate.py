"""Utility of a generalization profile as the error of a declared aggregate (seed 003,
chapter 5): how well the activity per (space unit, time bin) of the declared aggregate —
e.g. records per district and hour — can be answered from the profile's bins.

Truth: the selected points counted per aggregate cell. Estimate: each profile bin's count
spread over the aggregate cells it overlaps, in proportion to the shared area (activity
uniform in space within a unit) and the shared time (uniform in time within a bin). The
error is the share of the activity put in the wrong cell, Σ|estimate − truth| / (2 Σ
truth) in [0, 1] (activity of a profile unit falling outside every aggregate unit is
misplaced); the utility score is 1 − error.

Space units are grid cells (squares in the projected CRS) or the polygons of a region
layer (projected for their areas). Time bins are on the local wall clock of the input's
time zone, as the dataviews' bins.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import shapely

from prudence_cli import columns as C
from prudence_cli.dataviews.trajectory import local_bins
from prudence_cli.io.readers import read_region_layer
from prudence_cli.select import Selection
from prudence_cli.space import grid_cells, project, regions_of, unproject


@dataclass(frozen=True)
class Space:
    """A spatial generalization: a grid size (metres) or a region layer file."""

    grid: float | None = None
    layer: Path | None = None


def units(selection: Selection, space: Space) -> tuple[np.ndarray, list[shapely.Geometry]]:
    """Unit code per selected point (−1 outside every unit) and each unit's polygon in
    the selection's projected CRS."""
    x = selection.points[C.X].to_numpy()
    y = selection.points[C.Y].to_numpy()
    if space.grid is not None:
        side = space.grid
        codes, cells = grid_cells(x, y, side, selection.crs)
        corner = cells["label"].str.split("_", expand=True).astype(np.int64).to_numpy()
        boxes = shapely.box(
            corner[:, 0] * side,
            corner[:, 1] * side,
            (corner[:, 0] + 1) * side,
            (corner[:, 1] + 1) * side,
        )
        return codes.astype(np.int64), list(boxes)
    assert space.layer is not None
    regions = read_region_layer(space.layer)
    lon, lat = unproject(x, y, selection.crs)
    codes, _ = regions_of(lon, lat, regions["label"].tolist(), regions["geometry"].tolist())
    polygons = shapely.transform(
        np.asarray(regions["geometry"].tolist(), dtype=object),
        lambda xy: np.column_stack(project(xy[:, 0], xy[:, 1], selection.crs)),
    )
    return codes.astype(np.int64), list(polygons)


def cell_counts(codes: np.ndarray, tbin: np.ndarray) -> dict[tuple[int, int], int]:
    inside = codes >= 0
    keys, counts = np.unique(
        np.stack([codes[inside], tbin[inside]], axis=1), axis=0, return_counts=True
    )
    return {(int(a), int(t)): int(c) for (a, t), c in zip(keys, counts, strict=True)}


def overlap_shares(profile: list[shapely.Geometry], target: list[shapely.Geometry]) -> dict:
    """share[s] = [(a, area(P_s ∩ A_a) / area(P_s)), ...] for the overlapping pairs."""
    tree = shapely.STRtree(target)
    out: dict[int, list[tuple[int, float]]] = {}
    for s, polygon in enumerate(profile):
        area = polygon.area
        pairs = []
        if area > 0:
            for a in tree.query(polygon, predicate="intersects").tolist():
                shared = shapely.intersection(polygon, target[a]).area / area
                if shared > 0:
                    pairs.append((a, shared))
        out[s] = pairs
    return out


def aggregate_error(
    selection: Selection,
    timezone: str,
    profile: tuple[Space, int],
    aggregate: tuple[Space, int],
) -> float:
    """The share of the aggregate's activity misplaced when it is answered from the
    profile (space, seconds); 0 when the profile is the aggregate itself."""
    time = selection.points[C.TIME].to_numpy()
    (p_space, p_seconds), (a_space, a_seconds) = profile, aggregate
    p_codes, p_polygons = units(selection, p_space)
    a_codes, a_polygons = units(selection, a_space)
    truth = cell_counts(a_codes, local_bins(time, a_seconds, timezone))
    total = sum(truth.values())
    if total == 0:
        return 0.0
    counts = cell_counts(p_codes, local_bins(time, p_seconds, timezone))
    shares = overlap_shares(p_polygons, a_polygons)
    estimate: dict[tuple[int, int], float] = defaultdict(float)
    for (s, tau), count in counts.items():
        start, end = tau * p_seconds, (tau + 1) * p_seconds
        first, last = start // a_seconds, (end - 1) // a_seconds
        for t in range(first, last + 1):
            seconds = min(end, (t + 1) * a_seconds) - max(start, t * a_seconds)
            for a, share in shares[s]:
                estimate[(a, t)] += count * share * seconds / p_seconds
    keys = set(truth) | set(estimate)
    misplaced = sum(abs(estimate.get(k, 0.0) - truth.get(k, 0)) for k in keys)
    return float(misplaced / (2 * total))


def aggregate_table(
    selection: Selection,
    timezone: str,
    profiles: list[tuple[dict[str, str], Space, int]],
    aggregate: tuple[Space, int],
) -> pd.DataFrame:
    """One row per profile: its dimension labels, `score` = 1 − error, `aggregate_error`."""
    rows = []
    for labels, space, seconds in profiles:
        error = aggregate_error(selection, timezone, (space, seconds), aggregate)
        rows.append({**labels, "score": 1.0 - error, "aggregate_error": error})
    return pd.DataFrame(rows)
