"""One command line (issue 16): --format takes the same words wherever a command prints
data, the commands that write files print a JSON summary on request, results go to
stdout and messages to stderr, -q/--quiet wherever there are messages, and JSON types
agree across commands."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd
import pytest

from prudence_cli.cli import main
from prudence_cli.cli.pipes import to_json
from tests.assessed import run
from tests.randomized.test_randomize import profiles_catalog
from tests.test_docs import commands

__all__ = ["profiles_catalog"]  # fixture

POLICY = ("--max-risk", "0.5")


def _format(command: click.Command) -> click.Option | None:
    return next((p for p in command.params if "--format" in getattr(p, "opts", [])), None)


@pytest.mark.parametrize(("path", "command"), commands(main), ids=lambda x: str(x))
def test_format_takes_the_same_words_everywhere(path, command):
    option = _format(command)
    if option is None or path == "prudence sample":  # sample: the kind of data to make
        return
    assert isinstance(option.type, click.Choice)
    words = set(option.type.choices)
    assert words in (
        {"table", "csv", "json"},
        {"chart", "csv", "json"},
        {"csv", "json"},  # catalog risks: millions of rows, never a table
        {"table", "json"},  # check: a verdict and two lists, which no one CSV holds
        {"json"},  # the commands that write files: their summary
        {"html", "png"},  # report: the file it writes
    ), path


QUIET = {
    "prudence assess",
    "prudence validate",
    "prudence check",
    "prudence report",
    "prudence evaluate",
    "prudence sanitize",
    "prudence sample",
    "prudence catalog best",
    "prudence catalog releases",
}


@pytest.mark.parametrize("path", sorted(QUIET))
def test_every_command_with_messages_takes_quiet(path):
    command = dict(commands(main))[path]
    quiet = next(p for p in command.params if p.name == "quiet")
    assert set(quiet.opts) == {"--quiet", "-q"}


def test_check_prints_failures_as_table_lines_and_takes_the_old_word(catalog):
    table = run("check", *POLICY)
    old = run("check", *POLICY, "--format", "text")
    assert table.exit_code == old.exit_code == 1
    assert table.stdout == old.stdout
    assert table.stdout.startswith("FAIL d1 grid=500m frequency=1 presence[h=1,visits=exact]: ")
    assert "Policy (options): max risk 0.5; counting every level." in table.stderr
    assert "dataview × counted attack levels hold the policy" in table.stderr
    quiet = run("check", *POLICY, "-q")
    assert quiet.stdout == table.stdout  # results stay
    assert quiet.stderr == ""  # messages go
    help_text = run("check", "--help").stdout
    assert "[table|json]" in help_text and "text" not in help_text.split("--format")[1][:30]


def test_check_json_types_knowledge_values_as_numbers(catalog):
    result = run("check", *POLICY, "--format", "json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    first = payload["failures"][0]
    assert (first["frequency"], first["h"], first["visits"]) == (1, 1, "exact")
    assert first["grid"] == "500m"
    shown = json.loads(run("catalog", "show", "--format", "json").stdout)
    assert {type(row["h"]) for row in shown} == {type(first["h"])} == {int}
    best = json.loads(run("catalog", "best", *POLICY, "--format", "json").stdout)
    assert {type(row["frequency"]) for row in best} == {int}


def test_json_numbers_written_as_text_become_numbers():
    frame = pd.DataFrame(
        {"h": ["2", "all"], "delta": ["0.1", "1e-3"], "grid": ["500m", "1km"], "id": ["7", "8"]}
    )
    assert json.loads(to_json(frame, ["h", "delta", "grid"])) == [
        {"h": 2, "delta": 0.1, "grid": "500m", "id": "7"},
        {"h": "all", "delta": 0.001, "grid": "1km", "id": "8"},
    ]


def test_validate_json_lists_the_checked_files(project):
    result = run("validate", "demo.yaml", "--format", "json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["valid"] is True
    assert (payload["dataviews"], payload["attack_levels"]) == (4, 4)
    assert [f["role"] for f in payload["files"]] == ["input"]
    assert payload["files"][0]["path"].endswith("gps.csv")
    assert "valid —" not in result.stderr  # the summary is the JSON
    words = run("validate", "demo.yaml")
    assert words.stdout == ""
    assert "demo.yaml: valid — 4 dataviews × 4 attack levels" in words.stderr
    quiet = run("validate", "demo.yaml", "-q")
    assert quiet.exit_code == 0 and quiet.output == ""


def test_sanitize_prints_its_summary_as_words_on_stderr_or_json_on_stdout(catalog):
    d4 = ("--threshold", "0.5", "--dataview", "d4", "--method", "suppress-locations")
    words = run("sanitize", *d4, "--out", "a")
    assert words.exit_code == 0, words.stderr
    assert words.stdout == ""  # the release is a folder; the line about it a message
    assert "Release r001 written to a: " in words.stderr
    assert "Dataview d4: chosen with --dataview." in words.stderr
    result = run("sanitize", *d4, "--out", "b", "-q")
    assert "Release" not in result.stderr and "pass 1" not in result.stderr
    kept = ("Warning: ", "Note: ")  # what the release does not cover, and weak levels
    assert all(line.startswith(kept) for line in result.stderr.splitlines()), result.stderr
    result = run("sanitize", *d4, "--out", "c", "--format", "json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    report = json.loads(Path("c/report.json").read_text())
    assert summary["met"] is True
    assert (summary["release"], summary["folder"]) == ("r003", "c")
    assert summary["dataview"]["id"] == report["dataview"]["id"]
    assert summary["dataview"]["dimensions"]["frequency"] in (1, 3)  # a number
    assert summary["people"] == report["users"]
    assert summary["data"]["released"] == report["data"]["released"]
    assert summary["max_risk"] == report["max_risk_after"] <= 0.5
    assert summary["levels_counted"] == report["levels_counted"]
    assert summary["not_covered"] == [
        level for level in report["levels_assessed"] if not level["covered"]
    ]
    assert summary["notes"] == report.get("notes", [])
    assert summary["files"] == report["files"]
    assert "Release r003 written" not in result.stderr


def test_sanitize_json_says_why_nothing_was_released(catalog):
    result = run("sanitize", "--threshold", "0.01", "--out", "none", "--format", "json")
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert summary["met"] is False and summary["release"] is None
    assert summary["reason"].startswith("none of the 4 dataviews keeps anyone")
    assert "Cannot release: none of the 4 dataviews" in result.stderr
    assert not Path("none").exists()


def test_evaluate_json_has_the_statements_and_figures(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [(t, f"L{(t * 3 + i) % 7}") for t in range(12) for i in range(4)]
    original = pd.DataFrame(rows, columns=["trajectory", "location"])
    original.to_csv("original.csv", index=False)
    original[original["trajectory"] % 3 != 0].to_csv("released.csv", index=False)
    args = ("evaluate", "--original", "original.csv", "--released", "released.csv")
    result = run(*args, "--max-h", "2", "--out", "ev", "--format", "json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["folder"] == "ev"
    assert summary["original"]["trajectories"] == 12
    assert summary["released"]["trajectories"] == 8
    assert set(summary["attacks_per_h"]) == {"1", "2"}
    assert summary["statements"][0].startswith("h = 1, ")
    assert {"coverage", "precision"} <= set(summary["utility"])
    assert result.stderr == ""
    assert summary == {"folder": "ev", **json.loads(Path("ev/evaluation.json").read_text())}
    words = run(*args, "--max-h", "2", "--out", "ev")
    assert words.stdout == "" and "OD coverage" in words.stderr
    assert run(*args, "--max-h", "2", "--out", "ev", "-q").output == ""


def test_a_randomized_release_json_types_knowledge_as_the_catalog_does(profiles_catalog):
    root, catalog = profiles_catalog
    args = ("--catalog", str(catalog))
    release = ("sanitize", *args, "--method", "randomize", "--dataview", "d1", "--epsilon", "4")
    result = run(*release, "--out", str(root / "rel"), "--format", "json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["folder"] == str(root / "rel")
    assert summary["mechanism"]["epsilon"] == 4.0
    shown = json.loads(run("catalog", "show", *args, "--format", "json").stdout)
    # a scenario is a name ("2.2"), M a number, here as in catalog show
    assert {type(a["scenario"]) for a in summary["attacks"]} == {str}
    assert {type(r["scenario"]) for r in shown} == {str}
    linking = [a for a in summary["attacks"] if a["attack"] == "reidentification"]
    assert {type(a["M"]) for a in linking} == {int}
    assert {type(r["M"]) for r in shown if r["attack"] == "reidentification"} == {int}
    assert "Release written" not in result.stderr
