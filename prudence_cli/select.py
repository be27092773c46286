"""Selection of the raw data: period, trips and trip ends, area, active users.

Order (documented in the README): the period filter first; then trips are split on the
period's points (a new trip after a gap longer than `trips.max_gap`), so a trip that
leaves the area is not cut at its border; with `points: trip_ends` only each trip's last
point is kept (PRUDEnce's parking positions, Pratesi et al., section 4.1.2); then the area
filter; then users with fewer than `min_points` points or `min_trips` trips are dropped.
The points left are projected to the config's `crs`, or to the CRS chosen for their extent
(`prudence_cli.projections.choose_projection`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from prudence_cli import columns as C
from prudence_cli.arrays import stable_order
from prudence_cli.config import Area, Config, SelectConfig
from prudence_cli.errors import ConfigError, PrudenceError
from prudence_cli.io.geojson import read_area_geojson
from prudence_cli.io.points import RawPoints
from prudence_cli.projections import Projection, choose_projection
from prudence_cli.space import Positions, project, project_lines, repeated_positions

if TYPE_CHECKING:
    import shapely


class IdsKept(Protocol):
    """User ids kept where the points are (cluster_select.KeptIds, on Dask workers): how
    many, and all of them here when asked."""

    def __len__(self) -> int: ...

    def gathered(self) -> np.ndarray: ...


@dataclass
class Selection:
    """The selected raw data: the users U and their points in a projected CRS."""

    points: pd.DataFrame  # user (int32 code), time (int64 ns), x, y
    # [, location (int32 code of a tower or segment)] [, trip (int64), leave (int64 ns)]
    # original user id per code; with the Dask engine, kept where the points stay
    # (cluster_select.KeptIds, with `placed`)
    user_ids: np.ndarray | IdsKept
    crs: str
    locations: pd.DataFrame | None = None  # per location code: label, lon, lat
    geometry: np.ndarray | None = None  # per location code: segment LineString in the CRS
    stats: dict[str, int] = field(default_factory=dict)
    projection: Projection | None = None  # how the CRS was chosen, its scale error
    # with the Dask engine, the points left on the workers, which count the dataviews'
    # pairs there (cluster_views.PointsOnWorkers; `points` is then empty); else None
    placed: Any = None

    @property
    def n_users(self) -> int:
        return len(self.user_ids)

    @property
    def ids(self) -> np.ndarray:
        """The user ids here, gathered from the workers that keep them, if they do."""
        ids = self.user_ids
        return ids if isinstance(ids, np.ndarray) else ids.gathered()

    def drop_points(self) -> None:
        """Let the points go (an empty frame of the same columns stays): once every
        dataview is built, an assessment needs only the users and the projection, and a
        million people's points are a third of its memory."""
        self.points = self.points.iloc[0:0].copy()  # a slice would hold the arrays


def area_geometry(area: Area) -> shapely.Geometry:
    import shapely

    if area.kind == "bbox":
        assert area.bbox is not None
        return shapely.box(*area.bbox)
    if area.kind == "wkt":
        assert area.wkt is not None
        return shapely.from_wkt(area.wkt)
    assert area.path is not None
    return read_area_geojson(area.path)


@dataclass(frozen=True)
class _Rows:
    """The selected points while they are selected, sorted by user and time: each one's
    row in the table, user code, trip number and time; and, when the distinct positions
    were looked for, each one's code among them (`distinct`: their lon and lat)."""

    row: np.ndarray
    user: np.ndarray
    trip: np.ndarray
    time: np.ndarray
    position: np.ndarray | None = None
    distinct: tuple[np.ndarray, np.ndarray] | None = None

    def kept(self, mask: np.ndarray) -> _Rows:
        """The points where `mask` holds; all of them, not copied, when it always does."""
        if mask.all():
            return self
        position = None if self.position is None else self.position[mask]
        return _Rows(
            self.row[mask],
            self.user[mask],
            self.trip[mask],
            self.time[mask],
            position,
            self.distinct,
        )

    def placed(self, positions: Positions | None) -> _Rows:
        """With each point's code among the distinct positions, when they were found."""
        if positions is None:
            return self
        return replace(
            self, position=positions.code[self.row], distinct=(positions.lon, positions.lat)
        )

    def coordinates(self, table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Each point's lon and lat: from the distinct positions when there are (the same
        bits, gathered from fewer), else from the table. Gathered when asked, so that
        ten million of each are not kept while they are not needed."""
        if self.position is None or self.distinct is None:
            return table[C.LON].to_numpy()[self.row], table[C.LAT].to_numpy()[self.row]
        return self.distinct[0][self.position], self.distinct[1][self.position]


@dataclass
class Chosen:
    """The rows the selection keeps, before users are renumbered and points projected:
    sorted by user and time, with their trips (`rows`, indexing `table`); the input's
    user ids (`ids`, numbered by the codes of `rows.user`) and which of them are kept;
    the counts so far; and how many trips the period's points made (`trips`: trip
    numbers of later rows follow on from there)."""

    rows: _Rows
    table: pd.DataFrame
    ids: pd.Index | np.ndarray
    present: np.ndarray
    stats: dict[str, int]
    trips: int

    def compacted(self) -> Chosen:
        """Only the kept rows, in order, as their own table (user, time, lon, lat,
        [location], [leave]): what a worker sends back of its share of the input."""
        rows, table = self.rows, self.table
        lon, lat = rows.coordinates(table)
        columns: dict[str, object] = {C.USER: rows.user, C.TIME: rows.time, C.LAT: lat, C.LON: lon}
        if C.LOCATION in table:
            places = table[C.LOCATION].array
            columns[C.LOCATION] = pd.Categorical.from_codes(
                places.codes[rows.row], categories=places.categories
            )
        if C.TRIP in table:  # the trips are numbered: the input's ids are not needed
            columns[C.TRIP] = rows.trip
        if C.LEAVE in table:
            columns[C.LEAVE] = table[C.LEAVE].to_numpy()[rows.row]
        compact = pd.DataFrame(columns, copy=False)
        every = np.arange(len(rows.row), dtype=np.int64)
        return replace(self, rows=_Rows(every, rows.user, rows.trip, rows.time), table=compact)


def select(raw: RawPoints, config: Config) -> Selection:
    """Apply the config's `select` block to the raw points (see the module docstring)."""
    return finish(select_rows(raw, config), config, raw.segments)


def select_rows(raw: RawPoints, config: Config) -> Chosen:
    """The period, trips, trip ends, area and active users of the `select` block: the
    rows kept. Every user's points must be in `raw` (a share of the input by user is)."""
    sel = config.select
    table = raw.table
    stats = {"rows_read": raw.rows_read, "rows_valid": len(table)}
    codes, all_ids = _factorized(table[C.USER])
    time = table[C.TIME].to_numpy()
    keep = None  # every row, unless a period is set
    if sel.start is not None or sel.end is not None:
        keep = np.ones(len(table), dtype=bool)
        if sel.start is not None:
            keep &= time >= sel.start.value
        if sel.end is not None:
            keep &= time < sel.end.value
    stats["rows_in_period"] = len(table) if keep is None else int(keep.sum())
    # before sorting: less memory at once (its code of every row is dropped once placed)
    positions = repeated_positions(table[C.LON].to_numpy(), table[C.LAT].to_numpy())
    rows = _sorted_rows(table, codes, time, keep, len(all_ids), sel).placed(positions)
    trips = int(rows.trip[-1]) + 1 if len(rows.trip) else 0
    del positions
    if sel.area is not None:
        import shapely  # shapely only for areas, regions and segments: a plain run loads none

        area = _prepared(area_geometry(sel.area))
        rows = rows.kept(shapely.intersects_xy(area, *rows.coordinates(table)))

    points_per_user = np.bincount(rows.user, minlength=len(all_ids))
    first_of_trip = np.ones(len(rows.trip), dtype=bool)
    first_of_trip[1:] = rows.trip[1:] != rows.trip[:-1]
    trips_per_user = np.bincount(rows.user[first_of_trip], minlength=len(all_ids))
    active_user = (points_per_user >= sel.min_points) & (trips_per_user >= sel.min_trips)
    present = active_user & (points_per_user > 0)  # the users left
    if not (active_user | (points_per_user == 0)).all():  # often every user is active
        rows = rows.kept(active_user[rows.user])
    stats["points"] = len(rows.row)
    return Chosen(rows, table, all_ids, present, stats, trips)


def finish(chosen: Chosen, config: Config, segments: pd.DataFrame | None = None) -> Selection:
    """The Selection of the rows chosen: users renumbered 0, 1, ... in code order, points
    projected to the config's CRS or the one chosen for them, towers or segments
    numbered as locations (`segments`: the segments table, for their lines)."""
    rows, table, stats = chosen.rows, chosen.table, dict(chosen.stats)
    present, all_ids = chosen.present, chosen.ids
    kept_codes = np.flatnonzero(present)
    user_ids = np.asarray(all_ids, dtype=object)
    user = rows.user
    if len(kept_codes) < len(all_ids):  # users are renumbered 0, 1, ... in code order
        user_ids = user_ids[kept_codes]
        user = (np.cumsum(present) - 1)[user]
    stats["users"] = len(user_ids)
    if len(rows.row) == 0:
        return Selection(_empty(), user_ids, config.crs or "EPSG:4326", stats=stats)
    projection, x, y = _projected(rows, table, config)
    crs = projection.crs
    points = pd.DataFrame(
        {C.USER: user.astype(np.int32, copy=False), C.TIME: rows.time, C.X: x, C.Y: y},
        copy=False,
    )
    locations = geometry = None
    if C.LOCATION in table:
        location_codes, labels = _factorized(table[C.LOCATION], rows.row)
        points[C.LOCATION] = location_codes.astype(np.int32)
        first = rows.row[np.unique(location_codes, return_index=True)[1]]
        lon, lat = table[C.LON].to_numpy()[first], table[C.LAT].to_numpy()[first]
        locations, geometry = places_table(
            np.asarray(labels, dtype=object), lon, lat, segments, crs
        )
    if C.TRIP in table:
        points[C.TRIP] = rows.trip
    if C.LEAVE in table:
        points[C.LEAVE] = table[C.LEAVE].to_numpy()[rows.row]
    return Selection(points, user_ids, crs, locations, geometry, stats, projection)


def places_table(
    labels: np.ndarray, lon: np.ndarray, lat: np.ndarray, segments: pd.DataFrame | None, crs: str
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """The locations of the selected points (towers or segments: label, lon, lat of the
    first point at each, [wkt]) and, for segments, their lines in the CRS."""
    locations = pd.DataFrame({"label": labels, "lon": lon, "lat": lat})
    if segments is None:
        return locations, None
    import shapely

    lines = segments.set_index("segment").loc[list(labels), "geometry"].to_numpy()
    locations["wkt"] = shapely.to_wkt(lines, rounding_precision=7)
    return locations, project_lines(lines, crs)


def unplaced(
    projection: Projection, config: Config, count: int, lon: float, lat: float
) -> PrudenceError:
    """The error of `count` selected points the projection cannot place, e.g. at (lon,
    lat): the config's CRS, or the one chosen (then: set one)."""
    message = (
        f"{projection.crs} cannot place {count:,} of the selected points, e.g. "
        f"lon {lon:.5f}, lat {lat:.5f}"
    )
    if projection.rule == "config":
        return ConfigError(config.file, "crs", f"{message}; choose a CRS that covers the data")
    return PrudenceError(f"{config.file.name}: {message}; set crs in the config")


def _sorted_rows(
    table: pd.DataFrame,
    codes: np.ndarray,
    time: np.ndarray,
    keep: np.ndarray | None,
    n_codes: int,
    sel: SelectConfig,
) -> _Rows:
    """The kept rows (every row when `keep` is None) sorted by user and time, with their
    trips; only the last point of each trip with `points: trip_ends`."""
    order = _by_user_and_time(None if keep is None else np.flatnonzero(keep), codes, time)
    user = _sorted_codes(codes, keep, n_codes)  # codes[order], without the gather
    when = time[order]
    if C.TRIP in table:  # trips given by the input (map-matched segments)
        trip_codes = pd.factorize(
            pd.Series(codes).astype(str) + "\x00" + table[C.TRIP].astype(str)
        )[0]
        trip = _given_trips(user, trip_codes[order])
    else:
        trip = _trip_numbers(user, when, sel.max_gap)
    rows = _Rows(order, user, trip, when)
    if sel.points == "trip_ends":
        last = np.ones(len(order), dtype=bool)
        last[:-1] = trip[1:] != trip[:-1]
        rows = rows.kept(last)
    return rows


def _projected(
    rows: _Rows, table: pd.DataFrame, config: Config
) -> tuple[Projection, np.ndarray, np.ndarray]:
    """The projection chosen for the points and the points in its CRS (each distinct
    position once when they were found); an error naming a point it cannot place."""
    threads = config.engine.jobs or os.cpu_count() or 1
    lon, lat = rows.coordinates(table)
    if rows.position is None or rows.distinct is None:
        projection = choose_projection(lon, lat, config.crs)
        x, y = project(lon, lat, projection.crs, threads=threads)
    else:
        code = rows.position
        used = np.zeros(len(rows.distinct[0]), dtype=bool)
        used[code] = True
        distinct = rows.distinct[0][used], rows.distinct[1][used]
        projection = choose_projection(lon, lat, config.crs, distinct)
        del lon, lat  # memory: the positions give them again
        x_of, y_of = np.full(len(used), np.nan), np.full(len(used), np.nan)
        x_of[used], y_of[used] = project(*distinct, projection.crs, threads=threads)
        x, y = x_of[code], y_of[code]
    lost = ~(np.isfinite(x) & np.isfinite(y))
    if lost.any():
        first = rows.row[int(np.argmax(lost))]
        lon_first, lat_first = table[C.LON].to_numpy()[first], table[C.LAT].to_numpy()[first]
        raise unplaced(projection, config, int(lost.sum()), lon_first, lat_first)
    return projection, x, y


def _factorized(
    column: pd.Series, rows: np.ndarray | None = None
) -> tuple[np.ndarray, pd.Index | np.ndarray]:
    """`pd.factorize(column.to_numpy()[rows], sort=True)` (all rows when None), from the
    codes of a Categorical with sorted categories (as `read_points` gives) when it is one:
    sorted codes are sorted labels, and no label is hashed again. Without `rows`, labels
    of no row may be kept: they select no point."""
    dtype = column.dtype
    if not (isinstance(dtype, pd.CategoricalDtype) and _increasing(dtype.categories)):
        values = column.to_numpy() if rows is None else column.to_numpy()[rows]
        codes, labels = pd.factorize(values, sort=True)
        return codes, labels
    codes = column.cat.codes.to_numpy()
    if rows is None:
        return codes, dtype.categories
    present, dense = _renumbered(codes[rows], len(dtype.categories))
    return dense, dtype.categories[present]


def _increasing(labels: pd.Index) -> bool:
    """`labels.is_monotonic_increasing`; for strings kept by Arrow (as `read_points` gives
    them), by Arrow's comparison, without making a Python string of each label first.
    (UTF-8 bytes sort as the code points Python compares.)"""
    if not (isinstance(labels.dtype, pd.StringDtype) and labels.dtype.storage == "pyarrow"):
        return bool(labels.is_monotonic_increasing)
    if len(labels) < 2:
        return True
    values = pa.array(labels)
    return bool(pc.all(pc.less_equal(values[:-1], values[1:])).as_py())


def _by_user_and_time(index: np.ndarray | None, codes: np.ndarray, time: np.ndarray) -> np.ndarray:
    """The rows of `index` (increasing, as `np.flatnonzero` gives it; every row when None)
    sorted by user code, then time, ties kept in row order: the order of
    `index[np.lexsort((time[index], codes[index]))]`, several times faster. Rows already
    in time order (as many exports are) are sorted by user alone; others by one 64-bit
    key (user code in the high bits, time in the low ones) when both fit, or by time and
    then by user (a stable sort keeps the time order within each user)."""
    user = codes if index is None else codes[index]
    when = time if index is None else time[index]
    if len(when) == 0:
        return np.zeros(0, dtype=np.int64)
    if (when[1:] >= when[:-1]).all():
        return _taken(index, stable_order(user))
    first, last = int(when.min()), int(when.max())
    unit = 1_000_000_000 if not (when % 1_000_000_000).any() else 1  # whole seconds
    time_bits = ((last - first) // unit).bit_length()
    user = user.astype(np.int64)
    if time_bits > 62:  # a span of time no int64 difference holds
        return _taken(index, np.lexsort((when, user)))
    when = when - first  # a copy: `time` is the table's
    when //= unit
    if time_bits + int(user.max()).bit_length() <= 62:
        user <<= time_bits
        user |= when
        del when
        return _taken(index, stable_order(user))
    by_time = stable_order(when)
    del when
    return _taken(index, by_time[stable_order(user[by_time])])


def _taken(index: np.ndarray | None, order: np.ndarray) -> np.ndarray:
    """`index[order]`, or `order` itself for every row."""
    taken: np.ndarray = order if index is None else index[order]
    return taken


def _sorted_codes(codes: np.ndarray, keep: np.ndarray | None, n_codes: int) -> np.ndarray:
    """The codes of the kept rows (every row when `keep` is None) in increasing order,
    each as often as it is kept: what `codes[order]` is when `order` sorts the kept rows
    by code, found by counting."""
    counts = np.bincount(codes if keep is None else codes[keep], minlength=n_codes)
    return np.repeat(np.arange(n_codes, dtype=codes.dtype), counts)


def _renumbered(user: np.ndarray, n_codes: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct codes of `user` (sorted) and each point's rank among them: what
    `np.unique(user, return_inverse=True)` gives, by counting rather than sorting."""
    present = np.zeros(n_codes, dtype=bool)
    present[user] = True
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present), rank[user]


def _given_trips(user: np.ndarray, trip: np.ndarray) -> np.ndarray:
    """Trip number per point (sorted by user and time) from the input's trip ids: a new
    trip starts whenever the id changes."""
    starts = np.ones(len(user), dtype=bool)
    if len(user) > 1:
        starts[1:] = (user[1:] != user[:-1]) | (trip[1:] != trip[:-1])
    numbers = np.cumsum(starts)
    numbers -= 1
    return numbers


def _trip_numbers(user: np.ndarray, time: np.ndarray, max_gap_seconds: int) -> np.ndarray:
    """Trip number per point (points sorted by user and time): a new trip starts at a
    user's first point and after every gap longer than max_gap."""
    numbers = np.empty(len(user), dtype=np.int64)  # the gaps first, then the numbers
    starts = np.ones(len(user), dtype=bool)
    if len(user) > 1:
        gap = np.subtract(time[1:], time[:-1], out=numbers[1:]) > max_gap_seconds * 10**9
        starts[1:] = (user[1:] != user[:-1]) | gap
    np.cumsum(starts, out=numbers)
    numbers -= 1
    return numbers


def _prepared(geometry: shapely.Geometry) -> shapely.Geometry:
    import shapely

    shapely.prepare(geometry)
    return geometry


def _empty() -> pd.DataFrame:
    return pd.DataFrame(
        {
            C.USER: np.array([], dtype=np.int32),
            C.TIME: np.array([], dtype=np.int64),
            C.X: np.array([], dtype=float),
            C.Y: np.array([], dtype=float),
        }
    )
