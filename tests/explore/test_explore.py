"""Exploring the catalog: planes, curves, best dataviews with their Pareto front, and the
CI policy check — through the CLI on a small assessed catalog."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from prudence_cli.cli import main
from prudence_cli.explore.scores import _dominated, natural_order

CONFIG = """\
name: x
input: {{path: {path}, columns: {{user: uid, time: datetime, lat: lat, lon: lng}},
        timezone: Europe/Rome}}
select: {{points: trip_ends}}
dataview: {{format: presence, dimensions: {{grid: [1km, 2km], frequency: [1, 2, 3]}}}}
attacks:
  - {{attack: presence, knowledge: {{h: [1, 2], visits: [half, none]}}}}
  - {{attack: unique_location, knowledge: {{h: [1]}}}}
"""


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory, sample_gps_150):
    folder = tmp_path_factory.mktemp("explore")
    (folder / "x.yaml").write_text(CONFIG.format(path=sample_gps_150))
    result = run("assess", str(folder / "x.yaml"), "--quiet", "--out", str(folder / "cat"))
    assert result.exit_code == 0, result.output
    return folder / "cat"


def test_plane_as_table_csv_and_json(catalog):
    args = (
        "catalog",
        "show",
        "--catalog",
        str(catalog),
        "--plane",
        "grid,frequency",
        "--attack",
        "presence",
        "--where",
        "h=2",
        "--where",
        "visits=half",
    )
    table = run(*args, "--format", "table").stdout
    assert "i-RAC_U: grid × frequency" in table and "i-RAC_D" in table
    frame = pd.read_csv(io.StringIO(run(*args, "--format", "csv").stdout))
    assert list(frame.columns) == ["grid", "frequency", "i_rac_u", "i_rac_d"]
    assert len(frame) == 6 and frame["i_rac_u"].between(0, 1).all()
    irac = pd.read_csv(catalog / "irac.csv", dtype=str)
    one = irac[
        (irac.grid == "1000m")
        & (irac.frequency == "2")
        & (irac.attack == "presence")
        & (irac.h == "2")
        & (irac.visits == "half")
    ]
    mine = frame[(frame.grid == "1000m") & (frame.frequency == 2)]
    assert mine["i_rac_u"].item() == pytest.approx(float(one["i_rac_u"].item()))
    rows = json.loads(run(*args, "--format", "json").stdout)
    assert {r["frequency"] for r in rows} == {1, 2, 3}


def test_plane_asks_to_fix_the_other_columns(catalog):
    result = run("catalog", "show", "--catalog", str(catalog), "--plane", "grid,frequency")
    assert result.exit_code == 2
    assert "fix attack (presence, unique_location)" in result.stderr
    assert "h (1, 2)" in result.stderr
    result = run("catalog", "show", "--catalog", str(catalog), "--plane", "grid")
    assert result.exit_code == 2 and "give two columns" in result.stderr


def test_curve_chart_and_csv(catalog):
    args = (
        "catalog",
        "curve",
        "--catalog",
        str(catalog),
        "--dataview",
        "d2",
        "--attack",
        "presence",
        "--where",
        "h=1",
        "--where",
        "visits=half",
    )
    chart = run(*args, "--format", "chart").stdout
    assert "RAC_U" in chart and "RAC_D" in chart and "\x1b[" not in chart
    assert "i-RAC_U =" in chart
    frame = pd.read_csv(io.StringIO(run(*args, "--format", "csv").stdout))
    assert list(frame.columns) == ["risk", "rac_u", "rac_d"]
    assert frame["risk"].iloc[0] == 0 and frame["risk"].iloc[-1] == 1
    ambiguous = run("catalog", "curve", "--catalog", str(catalog), "--dataview", "d2")
    assert ambiguous.exit_code == 2 and "rows of d2 match" in ambiguous.stderr


def test_best_ranks_by_data_released_and_marks_the_pareto_front(catalog):
    result = run(
        "catalog",
        "best",
        "--catalog",
        str(catalog),
        "--max-risk",
        "0.5",
        "--format",
        "json",
        "--min-coverage",
        "0.2",
    )
    rows = json.loads(result.stdout)
    assert len(rows) == 6
    released = [r["released"] for r in rows]
    assert released == sorted(released, reverse=True)
    front = [r for r in rows if r["pareto"] == "front"]
    assert front
    for r in rows:  # nobody on the front is dominated by anyone
        assert r["released"] <= r["kept"] + 1e-12  # suppression only removes
        assert (r["pareto"] == "nobody released") == (r["users_released"] == 0)
        if r["pareto"] == "front":
            assert not any(
                o["mean_risk"] <= r["mean_risk"]
                and o["released"] >= r["released"]
                and (o["mean_risk"] < r["mean_risk"] or o["released"] > r["released"])
                for o in rows
                if o["users_released"] > 0
            )
        assert r["meets_min_coverage"] == (r["released"] >= 0.2)
    assert (
        "Pareto"
        in run(
            "catalog", "best", "--catalog", str(catalog), "--max-risk", "0.5", "--format", "table"
        ).stdout
    )
    bad = run("catalog", "best", "--catalog", str(catalog), "--max-risk", "0")
    assert bad.exit_code == 2 and "must be in (0, 1]" in bad.stderr


def test_dominance_by_hand():
    risk = pd.Series([0.1, 0.2, 0.1, 0.5])
    kept = pd.Series([0.5, 0.9, 0.4, 0.9])
    # 0: nobody is ≤ 0.1 risk with more kept except... 2 is worse; 1 has more kept but more
    # risk; so 0 and 1 are on the front; 2 is dominated by 0; 3 is dominated by 1
    everyone = np.ones(4, dtype=bool)
    assert _dominated(risk, kept, everyone).tolist() == [False, False, True, True]
    # only releasable dataviews dominate: without 0 and 1, nothing dominates 2 and 3
    assert _dominated(risk, kept, ~everyone).tolist() == [False, False, False, False]


def test_natural_order_sorts_sizes_numerically():
    assert natural_order(pd.Series(["750m", "1000m", "250m"])) == ["250m", "750m", "1000m"]


def test_check_passes_and_fails_with_exit_codes(catalog):
    ok = run("check", "--catalog", str(catalog), "--max-risk", "1")
    assert ok.exit_code == 0 and "30 of 30" in ok.stderr  # 6 dataviews × 5 levels
    fail = run("check", "--catalog", str(catalog), "--max-risk", "0.2", "--where", "h=2")
    assert fail.exit_code == 1
    assert fail.stdout.startswith("FAIL d")
    assert "people above risk 0.2" in fail.stdout
    report = json.loads(
        run(
            "check",
            "--catalog",
            str(catalog),
            "--max-risk",
            "0.2",
            "--where",
            "h=2",
            "--format",
            "json",
        ).stdout
    )
    assert report["ok"] is False and report["failed"] == len(report["failures"]) > 0
    assert report["checked"] == 12  # 6 dataviews × 2 levels at h=2
    coverage = run(
        "check",
        "--catalog",
        str(catalog),
        "--max-risk",
        "0.5",
        "--min-coverage",
        "0.0",
        "--attack",
        "unique_location",
    )
    assert coverage.exit_code == 0
    floor = run("check", "--catalog", str(catalog), "--max-risk", "1", "--min-irac-u", "0.99")
    assert floor.exit_code == 1 and "i-RAC_U" in floor.stdout
    assert run("check", "--catalog", str(catalog), "--max-risk", "2").exit_code == 2


def test_check_agrees_with_the_per_user_risks(catalog):
    result = json.loads(
        run(
            "check",
            "--catalog",
            str(catalog),
            "--max-risk",
            "0.3",
            "--attack",
            "unique_location",
            "--format",
            "json",
        ).stdout
    )
    risks = pd.read_parquet(catalog / "risks" / "d1.parquet")
    above = int(np.count_nonzero(risks["unique_location[h=1]"] > 0.3))
    d1 = [f for f in result["failures"] if f["dataview"] == "d1"]
    assert bool(d1) == (above > 0)


def test_best_by_a_measure_distortion(catalog):
    """--utility ks:visits ranks by how far a release at R moves the distribution of
    visits per person: checked against scipy on the release sanitize would make."""
    import warnings

    from scipy import stats

    from prudence_cli.catalog import open_catalog
    from prudence_cli.catalog.query import counted_levels
    from prudence_cli.explore.scores import dataview_scores
    from prudence_cli.sanitize.forecast import suppress_dataview

    opened = open_catalog(catalog)
    levels = counted_levels(opened, ("presence",), ("visits=half",))
    scores = dataview_scores(opened, levels, 0.5, (), "mean_risk", "ks:visits").table
    released = scores[scores["users_released"] > 0]
    assert released["ks:visits"].is_monotonic_increasing  # the least distorting first
    for view_id in released["dataview"]:
        result = suppress_dataview(opened, view_id, levels, 0.5)
        visits_of = [
            np.bincount(v.user, weights=v.count, minlength=v.n_users)
            for v in (result.before, result.outcome.view)
        ]
        before, after = (v[v > 0] for v in visits_of)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = stats.ks_2samp(before, after, method="asymp").statistic
        got = scores.loc[scores["dataview"] == view_id, "ks:visits"].item()
        assert got == pytest.approx(want)
    with pytest.raises(Exception, match="STATISTIC:MEASURE"):
        dataview_scores(opened, levels, 0.5, (), "mean_risk", "ks:nothing")


def test_among_dataviews_that_keep_as_much_the_less_risky_comes_first(catalog):
    """At R = 1 every release keeps everything: the recommendation (the first row) is the
    dataview of lowest mean risk among those keeping the most people, not the first in
    the table."""
    rows = json.loads(
        run(
            "catalog", "best", "--catalog", str(catalog), "--max-risk", "1", "--format", "json"
        ).stdout
    )
    assert all(r["released"] == 1.0 for r in rows)
    assert rows[0]["mean_risk"] == min(r["mean_risk"] for r in rows)
    assert rows[0]["pareto"] == "front"
