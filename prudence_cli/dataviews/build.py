"""Build every dataview of a config: one per combination of dimension values, the first
dimension varying slowest. The location of every point is computed once per grid."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli import columns as C
from prudence_cli.config import DataviewConfig
from prudence_cli.dataviews.base import Dataview
from prudence_cli.dataviews.bins import BinsView, bin_rows
from prudence_cli.dataviews.clusters import ClusterView
from prudence_cli.dataviews.presence import PresenceView, ProbabilityView, presence_pairs
from prudence_cli.dataviews.profiles import ProfilesView, profile_rows
from prudence_cli.dataviews.segments import SegmentView
from prudence_cli.dataviews.trajectory import TrajectoryView, collapse_repeats, local_bins
from prudence_cli.io.readers import read_region_layer
from prudence_cli.select import Selection
from prudence_cli.space import grid_cells, regions_of, unproject


@dataclass(frozen=True)
class Located:
    """The selected points placed on one grid (or on their towers)."""

    location: np.ndarray  # int32 per point
    locations: pd.DataFrame  # label, lon, lat per location code
    pair_count: np.ndarray  # per point: visits of its (user, location) pair


def count_dataviews(config: DataviewConfig) -> int:
    return math.prod(len(values) for _, values in config.dimensions)


def view_ids(config: DataviewConfig) -> Iterator[str]:
    """d1, d2, ... zero-padded to the number of views (d01 ... d15)."""
    width = len(str(count_dataviews(config)))
    return (f"d{i:0{width}d}" for i in itertools.count(1))


def locate(selection: Selection, grid: float | None) -> Located:
    points = selection.points
    if grid is None:
        if selection.locations is None:
            raise ValueError("a dataview without grid needs raw locations (towers, segments)")
        location = points[C.LOCATION].to_numpy()
        locations = selection.locations
    else:
        location, locations = grid_cells(
            points[C.X].to_numpy(), points[C.Y].to_numpy(), grid, selection.crs
        )
    user = points[C.USER].to_numpy()
    key = user.astype(np.int64) * max(len(locations), 1) + location
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    return Located(location.astype(np.int32), locations, counts[inverse.ravel()])


def locate_regions(selection: Selection, layer: Path) -> Located:
    """The selected points placed in the regions of a GeoJSON layer (−1 outside)."""
    regions = read_region_layer(layer)
    lon, lat = unproject(
        selection.points[C.X].to_numpy(), selection.points[C.Y].to_numpy(), selection.crs
    )
    codes, table = regions_of(lon, lat, regions["label"].tolist(), regions["geometry"].tolist())
    return Located(codes.astype(np.int64), table, np.ones(codes.shape[0], dtype=np.int64))


def build_dataviews(
    selection: Selection,
    config: DataviewConfig,
    timezone: str = "UTC",
    split: int | None = None,
) -> Iterator[Dataview]:
    """`split` (UTC ns) divides the period of profiles dataviews in T1 and T2; default:
    the middle of the selected points' time span."""
    names = config.dimension_names
    ids = view_ids(config)
    located: Located | None = None
    space_of_located: Any = object()
    layers = dict(config.layers)
    for combo in itertools.product(*(values for _, values in config.dimensions)):
        values = dict(zip(names, combo, strict=True))
        space = ("regions", values["regions"]) if "regions" in values else values.get("grid")
        if located is None or space != space_of_located:
            if "regions" in values:
                located = locate_regions(selection, layers[values["regions"]])
            else:
                located = locate(selection, values.get("grid"))
            space_of_located = space
        dimensions = tuple(values.items())
        if config.format == "trajectory":
            yield _trajectory(selection, located, next(ids), dimensions, timezone)
        elif config.format == "segments":
            yield _segments(selection, located, next(ids), dimensions, timezone)
        elif config.format == "clusters":
            yield _clusters(selection, located, next(ids), dimensions, timezone)
        elif config.format == "bins":
            yield _bins(selection, located, next(ids), dimensions, timezone)
        elif config.format == "profiles":
            yield _profiles(selection, located, next(ids), dimensions, split)
        else:
            yield _presence(selection, located, next(ids), dimensions, config.format)


def _presence(
    selection: Selection,
    located: Located,
    view_id: str,
    dimensions: tuple[tuple[str, Any], ...],
    view_format: str,
) -> PresenceView:
    f = int(dict(dimensions).get("frequency", 1))
    keep = located.pair_count >= f
    user, location, count = presence_pairs(
        selection.points[C.USER].to_numpy()[keep],
        located.location[keep],
        len(located.locations),
    )
    cls = ProbabilityView if view_format == "probability" else PresenceView
    return cls(
        view_id, dimensions, selection.n_users, user, location, located.locations, count=count
    )


def _trajectory(
    selection: Selection,
    located: Located,
    view_id: str,
    dimensions: tuple[tuple[str, Any], ...],
    timezone: str,
) -> TrajectoryView:
    values = dict(dimensions)
    f = int(values.get("frequency", 1))
    seconds = int(values["time"])
    keep = located.pair_count >= f
    user = selection.points[C.USER].to_numpy()[keep]
    location = located.location[keep]
    tbin = local_bins(selection.points[C.TIME].to_numpy()[keep], seconds, timezone)
    first = collapse_repeats(user, location, tbin)
    return TrajectoryView(
        view_id,
        dimensions,
        selection.n_users,
        user[first].astype(np.int32),
        location[first],
        located.locations,
        tbin=tbin[first],
        granularity=seconds,
        timezone=timezone,
    )


def _segments(
    selection: Selection,
    located: Located,
    view_id: str,
    dimensions: tuple[tuple[str, Any], ...],
    timezone: str,
) -> SegmentView:
    seconds = int(dict(dimensions)["time"])
    points = selection.points
    return SegmentView(
        view_id,
        dimensions,
        selection.n_users,
        points[C.USER].to_numpy().astype(np.int32),
        located.location,
        located.locations,
        tbin=local_bins(points[C.TIME].to_numpy(), seconds, timezone),
        tbin_end=local_bins(points[C.LEAVE].to_numpy(), seconds, timezone),
        granularity=seconds,
    )


def _clusters(
    selection: Selection,
    located: Located,
    view_id: str,
    dimensions: tuple[tuple[str, Any], ...],
    timezone: str,
) -> ClusterView:
    seconds = int(dict(dimensions)["window"])
    points = selection.points
    if selection.geometry is None:
        raise ValueError("a clusters dataview needs segment geometry (input.format: segments)")
    return ClusterView(
        view_id,
        dimensions,
        selection.n_users,
        points[C.USER].to_numpy().astype(np.int32),
        located.location,
        located.locations,
        window=local_bins(points[C.TIME].to_numpy(), seconds, timezone),
        geometry=selection.geometry,
        window_seconds=seconds,
    )


def _bins(
    selection: Selection,
    located: Located,
    view_id: str,
    dimensions: tuple[tuple[str, Any], ...],
    timezone: str,
) -> BinsView:
    seconds = int(dict(dimensions)["time"])
    points = selection.points
    tbin = local_bins(points[C.TIME].to_numpy(), seconds, timezone)
    user, location, count, table, d = bin_rows(
        points[C.USER].to_numpy(), located.location, tbin, located.locations, seconds
    )
    return BinsView(
        view_id,
        dimensions,
        selection.n_users,
        user,
        location,
        table,
        count=count,
        dimensionality=d,
    )


def middle_of(selection: Selection) -> int:
    """The middle of the selected points' time span (UTC ns)."""
    times = selection.points[C.TIME].to_numpy()
    if times.shape[0] == 0:
        return 0
    return int(times.min() // 2 + times.max() // 2)


def _profiles(
    selection: Selection,
    located: Located,
    view_id: str,
    dimensions: tuple[tuple[str, Any], ...],
    split: int | None,
) -> ProfilesView:
    points = selection.points
    at = middle_of(selection) if split is None else split
    inside = located.location >= 0  # regions: points outside every region are not counted
    user, location, count, first = profile_rows(
        points[C.USER].to_numpy()[inside],
        located.location[inside],
        points[C.TIME].to_numpy()[inside],
        at,
        len(located.locations),
    )
    return ProfilesView(
        view_id,
        dimensions,
        selection.n_users,
        user,
        location,
        located.locations,
        count=count,
        first=first,
        split=at,
    )
