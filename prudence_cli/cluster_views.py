"""Presence and probability dataviews built where the points are: on a Dask cluster,
the selected points stay on the workers that selected them (cluster_input, `keep`),
and each range of users gives the (user, location) pairs of its points with their
visits; the assessing process receives the pairs, 12 bytes each, never the points.

For a grid, each range first tells which cells its points fall in; the assessing
process numbers the cells of all ranges in the order of their ids and places their
centres (a centre off the projection's map at the point nearest it, found among every
range's) as space.grid_cells does; then each range places its points in those cells and
counts its pairs. For towers or segments, the points' codes are already numbered across
the ranges. A person's points are all in one range, and the ranges are in user order,
so the ranges' pairs, one after the other, are the pairs of a local run, in its order.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli.cluster_input import Kept, pinned, read_and_select, windowed
from prudence_cli.cluster_select import range_cells, range_nearest, range_pairs
from prudence_cli.config import Config
from prudence_cli.io.points import ReadProgress
from prudence_cli.select import Selection
from prudence_cli.space import (
    cell_centres,
    cells_of_keys,
    cells_table,
    unproject,
)

# the dataview formats whose rows are (user, location) pairs and their visits only
PAIR_FORMATS = ("presence", "probability")


def views_on_workers(config: Config) -> bool:
    """Whether the dataviews can be built from the pairs alone: presence or probability
    views on grids or towers, and nothing else of the run needing the points (the
    utility aggregate reads them; regions are placed by their polygons)."""
    view = config.dataview
    return (
        view.format in PAIR_FORMATS
        and "regions" not in view.dimension_names
        and config.utility_aggregate is None
    )


def read_on_workers(
    client: Any, config: Config, progress: ReadProgress | None, keep: bool
) -> tuple[Selection, dict[str, int], dict[str, tuple[str, int]]]:
    """The Selection read and selected on the workers (cluster_input); when `keep` and
    the dataviews allow it (`views_on_workers`), with its points left there, found
    through `selection.placed` (a PointsOnWorkers, closed by the caller). Also the
    invalid rows dropped and the files fetched from an object store (read_and_select)."""
    keep = keep and views_on_workers(config)
    selection, dropped, kept, fetched = read_and_select(client, config, progress, keep)
    if kept is not None:
        placed = PointsOnWorkers(kept, selection.crs, selection.locations)
        selection.placed = placed
        # a caller that forgets to close it (library use): the files go with the Selection
        weakref.finalize(selection, placed.close)
    return selection, dropped, fetched


@dataclass
class PointsOnWorkers:
    """The selected points of a run, kept on the workers: the pairs a grid (or the
    towers) makes of them, counted there."""

    kept: Kept
    crs: str
    locations: pd.DataFrame | None  # towers or segments, numbered
    closed: bool = False

    def pairs(self, grid: float | None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
        """The locations table and the (user, location, visits) pairs of the points on
        the grid of side `grid` (None: on their towers or segments)."""
        told = [t for t in self.kept.told if t.points]
        if grid is None:
            if self.locations is None:
                raise ValueError("a dataview without grid needs raw locations (towers, segments)")
            table, keys = self.locations, None
        else:
            table, keys = self._cells(told, grid)

        def submit(i: int) -> Any:
            return self._pinned(range_pairs, told[i], grid, keys, len(table))

        found = {}
        for k, *pairs in self._each(told, submit):
            found[k] = pairs
        parts = [found[t.k] for t in told]  # in user order
        if not parts:
            empty = np.zeros(0, dtype=np.int32)
            return table, empty, empty, empty
        user, location, count = (np.concatenate([part[i] for part in parts]) for i in range(3))
        return table, user, location, count

    def _cells(self, told: list[Any], side: float) -> tuple[pd.DataFrame, np.ndarray]:
        """The cells of every range's points on the grid of `side`: the table of a local
        run (space.grid_cells) and their keys, sorted."""

        def cells(i: int) -> Any:
            return self._pinned(range_cells, told[i], side)

        seen = list(self._each(told, cells))  # in any order
        # keys sort as the cells' ids: their distinct ones are the cells of a local run
        keys = np.unique(np.concatenate(seen)) if seen else np.zeros(0, np.int64)
        cx, cy = cells_of_keys(keys)
        lon, lat, off_map = cell_centres(cx, cy, side, self.crs)
        if off_map.any():  # each off the map at its nearest point, of any range
            off = keys[off_map]

            def nearest(i: int) -> Any:
                return self._pinned(range_nearest, told[i], side, off)

            found = {k: rest for k, *rest in self._each(told, nearest)}
            best = np.full(off.size, np.inf)
            x, y = np.zeros(off.size), np.zeros(off.size)
            for t in told:  # in range order: the first point on ties
                codes, distance, near_x, near_y = found[t.k]
                closer = distance < best[codes]
                at = codes[closer]
                best[at], x[at], y[at] = distance[closer], near_x[closer], near_y[closer]
            lon[off_map], lat[off_map] = unproject(x, y, self.crs)
        return cells_table(cx, cy, lon, lat), keys

    def _pinned(self, task: Any, told: Any, *args: Any) -> Any:
        """`task` run on the worker holding the range's points."""
        return pinned(self.kept.client, told.worker, task, told, *args)

    def _each(self, told: list[Any], submit: Any) -> Any:
        """The results of `submit(i)` for each of the ranges `told` (`windowed`)."""
        holders = {t.worker for t in told}
        return windowed(self.kept.client, range(len(told)), submit, holders)

    def close(self) -> None:
        """The points removed from the workers (once; later calls do nothing)."""
        if not self.closed:
            self.closed = True
            self.kept.close()
