"""Projection to metres and square grid cells (DESIGN.md section 4; Pellungrini et al.,
"A data mining approach to assess privacy risk in human mobility data", Definition 7).

Cells are aligned on the origin of the projected CRS: cell (i, j) of side m covers
[i·m, (i+1)·m) × [j·m, (j+1)·m). A cell's id therefore depends only on the CRS and the
side, never on which users are present.

The CRS, unless the config gives one, is chosen from the data (`projections.py`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyproj

from prudence_cli.arrays import distinct

WGS84 = "EPSG:4326"
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
    ix, iy = grid_indexes(x, y, side)
    cx, cy, codes = distinct_cells(ix, iy)
    assert codes is not None
    del ix, iy
    lon, lat, off_map = cell_centres(cx, cy, side, crs)
    if off_map.any():
        centre_x, centre_y = (cx + 0.5) * side, (cy + 0.5) * side
        near = _nearest_points(codes, x - centre_x[codes], y - centre_y[codes], off_map)
        lon[off_map], lat[off_map] = unproject(x[near], y[near], crs)
    return codes.astype(np.int32, copy=False), cells_table(cx, cy, lon, lat)


def grid_indexes(x: np.ndarray, y: np.ndarray, side: float) -> tuple[np.ndarray, np.ndarray]:
    """The column and row of the cell of side `side` holding each point."""
    steps = np.divide(x, side)  # one buffer for both axes: x, then y
    ix = np.floor(steps, out=steps).astype(np.int64)
    iy = np.floor(np.divide(y, side, out=steps), out=steps).astype(np.int64)
    return ix, iy


def cell_centres(
    cx: np.ndarray, cy: np.ndarray, side: float, crs: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lon and lat of the cells' centres, and which of them fall off the map."""
    lon, lat = unproject((cx + 0.5) * side, (cy + 0.5) * side, crs)
    return lon, lat, ~(np.isfinite(lon) & np.isfinite(lat))


def cells_table(cx: np.ndarray, cy: np.ndarray, lon: np.ndarray, lat: np.ndarray) -> pd.DataFrame:
    labels = [f"{a}_{b}" for a, b in zip(cx.tolist(), cy.tolist(), strict=True)]
    return pd.DataFrame({"label": labels, "lon": lon, "lat": lat})


def cell_keys(cx: np.ndarray, cy: np.ndarray) -> np.ndarray:
    """One int64 per cell that sorts as the cells' ids (see `distinct_cells`)."""
    key: np.ndarray = cx.astype(np.int64, copy=False) * (1 << 32) + (
        cy.astype(np.int64, copy=False) + (1 << 31)
    )
    return key


def cells_of_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The columns and rows of the cells of `keys` (`cell_keys`)."""
    return keys // (1 << 32), keys % (1 << 32) - (1 << 31)


def distinct_cells(
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
        key = cell_keys(ix, iy)
        if inverse:
            ids, found = np.unique(key, return_inverse=True)
            codes = found.ravel()
        else:
            ids, codes = distinct(key), None
        return *cells_of_keys(ids), codes
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
    return region_codes(lon, lat, polygons), regions_table(labels, polygons)


def region_codes(lon: np.ndarray, lat: np.ndarray, polygons: list[Any]) -> np.ndarray:
    """Region code per point (−1 outside every region; the first listed wins)."""
    import shapely

    tree = shapely.STRtree(polygons)
    points = shapely.points(lon, lat)
    point_index, region_index = tree.query(points, predicate="intersects")
    codes = np.full(len(lon), -1, dtype=np.int64)
    order = np.lexsort((region_index, point_index))
    first = np.ones(order.shape[0], dtype=bool)
    first[1:] = point_index[order][1:] != point_index[order][:-1]
    codes[point_index[order][first]] = region_index[order][first]
    return codes


def regions_table(labels: list[str], polygons: list[Any]) -> pd.DataFrame:
    """The regions table: label, and lon, lat of a point inside each region."""
    import shapely

    inside = shapely.point_on_surface(polygons)
    return pd.DataFrame(
        {"label": labels, "lon": shapely.get_x(inside), "lat": shapely.get_y(inside)}
    )
