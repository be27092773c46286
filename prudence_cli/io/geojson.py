"""GeoJSON in lon/lat: read polygons — a selection area (their union) and region layers
(one labelled polygon per feature) — and write a FeatureCollection of places (points,
polygons, lines) with their properties, for QGIS or kepler.gl."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from prudence_cli.errors import InputError
from prudence_cli.io.text import read_json

if TYPE_CHECKING:
    import shapely


def read_area_geojson(path: Path) -> shapely.Geometry:
    """The union of the Polygon/MultiPolygon geometries of a GeoJSON file (lon/lat)."""
    import shapely
    from shapely.geometry import shape

    data = read_json(path, "GeoJSON")
    if not isinstance(data, dict):
        raise InputError(path, "is not a GeoJSON object")
    if data.get("type") == "FeatureCollection":
        geometries = [f.get("geometry") for f in data.get("features", [])]
    elif data.get("type") == "Feature":
        geometries = [data.get("geometry")]
    else:
        geometries = [data]
    shapes = []
    for g in geometries:
        try:
            geom = shape(g)
        except (AttributeError, KeyError, TypeError, ValueError, shapely.errors.GEOSException):
            raise InputError(path, "holds a geometry that is not valid GeoJSON") from None
        if geom.geom_type not in ("Polygon", "MultiPolygon"):
            raise InputError(path, f"holds a {geom.geom_type}; the area must be polygons")
        shapes.append(geom)
    if not shapes:
        raise InputError(path, "holds no polygon")
    return shapely.union_all(shapes)


def read_region_layer(path: Path) -> pd.DataFrame:
    """The polygons of a GeoJSON layer (lon/lat) with a label each: the feature's
    `name`, `id` or `NAME` property, else its position in the file."""
    import shapely
    from shapely.geometry import shape

    data = read_json(path, "GeoJSON")
    features = data.get("features", []) if isinstance(data, dict) else []
    if not isinstance(features, list):
        raise InputError(path, "`features` is not a list (a FeatureCollection is expected)")
    labels, shapes = [], []
    for i, feature in enumerate(features):
        try:
            geom = shape(feature.get("geometry"))
        except (AttributeError, KeyError, TypeError, ValueError, shapely.errors.GEOSException):
            raise InputError(path, f"feature {i} holds no valid geometry") from None
        if geom.geom_type not in ("Polygon", "MultiPolygon"):
            raise InputError(path, f"feature {i} is a {geom.geom_type}; regions are polygons")
        if geom.is_empty:
            raise InputError(path, f"feature {i} is an empty {geom.geom_type}")
        props = feature.get("properties") or {}
        if not isinstance(props, dict):
            raise InputError(path, f"feature {i}: its `properties` are not an object")
        labels.append(str(props.get("name", props.get("id", props.get("NAME", i)))))
        shapes.append(geom)
    if not shapes:
        raise InputError(path, "holds no polygon feature (a FeatureCollection is expected)")
    if len(set(labels)) != len(labels):
        raise InputError(path, "two regions have the same name")
    return pd.DataFrame({"label": labels, "geometry": shapes})


DIGITS = 7  # decimals of a coordinate: about 1 cm


def point_geometries(lon: np.ndarray, lat: np.ndarray) -> list[dict[str, Any]]:
    return [
        {"type": "Point", "coordinates": [round(float(x), DIGITS), round(float(y), DIGITS)]}
        for x, y in zip(lon, lat, strict=True)
    ]


def polygon_geometries(rings: np.ndarray) -> list[dict[str, Any]]:
    """One Polygon per closed ring of lon/lat corners (shape (n, corners, 2))."""
    return [{"type": "Polygon", "coordinates": [np.round(ring, DIGITS).tolist()]} for ring in rings]


def wkt_geometries(texts: Sequence[str]) -> list[dict[str, Any]]:
    """Geometries written as well-known text (lon/lat), e.g. the LINESTRINGs of road
    segments."""
    import shapely
    from shapely.geometry import mapping

    shapes = shapely.set_precision(shapely.from_wkt(np.asarray(texts, dtype=object)), 10**-DIGITS)
    return [dict(mapping(g)) for g in shapes]


def feature_collection(geometries: Sequence[dict[str, Any]], properties: pd.DataFrame) -> str:
    """A FeatureCollection (RFC 7946) as text: one Feature per geometry, with the columns
    of the matching row of `properties` as its properties."""
    features = [
        {"type": "Feature", "geometry": geometry, "properties": row}
        for geometry, row in zip(geometries, properties.to_dict(orient="records"), strict=True)
    ]
    document = {"type": "FeatureCollection", "features": features}
    return json.dumps(document, separators=(",", ":"), default=_plain) + "\n"


def _plain(value: Any) -> Any:
    """numpy numbers as JSON numbers."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
