"""prudence sanitize: fixpoint, integrity, ledger combination, release folder, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.catalog import open_catalog
from prudence_cli.cli import main
from prudence_cli.dataviews.restore import parse_dimensions, view_from_table
from prudence_cli.engine import Engine
from prudence_cli.sanitize.ledger import join_views
from prudence_cli.sanitize.suppress import assess_levels, sanitize
from tests.conftest import presence_view

CONFIG = """\
name: s
input: {{path: {path}, columns: {{user: uid, time: datetime, lat: lat, lon: lng}},
        timezone: Europe/Rome}}
select: {{points: trip_ends}}
dataview: {{format: {format}, dimensions: {{grid: [2km, 4km]{extra}}}}}
attacks: {attacks}
output: catalog/s
"""
PRESENCE_ATTACKS = (
    "[{attack: presence, knowledge: {h: [1, 2], visits: [half, none]}},"
    " {attack: unique_location, knowledge: {h: [1, 2]}},"
    " {attack: unique_location_sequence, knowledge: {h: [2]}},"
    " {attack: proportion, knowledge: {h: [2], delta: [0.3]}}]"
)
TRAJECTORY_ATTACKS = (
    "[{attack: location, knowledge: {h: [2]}}, {attack: location_sequence,"
    " knowledge: {h: [2]}}, {attack: visit, knowledge: {h: [1]}}]"
)


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def catalog_dir(tmp_path, sample_gps_150, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(
        CONFIG.format(path=sample_gps_150, format="presence", extra="", attacks=PRESENCE_ATTACKS)
    )
    assert run("assess", "s.yaml", "--quiet").exit_code == 0
    return tmp_path / "catalog" / "s"


def reassess_release(catalog_dir: Path, release: Path) -> dict[str, np.ndarray]:
    """A fresh assessment of the released files alone, at every counted level."""
    catalog = open_catalog(catalog_dir)
    report = json.loads((release / "report.json").read_text())
    entry = catalog.dataview_entry(report["dataview"]["id"])
    table = pd.read_csv(release / "dataview.csv", dtype={"user": str, "location": str})
    locations = pd.read_csv(release / "locations.csv", dtype={"label": str})
    users = np.array(sorted(set(table["user"])), dtype=object)
    dims = parse_dimensions(entry.format, entry.dimensions)
    view = view_from_table("r", entry.format, dims, users, table, locations)
    out = {}
    for key in report["levels_counted"]:
        attack, _, rest = key.partition("[")
        values = [tuple(kv.split("=")) for kv in rest.rstrip("]").split(",") if kv]
        parsed = {
            d.name: d.parse(_yaml(v))
            for d in ATTACKS[attack].knowledge
            for k, v in values
            if k == d.name
        }
        level = KnowledgeLevel(attack, tuple(parsed.items()))
        out[key] = ATTACKS[attack].risks(view, level, Engine()).risk
    return out


def _yaml(text: str):
    import yaml

    return yaml.safe_load(text)


@pytest.mark.parametrize("method", ["suppress-users", "suppress-locations"])
def test_release_meets_the_threshold_on_a_fresh_assessment(catalog_dir, method):
    result = run("sanitize", "--threshold", "0.5", "--method", method, "--out", "rel")
    assert result.exit_code == 0, result.stderr
    assert "its release keeps the most data" in result.stderr
    release = catalog_dir.parent.parent / "rel"
    report = json.loads((release / "report.json").read_text())
    assert report["met"] and report["max_risk_after"] <= 0.5
    assert len(report["levels_counted"]) == 8
    for key, risk in reassess_release(catalog_dir, release).items():
        assert risk.max() <= 0.5, key
    assert (release / "report.md").read_text().startswith(f"# Release {report['release']}")
    i_rac = report["i_rac"]
    assert i_rac["after"]["mean_risk"] <= 0.5
    assert report["data"]["released"] <= report["data"]["before"]


def test_trajectory_release(tmp_path, sample_gps_150, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(
        CONFIG.format(
            path=sample_gps_150,
            format="trajectory",
            extra=", time: [1d]",
            attacks=TRAJECTORY_ATTACKS,
        )
    )
    assert run("assess", "s.yaml", "--quiet").exit_code == 0
    result = run("sanitize", "--threshold", "0.34", "--dataview", "d2", "--out", "rel")
    assert result.exit_code == 0, result.stderr
    for key, risk in reassess_release(tmp_path / "catalog" / "s", tmp_path / "rel").items():
        assert risk.max() <= 0.34, key
    # what the release still tells an analyst: the trip measures too, and the same KS as
    # catalog best --utility ks:MEASURE promised for this release
    report = json.loads((tmp_path / "rel" / "report.json").read_text())
    mobility = {m["measure"]: m for m in report["mobility"]}
    assert {"max_distance", "sum_distances", "flow"} <= mobility.keys()
    assert mobility["visits"]["count_released"] == report["users"]["released"]
    assert mobility["visits"]["count_before"] == report["users"]["in_view"]
    best = json.loads(
        run(
            "catalog",
            "best",
            "--threshold",
            "0.34",
            "--utility",
            "ks:sum_distances",
            "--format",
            "json",
        ).stdout
    )
    promised = next(r for r in best if r["dataview"] == "d2")["ks:sum_distances"]
    assert mobility["sum_distances"]["ks"] == pytest.approx(promised)
    assert (
        "## What the release still tells an analyst" in (tmp_path / "rel" / "report.md").read_text()
    )


def test_suppress_locations_keeps_at_least_as_much_data(catalog_dir):
    by_users = run("sanitize", "--threshold", "0.5", "--dataview", "d2", "--out", "a")
    by_locations = run(
        "sanitize",
        "--threshold",
        "0.5",
        "--dataview",
        "d2",
        "--out",
        "b",
        "--method",
        "suppress-locations",
    )
    assert by_users.exit_code == by_locations.exit_code == 0
    root = catalog_dir.parent.parent
    a = json.loads((root / "a" / "report.json").read_text())
    b = json.loads((root / "b" / "report.json").read_text())
    assert b["users"]["released"] >= a["users"]["released"]


# --- integrity ------------------------------------------------------------------------------

LEVELS = [
    (ATTACKS["presence"], KnowledgeLevel("presence", (("h", 2), ("visits", "exact")))),
    (ATTACKS["unique_location"], KnowledgeLevel("unique_location", (("h", 1),))),
]


@st.composite
def random_views(draw):
    n = draw(st.integers(2, 12))
    data = {
        u: draw(st.dictionaries(st.integers(0, 5), st.integers(1, 5), min_size=0, max_size=4))
        for u in range(n)
    }
    return data, list(range(n))


@settings(max_examples=40, deadline=None)
@given(
    random_views(),
    st.sampled_from([0.2, 0.34, 0.5, 1.0]),
    st.sampled_from(["suppress-users", "suppress-locations"]),
)
def test_integrity_and_fixpoint_on_random_data(case, threshold, method):
    data, users = case
    view = presence_view(data, users)
    outcome = sanitize(view, LEVELS, Engine(), threshold, method)
    before = {(u, loc): c for u, loc, c in zip(view.user, view.location, view.count, strict=True)}
    after = {
        (u, loc): c
        for u, loc, c in zip(
            outcome.view.user, outcome.view.location, outcome.view.count, strict=True
        )
    }
    kept_users = {u for u, _ in after}
    # every released record is an original record, unchanged
    assert all(before[key] == c for key, c in after.items())
    if method == "suppress-users":
        # every record of every kept user is released, none of a removed user
        assert after == {k: c for k, c in before.items() if k[0] in kept_users}
    # the fixpoint: a fresh assessment of what is released finds nobody above the threshold
    risk, _, _ = assess_levels(outcome.view, LEVELS, Engine())
    assert risk.max(initial=0) <= threshold
    assert np.array_equal(risk, outcome.risk)


# --- the ledger -----------------------------------------------------------------------------

# Each view alone hides everyone among two people; together, h = 2 singles everyone out.
VIEW_1 = {"a": {"X": 3}, "b": {"X": 3}, "c": {"Y": 3}, "d": {"Y": 3}}
VIEW_2 = {"a": {"P": 3}, "b": {"Q": 3}, "c": {"P": 3}, "d": {"Q": 3}}
PEOPLE = ["a", "b", "c", "d"]


def test_two_releases_together_are_assessed_as_one():
    first = presence_view(VIEW_1, PEOPLE, view_id="r001")
    second = presence_view(VIEW_2, PEOPLE, view_id="d2")
    h2 = [(ATTACKS["unique_location"], KnowledgeLevel("unique_location", (("h", 2),)))]
    alone, _, _ = assess_levels(second, h2, Engine())
    assert alone.tolist() == [0.5] * 4
    together, _, _ = assess_levels(second, h2, Engine(), lambda v: join_views(v, [first]))
    assert together.tolist() == [1.0] * 4
    outcome = sanitize(
        second, h2, Engine(), 0.5, "suppress-users", lambda v: join_views(v, [first])
    )
    assert outcome.view.user.size == 0  # nobody can be added for this recipient


def test_ledger_through_the_cli(catalog_dir):
    first = run(
        "sanitize", "--threshold", "0.5", "--dataview", "d1", "--recipient", "acme", "--out", "r1"
    )
    assert first.exit_code == 0, first.stderr
    second = run(
        "sanitize", "--threshold", "0.5", "--dataview", "d2", "--recipient", "acme", "--out", "r2"
    )
    assert second.exit_code in (0, 1), second.stderr
    other = run(
        "sanitize", "--threshold", "0.5", "--dataview", "d2", "--recipient", "zeta", "--out", "r3"
    )
    assert other.exit_code == 0
    root = catalog_dir.parent.parent
    if second.exit_code == 0:
        report = json.loads((root / "r2" / "report.json").read_text())
        assert report["combined_with"] == ["r001"]
    assert json.loads((root / "r3" / "report.json").read_text())["combined_with"] == []
    listing = json.loads(run("catalog", "releases", "--format", "json").stdout)
    assert [r["recipient"] for r in listing][0] == "acme"
    assert {r["recipient"] for r in listing} == {"acme", "zeta"}


def test_pseudonyms_are_seeded_and_the_mapping_stays_in_the_catalog(catalog_dir):
    result = run(
        "sanitize", "--threshold", "0.5", "--dataview", "d1", "--pseudonymize", "--out", "p"
    )
    assert result.exit_code == 0
    root = catalog_dir.parent.parent
    table = pd.read_csv(root / "p" / "dataview.csv", dtype={"user": str})
    assert table["user"].str.match(r"^p\d+$").all()
    mapping = pd.read_csv(catalog_dir / "ledger" / "r001" / "mapping.csv", dtype=str)
    assert set(mapping["pseudonym"]) == set(table["user"])
    assert not (root / "p" / "mapping.csv").exists()
    original = pd.read_csv(catalog_dir / "ledger" / "r001" / "dataview.csv.gz", dtype={"user": str})
    assert len(original) == len(table)


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--threshold", "0"), "must be in (0, 1]"),
        (("--threshold", "1.5"), "must be in (0, 1]"),
        (("--threshold", "0.3", "--dataview", "d9"), "no dataview 'd9'"),
        (("--threshold", "0.3", "--attack", "telepathy"), "not assessed in this catalog"),
        (("--threshold", "0.3", "--where", "h=7"), "no assessed attack level is left"),
    ],
)
def test_usage_errors_exit_2_and_write_nothing(catalog_dir, args, message):
    result = run("sanitize", *args, "--out", "rel")
    assert result.exit_code == 2
    assert message in result.stderr
    assert not (catalog_dir.parent.parent / "rel").exists()
    assert not (catalog_dir / "ledger").exists()


def test_catalog_of_another_version_or_without_risks(catalog_dir):
    manifest = json.loads((catalog_dir / "catalog.json").read_text())
    (catalog_dir / "risks" / "d1.parquet").unlink()
    result = run("sanitize", "--threshold", "0.3", "--dataview", "d1")
    assert result.exit_code == 2 and "has no risks file" in result.stderr
    manifest["format_version"] = 99
    (catalog_dir / "catalog.json").write_text(json.dumps(manifest))
    result = run("sanitize", "--threshold", "0.3")
    assert result.exit_code == 2 and "catalog format version 99" in result.stderr


@pytest.mark.parametrize("dataview", [("--dataview", "d1"), ()])
def test_exit_1_when_nobody_can_be_released(catalog_dir, dataview):
    result = run("sanitize", "--threshold", "0.001", *dataview, "--out", "rel")
    assert result.exit_code == 1
    assert "Cannot release" in result.stderr and "nothing was written" in result.stderr
    assert not (catalog_dir.parent.parent / "rel").exists()
    assert not (catalog_dir / "ledger").exists()


def test_release_folder_is_atomic_and_never_overwrites_foreign_folders(catalog_dir, monkeypatch):
    root = catalog_dir.parent.parent
    (root / "mine").mkdir()
    (root / "mine" / "notes.txt").write_text("keep")
    result = run("sanitize", "--threshold", "0.5", "--out", "mine")
    assert result.exit_code == 2 and "is not a folder this command wrote" in result.stderr
    assert (root / "mine" / "notes.txt").read_text() == "keep"
    assert json.loads(run("catalog", "releases", "--format", "json").stdout) == []

    import prudence_cli.sanitize.release as release

    def broken(report):
        raise OSError("disk full")

    monkeypatch.setattr(release, "render_markdown", broken)
    failed = run("sanitize", "--threshold", "0.5", "--out", "rel")
    assert failed.exit_code == 2 and "disk full" in failed.stderr  # an OSError: exit 2
    assert not (root / "rel").exists()
    assert json.loads(run("catalog", "releases", "--format", "json").stdout) == []
