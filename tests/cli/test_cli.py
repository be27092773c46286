"""The command line through click's CliRunner: assess, validate, catalog, sample."""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from prudence_cli.catalog import open_catalog
from prudence_cli.cli import main

CONFIG = """\
name: e2e
input:
  path: {path}
  columns: {{user: uid, time: datetime, lat: lat, lon: lng}}
  timezone: Europe/Rome
select:
  points: trip_ends
  min_trips: 3
dataview:
  format: presence
  dimensions:
    grid: [500m, 1km]
    frequency: [1, 3]
attacks:
  - attack: presence
    knowledge: {{h: [1, 2], visits: [exact, none]}}
output: catalog/e2e
"""


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_assess_writes_a_complete_catalog(assessed):
    catalog = open_catalog(assessed)
    irac = catalog.irac
    assert len(irac) == 4 * 4  # 4 dataviews × 4 levels
    assert list(irac.columns[:7]) == [
        "dataview",
        "grid",
        "frequency",
        "attack",
        "h",
        "visits",
        "users",
    ]
    assert set(irac["grid"]) == {"500m", "1000m"}
    assert irac["i_rac_u"].between(0, 1).all()
    for entry in catalog.dataviews:
        table = catalog.dataview_table(entry.id)
        assert list(table.columns) == ["user", "location", "count"]
        assert len(table) == entry.rows
        risks = catalog.risks(entry.id)
        assert len(risks) == catalog.manifest["selection"]["users"]
    manifest = catalog.manifest
    assert manifest["inputs"][0]["sha256"] and manifest["seed"] == 0
    for relative in manifest["files"]:
        assert (assessed / relative).is_file(), relative
    assert (assessed / irac["curve"][0]).is_file()


def test_catalog_show_formats_and_filters(assessed):
    csv_text = run("catalog", "show", "--format", "csv").stdout
    table = pd.read_csv(io.StringIO(csv_text))
    assert len(table) == 16
    filtered = run("catalog", "show", "--format", "json", "--where", "grid=1km", "--where", "h=2")
    rows = json.loads(filtered.stdout)
    assert len(rows) == 4 and {r["grid"] for r in rows} == {"1000m"}
    assert {r["h"] for r in rows} == {2}
    shown = run("catalog", "show", "--format", "table", "--catalog", str(assessed))
    assert "i-RAC" in shown.stdout and "d4" in shown.stdout
    nothing = run("catalog", "show", "--where", "frequency=99")
    assert nothing.exit_code == 0 and "No row matches" in nothing.stderr


def test_catalog_risks_long_format_with_original_ids(assessed):
    result = run("catalog", "risks", "--where", "dataview=d1", "--where", "visits=exact")
    frame = pd.read_csv(io.StringIO(result.stdout), dtype={"user": str})
    assert list(frame.columns) == [
        "dataview",
        "grid",
        "frequency",
        "attack",
        "h",
        "visits",
        "user",
        "risk",
        "lower_bound",
    ]
    assert not frame["lower_bound"].any()  # every level exact
    assert frame["user"].str.startswith("u").all()
    assert frame["risk"].between(0, 1).all()
    assert len(frame) == 2 * open_catalog(assessed).manifest["selection"]["users"]
    as_json = json.loads(
        run(
            "catalog",
            "risks",
            "--where",
            "dataview=d1",
            "--where",
            "h=1",
            "--where",
            "visits=none",
            "--format",
            "json",
        ).stdout
    )
    assert {r["visits"] for r in as_json} == {"none"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("catalog", "show", "--where", "colour=red"), "unknown key 'colour'"),
        (("catalog", "show", "--where", "grid"), "write KEY=VALUE"),
        (("catalog", "show", "--where", "grid=huge"), "is not a size"),
        (("catalog", "show", "--catalog", "nowhere"), "no such catalog folder"),
    ],
)
def test_catalog_usage_errors_exit_2(assessed, args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_validate(project):
    result = run("validate", "demo.yaml")
    assert result.exit_code == 0
    assert "valid — 4 dataviews × 4 attack levels" in result.stderr
    (project / "bad.yaml").write_text(CONFIG.format(path="absent.csv"))
    result = run("validate", "bad.yaml")
    assert result.exit_code == 2 and "absent.csv: no such file" in result.stderr


def test_config_error_exits_2_with_key_path(project):
    (project / "bad.yaml").write_text(
        CONFIG.format(path="x.csv").replace("grid: [500m, 1km]", 'grid: [500m, "1 km"]')
    )
    result = run("assess", "bad.yaml")
    assert result.exit_code == 2
    assert 'bad.yaml: dataview.dimensions.grid[1]: "1 km" is not a size' in result.stderr
    assert not (project / "catalog").exists()


def broken_copy(sample: Path, folder: Path, row: str) -> Path:
    """The sample with its 6th line replaced by `row`."""
    broken = folder / "broken.csv"
    lines = sample.read_text().splitlines()
    lines[5] = row
    broken.write_text("\n".join(lines) + "\n")
    return broken


def test_invalid_row_exits_2_and_writes_nothing(project, sample_gps):
    broken = broken_copy(sample_gps, project, "u0001,2011-13-45T08:00:00,43.7,10.4")
    (project / "broken.yaml").write_text(CONFIG.format(path=broken))
    result = run("assess", "broken.yaml")
    assert result.exit_code == 2
    assert f"{broken}:6: time is not ISO-8601" in result.stderr
    assert not (project / "catalog").exists()


def test_drop_mode_records_dropped_rows(project, sample_gps):
    broken = broken_copy(sample_gps, project, "u0001,2011-06-01T08:00:00,143.7,10.4")
    text = CONFIG.format(path=broken).replace("timezone:", "on_invalid: drop\n  timezone:")
    (project / "drop.yaml").write_text(text)
    result = run("assess", "drop.yaml", "--out", "dropped")
    assert result.exit_code == 0, result.output
    assert "1 invalid rows dropped" in result.stderr
    manifest = open_catalog(project / "dropped").manifest
    assert manifest["invalid_rows"] == {
        "mode": "drop",
        "dropped": {"lat is not a number within ±90": 1},
    }


def test_empty_selection_is_a_clear_error(project):
    text = CONFIG.format(path=(project / "x.csv")).replace("min_trips: 3", "min_trips: 100000")
    (project / "x.csv").write_text("uid,datetime,lat,lng\na,2011-06-01T08:00:00,43.7,10.4\n")
    (project / "none.yaml").write_text(text)
    result = run("assess", "none.yaml")
    assert result.exit_code == 2 and "the selection keeps no user" in result.stderr


def test_sample_command_is_seeded(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv.gz"
    assert run("sample", "gps", "--users", "5", "--days", "2", "--out", str(a)).exit_code == 0
    assert run("sample", "gps", "--users", "5", "--days", "2", "--out", str(b)).exit_code == 0
    assert pd.read_csv(a).equals(pd.read_csv(b))
    cdr = run(
        "sample",
        "cdr",
        "--users",
        "5",
        "--days",
        "2",
        "--out",
        str(tmp_path / "c.csv"),
        "--towers",
        str(tmp_path / "t.csv"),
    )
    assert cdr.exit_code == 0
    assert set(pd.read_csv(tmp_path / "c.csv")["cell"]) <= set(
        pd.read_csv(tmp_path / "t.csv")["tower"]
    )
    missing = run("sample", "cdr", "--out", str(tmp_path / "d.csv"))
    assert missing.exit_code == 2 and "--towers" in missing.stderr


def test_cdr_on_raw_towers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run(
        "sample",
        "cdr",
        "--users",
        "30",
        "--days",
        "5",
        "--out",
        "events.csv",
        "--towers",
        "towers.csv",
    )
    (tmp_path / "cdr.yaml").write_text(
        "input: {path: events.csv, format: cdr, towers: towers.csv,\n"
        "        columns: {user: caller, time: timestamp, tower: cell}}\n"
        "dataview: {format: presence, dimensions: {frequency: [1, 2]}}\n"
        "attacks: [{attack: presence, knowledge: {h: [1, all], visits: [exact]}}]\n"
        "coverage: visits\n"
    )
    result = run("assess", "cdr.yaml", "--quiet")
    assert result.exit_code == 0, result.output
    catalog = open_catalog(tmp_path / "catalog" / "cdr")
    assert "grid" not in catalog.irac.columns
    folder = tmp_path / "catalog" / "cdr" / "dataviews"
    locations = pd.read_parquet(folder / "d1.locations.parquet")
    assert locations["label"].str.startswith("T").all()


ALL_ATTACKS = {
    "trajectory": "[{attack: location, knowledge: {h: [1, 2]}},"
    " {attack: location_sequence, knowledge: {h: [2]}}, {attack: visit, knowledge: {h: [2]}}]",
    "presence": "[{attack: presence, knowledge: {h: [2], visits: [half]}},"
    " {attack: unique_location, knowledge: {h: [2]}},"
    " {attack: unique_location_sequence, knowledge: {h: [2]}},"
    " {attack: frequency, knowledge: {h: [1]}}, {attack: home_work},"
    " {attack: proportion, knowledge: {h: [2], delta: [0.1]}}]",
    "probability": "[{attack: probability, knowledge: {h: [1, 2], delta: [0.05]}}]",
}


@pytest.mark.parametrize("view_format", sorted(ALL_ATTACKS))
def test_every_attack_lands_in_the_catalog(project, sample_gps, view_format):
    dims = "{grid: [1km], time: [1d]}" if view_format == "trajectory" else "{grid: [1km]}"
    (project / f"{view_format}.yaml").write_text(
        f"input: {{path: {sample_gps}, columns: {{user: uid, time: datetime, lat: lat, "
        f"lon: lng}}, timezone: Europe/Rome}}\n"
        "select: {points: trip_ends}\n"
        f"dataview: {{format: {view_format}, dimensions: {dims}}}\n"
        f"attacks: {ALL_ATTACKS[view_format]}\n"
    )
    result = run("assess", f"{view_format}.yaml", "--quiet")
    assert result.exit_code == 0, result.output
    shown = json.loads(run("catalog", "show", "--format", "json").stdout)
    attacks = {row["attack"] for row in shown}
    expected = set(ALL_ATTACKS[view_format].replace("attack: ", "\n").split("\n")[1:])
    assert attacks == {name.split(",")[0].split("}")[0] for name in expected}
    assert all(0 <= row["i_rac_u"] <= 1 and row["sampled"] is False for row in shown)
    risks = pd.read_csv(io.StringIO(run("catalog", "risks").stdout))
    assert set(risks["attack"]) == attacks
    assert risks["risk"].between(0, 1).all()


def test_budget_error_and_sampling(project, sample_gps):
    base = (
        f"input: {{path: {sample_gps}, columns: {{user: uid, time: datetime, lat: lat, "
        "lon: lng}}\n"
        "dataview: {format: trajectory, dimensions: {grid: [250m], time: [1h]}}\n"
        "attacks: [{attack: location_sequence, knowledge: {h: [4]}}]\n"
    )
    (project / "big.yaml").write_text(base + "engine: {max_instances: 1000}\n")
    result = run("assess", "big.yaml", "--quiet")
    assert result.exit_code == 2
    assert "d1 grid=250m time=1h frequency=1 location_sequence[h=4]" in result.stderr
    assert "use a smaller h, or set engine.sample: N" in result.stderr.replace("Use", "use")
    (project / "sampled.yaml").write_text(base + "engine: {max_instances: 1000, sample: 2}\n")
    sampled = run("assess", "sampled.yaml", "--quiet")
    assert sampled.exit_code == 0, sampled.stderr
    manifest = open_catalog(project / "catalog" / "sampled").manifest
    assert manifest["sampling"][0]["level"] == "location_sequence[h=4]"
    assert manifest["sampling"][0]["instances_per_user"] == 2
    entry = manifest["sampling"][0]
    assert entry["sampled"] and "location_sequence[h=3]" in entry["floor"]
    assert "location_sequence[h=3]" in entry["computed_for_floor"]
    shown = json.loads(
        run(
            "catalog", "show", "--format", "json", "--catalog", str(project / "catalog" / "sampled")
        ).stdout
    )
    assert shown[0]["sampled"] is True


# what the command modules share: errors and options, the progress bar, rich tables, CSV/JSON
SHARED = tuple(
    f"prudence_cli.cli.{name}" for name in ("common", "progress", "bar", "render", "pipes")
)


def test_cli_import_is_light_and_modules_thin():
    """Start-up: importing the command line loads neither numba nor pandas; each command
    module stays thin and imports only the shared helpers, never the root or each other."""
    probe = (
        "import sys, prudence_cli.cli; "
        "print(sorted(m for m in ('numba', 'pandas') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"
    folder = Path(__file__).parents[2] / "prudence_cli" / "cli"
    for module in folder.glob("*.py"):
        source = module.read_text(encoding="utf-8")
        assert len(source.splitlines()) <= 500, module.name
        if module.stem in ("__init__", "app"):
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "prudence_cli.cli."
            ):
                assert node.module in SHARED, f"{module.name} imports {node.module}"
