"""Unicity, k-disclosure, EM- and KL-disclosure (the disclosure thesis): Table 4.1, the literal
definitions on random data, seeded knowledge, and a bins catalog end to end."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli import measures
from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.cli import main
from prudence_cli.dataviews.bins import BinsView
from prudence_cli.engine import Elements, Engine
from prudence_cli.measures.disclosure import disclosure, draw_knowledge
from tests.reference import dense_disclosure

# Table 4.1: 4 users × 5 bins, and the adversary knowledge of its right half
TABLE_4_1 = [[1, 0, 1, 0, 0], [1, 0, 1, 1, 0], [0, 0, 1, 1, 0], [0, 1, 0, 1, 0]]
KNOWN = [{2}, {0}, {3}, {1, 3}]  # A_1 = {3}, A_2 = {1}, A_3 = {4}, A_4 = {2, 4} (1-based)


def records(matrix):
    rows = [(i, j) for i, row in enumerate(matrix) for j, x in enumerate(row) if x]
    arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
    return Elements.from_rows(len(matrix), arr[:, 0], arr[:, 1], np.ones(len(rows)))


def known_mask(matrix, known):
    return np.array([j in known[i] for i, row in enumerate(matrix) for j, x in enumerate(row) if x])


def test_table_4_1():
    found = disclosure(
        records(TABLE_4_1),
        known_mask(TABLE_4_1, KNOWN),
        Engine(),
        None,
        np.random.default_rng(0),
        dimensionality=5,
    )
    assert found.class_size.tolist() == [3, 2, 3, 1]  # |E_i| of the table
    assert found.unicity == 0.25
    assert found.k_disclosure == pytest.approx((1 / 3 + 1 / 2 + 1 / 3 + 1) / 4)  # ≈ .54
    assert found.em_user[1] == pytest.approx(0.25)  # EM_2
    _, em, _ = dense_disclosure(TABLE_4_1, KNOWN)
    assert em[1][2] == pytest.approx(0.25)  # EM_23: |2/2 - 3/4|


@st.composite
def matrices(draw):
    n = draw(st.integers(1, 8))
    d = draw(st.integers(1, 6))
    matrix = [[draw(st.integers(0, 1)) for _ in range(d)] for _ in range(n)]
    for row in matrix:  # every user active somewhere
        if not any(row):
            row[draw(st.integers(0, d - 1))] = 1
    known = [
        set(
            draw(
                st.lists(
                    st.sampled_from([j for j, x in enumerate(row) if x]), min_size=1, max_size=3
                )
            )
        )
        for row in matrix
    ]
    return matrix, known


@settings(max_examples=80, deadline=None)
@given(matrices(), st.sampled_from([1, 3, 4096]))
def test_measures_equal_the_literal_definitions(case, chunk):
    """Whatever the chunks of users the EM/KL tasks take (their sums added in order)."""
    matrix, known = case
    d = len(matrix[0])
    # drop bins nobody is active in (the sparse view has no such column) from the reference
    used = [j for j in range(d) if any(row[j] for row in matrix)]
    dense = [[row[j] for j in used] for row in matrix]
    dense_known = [{used.index(j) for j in k} for k in known]
    sizes, em, kl = dense_disclosure(dense, dense_known)
    remap = {j: used.index(j) for j in used}
    compact = [[row[j] for j in used] for row in matrix]
    default, measures.disclosure_sums.EM_KL_CHUNK = measures.disclosure_sums.EM_KL_CHUNK, chunk
    try:
        found = disclosure(
            records(compact),
            known_mask(compact, dense_known),
            Engine(),
            None,
            np.random.default_rng(0),
        )
    finally:
        measures.disclosure_sums.EM_KL_CHUNK = default
    assert found.class_size.tolist() == sizes
    assert found.em_user == pytest.approx([sum(r) / len(used) for r in em])
    assert found.kl_user == pytest.approx([sum(r) / len(used) for r in kl])
    n = len(matrix)
    assert found.em_attribute == pytest.approx(
        [sum(em[i][j] for i in range(n)) / n for j in range(len(used))]
    )
    assert found.kl_attribute == pytest.approx(
        [sum(kl[i][j] for i in range(n)) / n for j in range(len(used))]
    )
    assert found.unicity == pytest.approx(np.mean(np.array(sizes) == 1))
    assert remap is not None


def test_em_and_kl_are_the_same_as_python_and_compiled():
    """The kernels run as Python or compiled by numba, as the work and numba's cache
    decide (engine/jit.py): the measures must not depend on it, to the last bit — KL's
    logarithms are the C library's both ways (numpy's own may differ by one ulp)."""
    from prudence_cli.engine import jit

    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 9, 300)
    bins = np.concatenate([np.sort(rng.choice(40, n, replace=False)) for n in lengths])
    counts = rng.integers(1, 20, bins.size).astype(float)
    lists = Elements.from_rows(300, np.repeat(np.arange(300), lengths), bins, counts)
    known = draw_knowledge(lists, 2, True, np.random.default_rng(3))
    found = []
    for mode in ("python", "compiled"):
        with jit.running(mode):
            found.append(disclosure(lists, known, Engine(), None, np.random.default_rng(4)))
    python, compiled = found
    for name in ("em_user", "kl_user", "em_attribute", "kl_attribute"):
        assert np.array_equal(getattr(python, name), getattr(compiled, name)), name


def test_knowledge_draws_are_seeded_and_weighted():
    recs = Elements.from_rows(
        1, np.zeros(4, dtype=int), np.arange(4), np.array([1.0, 1.0, 1.0, 97.0])
    )
    picks = [draw_knowledge(recs, 1, True, np.random.default_rng(s)) for s in range(300)]
    share = np.mean([p[3] for p in picks])
    assert share > 0.9  # the bin with 97% of the activity is almost always the one known
    uniform = [draw_knowledge(recs, 1, False, np.random.default_rng(s)) for s in range(300)]
    assert 0.15 < np.mean([p[3] for p in uniform]) < 0.35
    assert all(
        draw_knowledge(recs, 2, True, np.random.default_rng(s)).sum() == 2 for s in range(10)
    )
    again = draw_knowledge(recs, 2, True, np.random.default_rng(5))
    assert np.array_equal(again, draw_knowledge(recs, 2, True, np.random.default_rng(5)))


def test_unicity_attack_risk_is_one_over_the_class():
    matrix = TABLE_4_1 + [[0, 0, 0, 0, 0]]  # a fifth user of U with no record
    rows = [(i, j) for i, row in enumerate(matrix) for j, x in enumerate(row) if x]
    arr = np.array(rows)
    view = BinsView(
        "d1",
        (("time", 3600),),
        5,
        arr[:, 0].astype(np.int32),
        arr[:, 1].astype(np.int32),
        pd.DataFrame({"label": list("abcde"), "lon": 0.0, "lat": 0.0}),
        count=np.ones(len(rows), dtype=np.int32),
    )
    level = KnowledgeLevel("unicity", (("points", 1), ("draw", "uniform"), ("samples", "all")))
    result = ATTACKS["unicity"].risks(view, level, Engine(seed=1))
    assert result.risk[4] == 0
    assert set(result.risk[:4]) <= {1, 1 / 2, 1 / 3, 1 / 4}
    assert result.measures["k_disclosure"] == pytest.approx(result.risk[:4].mean())
    assert result.measures["unicity"] == pytest.approx(np.mean(result.risk[:4] == 1))
    again = ATTACKS["unicity"].risks(view, level, Engine(seed=1))
    assert np.array_equal(result.risk, again.risk)


@st.composite
def activity(draw):
    """A bins view of random activity: users (some without any bin), bins, counts."""
    n = draw(st.integers(1, 12))
    d = draw(st.integers(1, 7))
    rows = [
        (i, j, draw(st.integers(1, 9)))
        for i in range(n)
        for j in range(d)
        if draw(st.integers(0, 2)) == 0
    ]
    rows = rows or [(0, 0, 1)]
    arr = np.array(rows)
    return BinsView(
        "d1",
        (("time", 3600),),
        n,
        arr[:, 0].astype(np.int32),
        arr[:, 1].astype(np.int32),
        pd.DataFrame({"label": [f"b{j}" for j in range(d)], "lon": 0.0, "lat": 0.0}),
        count=arr[:, 2].astype(np.int32),
        dimensionality=draw(st.sampled_from([0, d + 3])),
    )


@settings(max_examples=120, deadline=None)
@given(
    activity(),
    st.integers(1, 4),
    st.sampled_from(["activity", "uniform"]),
    st.sampled_from(["all", 1, 3]),
    st.integers(2, 5),
    st.sampled_from([1, 2, 4096]),
    st.sampled_from([1, 7, 1 << 22]),
    st.sampled_from([1, 3, 1 << 16]),
    st.integers(0, 3),
)
def test_unicity_in_ranges_is_the_whole_one(
    view, points, draw, samples, shards, chunk, fetched, classes, seed
):
    """Unicity made in ranges of users (measures/disclosure_ranges.py) — each range
    drawing its users' knowledge from the whole draw's stream at its first row, the
    classes counted where the ranges are, a few users' knowledge at a time, EM/KL from
    the ranges' counts of each class, chunk by chunk, a few classes' rows at a time —
    gives the whole computation's numbers, to the bit: risks, every measure, the
    per-bin EM and KL."""
    from prudence_cli.engine.runner import LocalRunner

    level = KnowledgeLevel("unicity", (("points", points), ("draw", draw), ("samples", samples)))
    default, measures.disclosure_sums.EM_KL_CHUNK = measures.disclosure_sums.EM_KL_CHUNK, chunk
    group, measures.disclosure_ranges.FETCHED = measures.disclosure_ranges.FETCHED, fetched
    sent, measures.disclosure_ranges.CLASSES = measures.disclosure_ranges.CLASSES, classes
    try:
        whole = ATTACKS["unicity"].risks(view, level, Engine(seed=seed))
        ranged = ATTACKS["unicity"].risks(
            view, level, Engine(seed=seed, runner=LocalRunner(shards=shards))
        )
    finally:
        measures.disclosure_sums.EM_KL_CHUNK = default
        measures.disclosure_ranges.FETCHED = group
        measures.disclosure_ranges.CLASSES = sent
    assert np.array_equal(whole.risk, ranged.risk)
    assert whole.instances == ranged.instances
    assert whole.measures.keys() == ranged.measures.keys()
    for key, value in whole.measures.items():
        assert np.array_equal(value, ranged.measures[key], equal_nan=True), key
    pd.testing.assert_frame_equal(
        whole.tables["disclosure"], ranged.tables["disclosure"], check_exact=True
    )


def _sample_cdr(runner, users, days):
    """e.csv and t.csv: seeded synthetic call records and towers in the current folder."""
    args = ["--users", str(users), "--days", str(days), "--out", "e.csv", "--towers", "t.csv"]
    runner.invoke(main, ["sample", "cdr", *args])


def test_bins_catalog_with_regions(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    _sample_cdr(runner, 60, 4)

    def half(name, west, east):
        ring = [[west, 43.6], [east, 43.6], [east, 43.8], [west, 43.8], [west, 43.6]]
        return {
            "type": "Feature",
            "properties": {"name": name},
            "geometry": {"type": "Polygon", "coordinates": [ring]},
        }

    (tmp_path / "halves.geojson").write_text(
        json.dumps(
            {
                "type": "FeatureCollection",
                "features": [half("west", 10.2, 10.4), half("east", 10.4, 10.6)],
            }
        )
    )
    (tmp_path / "u.yaml").write_text(
        "input: {path: e.csv, format: cdr, towers: t.csv,\n"
        "        columns: {user: caller, time: timestamp, tower: cell}}\n"
        "dataview: {format: bins, layers: {halves: halves.geojson},\n"
        "           dimensions: {regions: [halves], time: [6h, 1d]}}\n"
        "attacks: [{attack: unicity, knowledge: {points: [2], samples: [20]}}]\n"
    )
    result = runner.invoke(main, ["assess", "u.yaml", "-q"])
    assert result.exit_code == 0, result.output
    irac = pd.read_csv(tmp_path / "catalog" / "u" / "irac.csv")
    assert {"unicity", "k_disclosure", "em", "em_ci", "kl", "kl_ci"} <= set(irac.columns)
    assert (
        irac["k_disclosure"] == irac["mean_risk"] * 60 / irac["users_in_view"]
    ).all() or np.allclose(irac["k_disclosure"] * irac["users_in_view"], irac["mean_risk"] * 60)
    tables = list((tmp_path / "catalog" / "u" / "disclosure").glob("*.csv"))
    assert len(tables) == 2
    assert list(pd.read_csv(tables[0]).columns) == ["bin", "em", "kl"]
    # its bins are not places: no command measures mobility on them, read back or not
    utility = runner.invoke(main, ["catalog", "utility"])
    assert utility.exit_code == 2 and "holds no places (bins" in utility.stderr
    best = runner.invoke(main, ["catalog", "best", "--max-risk", "1", "--utility", "ks:visits"])
    assert best.exit_code == 2 and "nothing to measure" in best.stderr
    release = runner.invoke(main, ["sanitize", "--threshold", "1", "--dataview", "d1", "-q"])
    assert release.exit_code == 0, release.stderr
    report = json.loads((tmp_path / "release" / "report.json").read_text())
    assert report["dataview"]["format"] == "bins" and report["mobility"] == []
    (tmp_path / "bad.yaml").write_text(
        (tmp_path / "u.yaml").read_text().replace("regions: [halves]", "regions: [thirds]")
    )
    bad = runner.invoke(main, ["validate", "bad.yaml"])
    assert bad.exit_code == 2
    assert "dataview.dimensions.regions[0]: 'thirds' is not a layer" in bad.stderr


def test_utility_scores_pareto_and_ordinal_equivalence(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    _sample_cdr(runner, 60, 4)
    (tmp_path / "scores.csv").write_text(
        "grid,time,score\n1km,1h,9\n1km,1d,5\n3km,1h,6\n3000m,1d,2\n"
    )
    (tmp_path / "u.yaml").write_text(
        "input: {path: e.csv, format: cdr, towers: t.csv,\n"
        "        columns: {user: caller, time: timestamp, tower: cell}}\n"
        "dataview: {format: bins, dimensions: {grid: [1km, 3km], time: [1h, 1d]}}\n"
        "attacks: [{attack: unicity, knowledge: {points: [2], samples: [20]}}]\n"
        "utility: {scores: scores.csv}\n"
    )
    assert runner.invoke(main, ["assess", "u.yaml", "-q"]).exit_code == 0
    rows = json.loads(
        runner.invoke(
            main,
            [
                "catalog",
                "best",
                "--max-risk",
                "0.5",
                "--measure",
                "unicity",
                "--utility",
                "score",
                "--format",
                "json",
            ],
        ).stdout
    )
    # ranked by utility score, the dataviews whose release keeps someone first
    releasable = [r for r in rows if r["users_released"] > 0]
    assert rows[: len(releasable)] == releasable
    for part in (releasable, rows[len(releasable) :]):
        assert [r["score"] for r in part] == sorted((r["score"] for r in part), reverse=True)
    assert sorted(r["score"] for r in rows) == [2, 5, 6, 9]
    for r in rows:  # the front: no releasable dataview at least as good on both, better on one
        dominated = any(
            o["unicity"] <= r["unicity"]
            and o["score"] >= r["score"]
            and (o["unicity"] < r["unicity"] or o["score"] > r["score"])
            for o in releasable
        )
        if r["users_released"] == 0:
            assert r["pareto"] == "nobody released"
        else:
            assert (r["pareto"] == "dominated") == dominated
    ordinal = json.loads(
        runner.invoke(
            main, ["catalog", "best", "--max-risk", "0.5", "--ordinal", "--format", "json"]
        ).stdout
    )
    pair = next(o for o in ordinal if o["measure"] == "unicity" and o["versus"] == "k_disclosure")
    assert -1 <= pair["kendall_tau"] <= 1 and isinstance(pair["same_order"], bool)
    (tmp_path / "scores.csv").write_text("grid,time,score\n1km,1h,high\n")
    bad = runner.invoke(main, ["assess", "u.yaml", "-q"])
    assert bad.exit_code == 2 and "scores.csv:2: score is not a number" in bad.stderr


def test_ordinal_agreement_by_hand():
    from prudence_cli.explore.scores import ordinal_agreement

    table = pd.DataFrame({"a": [0.1, 0.2, 0.3], "b": [1.0, 2.0, 5.0], "c": [3.0, 2.0, 1.0]})
    result = ordinal_agreement(table, ["a", "b", "c"]).set_index(["measure", "versus"])
    assert result.loc[("a", "b"), "same_order"] and result.loc[("a", "b"), "kendall_tau"] == 1
    assert not result.loc[("a", "c"), "same_order"] and result.loc[("a", "c"), "kendall_tau"] == -1


# --- utility as the error of a declared aggregate ------------------------------------------


def _selection(points):
    from prudence_cli.select import Selection

    frame = pd.DataFrame(points, columns=["x", "y", "minute"])
    table = pd.DataFrame(
        {
            "user": np.zeros(len(frame), dtype=np.int32),
            "time": (frame["minute"].to_numpy() * 60 * 10**9).astype(np.int64),
            "x": frame["x"].astype(float),
            "y": frame["y"].astype(float),
        }
    )
    return Selection(table, np.array(["u"], dtype=object), "EPSG:32632")


def test_aggregate_error_by_hand():
    from prudence_cli.measures.aggregate import PointsActivity, Space, aggregate_error

    # one 1 km cell over 2 hours holds 4 points, one in each 500 m cell and hour pair
    selection = _selection([(100, 100, 10), (600, 100, 20), (100, 600, 70), (600, 600, 90)])
    activity = PointsActivity(selection, "UTC")
    fine = (Space(grid=500.0), 3600)
    coarse = (Space(grid=1000.0), 7200)
    assert aggregate_error(activity, fine, fine) == pytest.approx(0.0)
    # the coarse count 4 spreads as 0.5 over 4 cells × 2 hours: half the activity is
    # misplaced (|0.5 − 1| × 4 + |0.5 − 0| × 4 = 4, over 2 × 4)
    assert aggregate_error(activity, coarse, fine) == pytest.approx(0.5)
    # answering a coarser aggregate from a finer profile loses nothing
    assert aggregate_error(activity, fine, coarse) == pytest.approx(0.0)


def test_aggregate_utility_in_the_catalog(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    _sample_cdr(runner, 40, 3)
    base = (
        "input: {path: e.csv, format: cdr, towers: t.csv,\n"
        "        columns: {user: caller, time: timestamp, tower: cell}}\n"
        "dataview: {format: bins, dimensions: {grid: [1km, 2km], time: [1h, 6h]}}\n"
        "attacks: [{attack: unicity, knowledge: {points: [2], samples: [10]}}]\n"
    )
    (tmp_path / "a.yaml").write_text(base + "utility: {aggregate: {grid: 1km, time: 1h}}\n")
    result = runner.invoke(main, ["assess", "a.yaml", "-q"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "catalog" / "a" / "utility.csv")
    assert list(table.columns) == ["grid", "time", "score", "aggregate_error"]
    by = table.set_index(["grid", "time"])["aggregate_error"]
    assert by[("1000m", "1h")] == pytest.approx(0.0, abs=1e-12)
    assert by[("2000m", "6h")] > by[("1000m", "6h")] > 0
    best = runner.invoke(
        main, ["catalog", "best", "--max-risk", "0.5", "--utility", "score", "--format", "csv"]
    )
    assert best.exit_code == 0, best.output
    for text, message in [
        ("utility: {aggregate: {grid: 1km}}", "utility.aggregate.time: is required"),
        ("utility: {aggregate: {regions: x, time: 1h}}", "'x' is not a layer"),
        ("utility: {aggregate: {time: 1h}}", "give the aggregate's space"),
        ("utility: {scores: s.csv, aggregate: {grid: 1km, time: 1h}}", "not both"),
    ]:
        (tmp_path / "bad.yaml").write_text(base + text + "\n")
        bad = runner.invoke(main, ["validate", "bad.yaml"])
        assert bad.exit_code == 2, text
        assert message in bad.stderr, (text, bad.stderr)
