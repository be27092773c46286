"""A bins view's bins numbered across the ranges of users kept on the workers
(dataviews/on_workers.py), as a local run numbers them (dataviews/bins.py): each range
tells its points' first and last time bin, then the bins its points fall in."""

from __future__ import annotations

import numpy as np
import pandas as pd

from prudence_cli.arrays import distinct, union_sorted
from prudence_cli.cluster_select import Regions, Told, placed_points, point_codes
from prudence_cli.cluster_views import PointsOnWorkers
from prudence_cli.dataviews.base import BuildSettings
from prudence_cli.dataviews.bins import BinNumbering, bin_keys, number_bins, period_bins
from prudence_cli.dataviews.trajectory import local_bins


def bin_numbering(
    placed: PointsOnWorkers,
    grid: float | None,
    regions: tuple[pd.DataFrame, Regions] | None,
    seconds: int,
    settings: BuildSettings,
) -> BinNumbering:
    """The bins of a profile of `seconds` on the grid of side `grid` (None: the towers;
    or in the `regions`), numbered as a local run numbers them (dataviews/bins.py): its
    period spans the configured one and every range's first and last time bin on the
    local clock; its bins are those every range's points fall in."""
    table, space_keys = placed.space(grid, regions)
    timezone = settings.timezone
    ends = [e for e in placed.on_ranges(_range_time_bins, seconds, timezone).values() if e]
    tbin = np.array(ends, dtype=np.int64).ravel()
    period = period_bins(tbin, seconds, timezone, *settings.period)
    space = placed.broadcast(space_keys)
    keys = np.zeros(0, np.int64)  # each range's bins joined in as they come: nearly all
    for _, seen in placed.each_range(_range_bin_keys, grid, space, seconds, timezone, period):
        keys = union_sorted(keys, seen)
    return number_bins(keys, table, seconds, period)


def _range_time_bins(told: Told, seconds: int, timezone: str) -> tuple[int, tuple[int, int] | None]:
    """The range's number and its points' first and last time bin of `seconds` on the
    local clock of `timezone` (None: no point)."""
    placed = placed_points(told)
    assert placed.time is not None  # kept for the formats of points (finish_range)
    if placed.time.shape[0] == 0:
        return told.k, None
    tbin = local_bins(placed.time, seconds, timezone)  # not monotonic in time: DST
    return told.k, (int(tbin.min()), int(tbin.max()))


def _range_bin_keys(
    told: Told,
    side: float | None,
    keys: np.ndarray | Regions | None,
    seconds: int,
    timezone: str,
    period: tuple[int, int],
) -> tuple[int, np.ndarray]:
    """The range's number and the keys (bins.bin_keys) of the bins of `seconds` in
    `period` its points fall in, sorted: placed on the grid of `side` whose cells have
    the sorted `keys` (or in the regions `keys`, or on the towers)."""
    placed = placed_points(told)
    assert placed.time is not None
    space = point_codes(placed, side, keys)
    tbin = local_bins(placed.time, seconds, timezone)
    return told.k, distinct(bin_keys(space, tbin, period)[1])
