"""Utility of a generalization profile as the error of a declared aggregate (the thesis on
disclosure analysis of mobile-phone data,
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

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from prudence_cli import columns as C
from prudence_cli.dataviews.trajectory import local_bins
from prudence_cli.io.geojson import read_region_layer
from prudence_cli.select import Selection
from prudence_cli.space import grid_cells, project, regions_of, unproject

if TYPE_CHECKING:
    import shapely


@dataclass(frozen=True)
class Space:
    """A spatial generalization: a grid size (metres) or a region layer file."""

    grid: float | None = None
    layer: Path | None = None


class Activity(Protocol):
    """The selected points' activity per space unit and time bin, wherever the points
    are: here (`PointsActivity`) or on a cluster's workers
    (measures/ranges_activity.RangesActivity)."""

    def counts(self, space: Space, seconds: int) -> pd.DataFrame:
        """Points per (unit, time bin of `seconds` on the local clock): columns unit,
        tbin, count, in the order of each one's first point (`cell_counts`)."""
        ...

    def polygons(self, space: Space) -> list[shapely.Geometry]:
        """Each unit's polygon in the points' projected CRS."""
        ...


@dataclass
class PointsActivity:
    """The activity of the selected points held here."""

    selection: Selection
    timezone: str
    _units: dict[Space, tuple[np.ndarray, list[shapely.Geometry]]] = field(default_factory=dict)

    def counts(self, space: Space, seconds: int) -> pd.DataFrame:
        time = self.selection.points[C.TIME].to_numpy()
        return cell_counts(self._of(space)[0], local_bins(time, seconds, self.timezone))

    def polygons(self, space: Space) -> list[shapely.Geometry]:
        return self._of(space)[1]

    def _of(self, space: Space) -> tuple[np.ndarray, list[shapely.Geometry]]:
        if space not in self._units:
            self._units[space] = units(self.selection, space)
        return self._units[space]


def units(selection: Selection, space: Space) -> tuple[np.ndarray, list[shapely.Geometry]]:
    """Unit code per selected point (−1 outside every unit) and each unit's polygon in
    the selection's projected CRS."""
    x = selection.points[C.X].to_numpy()
    y = selection.points[C.Y].to_numpy()
    if space.grid is not None:
        codes, cells = grid_cells(x, y, space.grid, selection.crs)
        corner = cells["label"].str.split("_", expand=True).astype(np.int64).to_numpy()
        return codes.astype(np.int64), cell_boxes(corner[:, 0], corner[:, 1], space.grid)
    assert space.layer is not None
    regions = read_region_layer(space.layer)
    lon, lat = unproject(x, y, selection.crs)
    codes, _ = regions_of(lon, lat, regions["label"].tolist(), regions["geometry"].tolist())
    return codes.astype(np.int64), projected_regions(regions["geometry"].tolist(), selection.crs)


def cell_boxes(cx: np.ndarray, cy: np.ndarray, side: float) -> list[shapely.Geometry]:
    """The squares of the grid cells in column `cx` and row `cy`."""
    import shapely

    return list(shapely.box(cx * side, cy * side, (cx + 1) * side, (cy + 1) * side))


def projected_regions(polygons: list[shapely.Geometry], crs: str) -> list[shapely.Geometry]:
    """A layer's polygons (lon/lat) in the projected `crs`, for their areas."""
    import shapely

    return list(
        shapely.transform(
            np.asarray(polygons, dtype=object),
            lambda xy: np.column_stack(project(xy[:, 0], xy[:, 1], crs)),
        )
    )


def cell_counts(codes: np.ndarray, tbin: np.ndarray) -> pd.DataFrame:
    """Points per (unit, time bin): columns unit, tbin, count (points outside: none), in
    the order of each one's first point."""
    inside = codes >= 0
    frame = pd.DataFrame({"unit": codes[inside], "tbin": tbin[inside]})
    return frame.groupby(["unit", "tbin"], sort=False).size().rename("count").reset_index()


def overlap_shares(profile: list[shapely.Geometry], target: list[shapely.Geometry]) -> pd.DataFrame:
    """Columns unit, target, share = area(P_unit ∩ A_target) / area(P_unit), for the
    overlapping pairs."""
    import shapely

    tree = shapely.STRtree(target)
    pairs = tree.query(profile, predicate="intersects")
    source = np.asarray(profile, dtype=object)[pairs[0]]
    shared = shapely.area(shapely.intersection(source, np.asarray(target, dtype=object)[pairs[1]]))
    area = shapely.area(source)
    share = np.divide(shared, area, out=np.zeros_like(shared), where=area > 0)
    frame = pd.DataFrame({"unit": pairs[0], "target": pairs[1], "share": share})
    return frame[frame["share"] > 0]


def aggregate_error(
    activity: Activity, profile: tuple[Space, int], aggregate: tuple[Space, int]
) -> float:
    """The share of the aggregate's activity misplaced when it is answered from the
    profile (space, seconds); 0 when the profile is the aggregate itself."""
    (p_space, p_seconds), (a_space, a_seconds) = profile, aggregate
    truth = activity.counts(a_space, a_seconds)
    total = int(truth["count"].sum())
    if total == 0:
        return 0.0
    counts = activity.counts(p_space, p_seconds)
    p_polygons, a_polygons = activity.polygons(p_space), activity.polygons(a_space)
    # each profile bin [τ·P, (τ+1)·P) over the aggregate bins t it overlaps
    start = counts["tbin"].to_numpy() * p_seconds
    end = start + p_seconds
    first, last = start // a_seconds, (end - 1) // a_seconds
    spans = (last - first + 1).astype(np.int64)
    row = np.repeat(np.arange(len(counts)), spans)
    t = first[row] + (np.arange(row.shape[0]) - np.repeat(np.cumsum(spans) - spans, spans))
    seconds = np.minimum(end[row], (t + 1) * a_seconds) - np.maximum(start[row], t * a_seconds)
    spread = pd.DataFrame(
        {
            "unit": counts["unit"].to_numpy()[row],
            "tbin": t,
            "value": counts["count"].to_numpy()[row] * seconds / p_seconds,
        }
    )
    placed = spread.merge(overlap_shares(p_polygons, a_polygons), on="unit")
    placed["value"] *= placed["share"]
    estimate = placed.groupby(["target", "tbin"])["value"].sum().rename("estimate")
    truth = truth.rename(columns={"unit": "target"}).set_index(["target", "tbin"])["count"]
    both = pd.concat([estimate, truth], axis=1).fillna(0.0)
    misplaced = float((both["estimate"] - both["count"]).abs().sum())
    return misplaced / (2 * total)


def aggregate_table(
    activity: Activity,
    profiles: list[tuple[dict[str, str], Space, int]],
    aggregate: tuple[Space, int],
) -> pd.DataFrame:
    """One row per profile: its dimension labels, `score` = 1 − error, `aggregate_error`."""
    rows = []
    for labels, space, seconds in profiles:
        error = aggregate_error(activity, (space, seconds), aggregate)
        rows.append({**labels, "score": 1.0 - error, "aggregate_error": error})
    return pd.DataFrame(rows)
