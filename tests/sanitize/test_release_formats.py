"""Releases other tools can open (issue 16): the released tables as CSV or Parquet
(`sanitize --as`), and the released places as GeoJSON — grid cells as their squares,
towers and regions as points, segments as lines — with their counts; the report and the
ledger hold the sha256 of every file."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyproj
import pytest
import shapely
from shapely.geometry import shape

from prudence_cli.catalog import open_catalog
from prudence_cli.sanitize.files import released_places
from prudence_cli.sanitize.ledger import read_ledger
from tests.assessed import release_args, run
from tests.conftest import presence_view, trajectory_view


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sanitize_as_parquet_writes_the_same_tables_as_csv(catalog):
    as_csv = run(*release_args("ana", "csv"))
    as_parquet = run(*release_args("bo", "parquet"), "--as", "parquet")
    assert as_csv.exit_code == as_parquet.exit_code == 0, as_parquet.stderr
    assert sorted(p.name for p in Path("parquet").iterdir()) == [
        "dataview.parquet",
        "locations.geojson",
        "locations.parquet",
        "report.json",
        "report.md",
    ]
    for name in ("dataview", "locations"):
        written = pd.read_parquet(f"parquet/{name}.parquet")
        expected = pd.read_csv(f"csv/{name}.csv", dtype={"user": str, "location": str})
        assert list(written.columns) == list(expected.columns)
        assert len(written) == len(expected)
    table = pd.read_parquet("parquet/dataview.parquet")
    assert table["count"].dtype.kind == "i"  # types kept: counts are integers
    # same release: the same rows, whichever file holds them
    csv_rows = pd.read_csv("csv/dataview.csv", dtype={"user": str, "location": str})
    pd.testing.assert_frame_equal(table, csv_rows, check_dtype=False)


def test_every_released_file_has_its_sha256_in_the_report_and_the_ledger(catalog):
    result = run(*release_args("ana", "rel"), "--as", "parquet")
    assert result.exit_code == 0, result.stderr
    folder = Path("rel")
    report = json.loads((folder / "report.json").read_text())
    shared = {p.name for p in folder.iterdir()} - {"report.json", "report.md"}
    assert (
        set(report["files"])
        == shared
        == {
            "dataview.parquet",
            "locations.parquet",
            "locations.geojson",
        }
    )
    for name, digest in report["files"].items():
        assert sha256(folder / name) == digest, name
    record = read_ledger(open_catalog(catalog))[-1]
    assert set(record["released_files"]) == {p.name for p in folder.iterdir()}
    for name, digest in record["released_files"].items():
        assert sha256(folder / name) == digest, name


def test_as_is_refused_with_randomize(catalog):
    result = run("sanitize", "--method", "randomize", "--epsilon", "1", "--as", "parquet")
    assert result.exit_code == 2
    assert "--as is for the suppression methods, not randomize" in result.stderr


def test_grid_cells_are_their_squares_with_the_released_counts(catalog):
    assert run(*release_args("ana", "rel")).exit_code == 0
    crs = open_catalog(catalog).record.selection.crs
    report = json.loads(Path("rel/report.json").read_text())
    side = {"500m": 500.0, "1000m": 1000.0}[report["dataview"]["dimensions"]["grid"]]
    places = json.loads(Path("rel/locations.geojson").read_text())
    table = pd.read_csv("rel/dataview.csv", dtype={"user": str, "location": str})
    locations = pd.read_csv("rel/locations.csv", dtype={"label": str}).set_index("label")
    assert places["type"] == "FeatureCollection"
    features = places["features"]
    assert [f["properties"]["label"] for f in features] == list(locations.index)
    to_metres = pyproj.Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    for feature in features:
        label = feature["properties"]["label"]
        polygon = shape(feature["geometry"])
        assert polygon.geom_type == "Polygon"
        centre = shapely.Point(locations.loc[label, "lon"], locations.loc[label, "lat"])
        assert polygon.contains(centre)
        # a square of the grid's side in the projected CRS
        x, y = to_metres.transform(*np.asarray(polygon.exterior.coords).T)
        assert np.ptp(x) == pytest.approx(side, abs=0.01)
        assert np.ptp(y) == pytest.approx(side, abs=0.01)
        rows = table[table["location"] == label]
        assert feature["properties"]["people"] == rows["user"].nunique()
        assert feature["properties"]["records"] == rows["count"].sum()


def test_towers_and_regions_are_points_and_segments_are_lines():
    towers = presence_view({"a": {"T1": 3, "T2": 1}, "b": {"T1": 2}}, ["a", "b", "c"])
    towers = replace(
        towers,
        locations=pd.DataFrame({"label": ["T1", "T2"], "lon": [10.4, 10.5], "lat": [43.7, 43.71]}),
    )
    places = json.loads(released_places(towers, "EPSG:32632") or "{}")
    assert [f["geometry"] for f in places["features"]] == [
        {"type": "Point", "coordinates": [10.4, 43.7]},
        {"type": "Point", "coordinates": [10.5, 43.71]},
    ]
    assert [f["properties"] for f in places["features"]] == [
        {"label": "T1", "people": 2, "records": 5},
        {"label": "T2", "people": 1, "records": 1},
    ]
    # a trajectory's records are its visits, one per row; only released places are listed
    visits = trajectory_view({"a": [(0, 1), (0, 2), (2, 3)], "b": [(0, 1)]}, ["a", "b"])
    lines = pd.DataFrame(
        {
            "label": ["s0", "s1", "s2"],
            "lon": 0.0,
            "lat": 0.0,
            "wkt": [f"LINESTRING ({i} 43, {i + 1} 43.5)" for i in range(3)],
        }
    )
    segments = replace(visits, locations=lines)
    places = json.loads(released_places(segments, None) or "{}")
    assert [f["properties"] for f in places["features"]] == [
        {"label": "s0", "people": 2, "records": 3},
        {"label": "s2", "people": 1, "records": 1},
    ]
    assert places["features"][1]["geometry"] == {
        "type": "LineString",
        "coordinates": [[2.0, 43.0], [3.0, 43.5]],
    }


def test_locations_without_positions_get_no_geojson():
    view = presence_view({"a": {"x": 1}}, ["a"])
    bare = replace(view, locations=pd.DataFrame({"label": ["x"]}))
    assert released_places(bare, None) is None
