"""What a certificate promises: `catalog best` promises exactly what `sanitize` releases,
and every release and check names the assessed attackers it does not cover."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.catalog import open_catalog
from prudence_cli.cli import main
from prudence_cli.dataviews.restore import parse_dimensions, view_from_table
from prudence_cli.engine import Engine
from tests.sanitize.test_sanitize import CONFIG, PRESENCE_ATTACKS

# a frequency threshold makes the presence attack with unknown visit counts weak: every
# candidate of a place visited often enough holds it; unique_location, with the same
# knowledge (places, no counts), is not weakened by it
WEAK = (
    "[{attack: presence, knowledge: {h: [2], visits: [none]}},"
    " {attack: unique_location, knowledge: {h: [2]}}]"
)


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def assess(tmp_path: Path, data: Path, attacks: str, extra: str = "") -> Path:
    (tmp_path / "s.yaml").write_text(
        CONFIG.format(path=data, format="presence", extra=extra, attacks=attacks)
    )
    assert run("assess", "s.yaml", "--quiet").exit_code == 0
    return tmp_path / "catalog" / "s"


@pytest.fixture
def catalog_dir(tmp_path, sample_gps_150, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return assess(tmp_path, sample_gps_150, PRESENCE_ATTACKS, ", frequency: [1, 3]")


@pytest.mark.parametrize("threshold", [0.25, 0.5])
def test_best_promises_what_sanitize_releases(catalog_dir, threshold):
    best = json.loads(
        run("catalog", "best", "--max-risk", str(threshold), "--format", "json").stdout
    )
    assert len(best) == 4
    for row in best:
        out = f"rel-{row['dataview']}-{threshold}"
        result = run(
            "sanitize", "--threshold", str(threshold), "--dataview", row["dataview"], "--out", out
        )
        if row["users_released"] == 0:
            assert result.exit_code == 1 and not Path(out).exists()
            continue
        assert result.exit_code == 0, result.stderr
        report = json.loads((Path(out) / "report.json").read_text())
        assert report["users"]["released"] == row["users_released"]
        data = report["data"]
        assert data["released"] / data["before"] == pytest.approx(row["released"], abs=1e-12)
        assert row["released"] <= row["kept"] + 1e-12
        assert len(report["iterations"]) == row["passes"]


def test_sanitize_chooses_the_dataview_best_ranks_first(catalog_dir):
    best = json.loads(run("catalog", "best", "--max-risk", "0.5", "--format", "json").stdout)
    top = next(r for r in best if r["users_released"] > 0)
    result = run("sanitize", "--threshold", "0.5", "--out", "rel")
    assert result.exit_code == 0, result.stderr
    report = json.loads(Path("rel/report.json").read_text())
    assert report["dataview"]["id"] == top["dataview"]
    assert report["users"]["released"] == top["users_released"]


def test_no_release_names_the_alternatives(catalog_dir):
    result = run("sanitize", "--threshold", "0.02", "--out", "rel")
    assert result.exit_code == 1
    assert "none of the 4 dataviews keeps anyone" in result.stderr
    assert "--method suppress-locations keeps" in result.stderr
    assert "coarser dataview" in result.stderr
    assert not Path("rel").exists()
    best = run("catalog", "best", "--max-risk", "0.02", "--format", "json")
    assert all(r["users_released"] == 0 for r in json.loads(best.stdout))
    assert "prudence sanitize would release nothing" in best.stderr


def released_risk(release: Path, catalog_dir: Path, attack: str, h: int) -> np.ndarray:
    """The attack at h on the released files alone, counted from scratch."""
    catalog = open_catalog(catalog_dir)
    report = json.loads((release / "report.json").read_text())
    entry = catalog.dataview_entry(report["dataview"]["id"])
    table = pd.read_csv(release / "dataview.csv", dtype={"user": str, "location": str})
    locations = pd.read_csv(release / "locations.csv", dtype={"label": str})
    users = np.array(sorted(set(table["user"])), dtype=object)
    dims = parse_dimensions(entry.format, entry.dimensions)
    view = view_from_table("r", entry.format, dims, users, table, locations)
    level = KnowledgeLevel(attack, (("h", h),))
    return ATTACKS[attack].risks(view, level, Engine()).risk


def test_a_weak_counted_level_never_stands_alone_unseen(tmp_path, sample_gps_150, monkeypatch):
    monkeypatch.chdir(tmp_path)
    catalog_dir = assess(tmp_path, sample_gps_150, WEAK, ", frequency: [3]")
    args = ["--attack", "presence", "--where", "visits=none", "--dataview", "d1"]
    result = run("sanitize", "--threshold", "0.3", *args, "--out", "rel")
    assert result.exit_code == 0, result.stderr
    report = json.loads(Path("rel/report.json").read_text())
    levels = {lv["level"]: lv for lv in report["levels_assessed"]}
    assert set(levels) == {"presence[h=2,visits=none]", "unique_location[h=2]"}
    weak, strong = levels["presence[h=2,visits=none]"], levels["unique_location[h=2]"]
    assert weak["counted"] and weak["covered"] and weak["max_risk"] <= 0.3
    assert not strong["counted"] and not strong["covered"]
    # the uncovered level's figures are those of the attack on the released files
    fresh = released_risk(Path("rel"), catalog_dir, "unique_location", 2)
    fresh = fresh[fresh > 0]  # the released people
    assert strong["users_above"] == int(np.count_nonzero(fresh > 0.3)) > 0
    assert strong["max_risk"] == pytest.approx(fresh.max())
    assert strong["mean_risk"] == pytest.approx(fresh.mean())
    assert "Warning: not covered by this release: unique_location[h=2]" in result.stderr
    # and the weak counted level is said to be blind on this dataview, by definition
    assert len(report["notes"]) == 1
    note = report["notes"][0]
    assert note.startswith("presence[h=2,visits=none] cannot single anyone out on d1")
    assert "frequency threshold 3" in note and "unique_location" in note
    assert "Note: presence[h=2,visits=none] cannot single anyone out" in result.stderr
    markdown = Path("rel/report.md").read_text()
    assert "Not covered by this release: `unique_location[h=2]`" in markdown
    assert "| `unique_location[h=2]` | no |" in markdown

    check = run("check", "--max-risk", "0.3", "--attack", "presence", "--where", "visits=none")
    assert check.exit_code == 0, check.stdout
    assert "unique_location[h=2]" in check.stderr and "not counted" in check.stderr
    payload = json.loads(
        run(
            "check",
            "--max-risk",
            "0.3",
            "--attack",
            "presence",
            "--format",
            "json",
        ).stdout
    )
    assert payload["ok"] and payload["checked"] == 2  # 2 grids × 1 counted level
    # the report's verdict names it too
    args = ["--max-risk", "0.3", "--attack", "presence", "--where", "visits=none"]
    assert run("report", *args, "--out", "r.html").exit_code == 0
    verdict = Path("r.html").read_text().partition('id="verdict"')[2].partition("</section>")[0]
    listed = verdict.partition("Not covered by this release")[2].partition("</ul>")[0]
    assert "<code>unique_location[h=2]</code>" in listed
    assert {w["attack"] for w in payload["not_covered"]} == {"unique_location"}
