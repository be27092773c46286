"""Selection of the raw data: period, trips and trip ends, area, active users.

Order (documented in the README): the period filter first; then trips are split on the
period's points (a new trip after a gap longer than `trips.max_gap`), so a trip that
leaves the area is not cut at its border; with `points: trip_ends` only each trip's last
point is kept (PRUDEnce's parking positions, Pratesi et al., section 4.1.2); then the area
filter; then users with fewer than `min_points` points or `min_trips` trips are dropped.
The points left are projected to the config's `crs`, or to the CRS chosen for their extent
(`prudence_cli.space.choose_projection`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import shapely

from prudence_cli import columns as C
from prudence_cli.arrays import stable_order
from prudence_cli.config import Area, Config
from prudence_cli.errors import ConfigError, PrudenceError
from prudence_cli.io.geojson import read_area_geojson
from prudence_cli.io.points import RawPoints
from prudence_cli.space import Projection, choose_projection, project, project_lines


@dataclass
class Selection:
    """The selected raw data: the users U and their points in a projected CRS."""

    points: pd.DataFrame  # user (int32 code), time (int64 ns), x, y
    # [, location (int32 code of a tower or segment)] [, trip (int64), leave (int64 ns)]
    user_ids: np.ndarray  # original user id per code
    crs: str
    locations: pd.DataFrame | None = None  # per location code: label, lon, lat
    geometry: np.ndarray | None = None  # per location code: segment LineString in the CRS
    stats: dict[str, int] = field(default_factory=dict)
    projection: Projection | None = None  # how the CRS was chosen, its scale error

    @property
    def n_users(self) -> int:
        return int(self.user_ids.shape[0])


def area_geometry(area: Area) -> shapely.Geometry:
    if area.kind == "bbox":
        assert area.bbox is not None
        return shapely.box(*area.bbox)
    if area.kind == "wkt":
        assert area.wkt is not None
        return shapely.from_wkt(area.wkt)
    assert area.path is not None
    return read_area_geojson(area.path)


def select(raw: RawPoints, config: Config) -> Selection:
    """Apply the config's `select` block to the raw points (see the module docstring)."""
    sel = config.select
    table = raw.table
    stats = {"rows_read": raw.rows_read, "rows_valid": len(table)}
    codes, all_ids = _factorized(table[C.USER])
    time = table[C.TIME].to_numpy()
    keep = np.ones(len(table), dtype=bool)
    if sel.start is not None:
        keep &= time >= sel.start.value
    if sel.end is not None:
        keep &= time < sel.end.value
    stats["rows_in_period"] = int(keep.sum())

    order = _by_user_and_time(np.flatnonzero(keep), codes, time)
    user = _sorted_codes(codes, keep, len(all_ids))  # codes[order], without the gather
    if C.TRIP in table:  # trips given by the input (map-matched segments)
        trip_codes = pd.factorize(
            pd.Series(codes).astype(str) + "\x00" + table[C.TRIP].astype(str)
        )[0]
        trip = _given_trips(user, trip_codes[order])
    else:
        trip = _trip_numbers(user, time[order], sel.max_gap)
    if sel.points == "trip_ends":
        last = np.ones(len(order), dtype=bool)
        last[:-1] = trip[1:] != trip[:-1]
        order, user, trip = order[last], user[last], trip[last]

    lon = table[C.LON].to_numpy()[order]
    lat = table[C.LAT].to_numpy()[order]
    if sel.area is not None:
        inside = shapely.intersects_xy(_prepared(area_geometry(sel.area)), lon, lat)
        order, user, trip, lon, lat = (a[inside] for a in (order, user, trip, lon, lat))

    points_per_user = np.bincount(user, minlength=len(all_ids))
    first_of_trip = np.ones(len(trip), dtype=bool)
    first_of_trip[1:] = trip[1:] != trip[:-1]
    trips_per_user = np.bincount(user[first_of_trip], minlength=len(all_ids))
    active_user = (points_per_user >= sel.min_points) & (trips_per_user >= sel.min_trips)
    active = active_user[user] if len(user) else np.zeros(0, dtype=bool)
    if not active.all():  # often every user is active: then nothing is copied
        order, user, trip, lon, lat = (a[active] for a in (order, user, trip, lon, lat))
    stats["points"] = len(order)

    kept_codes, dense_user = _renumbered(user, len(all_ids))
    del user
    user_ids = np.asarray(all_ids, dtype=object)[kept_codes]
    stats["users"] = len(user_ids)
    if len(order) == 0:
        return Selection(_empty(), user_ids, config.crs or "EPSG:4326", stats=stats)
    projection = choose_projection(lon, lat, config.crs)
    crs = projection.crs
    x, y = _projected(lon, lat, projection, config)
    points = pd.DataFrame(
        {C.USER: dense_user.astype(np.int32), C.TIME: time[order], C.X: x, C.Y: y}, copy=False
    )
    locations = geometry = None
    if C.LOCATION in table:
        location_codes, labels = _factorized(table[C.LOCATION], order)
        points[C.LOCATION] = location_codes.astype(np.int32)
        first = np.unique(location_codes, return_index=True)[1]
        locations = pd.DataFrame(
            {"label": np.asarray(labels, dtype=object), "lon": lon[first], "lat": lat[first]}
        )
        if raw.segments is not None:
            lines = raw.segments.set_index("segment").loc[list(labels), "geometry"].to_numpy()
            locations["wkt"] = shapely.to_wkt(lines, rounding_precision=7)
            geometry = project_lines(lines, crs)
    for column in (C.TRIP, C.LEAVE):
        if column in table:
            points[column] = trip if column == C.TRIP else table[column].to_numpy()[order]
    return Selection(points, user_ids, crs, locations, geometry, stats, projection)


def _projected(
    lon: np.ndarray, lat: np.ndarray, projection: Projection, config: Config
) -> tuple[np.ndarray, np.ndarray]:
    """The points in the projection's CRS; an error naming a point it cannot place."""
    x, y = project(lon, lat, projection.crs, threads=config.engine.jobs or os.cpu_count() or 1)
    lost = ~(np.isfinite(x) & np.isfinite(y))
    if lost.any():
        first = int(np.argmax(lost))
        message = (
            f"{projection.crs} cannot place {int(lost.sum()):,} of the selected points, e.g. "
            f"lon {lon[first]:.5f}, lat {lat[first]:.5f}"
        )
        if projection.rule == "config":
            raise ConfigError(config.file, "crs", f"{message}; choose a CRS that covers the data")
        raise PrudenceError(f"{config.file.name}: {message}; set crs in the config")
    return x, y


def _factorized(
    column: pd.Series, rows: np.ndarray | None = None
) -> tuple[np.ndarray, pd.Index | np.ndarray]:
    """`pd.factorize(column.to_numpy()[rows], sort=True)` (all rows when None), from the
    codes of a Categorical with sorted categories (as `read_points` gives) when it is one:
    sorted codes are sorted labels, and no label is hashed again. Without `rows`, labels
    of no row may be kept: they select no point."""
    dtype = column.dtype
    if not (isinstance(dtype, pd.CategoricalDtype) and dtype.categories.is_monotonic_increasing):
        values = column.to_numpy() if rows is None else column.to_numpy()[rows]
        codes, labels = pd.factorize(values, sort=True)
        return codes, labels
    codes = column.cat.codes.to_numpy()
    if rows is None:
        return codes, dtype.categories
    present, dense = _renumbered(codes[rows], len(dtype.categories))
    return dense, dtype.categories[present]


def _by_user_and_time(index: np.ndarray, codes: np.ndarray, time: np.ndarray) -> np.ndarray:
    """`index` sorted by user code, then time, ties kept in index order: the order of
    `index[np.lexsort((time[index], codes[index]))]`, several times faster. Rows already
    in time order (as many exports are) are sorted by user alone; others by one 64-bit
    key (user code in the high bits, time in the low ones) when both fit, or by time and
    then by user (a stable sort keeps the time order within each user). `index` must be
    increasing (as `np.flatnonzero` gives it)."""
    if len(index) == 0:
        return index
    when = time[index]
    if (when[1:] >= when[:-1]).all():
        return _taken(index, stable_order(codes[index]), len(time))
    first, last = int(when.min()), int(when.max())
    unit = 1_000_000_000 if not (when % 1_000_000_000).any() else 1  # whole seconds
    time_bits = ((last - first) // unit).bit_length()
    user = codes[index].astype(np.int64)
    if time_bits > 62:  # a span of time no int64 difference holds
        order: np.ndarray = index[np.lexsort((when, user))]
        return order
    when -= first
    when //= unit
    if time_bits + int(user.max()).bit_length() <= 62:
        user <<= time_bits
        user |= when
        del when
        return _taken(index, stable_order(user), len(time))
    by_time = stable_order(when)
    del when
    return _taken(index, by_time[stable_order(user[by_time])], len(time))


def _taken(index: np.ndarray, order: np.ndarray, n_rows: int) -> np.ndarray:
    """`index[order]`; `order` itself when `index` (increasing) holds every row, as it
    does without a period filter, so that ten million rows are not gathered for nothing."""
    taken: np.ndarray = order if len(index) == n_rows else index[order]
    return taken


def _sorted_codes(codes: np.ndarray, keep: np.ndarray, n_codes: int) -> np.ndarray:
    """The codes of the kept rows in increasing order, each as often as it is kept: what
    `codes[order]` is when `order` sorts the kept rows by code, found by counting."""
    counts = np.bincount(codes[keep] if not keep.all() else codes, minlength=n_codes)
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
    return np.cumsum(starts) - 1


def _trip_numbers(user: np.ndarray, time: np.ndarray, max_gap_seconds: int) -> np.ndarray:
    """Trip number per point (points sorted by user and time): a new trip starts at a
    user's first point and after every gap longer than max_gap."""
    starts = np.ones(len(user), dtype=bool)
    if len(user) > 1:
        gap = np.diff(time) > max_gap_seconds * 1_000_000_000
        starts[1:] = (user[1:] != user[:-1]) | gap
    return np.cumsum(starts) - 1


def _prepared(geometry: shapely.Geometry) -> shapely.Geometry:
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
