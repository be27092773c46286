"""Segment clusters and the cluster attack (Pratesi et al., PRUDEnce, section 4.3; Examples 11
and 12)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import shapely
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.cli import main
from prudence_cli.dataviews.clusters import (
    ClusterView,
    added,
    cluster_segments,
    clusters_of,
    least_risks,
    thresholds,
)
from prudence_cli.dataviews.restore import view_from_table
from prudence_cli.engine import Engine
from prudence_cli.measures.rac import measure_view

# Example 11: segments as letters, two time windows (09-10 = 9, 10-11 = 10)
TRIPS = {
    "u1": (9, "ABE"),
    "u2": (9, "ABCD"),
    "u3": (9, "MNOH"),
    "u4": (9, "HILM"),
    "u5": (10, "BFPQV"),
    "u6": (10, "FG"),
    "u7": (10, "PS"),
    "u8": (10, "PST"),
    "u9": (10, "PSRV"),
}
LETTERS = sorted(set("".join(s for _, s in TRIPS.values())))
# Figure 13 positions (metres): A-B adjacent, M-H adjacent, P-S-V close together, F apart
POSITION = {
    "A": (0, 0),
    "B": (10, 0),
    "C": (400, 0),
    "D": (800, 0),
    "E": (0, 400),
    "M": (2000, 0),
    "H": (2010, 0),
    "N": (2400, 0),
    "O": (2800, 0),
    "I": (2000, 400),
    "L": (2000, 800),
    "F": (5000, 5000),
    "G": (5400, 5000),
    "P": (8000, 0),
    "S": (8010, 0),
    "V": (8020, 0),
    "Q": (9000, 900),
    "R": (8000, 900),
    "T": (8400, 900),
}


def example_view(min_users: int = 2, tolerance: float = 50.0) -> ClusterView:
    users = sorted(TRIPS)
    rows = [(users.index(u), LETTERS.index(ch), w) for u, (w, segs) in TRIPS.items() for ch in segs]
    arr = np.array(rows)
    geometry = np.array(
        [shapely.LineString([POSITION[ch], np.add(POSITION[ch], (5, 0))]) for ch in LETTERS]
    )
    return ClusterView(
        "d1",
        (("window", 3600), ("frequency", min_users), ("tolerance", tolerance)),
        len(users),
        arr[:, 0].astype(np.int32),
        arr[:, 1].astype(np.int32),
        pd.DataFrame({"label": LETTERS, "lon": 0.0, "lat": 0.0}),
        window=arr[:, 2],
        geometry=geometry,
    )


def test_example_11_clusters():
    view = example_view()
    table = view.release_table(np.array(sorted(TRIPS), dtype=object))
    found = {(row.window[11:16], row.segments, row.mu) for row in table.itertuples()}
    assert found == {
        ("09:00", "A B", 2.0),  # red
        ("09:00", "H M", 2.0),  # green
        ("10:00", "F", 2.0),  # orange
        ("10:00", "P S V", 3.0),  # blue: (4 + 3 + 2) / 3
    }
    assert "user" not in table


def test_cluster_view_round_trips_through_its_table():
    view = example_view()
    users = np.array(sorted(TRIPS), dtype=object)
    lines = [f"LINESTRING (10.{i:02d} 43.7, 10.{i:02d} 43.71)" for i in range(len(LETTERS))]
    locations = view.locations.assign(wkt=lines)
    table = view.table(users)
    back = view_from_table("d1", "clusters", view.dimensions, users, table, locations, "EPSG:32632")
    assert isinstance(back, ClusterView)
    for name in view.row_fields:
        np.testing.assert_array_equal(getattr(back, name), getattr(view, name))
    assert back.window_seconds == view.window_seconds and len(back.geometry) == len(LETTERS)
    with pytest.raises(ValueError, match="geometry and CRS"):
        view_from_table("d1", "clusters", view.dimensions, users, table, locations)


def test_example_12_risks():
    risk = ATTACKS["cluster"].risks(example_view(), KnowledgeLevel("cluster", ()), Engine()).risk
    by_user = dict(zip(sorted(TRIPS), risk, strict=True))
    assert by_user["u5"] == 1.0  # crosses both clusters of 10-11
    assert by_user["u1"] == pytest.approx(1 / 2)  # mu_red / (mu_red + mu_green)
    assert by_user["u6"] == pytest.approx(2 / 5)  # orange only: 2 / (2 + 3)
    assert by_user["u7"] == pytest.approx(3 / 5)


def _view_of(n: int, rows: np.ndarray, min_users: int, tolerance: float):
    """The view of `n` people's crossings `rows` (person, segment, window; by person) of
    six segments 50 m long, 50 m apart in a row; and their geometry."""
    geometry = np.array([shapely.LineString([(i * 100, 0), (i * 100 + 50, 0)]) for i in range(6)])
    view = ClusterView(
        "d1",
        (("window", 3600), ("frequency", min_users), ("tolerance", tolerance)),
        n,
        rows[:, 0].astype(np.int32),
        rows[:, 1].astype(np.int32),
        pd.DataFrame({"label": list("abcdef"), "lon": 0.0, "lat": 0.0}),
        window=rows[:, 2],
        geometry=geometry,
    )
    return view, geometry


@st.composite
def crossings(draw):
    n = draw(st.integers(1, 8))
    rows = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, 5), st.integers(0, 2)),
            min_size=1,
            max_size=30,
        )
    )
    return n, np.array(rows)


@settings(max_examples=50, deadline=None)
@given(crossings(), st.integers(1, 3), st.lists(st.booleans(), min_size=8, max_size=8))
def test_data_kept_equals_reclustering_without_the_others(case, min_users, keep):
    n, rows = case
    order = np.argsort(rows[:, 0], kind="stable")
    rows = rows[order]
    view, geometry = _view_of(n, rows, min_users, 60.0)
    people = np.array(keep[:n])
    mine = people[rows[:, 0]]
    again = cluster_segments(rows[mine, 0], rows[mine, 1], rows[mine, 2], geometry, min_users, 60.0)
    assert view.data_of(people, "segments") == again.segment.shape[0]


@settings(max_examples=60, deadline=None)
@given(
    crossings(),
    st.integers(1, 3),
    st.lists(st.integers(0, 8), max_size=3),
    st.lists(st.sampled_from([0.0, 0.25, 1 / 3, 0.5, 1.0]), min_size=8, max_size=8),
)
def test_ranges_of_people_make_the_whole_views_clusters_risks_and_data(
    case, min_users, cuts, risks
):
    """Made of ranges of disjoint people (as on Dask workers: kept_clusters.py), the
    clusters, every risk, the coverage and the data at each risk threshold are the
    whole view's: the data as `data_of` of the people at risk ≤ r recounts it."""
    n, rows = case
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    view, geometry = _view_of(n, rows, min_users, 120.0)
    bounds = sorted({0, n, *(c for c in cuts if c <= n)})
    spans = list(zip(bounds[:-1], bounds[1:], strict=True))
    parts = [view.users(a, b) for a, b in spans]
    found = clusters_of(added([p.segment_people() for p in parts]), geometry, min_users, 120.0)
    whole = view.clusters
    for name in ("window", "segment", "cluster", "cluster_window", "mu"):
        assert np.array_equal(getattr(found, name), getattr(whole, name)), name
    risk, moves = view.cluster_risks()
    ranged = [p.risks_against(found) for p in parts]
    assert np.array_equal(np.concatenate([r for r, _ in ranged]), risk)
    assert sum(m for _, m in ranged) == moves
    clustered = np.concatenate([p.clustered(found) for p in parts])
    assert np.array_equal(clustered, view.coverage("segments"))
    risk = np.array(risks[:n])
    by_part = [p.crosser_risks(risk[a:b], found) for p, (a, b) in zip(parts, spans, strict=True)]
    limits = thresholds(least_risks(by_part, min_users), min_users)
    folded = by_part[-1]  # folded in any order, as the ranges come
    for part in by_part[-2::-1]:
        folded = least_risks([folded, part], min_users)
    assert np.array_equal(thresholds(folded, min_users), limits)
    points = np.unique(np.r_[0.0, 0.2, 1.0, risk])
    expected = [view.data_of(risk <= r, "segments") for r in points]
    assert np.searchsorted(limits, points, side="right").tolist() == expected
    assert view.data_at(risk, points, "segments").tolist() == expected


def test_who_crossed_every_cluster_of_their_windows_is_at_risk_1_whatever_the_mu():
    """μ of 0.1, 0.2 and 0.3 add to 0.6000000000000001 one way and 0.6 another: a
    person who crossed all three clusters of their windows is still at risk exactly 1."""
    from prudence_cli.dataviews.clusters import Clusters

    view = ClusterView(
        "d1",
        (("window", 3600), ("frequency", 1), ("tolerance", 1.0)),
        2,
        np.array([0, 0, 0, 1], dtype=np.int32),
        np.array([0, 1, 2, 0], dtype=np.int32),
        pd.DataFrame({"label": list("abc"), "lon": 0.0, "lat": 0.0}),
        window=np.array([0, 0, 1, 0]),
        geometry=None,
    )
    found = Clusters(
        window=np.array([0, 0, 1]),
        segment=np.array([0, 1, 2]),
        cluster=np.array([0, 1, 2]),
        cluster_window=np.array([0, 0, 1]),
        mu=np.array([0.1, 0.2, 0.3]),
    )
    risk, moves = view.risks_against(found)
    assert risk[0] == 1.0 and moves == 3
    assert risk[1] == pytest.approx(0.1 / (0.1 + 0.2))


@settings(max_examples=80, deadline=None)
@given(crossings(), st.integers(1, 3))
def test_a_risk_is_the_literal_ratio_and_1_for_who_crossed_every_cluster(case, min_users):
    """Risk(u) = W(clusters of BK crossed by u) / W(clusters of BK), μ added literally;
    exactly 1 for a person who crossed every cluster of their windows (Example 12),
    whatever order the μ are added in; 0 for one whose windows hold none."""
    import math

    n, rows = case
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    view, geometry = _view_of(n, rows, min_users, 120.0)
    found = view.clusters
    risk = ATTACKS["cluster"].risks(view, KnowledgeLevel("cluster", ()), Engine()).risk
    cluster_of = {
        (w, s): c for w, s, c in zip(found.window, found.segment, found.cluster, strict=True)
    }
    for u in range(n):
        mine = rows[rows[:, 0] == u]
        windows = set(mine[:, 2].tolist())
        theirs = [c for c, w in enumerate(found.cluster_window) if w in windows]
        crossed = {cluster_of[w, s] for _, s, w in mine.tolist() if (w, s) in cluster_of}
        if not theirs:
            assert risk[u] == 0.0
        elif crossed == set(theirs):
            assert risk[u] == 1.0
        else:
            expected = math.fsum(found.mu[list(crossed)]) / math.fsum(found.mu[theirs])
            assert risk[u] == pytest.approx(expected, rel=1e-12) and risk[u] < 1.0


def test_rac_d_is_recomputed_without_unsafe_people():
    view = example_view()
    risk = ATTACKS["cluster"].risks(view, KnowledgeLevel("cluster", ()), Engine()).risk
    curve, summary = measure_view(view, risk, "segments")
    # everyone at risk ≤ 1: all 9 clustered segments (A, B, M, H, F, P, S, V ... per window)
    assert curve["rac_d"].iloc[-1] == 1.0
    at_half = curve[curve["risk"] <= 0.5]["rac_d"].iloc[-1]
    # people at risk ≤ 1/2 are u1-u4 (clusters of 09-10 only), u6 (2/5), u8? see below
    expected = view.data_of(risk <= 0.5, "segments") / view.data_of(np.ones(9, bool), "segments")
    assert at_half == pytest.approx(expected)
    assert 0 <= summary.i_rac_d <= 1


def test_clusters_end_to_end_and_release(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert (
        runner.invoke(
            main,
            [
                "sample",
                "segments",
                "--users",
                "40",
                "--days",
                "3",
                "--out",
                "trips.csv",
                "--segments",
                "streets.csv",
            ],
        ).exit_code
        == 0
    )
    (tmp_path / "c.yaml").write_text(
        "input: {path: trips.csv, format: segments, segments: streets.csv,\n"
        "        columns: {user: uid, enter: entered, leave: left}}\n"
        "dataview: {format: clusters, dimensions: {frequency: [2, 3], tolerance: [100m]}}\n"
        "attacks: [{attack: cluster}]\ncoverage: segments\n"
    )
    result = runner.invoke(main, ["assess", "c.yaml", "-q"])
    assert result.exit_code == 0, result.output
    release = runner.invoke(
        main, ["sanitize", "--threshold", "0.5", "--dataview", "d1", "--out", "rel"]
    )
    assert release.exit_code in (0, 1), release.stderr
    if release.exit_code == 0:
        table = pd.read_csv(tmp_path / "rel" / "dataview.csv")
        assert list(table.columns) == ["window", "cluster", "segments", "mu"]
        report = json.loads((tmp_path / "rel" / "report.json").read_text())
        assert report["max_risk_after"] <= 0.5
        assert report["data"]["released"] <= report["data"]["before"]
