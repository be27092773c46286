"""Build every dataview of a config: one per combination of dimension values, the first
dimension varying slowest. The location of every point is computed once per grid."""

from __future__ import annotations

import itertools
import math
from collections.abc import Generator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from prudence_cli import columns as C
from prudence_cli.arrays import visit_pairs
from prudence_cli.config import DataviewConfig
from prudence_cli.dataviews.base import BuildSettings, Dataview, Located, Pairs
from prudence_cli.dataviews.registry import format_class
from prudence_cli.io.readers import read_region_layer
from prudence_cli.select import Selection
from prudence_cli.space import grid_cells, regions_of, unproject


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
        location = points[C.LOCATION].to_numpy().astype(np.int32)  # its own, not the frame's
        locations = selection.locations
    else:
        location, locations = grid_cells(
            points[C.X].to_numpy(), points[C.Y].to_numpy(), grid, selection.crs
        )
    pair_count, pairs = visits(points[C.USER].to_numpy(), location, len(locations))
    return Located(location.astype(np.int32, copy=False), locations, pair_count, pairs)


def visits(user: np.ndarray, location: np.ndarray, n_locations: int) -> tuple[np.ndarray, Pairs]:
    """Per point, the visits of its (user, location) pair; and the distinct pairs
    (arrays.visit_pairs)."""
    pair_count, pairs = visit_pairs(user, location, n_locations)
    assert pair_count is not None
    return pair_count, Pairs(*pairs)


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
    period: tuple[int | None, int | None] = (None, None),
) -> Generator[Dataview, None, None]:
    """`split` (UTC ns) divides the period of profiles dataviews in T1 and T2; default:
    the middle of the selected points' time span."""
    view_class = format_class(config.format)
    settings = BuildSettings(timezone=timezone, split=split, period=period)
    names = config.dimension_names
    ids = view_ids(config)
    located: Located | None = None
    kept: Any = None  # the last view kept on the workers
    space_of_located: Any = object()
    layers = dict(config.layers)
    for combo in itertools.product(*(values for _, values in config.dimensions)):
        values = dict(zip(names, combo, strict=True))
        if selection.placed is not None:  # the points are on Dask workers: so is the view
            from prudence_cli.dataviews.on_workers import kept_view  # (only then: Dask's)

            if kept is not None:  # assessed: its ranges leave the workers' disks
                kept.close()
            if view_class.format == "profiles" and settings.split is None:
                # every range splits at the middle of all points' times, as a local run
                settings = replace(settings, split=selection.placed.middle())
            dims = tuple(values.items())
            grid = values.get("grid")
            regions = layers[values["regions"]] if "regions" in values else None
            kept = kept_view(
                selection.placed,
                selection.n_users,
                grid,
                view_class,
                next(ids),
                dims,
                settings,
                regions,
                kept_class(view_class.format),
            )
            yield cast(Dataview, kept)  # serves as one (on_workers.py): what does not, asks
            continue
        space = ("regions", values["regions"]) if "regions" in values else values.get("grid")
        if located is None or space != space_of_located:
            if "regions" in values:
                located = locate_regions(selection, layers[values["regions"]])
            else:
                located = locate(selection, values.get("grid"))
            space_of_located = space
        yield view_class.build(selection, located, next(ids), tuple(values.items()), settings)


def kept_class(view_format: str) -> Any:
    """The KeptView a format's views kept on the workers are (on_workers.py): clusters
    views make their clusters of every range's crossings (kept_clusters.py)."""
    if view_format == "clusters":
        from prudence_cli.dataviews.kept_clusters import KeptClusters

        return KeptClusters
    return None
