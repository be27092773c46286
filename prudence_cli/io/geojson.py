"""GeoJSON polygons: a selection area (their union) and region layers (one labelled
polygon per feature), in lon/lat."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import shapely
from shapely.geometry import shape

from prudence_cli.errors import InputError
from prudence_cli.io.text import read_json


def read_area_geojson(path: Path) -> shapely.Geometry:
    """The union of the Polygon/MultiPolygon geometries of a GeoJSON file (lon/lat)."""
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
    data = read_json(path, "GeoJSON")
    features = data.get("features", []) if isinstance(data, dict) else []
    labels, shapes = [], []
    for i, feature in enumerate(features):
        try:
            geom = shape(feature.get("geometry"))
        except (AttributeError, KeyError, TypeError, ValueError, shapely.errors.GEOSException):
            raise InputError(path, f"feature {i} holds no valid geometry") from None
        if geom.geom_type not in ("Polygon", "MultiPolygon"):
            raise InputError(path, f"feature {i} is a {geom.geom_type}; regions are polygons")
        props = feature.get("properties") or {}
        labels.append(str(props.get("name", props.get("id", props.get("NAME", i)))))
        shapes.append(geom)
    if not shapes:
        raise InputError(path, "holds no polygon feature (a FeatureCollection is expected)")
    if len(set(labels)) != len(labels):
        raise InputError(path, "two regions have the same name")
    return pd.DataFrame({"label": labels, "geometry": shapes})
