"""Projection to metres and square grid cells (DESIGN.md section 4, seed 000 Definition 7).

Cells are aligned on the origin of the projected CRS: cell (i, j) of side m covers
[i·m, (i+1)·m) × [j·m, (j+1)·m). A cell's id therefore depends only on the CRS and the
side, never on which users are present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyproj
import shapely
from pyproj.aoi import AreaOfInterest
from pyproj.database import query_utm_crs_info

WGS84 = "EPSG:4326"


def utm_crs(lon: np.ndarray, lat: np.ndarray) -> str:
    """The WGS 84 UTM zone (as EPSG:xxxxx) holding the centroid of the points."""
    c_lon = float(np.mean(lon))
    c_lat = float(np.mean(lat))
    found = query_utm_crs_info(
        datum_name="WGS 84",
        area_of_interest=AreaOfInterest(c_lon, c_lat, c_lon, c_lat),
    )
    if not found:
        raise ValueError(f"no UTM zone holds ({c_lon:.4f}, {c_lat:.4f}); set crs in the config")
    return f"{found[0].auth_name}:{found[0].code}"


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


def project(lon: np.ndarray, lat: np.ndarray, crs: str) -> tuple[np.ndarray, np.ndarray]:
    transformer = pyproj.Transformer.from_crs(WGS84, crs, always_xy=True)
    x, y = transformer.transform(lon, lat)
    return np.asarray(x, dtype=float), np.asarray(y, dtype=float)


def project_lines(lines: np.ndarray, crs: str) -> np.ndarray:
    """Shapely geometries from lon/lat to the CRS."""
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
    """
    ix = np.floor(x / side).astype(np.int64)
    iy = np.floor(y / side).astype(np.int64)
    cell = ix * (1 << 32) + (iy + (1 << 31))
    ids, codes = np.unique(cell, return_inverse=True)
    cx = ids // (1 << 32)
    cy = ids % (1 << 32) - (1 << 31)
    lon, lat = unproject((cx + 0.5) * side, (cy + 0.5) * side, crs)
    labels = [f"{a}_{b}" for a, b in zip(cx.tolist(), cy.tolist(), strict=True)]
    cells = pd.DataFrame({"label": labels, "lon": lon, "lat": lat})
    return codes.astype(np.int32), cells


def regions_of(
    lon: np.ndarray, lat: np.ndarray, labels: list[str], polygons: list[Any]
) -> tuple[np.ndarray, pd.DataFrame]:
    """Region code per point (−1 outside every region; the first region listed wins where
    they overlap) and the regions table (label, lon, lat of a point inside)."""
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
