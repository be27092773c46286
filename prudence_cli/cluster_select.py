"""Selecting and finishing ranges of users on the Dask workers (see cluster_input), so
that the assessing process receives each selected point once, projected and numbered,
as the compact columns of the Selection (28 bytes a point), and nothing else of it.

1. `select_range`, on a worker: the pieces of a range of users (every point of each of
   them) selected as a local run selects (select.select_rows), kept on the worker's disk;
   what finishing needs of it goes back (`Told`): its users, points and trips, its
   counts, the spread of its points (for the projection) and its towers or segments.
2. The assessing process chooses the projection from the ranges' spreads joined (the
   same as from every point: projections.Spread), numbers the users and locations across
   the ranges (in id and label order, as a local run does) and where each range's points
   go.
3. `finish_range`, on the worker that kept the range: its users renumbered, its points
   projected (each point's own bits, as a local run gives them), locations and trips
   numbered across the ranges; the columns are written into the Selection's arrays, or,
   for dataviews counted on the workers, kept there (`Placed`: `range_cells`,
   `range_nearest` and `range_pairs` read them for cluster_views), with the range's user
   ids (`KeptIds`): the assessing process then holds no id.
"""

from __future__ import annotations

import os
import pickle
from concurrent.futures import CancelledError
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from prudence_cli import columns as C
from prudence_cli.arrays import visit_pairs
from prudence_cli.config import Config
from prudence_cli.io.labels import united
from prudence_cli.io.points import RawPoints
from prudence_cli.projections import Projection, Spread, projection_of
from prudence_cli.select import (
    Selection,
    _empty,
    _factorized,
    places_table,
    select_rows,
    unplaced,
)
from prudence_cli.space import (
    cell_keys,
    cells_of_keys,
    distinct_cells,
    grid_indexes,
    project,
    region_codes,
    unproject,
)


@dataclass(frozen=True)
class Told:
    """What range `k`'s selection tells the assessing process; the points stay on
    `worker`, at `path`."""

    k: int
    worker: str
    path: str
    users: int  # kept
    points: int
    trips: int
    stats: dict[str, int]
    spread: Spread | None  # None: no point
    places: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # labels, lon, lat


@dataclass(frozen=True)
class Numbering:
    """Where range `k`'s users, trips and points go among all ranges', and the labels
    of every location (sorted), when the input has towers or segments."""

    first_user: int
    first_trip: int
    projection: Projection
    places: np.ndarray | None


def select_range(parts: list[pd.DataFrame], config: Config, k: int, scratch: Any) -> Told:
    """Range `k`'s selection from its pieces (in file order), kept in the run's folder
    on this worker's disk (cluster_scratch.Scratch.written: made there when this worker
    read no part), and what the assessing process needs of it."""
    from distributed import get_worker

    worker = get_worker().address
    parts = [part for part in parts if len(part)]
    if not parts:
        return Told(k, worker, "", 0, 0, 0, {}, None, None)  # nothing written
    columns = {}
    for name in parts[0].columns:
        if name in (C.USER, C.LOCATION):
            columns[name] = united([part[name] for part in parts])
        else:
            columns[name] = np.concatenate([part[name].to_numpy() for part in parts])
    del parts
    raw = RawPoints(table=pd.DataFrame(columns, copy=False))
    labels = pa.array(columns[C.USER].categories, type=pa.string())
    del columns
    chosen = select_rows(raw, config).compacted()
    del raw
    rows, table = chosen.rows, chosen.table
    points = len(rows.row)
    lon, lat = table[C.LON].to_numpy(), table[C.LAT].to_numpy()
    spread = places = codes = named = None
    if points:
        spread = Spread.of(lon, lat, every_step=True)
    if C.LOCATION in table:
        codes, named = _factorized(table[C.LOCATION])
        if points:
            first = np.unique(codes, return_index=True)[1]
            used = np.asarray(named, dtype=object)[codes[first]]
            places = (used, lon[first], lat[first])
    kept = _Kept(
        rows.user.astype(np.int32),
        rows.time,
        lon,
        lat,
        codes,
        None if named is None else np.asarray(named, dtype=object),
        rows.trip if C.TRIP in table else None,
        table[C.LEAVE].to_numpy() if C.LEAVE in table else None,
        chosen.present,
        labels,
    )
    path = scratch.written(f"range-{k}.pickle", kept)
    users = int(np.count_nonzero(chosen.present))
    return Told(k, worker, path, users, points, chosen.trips, chosen.stats, spread, places)


@dataclass(frozen=True)
class _Kept:
    """A range's selection as `finish_range` needs it, kept on the worker's disk between
    the two: per point its user's code in the range, time, lon, lat, [location code among
    `named`], [trip], [leave]; which of the range's users are kept, and their ids."""

    user: np.ndarray
    time: np.ndarray
    lon: np.ndarray
    lat: np.ndarray
    location: np.ndarray | None
    named: np.ndarray | None
    trip: np.ndarray | None
    leave: np.ndarray | None
    present: np.ndarray
    labels: pa.Array


def numbering(told: list[Told], config: Config) -> tuple[list[Numbering], pd.DataFrame | None]:
    """Each range's numbering among all (in range order), and the locations table of a
    local run's Selection's (labels sorted, each at its first point's position) before
    its segment lines are added."""
    spreads = [t.spread for t in told if t.spread is not None]
    projection = projection_of(Spread.joined(spreads), config.crs)
    places = locations = None
    named = [t.places for t in told if t.places is not None]
    if named:
        labels = np.concatenate([p[0] for p in named])
        places, first = np.unique(labels, return_index=True)
        lon = np.concatenate([p[1] for p in named])[first]
        lat = np.concatenate([p[2] for p in named])[first]
        locations = pd.DataFrame({"label": places, "lon": lon, "lat": lat})
    first_users = np.cumsum([0] + [t.users for t in told])
    first_trips = np.cumsum([0] + [t.trips for t in told])
    numbers = [
        Numbering(int(first_users[i]), int(first_trips[i]), projection, places)
        for i in range(len(told))
    ]
    return numbers, locations


@dataclass(frozen=True)
class Finished:
    """A range's part of the Selection: its columns, its kept users' ids (None: kept on
    the worker, `ids_path`), and the points the projection cannot place (how many, the
    first one's lon and lat)."""

    k: int
    columns: dict[str, np.ndarray]
    ids: pa.Array | None
    lost: tuple[int, float, float]


@dataclass(frozen=True)
class IdsRange:
    """The ids of users [first, last), kept on `worker` at `path`."""

    worker: str
    path: str
    first: int
    last: int


@dataclass(frozen=True)
class KeptIds:
    """The user ids of a run whose points stay on the workers: each range's on the
    worker that selected it (`ranges`, in user order). What reads ids there (the tables
    of the catalog, dataviews/on_workers.py) reads them where they are; `gathered` brings
    them all here, for what needs them all."""

    client: Any
    ranges: tuple[IdsRange, ...]
    count: int

    def __len__(self) -> int:
        return self.count

    def gathered(self) -> np.ndarray:
        """Every id, in user order (an object array, as a local run's Selection holds)."""
        from prudence_cli.cluster_tasks import pinned, windowed  # Dask's: only here

        ranges = self.ranges

        def submit(i: int) -> Any:
            return pinned(self.client, ranges[i].worker, _ids_at, ranges[i].path, i)

        needed = {r.worker for r in ranges}
        found = dict(windowed(self.client, range(len(ranges)), submit, needed))
        parts = [found[i] for i in range(len(ranges)) if len(found[i])]
        if not parts:
            return np.zeros(0, dtype=object)
        return pa.concat_arrays(parts).to_numpy(zero_copy_only=False)


def ids_path(told: Told) -> str:
    """Where a range kept on its worker keeps its users' ids."""
    return told.path + ".ids"


def read_ids(path: str) -> np.ndarray:
    """The ids kept at `path` on this worker, as an object array."""
    ids: pa.Array = read_back(path)
    return ids.to_numpy(zero_copy_only=False)


def _ids_at(path: str, i: int) -> tuple[int, pa.Array]:
    ids: pa.Array = read_back(path)
    return i, ids


def finish_range(
    told: Told, numbers: Numbering, config: Config, keep: bool = False, cached: bool = False
) -> Finished:
    """Range `told.k`'s points as the Selection holds them (see the module docstring);
    its file on this worker's disk removed once read. When `keep`, the points stay on
    this worker (`placed_path`; `cached`: every column too, `columns_path`) for the
    dataviews, and only the ids go back."""
    kept: _Kept = read_back(told.path)
    os.unlink(told.path)
    renumbered = np.cumsum(kept.present) - 1 + numbers.first_user
    lon, lat = kept.lon, kept.lat
    threads = config.engine.jobs or os.cpu_count() or 1
    x, y = project(lon, lat, numbers.projection.crs, threads=threads)
    columns = {C.USER: renumbered[kept.user].astype(np.int32), C.TIME: kept.time, C.X: x, C.Y: y}
    if kept.location is not None:
        assert numbers.places is not None and kept.named is not None
        at = np.searchsorted(numbers.places, kept.named)
        columns[C.LOCATION] = at[kept.location].astype(np.int32)
    if kept.trip is not None:
        columns[C.TRIP] = kept.trip + numbers.first_trip
    if kept.leave is not None:
        columns[C.LEAVE] = kept.leave
    lost = ~(np.isfinite(x) & np.isfinite(y))
    missed = (0, 0.0, 0.0)
    if lost.any():
        first = int(np.argmax(lost))
        missed = (int(lost.sum()), float(lon[first]), float(lat[first]))
    ids = kept.labels.filter(pa.array(kept.present))
    if not keep:
        return Finished(told.k, columns, ids, missed)
    kept_here = [(placed_path(told), placed_of(columns, config)), (ids_path(told), ids)]
    if cached:
        kept_here.append((columns_path(told), columns))
    for path, what in kept_here:
        with open(path, "wb") as file:
            pickle.dump(what, file, protocol=pickle.HIGHEST_PROTOCOL)
    return Finished(told.k, {}, None, missed)


def placed_of(columns: dict[str, np.ndarray], config: Config) -> Placed:
    """What the config's dataviews read of a range's points (its Selection columns)."""
    view = config.dataview.format
    time = columns[C.TIME] if view in POINT_FORMATS else None  # built of the points
    leave = columns.get(C.LEAVE) if view == "segments" else None
    return Placed(columns[C.USER], columns[C.X], columns[C.Y], columns.get(C.LOCATION), time, leave)


# the formats built of the points at their times, not of pairs: trajectory, segments (rows),
# profiles (visits before the split), bins (each point's bin), clusters (crossings' windows)
POINT_FORMATS = ("trajectory", "segments", "profiles", "bins", "clusters")


@dataclass(frozen=True)
class Placed:
    """A range's selected points, projected, as the dataviews place them: user code
    (among all), x, y, [tower or segment code (among all)]; for the formats of points
    (POINT_FORMATS), the time of each, [and when it ends: a segments view's]."""

    user: np.ndarray
    x: np.ndarray
    y: np.ndarray
    location: np.ndarray | None
    time: np.ndarray | None = None
    leave: np.ndarray | None = None


def placed_path(told: Told) -> str:
    return told.path + ".placed"


def columns_path(told: Told) -> str:  # every column of a range's points, for the cache
    return told.path + ".columns"


def placed_points(told: Told) -> Placed:
    return read_back(placed_path(told))


def read_back(path: str) -> Any:
    """What this run pickled to `path` on this worker. CancelledError (a lost worker,
    for the user) when the file is gone: the worker was restarted since, on the same
    address (a fixed --worker-port), with a new directory — the run cannot go on."""
    try:
        with open(path, "rb") as file:
            return pickle.load(file)
    except FileNotFoundError:
        raise CancelledError(
            f"the worker {_address()} no longer holds the files of this run it wrote "
            f"({Path(path).name}): it was restarted"
        ) from None


def _address() -> str:
    """The address of the worker running the task ("here" outside one)."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return "here"


def range_cells(told: Told, side: float) -> np.ndarray:
    """The keys (space.cell_keys) of the cells of side `side` the range's points fall
    in, sorted."""
    placed = placed_points(told)
    cx, cy, _ = distinct_cells(*grid_indexes(placed.x, placed.y, side), inverse=False)
    return cell_keys(cx, cy)


def range_nearest(
    told: Told, side: float, off_map: np.ndarray
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The range's number, and for the cells of keys `off_map` (sorted) that its points
    fall in: which of them, the squared distance of its point nearest the centre, and
    that point's x and y (the first such point on ties, as space.grid_cells takes it)."""
    placed = placed_points(told)
    key = cell_keys(*grid_indexes(placed.x, placed.y, side))
    at = np.minimum(np.searchsorted(off_map, key), off_map.size - 1)
    inside = np.flatnonzero(off_map[at] == key)
    codes = at[inside]
    cx, cy = cells_of_keys(off_map)
    dx = placed.x[inside] - (cx + 0.5)[codes] * side
    dy = placed.y[inside] - (cy + 0.5)[codes] * side
    distance = dx**2 + dy**2
    order = np.lexsort((distance, codes))
    first = np.ones(order.size, dtype=bool)
    first[1:] = codes[order][1:] != codes[order][:-1]
    near = order[first]
    return told.k, codes[near], distance[near], placed.x[inside][near], placed.y[inside][near]


def range_pairs(
    told: Told, side: float | None, keys: np.ndarray | None, n_locations: int
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The range's number and its distinct (user, location) pairs, sorted, with their
    visits: on the grid of `side` whose cells have the sorted `keys`, or on the towers
    or segments."""
    placed = placed_points(told)
    location = point_codes(placed, side, keys)
    _, (user, place, count) = visit_pairs(placed.user, location, n_locations, per_point=False)
    return told.k, user, place, count


@dataclass(frozen=True)
class Regions:
    """A layer's regions, as the ranges place their points in them (space.region_codes):
    the polygons (lon/lat) and the run's CRS, which the points' x and y are in."""

    polygons: list[Any]
    crs: str


def range_points(
    told: Told, side: float | None, keys: np.ndarray | Regions | None, n_locations: int
) -> tuple[Placed, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
    """The range's points (`Placed`, with their times), each one's location (as
    `range_pairs` places them) and the visits of its (user, location) pair; and the
    distinct pairs (arrays.visit_pairs): what dataviews/build.locate gives a local run,
    for this range's points. In regions (−1 outside every one), as build.locate_regions
    places them: a visit per point, no pairs."""
    placed = placed_points(told)
    location = point_codes(placed, side, keys)
    if isinstance(keys, Regions):
        return placed, location, np.ones(location.shape[0], dtype=np.int64), None
    pair_count, pairs = visit_pairs(placed.user, location, n_locations)
    assert pair_count is not None
    return placed, location, pair_count, pairs


def point_codes(
    placed: Placed, side: float | None, keys: np.ndarray | Regions | None
) -> np.ndarray:
    """Each point's location code: its cell's among the sorted `keys` of the grid of
    `side`, its region's (`keys` a Regions), or its tower or segment (side None)."""
    if isinstance(keys, Regions):
        lon, lat = unproject(placed.x, placed.y, keys.crs)
        return region_codes(lon, lat, keys.polygons)
    if side is None:
        assert placed.location is not None
        return placed.location
    assert keys is not None
    cells = cell_keys(*grid_indexes(placed.x, placed.y, side))
    return np.searchsorted(keys, cells).astype(np.int32)


class Assembly:
    """The Selection's arrays, filled range by range as the workers finish them (in any
    order): each range's points go at its place among all."""

    def __init__(self, told: list[Told], config: Config, client: Any = None) -> None:
        self.config = config
        self.told = told
        self.client = client  # of the workers keeping the ids, when they keep them
        self.starts = np.cumsum([0] + [t.points for t in told])
        self.ids: list[pa.Array | None] = [None] * len(told)
        self.lost: list[tuple[int, float, float]] = [(0, 0.0, 0.0)] * len(told)
        self.locations: pd.DataFrame | None = None  # of towers or segments (`numbering`)
        self.columns: dict[str, np.ndarray] = {}
        self.stats: dict[str, int] = {}
        for key in ("rows_valid", "rows_in_period", "points"):
            self.stats[key] = sum(t.stats.get(key, 0) for t in told)

    @property
    def points(self) -> int:
        return int(self.starts[-1])

    def add(self, done: Finished) -> None:
        start, end = self.starts[done.k], self.starts[done.k + 1]
        for name, values in done.columns.items():
            if name not in self.columns:
                self.columns[name] = np.empty(int(self.starts[-1]), dtype=values.dtype)
            self.columns[name][start:end] = values
        self.ids[done.k] = done.ids
        self.lost[done.k] = done.lost

    def selection(
        self, projection: Projection | None, rows_read: int, segments: pd.DataFrame | None
    ) -> Selection:
        """The Selection, as a local run's finish gives it (select.finish); `projection`
        None when no point is selected."""
        user_ids = self._user_ids()
        stats = {"rows_read": rows_read, **self.stats, "users": len(user_ids)}
        if projection is None:
            crs = self.config.crs or "EPSG:4326"
            return Selection(_empty(), user_ids, crs, stats=stats)
        missed = [lost for lost in self.lost if lost[0]]
        if missed:
            count = sum(lost[0] for lost in missed)
            raise unplaced(projection, self.config, count, missed[0][1], missed[0][2])
        # no columns: the points stay on the workers, which build the dataviews' pairs
        points = pd.DataFrame(self.columns, copy=False) if self.columns else _empty()
        locations = geometry = None
        if self.locations is not None:
            table = self.locations
            labels, lon, lat = table["label"].to_numpy(), table["lon"], table["lat"]
            locations, geometry = places_table(
                labels, lon.to_numpy(), lat.to_numpy(), segments, projection.crs
            )
        return Selection(points, user_ids, projection.crs, locations, geometry, stats, projection)

    def _user_ids(self) -> np.ndarray | KeptIds:
        """The ids sent back, in range order; or, where the ranges kept them, where."""
        if self.client is not None and any(t.points for t in self.told):
            ranges, first = [], 0
            for t in self.told:
                if t.points:
                    ranges.append(IdsRange(t.worker, ids_path(t), first, first + t.users))
                first += t.users
            return KeptIds(self.client, tuple(ranges), first)
        kept = [ids for ids in self.ids if ids is not None and len(ids)]
        if not kept:
            return np.zeros(0, dtype=object)
        return pa.concat_arrays(kept).to_numpy(zero_copy_only=False)
