"""The files a release shares: the released dataview and its locations, as CSV or
Parquet (`sanitize --as`), and, when the locations are places on a map — grid cells,
towers, regions, road segments — `locations.geojson`, for QGIS or kepler.gl users.

The GeoJSON holds one Feature per released location, in lon/lat (RFC 7946): a grid cell
as the square it is in the catalog's projected CRS (its corners found there, then
unprojected), a tower or a region as a point (a region's point lies inside it), a road
segment as its line. Each carries its `label` (the `location` of the dataview file), the
`people` released with data there and their `records` there: the visits counted (the
`count` column) in a dataview of counts, one per row otherwise (a trajectory's visits,
a segment traversed). Nothing there is not already in the released table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli.arrays import distinct
from prudence_cli.dataviews.base import CountedView, Dataview
from prudence_cli.io.checksums import sha256_file
from prudence_cli.io.geojson import (
    feature_collection,
    point_geometries,
    polygon_geometries,
    wkt_geometries,
)
from prudence_cli.io.writers import TABLE_FORMATS, table_bytes
from prudence_cli.space import cell_squares

GEOJSON = "locations.geojson"
__all__ = ["GEOJSON", "TABLE_FORMATS", "released_places", "write_release_files"]


def write_release_files(
    folder: Path,
    table: pd.DataFrame,
    view: Dataview,
    file_format: str,
    crs: str | None,
) -> dict[str, str]:
    """Write `dataview.<csv|parquet>` (the released `table`), `locations.<csv|parquet>`
    and, where the locations have a geometry, `locations.geojson` into `folder`; the
    sha256 of each file written, by name."""
    places = released_places(view, crs)
    files = {
        f"dataview.{file_format}": table_bytes(table, file_format),
        f"locations.{file_format}": table_bytes(view.used_locations(), file_format),
    }
    if places is not None:
        files[GEOJSON] = places.encode("utf-8")
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return {name: sha256_file(folder / name) for name in files}


def released_places(view: Dataview, crs: str | None) -> str | None:
    """The locations of the released `view` as a GeoJSON FeatureCollection (see the
    module), or None when they have no position."""
    used = distinct(view.location)
    locations = view.locations.iloc[used].reset_index(drop=True)
    geometries = _geometries(view, locations, crs)
    if geometries is None:
        return None
    n = len(view.locations)
    pairs = distinct(view.user.astype(np.int64) * max(n, 1) + view.location)
    people = np.bincount(pairs % max(n, 1), minlength=n)[used]
    weights = view.count if isinstance(view, CountedView) else None
    records = np.bincount(view.location, weights=weights, minlength=n)[used]
    properties = pd.DataFrame(
        {
            "label": locations["label"].astype(str),
            "people": people.astype(np.int64),
            "records": np.rint(records).astype(np.int64),
        }
    )
    return feature_collection(geometries, properties)


def _geometries(
    view: Dataview, locations: pd.DataFrame, crs: str | None
) -> list[dict[str, Any]] | None:
    """Squares for grid cells, lines for segments with their geometry, points for the
    rest; None without positions."""
    side = dict(view.dimensions).get("grid")
    if not {"lon", "lat"} <= set(locations):
        return None
    lon = locations["lon"].to_numpy(dtype=float)
    lat = locations["lat"].to_numpy(dtype=float)
    if side is not None and crs is not None:
        return polygon_geometries(cell_squares(lon, lat, float(side), crs))
    if "wkt" in locations:
        return wkt_geometries(locations["wkt"].astype(str).tolist())
    return point_geometries(lon, lat)
