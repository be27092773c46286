"""Projection to metres and square grid cells (DESIGN.md section 4; Pellungrini et al.,
"A data mining approach to assess privacy risk in human mobility data", Definition 7).

Cells are aligned on the origin of the projected CRS: cell (i, j) of side m covers
[i·m, (i+1)·m) × [j·m, (j+1)·m). A cell's id therefore depends only on the CRS and the
side, never on which users are present.

The CRS, unless the config gives one (`crs:`), is chosen from the data's extent
(`choose_projection`): the UTM zone of the data's mean point when every point lies in
that zone, as Prudence always did; otherwise an equal-area projection, so that every cell
covers its nominal area, centred on the data: the Lambert azimuthal one on the middle of
the data or on the pole of its hemisphere, or the Albers conic one fitted to the data's
latitudes, whichever distorts lengths least over the data.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyproj
from pyproj.aoi import AreaOfInterest
from pyproj.database import query_utm_crs_info

WGS84 = "EPSG:4326"
# the scale error is measured on at most this many distinct positions (see `_positions`)
MEASURED_POSITIONS = 100_000
# `project` splits at least this many points per thread among its threads
PARALLEL_POINTS = 500_000
# `project` copies repeated points when at most this share of them differ from the last
REPEATS_WORTH_COPYING = 0.9
# `repeated_positions` looks for the distinct positions of the points when, in a sample
# of SAMPLED_POINTS of them, at most DISTINCT_WORTH_HASHING of the points are distinct
# positions and at most SEEN_ONCE of them are a position seen once: hashing a point costs
# a small part of projecting it while the positions are few, more once they are millions
SAMPLED_POINTS = 1 << 18
DISTINCT_WORTH_HASHING = 0.25
SEEN_ONCE = 1 / 16
# `_positions` and `grid_cells` mark what they see in a table of at most this many cells
# (and 8 per point): bytes, and 4 bytes each to rank them
DENSE_CELLS = 1 << 25
# a scale error above this is worth a warning: a "1 km" cell more than 10 m off
WARN_ABOVE = 0.01


@dataclass(frozen=True)
class Projection:
    """The projected CRS of the points, the rule that chose it, and its scale error.

    The scale error is the worst |s − 1| over the data's positions and every direction,
    s being the projection's scale factor there (the semi-axes of Tissot's indicatrix):
    a length of 1 km on the grid measures about 1 ± scale_error km on the ground."""

    crs: str
    rule: str  # config | utm | azimuthal | conic | polar
    scale_error: float
    worst: tuple[float, float]  # lon, lat of a position with that error

    def warning(self, above: float = WARN_ABOVE) -> str | None:
        """One line for the user when the scale error exceeds `above`; None otherwise."""
        if self.scale_error <= above:
            return None
        lon, lat = self.worst
        how = (
            f"distorts lengths by up to {self.scale_error:.1%} over the data"
            if np.isfinite(self.scale_error)
            else "cannot measure its distortion everywhere on the data"
        )
        hint = "choose a crs that suits the data" if self.rule == "config" else "set crs"
        return (
            f"warning: the projection {self.crs} {how} (at lon {lon:.2f}, lat {lat:.2f}), "
            f"so cells there are not their nominal size; {hint} in the config to change it"
        )


def choose_projection(
    lon: np.ndarray,
    lat: np.ndarray,
    crs: str | None = None,
    distinct: tuple[np.ndarray, np.ndarray] | None = None,
) -> Projection:
    """The given CRS, else the UTM zone of the data when it fits one, else the centred
    equal-area projection that distorts least (see the module docstring); with its scale
    error over the data. `distinct`: the distinct positions among the points, when known:
    the same projection, found faster."""
    lon = np.asarray(lon, dtype=float)
    lat = np.asarray(lat, dtype=float)
    if lon.size == 0:
        raise ValueError("no points to choose a projection for")
    at = _positions(*(distinct if distinct is not None else (lon, lat)))
    if crs is not None:
        return _measured(crs, "config", *at)
    zone = utm_zone(lon, lat)
    if zone is not None:
        return _measured(zone, "utm", *at)
    west, width, south, north = _extent(*at)
    middle = west + width / 2
    candidates: list[tuple[str, str]] = []
    if width <= 180:
        candidates.append((_laea((south + north) / 2, middle), "azimuthal"))
        conic = _albers(south, north, (south + north) / 2, middle)
        if conic is not None:
            candidates.append((conic, "conic"))
    if width > 180 or south >= 0 or north <= 0:  # around a pole, or in one hemisphere
        candidates.append((_laea(90.0 if south + north >= 0 else -90.0, 0.0), "polar"))
    measured = [_measured(c, rule, *at) for c, rule in candidates]
    return min(measured, key=lambda p: p.scale_error)


def utm_zone(lon: np.ndarray, lat: np.ndarray) -> str | None:
    """The WGS 84 UTM zone (as EPSG:xxxxx) of the points' mean, when every point lies in
    that zone's area of use (its 6° of longitude, 80° S to 84° N); None otherwise."""
    c_lon = float(np.mean(lon))
    c_lat = float(np.mean(lat))
    if not (np.isfinite(c_lon) and np.isfinite(c_lat)):
        return None
    edge = abs(c_lon / 6 - round(c_lon / 6)) < 1e-9 or abs(c_lat) < 1e-9
    if not edge and -180 < c_lon < 180 and -80 < c_lat < 84:
        # inside one zone's area of use: its number and hemisphere by arithmetic (the
        # projection database takes about 0.1 s to say the same); on an edge, ask it
        zone = int((c_lon + 180) // 6) + 1
        west = -180.0 + 6 * (zone - 1)
        south, north = (0.0, 84.0) if c_lat > 0 else (-80.0, 0.0)
        crs, bounds = f"EPSG:{(32600 if c_lat > 0 else 32700) + zone}", (west, west + 6)
    else:
        found = query_utm_crs_info(
            datum_name="WGS 84",
            area_of_interest=AreaOfInterest(c_lon, c_lat, c_lon, c_lat),
        )
        if not found or found[0].area_of_use is None:
            return None
        area = found[0].area_of_use
        crs, bounds = f"{found[0].auth_name}:{found[0].code}", (area.west, area.east)
        south, north = area.south, area.north
    inside = (
        float(np.min(lon)) >= bounds[0]
        and float(np.max(lon)) <= bounds[1]
        and float(np.min(lat)) >= south
        and float(np.max(lat)) <= north
    )
    return crs if inside else None


def scale_errors(crs: str, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """max(|a − 1|, |b − 1|) per position, a and b the semi-axes of Tissot's indicatrix
    (the largest and smallest scale factor there); inf where the CRS cannot say."""
    try:
        factors = pyproj.Proj(crs).get_factors(lon, lat)
    except (pyproj.exceptions.ProjError, pyproj.exceptions.CRSError):
        return np.full(np.shape(lon), np.inf)
    a = np.asarray(factors.tissot_semimajor, dtype=float)
    b = np.asarray(factors.tissot_semiminor, dtype=float)
    with np.errstate(invalid="ignore"):
        error: np.ndarray = np.maximum(np.abs(a - 1), np.abs(b - 1))
    error[~np.isfinite(error)] = np.inf
    return error


def _measured(crs: str, rule: str, lon: np.ndarray, lat: np.ndarray) -> Projection:
    error = scale_errors(crs, lon, lat)
    worst = int(np.argmax(error)) if error.size else 0
    where = (float(lon[worst]), float(lat[worst])) if error.size else (0.0, 0.0)
    return Projection(crs, rule, float(error[worst]) if error.size else 0.0, where)


def _positions(lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The data's distinct positions rounded to 0.01° (about 1 km), or to 0.1° or 1° when
    there are more than MEASURED_POSITIONS of them: the extent and the scale error are
    measured on these, so that they cost little on millions of points. In the order of
    their rounded longitude, then latitude."""
    for step in (0.01, 0.1, 1.0):
        kx, ky, _ = _cells_of(_rounded(lon, step), _rounded(lat, step), inverse=False)
        if kx.size <= MEASURED_POSITIONS:
            break
    return kx * step, ky * step


def _rounded(values: np.ndarray, step: float) -> np.ndarray:
    """`np.round(values / step)` as integers."""
    steps = values / step
    np.round(steps, out=steps)
    return steps.astype(np.int64)


def _extent(lon: np.ndarray, lat: np.ndarray) -> tuple[float, float, float, float]:
    """West end and width of the shortest arc of longitudes holding every point (so data
    across ±180° is an arc across 180°), and the south and north latitudes."""
    seen = np.unique(np.mod(lon + 180.0, 360.0) - 180.0)
    gaps = np.diff(np.append(seen, seen[0] + 360.0))
    k = int(np.argmax(gaps))
    west = float(seen[(k + 1) % seen.size])
    return west, 360.0 - float(gaps[k]), float(np.min(lat)), float(np.max(lat))


def _laea(lat_0: float, lon_0: float) -> str:
    """Lambert azimuthal equal-area on (lat_0, lon_0), rounded to whole degrees so that a
    little more or less data keeps the same grid."""
    return (
        f"+proj=laea +lat_0={_degrees(lat_0)} +lon_0={_degrees(_wrap(lon_0))} "
        "+x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs"
    )


def _albers(south: float, north: float, lat_0: float, lon_0: float) -> str | None:
    """Albers equal-area conic with standard parallels a sixth of the latitudes in from
    each end (the rule of sixths); None where the cone degenerates (parallels symmetric
    about the equator)."""
    span = north - south
    lat_1, lat_2 = round(south + span / 6), round(north - span / 6)
    if lat_1 + lat_2 == 0:
        return None
    crs = (
        f"+proj=aea +lat_1={lat_1} +lat_2={lat_2} +lat_0={_degrees(lat_0)} "
        f"+lon_0={_degrees(_wrap(lon_0))} +x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs"
    )
    try:
        pyproj.CRS.from_user_input(crs)
    except pyproj.exceptions.CRSError:
        return None
    return crs


def _wrap(lon: float) -> float:
    """A longitude in (−180, 180]."""
    return 180.0 - float(np.mod(180.0 - lon, 360.0))


def _degrees(value: float) -> int:
    return int(round(value))


def check_projected_crs(text: object) -> str:
    """The CRS as given if it is a projected CRS in metres; ValueError otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a CRS like EPSG:32632")
    try:
        crs = pyproj.CRS.from_user_input(text)
    except pyproj.exceptions.CRSError:
        raise ValueError(f"{text!r} is not a CRS pyproj knows (e.g. EPSG:32632)") from None
    if not crs.is_projected:
        raise ValueError(f"{text!r} is not a projected CRS; cells need coordinates in metres")
    unit = crs.axis_info[0].unit_name if crs.axis_info else ""
    if unit not in ("metre", "meter"):
        raise ValueError(f"{text!r} has axes in {unit or 'unknown units'}, not metres")
    return text


@dataclass(frozen=True)
class Positions:
    """Points as codes into the table of their distinct positions (lon and lat the same
    to the bit: -0.0 is not 0.0), so that each position is projected once."""

    code: np.ndarray  # per point: its row in lon, lat
    lon: np.ndarray
    lat: np.ndarray


def repeated_positions(lon: np.ndarray, lat: np.ndarray) -> Positions | None:
    """The points' distinct positions when they repeat enough for projecting each once to
    pay: when SAMPLED_POINTS points taken evenly along them hold few distinct positions
    (a whole holds no more than its parts, in share) and few seen only once (the share of
    points at positions the sample missed, as Good and Turing estimate it); else None.
    Points of a few places (towers, stops, rounded coordinates) are found this way."""
    if len(lon) < 2 * SAMPLED_POINTS:
        return None  # few points: projecting them all costs little
    step = len(lon) // SAMPLED_POINTS
    size = len(lon[::step])
    if len(pd.unique(np.asarray(lon[::step], dtype=float).view(np.int64))) > (
        DISTINCT_WORTH_HASHING * size
    ):
        return None  # the longitudes alone vary too much (as noisy GPS fixes do)
    seen = np.bincount(distinct_positions(lon[::step], lat[::step]).code)
    if len(seen) > DISTINCT_WORTH_HASHING * size or (seen == 1).sum() > SEEN_ONCE * size:
        return None
    return distinct_positions(lon, lat)


def distinct_positions(lon: np.ndarray, lat: np.ndarray) -> Positions:
    """Every point's code among its distinct positions (in an order of no meaning): the
    bits of each coordinate hashed alone (few distinct values hash fast), then the pairs
    ranked in a table over them when it is small, or hashed."""
    lon_code, lon_bits = pd.factorize(np.asarray(lon, dtype=float).view(np.int64))
    lat_code, lat_bits = pd.factorize(np.asarray(lat, dtype=float).view(np.int64))
    n_lat = max(len(lat_bits), 1)
    pair = np.asarray(lon_code, dtype=np.int64)  # factorize's own: changed in place
    pair *= n_lat
    pair += lat_code
    del lon_code, lat_code
    if len(lon_bits) * n_lat <= min(len(pair), DENSE_CELLS):  # no bigger than the points
        seen = np.zeros(len(lon_bits) * n_lat, dtype=bool)
        seen[pair] = True
        rank = np.cumsum(seen, dtype=np.int32)
        rank -= 1
        code, found = rank[pair], np.flatnonzero(seen)
    else:
        code, found = pd.factorize(pair)
    return Positions(
        code,
        np.asarray(lon_bits)[found // n_lat].view(float),
        np.asarray(lat_bits)[found % n_lat].view(float),
    )


def project(
    lon: np.ndarray, lat: np.ndarray, crs: str, threads: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """The points from lon/lat to the CRS. PROJ computes every point alone, so a point
    the same to the bit as the one before it (a GPS trace repeats its position while
    the device stands still) is projected once and copied, when that saves enough.
    With `threads` > 1 and millions of points, consecutive parts of them are projected
    at once by that many threads. Either way the result is the same to the bit."""
    lon = np.asarray(lon, dtype=float)
    lat = np.asarray(lat, dtype=float)
    if lon.ndim != 1 or lon.shape != lat.shape or len(lon) < 2:
        return _projected_parts(lon, lat, crs, threads)
    moved = np.empty(len(lon), dtype=bool)  # bits, not values: -0.0 is not 0.0 here
    moved[0] = True
    lon_bits = np.ascontiguousarray(lon).view(np.int64)
    lat_bits = np.ascontiguousarray(lat).view(np.int64)
    np.not_equal(lon_bits[1:], lon_bits[:-1], out=moved[1:])
    moved[1:] |= lat_bits[1:] != lat_bits[:-1]
    starts = np.flatnonzero(moved)
    del moved
    if len(starts) > REPEATS_WORTH_COPYING * len(lon):
        return _projected_parts(lon, lat, crs, threads)
    repeats = np.diff(starts, append=len(lon)).astype(np.int32 if len(lon) < 1 << 31 else np.int64)
    x, y = lon[starts], lat[starts]
    del starts  # memory: the distinct points, projected in place, then one copy at a time
    x, y = _projected_parts(x, y, crs, threads, own=True)
    x = np.repeat(x, repeats)
    y = np.repeat(y, repeats)
    return x, y


def _projected_parts(
    lon: np.ndarray, lat: np.ndarray, crs: str, threads: int, own: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """`project` without looking for repeats: in parts of at least PARALLEL_POINTS, by
    at most `threads` threads at once (PROJ lets go of the GIL), each with its own
    transformer as pyproj requires. `own`: `lon` and `lat` are this call's to overwrite
    (contiguous float64), so they are projected in place, without a copy."""
    parts = min(threads, len(lon) // PARALLEL_POINTS)
    if parts <= 1 and not own:
        transformer = pyproj.Transformer.from_crs(WGS84, crs, always_xy=True)
        x, y = transformer.transform(lon, lat)
        return np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    # projected in place: the inputs when they are ours, else copies of them
    x = lon if own else np.array(lon, dtype=float)
    y = lat if own else np.array(lat, dtype=float)
    parts = max(parts, 1)
    bounds = np.linspace(0, len(x), parts + 1).astype(np.int64).tolist()

    def part(start: int, stop: int) -> None:
        transformer = pyproj.Transformer.from_crs(WGS84, crs, always_xy=True)
        transformer.transform(x[start:stop], y[start:stop], inplace=True)

    with ThreadPoolExecutor(parts) as pool:
        list(pool.map(part, bounds[:-1], bounds[1:]))  # list(): raise what a part raised
    return x, y


def project_lines(lines: np.ndarray, crs: str) -> np.ndarray:
    """Shapely geometries from lon/lat to the CRS."""
    import shapely

    transformer = pyproj.Transformer.from_crs(WGS84, crs, always_xy=True)

    def move(xy: np.ndarray) -> np.ndarray:
        x, y = transformer.transform(xy[:, 0], xy[:, 1])
        return np.column_stack([x, y])

    return np.asarray(shapely.transform(lines, move))


def unproject(x: np.ndarray, y: np.ndarray, crs: str) -> tuple[np.ndarray, np.ndarray]:
    transformer = pyproj.Transformer.from_crs(crs, WGS84, always_xy=True)
    lon, lat = transformer.transform(x, y)
    return np.asarray(lon, dtype=float), np.asarray(lat, dtype=float)


def grid_cells(
    x: np.ndarray, y: np.ndarray, side: float, crs: str
) -> tuple[np.ndarray, pd.DataFrame]:
    """Dense cell code per point, and the cells table (label, lon, lat of the centre).

    Codes follow the order of the cell ids, so they are stable for a given CRS and side.
    A cell so large that its centre falls off the projection's map (thousands of km) is
    placed at its point nearest that centre instead.
    """
    steps = np.divide(x, side)  # one buffer for both axes: x, then y
    ix = np.floor(steps, out=steps).astype(np.int64)
    iy = np.floor(np.divide(y, side, out=steps), out=steps).astype(np.int64)
    del steps
    cx, cy, codes = _cells_of(ix, iy)
    assert codes is not None
    del ix, iy
    centre_x, centre_y = (cx + 0.5) * side, (cy + 0.5) * side
    lon, lat = unproject(centre_x, centre_y, crs)
    off_map = ~(np.isfinite(lon) & np.isfinite(lat))
    if off_map.any():
        near = _nearest_points(codes, x - centre_x[codes], y - centre_y[codes], off_map)
        lon[off_map], lat[off_map] = unproject(x[near], y[near], crs)
    labels = [f"{a}_{b}" for a, b in zip(cx.tolist(), cy.tolist(), strict=True)]
    cells = pd.DataFrame({"label": labels, "lon": lon, "lat": lat})
    return codes.astype(np.int32, copy=False), cells


def _cells_of(
    ix: np.ndarray, iy: np.ndarray, inverse: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The distinct cells (column cx, row cy) of points in column `ix` and row `iy`,
    sorted by column then row (their id cx·2³² + cy + 2³¹), and, when `inverse`, each
    point's rank among them: what `np.unique(id, return_inverse=True)` gives. By a table
    over the rectangle of cells spanning the points when it is small (as for any data in
    a country), which costs a fraction of sorting the ids: ranked column by column, row
    by row, the cells are in the order of their ids when the rows are 32-bit integers."""
    if len(ix) == 0:
        return ix, iy, np.zeros(0, dtype=np.int32)
    x0, y0 = int(ix.min()), int(iy.min())
    height, width = int(iy.max()) - y0 + 1, int(ix.max()) - x0 + 1
    small = width * height <= min(max(8 * len(ix), 1 << 20), DENSE_CELLS)
    if not (small and -(1 << 31) <= y0 <= y0 + height <= 1 << 31):
        key = ix * (1 << 32) + (iy + (1 << 31))
        if inverse:
            ids, found = np.unique(key, return_inverse=True)
            codes = found.ravel()
        else:
            ids, codes = np.unique(key), None
        return ids // (1 << 32), ids % (1 << 32) - (1 << 31), codes
    cell = ix - x0
    cell *= height
    cell += iy
    cell -= y0
    seen = np.zeros(width * height, dtype=bool)
    seen[cell] = True
    codes = None
    if inverse:
        rank = np.cumsum(seen, dtype=np.int32)
        rank -= 1
        codes = rank[cell]
    found = np.flatnonzero(seen)
    return found // height + x0, found % height + y0, codes


def cell_squares(lon: np.ndarray, lat: np.ndarray, side: float, crs: str) -> np.ndarray:
    """The corners, in lon/lat, of the grid cell of side `side` (metres, in `crs`) that
    holds each point: shape (n, 5, 2), a closed ring counter-clockwise from the cell's
    south-west corner (as GeoJSON wants an outer ring). A cell is a square in the
    projected CRS (see `grid_cells`), so its corners are found there and unprojected."""
    x, y = project(np.asarray(lon, dtype=float), np.asarray(lat, dtype=float), crs)
    x0, y0 = np.floor(x / side) * side, np.floor(y / side) * side
    corners_x = np.stack([x0, x0 + side, x0 + side, x0, x0], axis=1)
    corners_y = np.stack([y0, y0, y0 + side, y0 + side, y0], axis=1)
    ring_lon, ring_lat = unproject(corners_x.ravel(), corners_y.ravel(), crs)
    return np.stack([ring_lon, ring_lat], axis=1).reshape(len(x), 5, 2)


def _nearest_points(
    codes: np.ndarray, dx: np.ndarray, dy: np.ndarray, cells: np.ndarray
) -> np.ndarray:
    """Per cell where `cells` is true (in cell order), the index of its point nearest
    the centre, each point's offset from its cell's centre being (dx, dy)."""
    index = np.flatnonzero(cells[codes])
    order = index[np.lexsort((dx[index] ** 2 + dy[index] ** 2, codes[index]))]
    first = np.ones(order.size, dtype=bool)
    first[1:] = codes[order][1:] != codes[order][:-1]
    return order[first]


def regions_of(
    lon: np.ndarray, lat: np.ndarray, labels: list[str], polygons: list[Any]
) -> tuple[np.ndarray, pd.DataFrame]:
    """Region code per point (−1 outside every region; the first region listed wins where
    they overlap) and the regions table (label, lon, lat of a point inside)."""
    import shapely

    tree = shapely.STRtree(polygons)
    points = shapely.points(lon, lat)
    point_index, region_index = tree.query(points, predicate="intersects")
    codes = np.full(len(lon), -1, dtype=np.int64)
    order = np.lexsort((region_index, point_index))
    first = np.ones(order.shape[0], dtype=bool)
    first[1:] = point_index[order][1:] != point_index[order][:-1]
    codes[point_index[order][first]] = region_index[order][first]
    inside = shapely.point_on_surface(polygons)
    table = pd.DataFrame(
        {"label": labels, "lon": shapely.get_x(inside), "lat": shapely.get_y(inside)}
    )
    return codes, table
