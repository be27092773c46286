"""The release policy of a config: the default of sanitize, check, best and report,
overridden option by option, validated with the config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prudence_cli.cli import main
from prudence_cli.config.policy import ReleasePolicy

CONFIG = """\
name: s
input: {{path: {path}, columns: {{user: uid, time: datetime, lat: lat, lon: lng}},
        timezone: Europe/Rome}}
select: {{points: trip_ends}}
dataview: {{format: presence, dimensions: {{grid: [2km, 4km]}}}}
attacks: [{{attack: presence, knowledge: {{h: [1, 2], visits: [half, exact]}}}}]
{policy}
output: catalog/s
"""
POLICY = "policy: {max_risk: 0.5, where: {visits: half}}"


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def folder(tmp_path, sample_gps_150, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(CONFIG.format(path=sample_gps_150, policy=POLICY))
    assert run("assess", "s.yaml", "--quiet").exit_code == 0
    return tmp_path


def test_sanitize_applies_the_recorded_policy(folder):
    manifest = json.loads((folder / "catalog/s/catalog.json").read_text())
    assert manifest["policy"]["where"] == ["visits=half"]
    result = run("sanitize", "--threshold", "0.5")  # exactly as a user types it
    assert result.exit_code == 0, result.stderr
    assert "Policy (the config's policy, overridden by options)" in result.stderr
    report = json.loads((folder / "release/report.json").read_text())
    assert report["levels_counted"] == ["presence[h=1,visits=half]", "presence[h=2,visits=half]"]
    assert report["threshold"] == 0.5
    # the same without any option: the policy's own max_risk
    again = run("sanitize", "--out", "again")
    assert again.exit_code == 0, again.stderr
    assert json.loads((folder / "again/report.json").read_text())["threshold"] == 0.5
    # --max-risk is the same option as --threshold
    same = run("sanitize", "--max-risk", "0.5", "--out", "same", "-q")
    assert same.exit_code == 0
    assert (
        json.loads((folder / "same/report.json").read_text())["levels_counted"]
        == (report["levels_counted"])
    )


def test_check_applies_the_policy_and_options_override_it_key_by_key(folder):
    result = run("check", "--format", "json")
    payload = json.loads(result.stdout)
    assert payload["policy"]["max_risk"] == 0.5 and payload["policy"]["where"] == ["visits=half"]
    assert payload["checked"] == 4  # 2 dataviews × 2 counted levels (visits=half)
    assert result.exit_code == (0 if payload["ok"] else 1)
    # a --where on another key adds to the policy's; on the same key replaces it
    narrowed = json.loads(run("check", "--where", "grid=4km", "--format", "json").stdout)
    assert narrowed["checked"] == 2
    exact = json.loads(run("check", "--where", "visits=exact", "--format", "json").stdout)
    assert exact["policy"]["where"] == ["visits=exact"] and exact["checked"] == 4
    # --threshold is the same option as --max-risk
    loose = run("check", "--threshold", "1", "--format", "json")
    assert loose.exit_code == 0 and json.loads(loose.stdout)["policy"]["max_risk"] == 1


def test_best_and_report_default_to_the_policy(folder):
    rows = json.loads(run("catalog", "best", "--format", "json").stdout)
    explicit = json.loads(
        run(
            "catalog", "best", "--max-risk", "0.5", "--where", "visits=half", "--format", "json"
        ).stdout
    )
    assert rows == explicit
    assert run("report", "--out", "r.html").exit_code == 0


def test_without_a_policy_the_risk_must_be_given(tmp_path, sample_gps_150, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(CONFIG.format(path=sample_gps_150, policy=""))
    assert run("assess", "s.yaml", "--quiet").exit_code == 0
    for command in (["check"], ["sanitize"], ["catalog", "best"]):
        result = run(*command)
        assert result.exit_code == 2, command
        assert "no tolerated risk: give --max-risk R" in result.stderr
    assert run("report", "--out", "r.html").exit_code == 0  # the chart's default R


@pytest.mark.parametrize(
    ("policy", "key", "message"),
    [
        ("{max_risk: 0}", "policy.max_risk", "must be in (0, 1]"),
        ("{max_risk: 0.3, min_coverage: 2}", "policy.min_coverage", "must be in [0, 1]"),
        ("{attacks: [visit]}", "policy.attacks[0]", "'visit' is not assessed"),
        ("{where: {colour: red}}", "policy.where.colour", "not a dimension or knowledge key"),
        ("{where: {visits: none}}", "policy", "counts none of the configured attack levels"),
        ("{max_risk: 0.3, speed: 1}", "policy.speed", "unknown key"),
        ("{where: {grid: 100m}}", "policy.where.grid", "not one of the configured values"),
        ("{where: {grid: fast}}", "policy.where.grid", "is not a size"),
    ],
)
def test_an_impossible_policy_is_a_config_error(
    tmp_path, sample_gps_150, monkeypatch, policy, key, message
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(CONFIG.format(path=sample_gps_150, policy=f"policy: {policy}"))
    result = run("validate", "s.yaml")
    assert result.exit_code == 2
    assert key in result.stderr and message in result.stderr


def test_a_configured_dimension_value_is_accepted_as_written_or_in_other_units(
    tmp_path, sample_gps_150, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    policy = "policy: {max_risk: 0.5, where: {grid: 4000m, visits: half}}"
    (tmp_path / "s.yaml").write_text(CONFIG.format(path=sample_gps_150, policy=policy))
    assert run("validate", "s.yaml").exit_code == 0


def test_override_keeps_the_filters_on_other_keys():
    policy = ReleasePolicy(0.3, ("presence",), ("visits=half", "h=2"), 0.8)
    assert policy.override(where=["h=1", "h=3"]).where == ("visits=half", "h=1", "h=3")
    assert policy.override(0.5).max_risk == 0.5
    assert policy.override(attacks=["unique_location"]).attacks == ("unique_location",)
    assert ReleasePolicy.from_json(policy.to_json()) == policy


def test_sanitize_refuses_a_release_below_the_policy_coverage(
    tmp_path, sample_gps_150, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    policy = "policy: {max_risk: 0.5, where: {visits: half}, min_coverage: 0.999}"
    (tmp_path / "s.yaml").write_text(CONFIG.format(path=sample_gps_150, policy=policy))
    assert run("assess", "s.yaml", "--quiet").exit_code == 0
    result = run("sanitize", "--dataview", "d2")
    assert result.exit_code == 1
    assert "below the policy's min_coverage 99.9%" in result.stderr  # as given, not 100%
    assert not (tmp_path / "release").exists()


def test_synonyms_given_with_different_values_are_an_error(folder):
    for command in (["check"], ["sanitize"], ["catalog", "best"], ["report", "--out", "r.html"]):
        result = run(*command, "--threshold", "0.3", "--max-risk", "0.9")
        assert result.exit_code == 2, command
        assert "given with different values (0.3, 0.9)" in result.stderr
    same = run("check", "--threshold", "0.5", "--max-risk", "0.5", "--format", "json")
    assert json.loads(same.stdout)["policy"]["max_risk"] == 0.5
