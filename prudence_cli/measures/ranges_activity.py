"""The utility aggregate's activity (measures/aggregate.py) of the points kept on a Dask
cluster's workers (cluster_views.PointsOnWorkers): each range counts its own points per
space unit and time bin, and the assessing process adds the counts up, never holding
the points."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli.cluster_select import Regions, Told, placed_points, point_codes
from prudence_cli.cluster_views import PointsOnWorkers
from prudence_cli.dataviews.trajectory import local_bins
from prudence_cli.io.readers import read_region_layer
from prudence_cli.measures.aggregate import (
    Space,
    cell_boxes,
    cell_counts,
    projected_regions,
)
from prudence_cli.space import cells_of_keys


@dataclass
class RangesActivity:
    """The activity of the points kept on the workers per space unit and time bin
    (measures/aggregate.Activity): each range counts its points, and the counts are
    added here in range order — a unit's first point is a local run's first. A range
    places its points in a space once for every time bin `wanted` in it."""

    placed: PointsOnWorkers
    timezone: str
    wanted: dict[Space, set[int]] = field(default_factory=dict)  # seconds, by space
    _counted: dict[tuple[Space, int], pd.DataFrame] = field(default_factory=dict)
    _places: dict[Space, tuple[Any, list[Any]]] = field(default_factory=dict)

    def counts(self, space: Space, seconds: int) -> pd.DataFrame:
        if (space, seconds) not in self._counted:
            asked = sorted(self.wanted.get(space, set()) | {seconds})
            place = self.placed.broadcast(self._of(space)[0])
            found = self.placed.on_ranges(range_activity, space.grid, place, asked, self.timezone)
            for k, each in enumerate(asked):
                frames = [found[r][k] for r in sorted(found)]  # in range order
                if frames:
                    both = pd.concat(frames, ignore_index=True)
                    added = both.groupby(["unit", "tbin"], sort=False)["count"].sum()
                    self._counted[space, each] = added.reset_index()
                else:
                    self._counted[space, each] = cell_counts(np.zeros(0, np.int64), np.zeros(0))
        return self._counted[space, seconds]

    def polygons(self, space: Space) -> list[Any]:
        return self._of(space)[1]

    def _of(self, space: Space) -> tuple[np.ndarray | Regions, list[Any]]:
        """What the ranges place their points by (the sorted keys of the grid's cells,
        or the layer's Regions), and each unit's polygon in the points' CRS."""
        if space not in self._places:
            if space.grid is not None:
                keys = self.placed.space(space.grid)[1]
                assert isinstance(keys, np.ndarray)
                cx, cy = cells_of_keys(keys)
                self._places[space] = (keys, cell_boxes(cx, cy, space.grid))
            else:
                assert space.layer is not None
                polygons = read_region_layer(space.layer)["geometry"].tolist()
                crs = self.placed.crs
                self._places[space] = (Regions(polygons, crs), projected_regions(polygons, crs))
        return self._places[space]


def range_activity(
    told: Told,
    side: float | None,
    place: np.ndarray | Regions,
    seconds: list[int],
    timezone: str,
) -> tuple[int, list[pd.DataFrame]]:
    """The range's number and its points per unit (a cell of the grid of `side` whose
    cells have the sorted keys `place`, or a region of `place`) and time bin, for each
    of `seconds` on the local clock of `timezone` (measures/aggregate.cell_counts)."""
    placed = placed_points(told)
    assert placed.time is not None  # kept for the formats of points: bins
    unit = point_codes(placed, side, place).astype(np.int64)
    return told.k, [cell_counts(unit, local_bins(placed.time, s, timezone)) for s in seconds]
