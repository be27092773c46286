"""Geometry on real-world extents through the command line: grid sizes that round-trip
through the catalog, and a projection that suits the data (recorded in catalog.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyproj
import pytest
from click.testing import CliRunner

from prudence_cli.assess import assess
from prudence_cli.cli import main
from prudence_cli.config import load_config

CONFIG = """\
name: geo
input:
  path: points.csv
  columns: {{user: uid, time: datetime, lat: lat, lon: lng}}
  timezone: UTC
dataview:
  format: presence
  dimensions:
    grid: [{grid}]
    frequency: [1]
attacks:
  - attack: presence
    knowledge: {{h: [1, 2], visits: [exact]}}
output: catalog/geo
"""
# Honolulu, Hilo, San Francisco, Los Angeles, Seattle, Miami, Portland (Maine), New York
US_COAST = [
    (-157.86, 21.31),
    (-155.08, 19.72),
    (-122.42, 37.77),
    (-118.24, 34.05),
    (-122.33, 47.61),
    (-80.19, 25.76),
    (-70.26, 43.66),
    (-74.0, 40.71),
]


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def write_project(folder: Path, places: list[tuple[float, float]], grid: str = "1km") -> Path:
    """12 people, each with 6 fixes near 3 of the places (seeded), and the config."""
    rng = np.random.default_rng(7)
    lines = ["uid,datetime,lat,lng"]
    for person in range(12):
        for fix in range(6):
            lon, lat = places[(person + fix % 3) % len(places)]
            lon += rng.uniform(-0.02, 0.02)
            lat += rng.uniform(-0.02, 0.02)
            lon = (lon + 180) % 360 - 180
            lines.append(f"p{person},2024-03-0{1 + fix % 5}T0{fix}:00:00,{lat:.5f},{lon:.5f}")
    (folder / "points.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = folder / "geo.yaml"
    config.write_text(CONFIG.format(grid=grid), encoding="utf-8")
    return config


def selection_of(folder: Path) -> dict:
    manifest = json.loads((folder / "catalog" / "geo" / "catalog.json").read_text())
    return manifest["selection"]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_5000km_grid_round_trips_through_the_catalog(here):
    write_project(here, [(10.40, 43.72), (10.42, 43.70), (10.38, 43.71)], "1km, 5000km")
    assert run("assess", "geo.yaml", "-q").exit_code == 0
    shown = json.loads(run("catalog", "show", "--format", "json").stdout)
    assert {row["grid"] for row in shown} == {"1000m", "5000km"}
    only = json.loads(run("catalog", "show", "--format", "json", "--where", "grid=5000km").stdout)
    assert {row["dataview"] for row in only} == {"d2"}
    best = run("catalog", "best", "--max-risk", "0.5")
    assert best.exit_code == 0 and "5000km" in best.stdout
    assert run("check", "--max-risk", "0.5").exit_code in (0, 1)
    released = run("sanitize", "--dataview", "d2", "--threshold", "0.5", "--out", "rel", "-q")
    assert released.exit_code == 0, released.output
    assert json.loads((here / "rel" / "report.json").read_text())["dataview"]["dimensions"] == {
        "grid": "5000km",
        "frequency": "1",
    }
    assert run("report", "--out", "report.html").exit_code == 0


@pytest.mark.parametrize("grid", ["40000km", "3e4km", "5 km"])
def test_an_impossible_grid_size_is_a_config_error(here, grid):
    write_project(here, [(10.40, 43.72)], grid)
    for command in ("validate", "assess"):
        result = run(command, "geo.yaml")
        assert result.exit_code == 2
        assert "dataview.dimensions.grid" in result.output


def test_data_along_the_us_coasts_and_hawaii(here):
    """No UTM zone holds it: an equal-area projection centred on the data, its scale error
    recorded, a warning above 1 %, and a "1 km" cell about 1 km wide in Hawaii."""
    config = write_project(here, US_COAST)
    result = assess(load_config(config))
    selection = selection_of(here)
    assert selection["projection"] == "conic" and selection["crs"].startswith("+proj=aea ")
    assert 0.01 < selection["scale_error"] < 0.03
    assert len(result.warnings) == 1 and "set crs" in result.warnings[0]
    crs = selection["crs"]
    to_grid = pyproj.Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    x, y = to_grid.transform(-157.86, 21.31)
    x0, y0 = (x // 1000) * 1000, (y // 1000) * 1000
    back = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    (a, b), (c, d) = back.transform(x0, y0), back.transform(x0 + 1000, y0)
    width = pyproj.Geod(ellps="WGS84").inv(a, b, c, d)[2]
    assert width == pytest.approx(1000, rel=0.02)  # was 540 m in UTM zone 15


def test_the_configured_crs_overrides_the_choice(here):
    config = write_project(here, US_COAST)
    config.write_text(config.read_text() + "crs: EPSG:32615\n", encoding="utf-8")
    result = assess(load_config(config))
    selection = selection_of(here)
    assert (selection["crs"], selection["projection"]) == ("EPSG:32615", "config")
    assert selection["scale_error"] > 0.5
    assert "choose a crs" in result.warnings[0]


def test_data_across_the_antimeridian_is_centred_on_180(here):
    write_project(here, [(179.5, -17.0), (-179.5, -17.0), (179.9, -16.8)])
    assert run("assess", "geo.yaml", "-q").exit_code == 0
    selection = selection_of(here)
    assert "+lon_0=180 " in selection["crs"] and selection["projection"] != "utm"
    assert selection["scale_error"] < 0.001


def test_data_at_85_north_is_assessed(here):
    write_project(here, [(10.0, 85.0), (60.0, 85.2), (-120.0, 85.1), (170.0, 84.9)])
    assert run("validate", "geo.yaml").exit_code == 0
    result = run("assess", "geo.yaml", "-q")
    assert result.exit_code == 0, result.output
    selection = selection_of(here)
    assert selection["projection"] == "polar" and "+lat_0=90 " in selection["crs"]
    assert selection["scale_error"] < 0.01
    assert run("check", "--max-risk", "0.5").exit_code in (0, 1)


def test_the_projection_survives_the_cache(here):
    config = write_project(here, US_COAST)
    text = config.read_text().replace("  timezone: UTC\n", "  timezone: UTC\n  cache: parquet\n")
    config.write_text(text, encoding="utf-8")
    selections = []
    for out in ("first", "second"):
        assert run("assess", "geo.yaml", "-q", "--out", out).exit_code == 0
        manifest = json.loads((here / out / "catalog.json").read_text())
        selections.append((manifest["input_cache"]["used"], manifest["selection"]))
    assert [used for used, _ in selections] == [False, True]
    assert selections[0][1] == selections[1][1]
    assert selections[1][1]["projection"] == "conic"


def test_assess_warns_on_stderr_above_one_percent(here):
    write_project(here, US_COAST)
    result = run("assess", "geo.yaml", "-q")
    assert result.exit_code == 0
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "2.0%" in warnings[0] and "set crs" in warnings[0]
