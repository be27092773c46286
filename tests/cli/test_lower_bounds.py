"""Sampled levels are lower bounds, said wherever a risk is shown (catalog show, risks,
best, check, the report); the early stop at risk 1 is seen in the catalog's counter."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result

from prudence_cli.catalog import open_catalog
from prudence_cli.cli import main

PEOPLE, POINTS, SAMPLE = 30, 12, 8

CONFIG = """\
name: {name}
input:
  path: {path}
  columns: {{user: uid, time: datetime, lat: lat, lon: lng}}
dataview: {{format: trajectory, dimensions: {{grid: [250m], time: [1h]}}}}
attacks:
  - attack: location_sequence
    knowledge: {{h: [1, 2, 3, 4]}}
engine: {{max_instances: {budget}, sample: {sample}}}
policy: {{max_risk: 0.5}}
output: catalog/{name}
"""


def run(*args: str) -> Result:
    return CliRunner(env={"COLUMNS": "120"}).invoke(main, list(args), catch_exceptions=False)


def tracks(path: Path, crowd: bool) -> Path:
    """PEOPLE people of POINTS hourly points 1 km apart: the same track for all (a crowd,
    nobody singled out) or one track per person, each on its own latitude (loners)."""
    rows = ["uid,datetime,lat,lng"]
    for person in range(PEOPLE):
        lat = 45.0 if crowd else 45.0 + 0.05 * person
        for i in range(POINTS):
            rows.append(f"u{person},2026-03-02 {i + 6:02d}:00:00,{lat},{9.0 + 0.013 * i}")
    path.write_text("\n".join(rows) + "\n")
    return path


def assess(folder: Path, name: str, crowd: bool, budget: int = 5000) -> Path:
    data = tracks(folder / f"{name}.csv", crowd)
    config = CONFIG.format(name=name, path=data, sample=SAMPLE, budget=budget)
    (folder / f"{name}.yaml").write_text(config)
    result = run("assess", f"{name}.yaml", "--quiet")
    assert result.exit_code == 0, result.stderr
    return folder / "catalog" / name


@pytest.fixture
def crowd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return assess(tmp_path, "crowd", crowd=True)


def sampling(catalog: Path) -> dict[str, dict]:
    return {s["level"]: s for s in open_catalog(catalog).manifest["sampling"]}


def test_the_early_stop_is_counted_in_the_catalog(crowd, tmp_path):
    # h = 1, 2 fit the budget (360 and 1,980 instances), h = 3, 4 do not: sampled
    entries = sampling(crowd)
    assert {k for k, s in entries.items() if s["sampled"]} == {
        "location_sequence[h=3]",
        "location_sequence[h=4]",
    }
    # in a crowd nobody reaches risk 1: every person draws the rarest query and SAMPLE more
    assert entries["location_sequence[h=4]"]["instances"] == PEOPLE * (1 + SAMPLE)
    # loners are singled out by their first (rarest) query: they stop drawing. With a
    # budget of 10 instances even h = 1 (360) is sampled: one instance per person.
    loners = sampling(assess(tmp_path, "loners", crowd=False, budget=10))
    assert loners["location_sequence[h=1]"]["sampled"]
    assert loners["location_sequence[h=1]"]["instances"] == PEOPLE
    risks = pd.read_csv(io.StringIO(run("catalog", "risks", "--catalog", "catalog/loners").stdout))
    assert (risks["risk"] == 1.0).all()


def test_lower_bounds_are_marked_wherever_risks_are_shown(crowd):
    at = ("--catalog", str(crowd))
    shown = json.loads(run("catalog", "show", *at, "--format", "json").stdout)
    assert {row["h"]: row["sampled"] for row in shown} == {1: False, 2: False, 3: True, 4: True}
    table = run("catalog", "show", *at, "--format", "table").stdout
    assert table.count("lower bound") >= 2 and "exact" in table

    risks = pd.read_csv(io.StringIO(run("catalog", "risks", *at).stdout))
    by_level = risks.groupby("h")["lower_bound"].agg(set).to_dict()
    assert by_level == {1: {False}, 2: {False}, 3: {True}, 4: {True}}

    best = json.loads(run("catalog", "best", *at, "--format", "json").stdout)
    assert best[0]["lower_bound"] is True
    assert "lower bound" in run("catalog", "best", *at, "--format", "table").stdout
    exact = json.loads(run("catalog", "best", *at, "--format", "json", "--where", "h=2").stdout)
    assert exact[0]["lower_bound"] is False

    check = run("check", *at, "--format", "json")
    assert json.loads(check.stdout)["lower_bound"] is True

    report = run("report", *at, "--out", "crowd.html", "--quiet")
    assert report.exit_code == 0, report.stderr
    page = Path("crowd.html").read_text(encoding="utf-8")
    assert "Lower bounds:" in page and "location_sequence[h=3], location_sequence[h=4]" in page
    assert "lower bound (sampled)" in page
