"""Mobility measures (Pellungrini et al., Analyzing Privacy Risk in Human Mobility Data,
section 2) against literal per-person and per-location implementations of the formulas,
on a hand-computed example and on random small data."""

from __future__ import annotations

import math
import warnings
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from prudence_cli.measures.distributions import (
    RankMemo,
    compare_sorted,
    compare_subset,
    distortion,
    quantiles,
    risk_correlation,
)
from prudence_cli.measures.mobility import (
    Visits,
    by_threshold,
    location_measures,
    person_measures,
)

# locations on a line and a corner: 0 at the origin, 1 at 3 km east, 2 at 4 km north
X = np.array([0.0, 3000.0, 0.0])
Y = np.array([0.0, 0.0, 4000.0])


def trajectories(records: list[list[int]]) -> Visits:
    offsets = np.cumsum([0, *map(len, records)])
    location = np.array([v for r in records for v in r], dtype=np.int64)
    return Visits(offsets, location, np.ones(location.size), X, Y, ordered=True, trips=True)


def test_three_people_by_hand():
    # a: 0 → 1 → 0 → 2; b: 1 → 1; c: nothing
    visits = trajectories([[0, 1, 0, 2], [1, 1], []])
    people = person_measures(visits)
    a, b, c = people.to_dict("records")
    # a: centre (750, 1000); squared distances 1,562,500; 6,062,500; 1,562,500; 9,562,500
    assert a["radius_of_gyration"] == pytest.approx(math.sqrt(18_750_000 / 4))
    # a's shares 1/2, 1/4, 1/4 over 3 places: (ln 2 / 2 + ln 4 / 2) / ln 3
    assert a["mobility_entropy"] == pytest.approx(1.5 * math.log(2) / math.log(3))
    assert a["max_distance"] == 4000.0 and a["sum_distances"] == 3000 + 3000 + 4000
    assert (a["visits"], a["locations"]) == (4, 3)
    assert b["radius_of_gyration"] == 0 and b["mobility_entropy"] == 0
    assert b["max_distance"] == 0 and b["sum_distances"] == 0
    assert all(math.isnan(v) for v in c.values())

    places = location_measures(visits).set_index("location")
    # location 1: a once, b twice → shares 1/3, 2/3 over 2 visitors
    shares = np.array([1 / 3, 2 / 3])
    assert places.loc[1, "location_entropy"] == pytest.approx(
        -(shares * np.log(shares)).sum() / math.log(2)
    )
    assert places.loc[0, "location_entropy"] == 0  # a only
    # a's most visited is 0, b's is 1
    assert places["location_density"].to_dict() == {0: 1, 1: 1, 2: 0}
    # a's trips 0→1, 1→0, 0→2; b's 1→1 is no move
    assert places["flow"].to_dict() == {0: 3, 1: 2, 2: 1}


def test_presence_rows_carry_counts_and_no_trip_measures():
    # presence: one row per (person, location) with its count
    visits = Visits(
        np.array([0, 2, 3]),
        np.array([0, 1, 2]),
        np.array([3.0, 1.0, 5.0]),
        X,
        Y,
        ordered=False,
    )
    people = person_measures(visits)
    assert list(people.columns) == ["radius_of_gyration", "mobility_entropy", "visits", "locations"]
    assert people["visits"].tolist() == [4, 5]
    # centre at 750 m: 3 × 750² + 2250²
    assert people.loc[0, "radius_of_gyration"] == pytest.approx(
        math.sqrt((3 * 750**2 + 2250**2) / 4)
    )
    assert list(location_measures(visits).columns) == [
        "location",
        "location_entropy",
        "location_density",
    ]


# -- the literal reference -------------------------------------------------------------


def reference_person(records: list[list[tuple[int, float]]], ordered: bool) -> list[dict]:
    out = []
    for rows in records:
        if not rows:
            out.append(None)
            continue
        total = sum(w for _, w in rows)
        cx = sum(w * X[loc] for loc, w in rows) / total
        cy = sum(w * Y[loc] for loc, w in rows) / total
        rg = math.sqrt(
            sum(w * ((X[loc] - cx) ** 2 + (Y[loc] - cy) ** 2) for loc, w in rows) / total
        )
        per_place: Counter[int] = Counter()
        for loc, w in rows:
            per_place[loc] += w
        h = -sum((w / total) * math.log(w / total) for w in per_place.values() if w > 0)
        entry = {
            "radius_of_gyration": rg,
            "mobility_entropy": h / math.log(len(per_place)) if len(per_place) > 1 else 0.0,
            "visits": total,
            "locations": len(per_place),
        }
        if ordered:
            lengths = [
                math.dist((X[a], Y[a]), (X[b], Y[b]))
                for (a, _), (b, _) in zip(rows, rows[1:], strict=False)
            ]
            entry["max_distance"] = max(lengths, default=0.0)
            entry["sum_distances"] = sum(lengths)
        out.append(entry)
    return out


def reference_location(records: list[list[tuple[int, float]]], ordered: bool) -> dict:
    by_place: dict[int, Counter[int]] = defaultdict(Counter)
    density: Counter[int] = Counter()
    flow: Counter[int] = Counter()
    for person, rows in enumerate(records):
        mine: Counter[int] = Counter()
        for loc, w in rows:
            by_place[loc][person] += w
            mine[loc] += w
        if mine:
            top = max(mine.values())
            density[min(loc for loc, w in mine.items() if w == top)] += 1
        if ordered:
            for (a, _), (b, _) in zip(rows, rows[1:], strict=False):
                if a != b:
                    flow[a] += 1
                    flow[b] += 1
    out = {}
    for loc, visitors in by_place.items():
        total = sum(visitors.values())
        h = -sum((w / total) * math.log(w / total) for w in visitors.values() if w > 0)
        out[loc] = {
            "location_entropy": h / math.log(len(visitors)) if len(visitors) > 1 else 0.0,
            "location_density": density[loc],
            **({"flow": flow[loc]} if ordered else {}),
        }
    return out


records_strategy = st.lists(
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4).map(float)), max_size=7),
    min_size=1,
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(records=records_strategy, ordered=st.booleans())
def test_measures_match_the_literal_reference(records, ordered):
    if ordered:  # a trajectory: single visits
        records = [[(loc, 1.0) for loc, _ in rows] for rows in records]
    offsets = np.cumsum([0, *map(len, records)])
    location = np.array([loc for rows in records for loc, _ in rows], dtype=np.int64)
    weight = np.array([w for rows in records for _, w in rows], dtype=float)
    visits = Visits(offsets, location, weight, X, Y, ordered, trips=ordered)

    people = person_measures(visits).to_dict("records")
    for got, want in zip(people, reference_person(records, ordered), strict=True):
        if want is None:
            assert all(math.isnan(v) for v in got.values())
        else:
            assert got == pytest.approx(want, abs=1e-6)
    places = location_measures(visits).set_index("location").to_dict("index")
    want = reference_location(records, ordered)
    assert places.keys() == want.keys()
    for loc, measures in want.items():
        assert places[loc] == pytest.approx(measures, abs=1e-9)


def test_distortion_and_correlation():
    same = distortion(np.array([1.0, 2, 3]), np.array([1.0, 2, 3]))
    assert same["ks"] == 0 and same["wasserstein"] == 0
    moved = distortion(np.array([0.0, 0]), np.array([5.0, 5]))
    assert moved["ks"] == 1 and moved["wasserstein"] == 5
    assert math.isnan(distortion(np.array([1.0]), np.array([np.nan]))["ks"])
    # the same entropy summed in two orders: one value, the CDFs do not step between
    entropy = np.array([0.9206198357143047, 0.920619835714305])
    assert entropy[0] != entropy[1]
    assert distortion(entropy, entropy[1:])["ks"] == 0

    visits = trajectories([[0, 1], [0, 2, 1], [1], [2, 2]])
    people = person_measures(visits, ["visits", "max_distance"])
    risk = np.array([1.0, 0.5, 0.25, 0.25])
    table = risk_correlation(people, risk).set_index("measure")
    # visits 2, 3, 1, 2: Pearson 0.25 / √(2 × 0.375); average ranks (2.5, 4, 1, 2.5) and
    # (4, 3, 1.5, 1.5): Spearman 2.25 / 4.5
    assert table.loc["visits", "pearson"] == pytest.approx(0.25 / math.sqrt(0.75))
    assert table.loc["visits", "spearman"] == pytest.approx(0.5)
    assert table.loc["visits", "people"] == 4


def test_by_threshold_keeps_the_people_at_or_below():
    visits = trajectories([[0, 1], [0, 2, 1], [1], [2, 2]])
    risk = np.array([1.0, 0.5, 0.25, 0.25])
    table = by_threshold(visits, risk, chosen=["visits", "flow"])
    rows = table.set_index(["threshold", "kind", "measure"])
    assert rows.loc[(1.0, "person", "visits"), "ks"] == 0  # D_1 is everyone
    assert rows.loc[(0.5, "person", "visits"), "n_kept"] == 3
    assert rows.loc[(0.25, "person", "visits"), "n_kept"] == 2
    # D_0.25: persons 2 and 3 only, no move between different places: every flow is 0
    assert rows.loc[(0.25, "location", "flow"), "q90"] == 0


def _as_one(a: list[float], b: list[float]) -> tuple[list[float], list[float]]:
    """`a` and `b` with values within a billionth of each other made one (the literal
    reference sums in the records' order, the engine in the places' order: the last
    bits of equal measures differ)."""
    merged: dict[float, float] = {}
    last = None
    for v in sorted(a + b):
        if last is None or not math.isclose(v, last, rel_tol=1e-9, abs_tol=1e-12):
            first = v
        merged[v], last = first, v
    return [merged[v] for v in a], [merged[v] for v in b]


def _scipy_ks(a: list[float], b: list[float]) -> float:
    from scipy import stats

    if not a or not b:
        return math.nan
    a, b = _as_one(a, b)
    with warnings.catch_warnings():  # scipy's p-value of tiny samples
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ks_2samp(a, b, method="asymp").statistic)


def _of_places(records: list[list[tuple[int, float]]], ordered: bool) -> dict[str, list]:
    """Each location measure's values over the places of `records` (the reference)."""
    places = reference_location(records, ordered)
    names = {name for measures in places.values() for name in measures}
    return {name: [m[name] for m in places.values()] for name in names}


@settings(max_examples=120, deadline=None)
@given(
    records=records_strategy,
    ordered=st.booleans(),
    risk=st.lists(st.sampled_from([1.0, 0.5, 1 / 3, 0.25, 0.2]), min_size=8, max_size=8),
)
@example(  # two people with the same visits in another order: one entropy, not two
    records=[[(0, 1.0)] * 3 + [(1, 1.0)] * 2 + [(2, 1.0)], [(0, 1.0)] * 3 + [(2, 1.0), (1, 2.0)]],
    ordered=False,
    risk=[1.0, 0.5] + [1.0] * 6,
)
def test_the_people_left_and_a_release_match_the_reference(records, ordered, risk):
    """D_t (the people at risk ≤ t, and the places as they visit them) and a release (the
    same people, each with only some of their visits): every measure, person and place,
    recomputed by the literal reference on what is left, compared with everyone's by
    scipy's KS — against what the profile says."""
    from prudence_cli.measures.mobility import Profile

    if ordered:
        records = [[(loc, 1.0) for loc, _ in rows] for rows in records]
    risk_of = np.array(risk[: len(records)])

    def visits_of(chosen: list[list[tuple[int, float]]]) -> Visits:
        offsets = np.cumsum([0, *map(len, chosen)])
        location = np.array([loc for rows in chosen for loc, _ in rows], dtype=np.int64)
        weight = np.array([w for rows in chosen for _, w in rows], dtype=float)
        return Visits(offsets, location, weight, X, Y, ordered, trips=ordered)

    def compared(table, left: list[list[tuple[int, float]]]) -> None:
        rows = table.set_index(["kind", "measure"])
        everyone = [p for p in reference_person(records, ordered) if p is not None]
        kept = [p for p in reference_person(left, ordered) if p is not None]
        for name in everyone[0] if everyone else ():
            want = _scipy_ks([p[name] for p in everyone], [p[name] for p in kept])
            got = rows.loc[("person", name), "ks"]
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)
        full_places, left_places = _of_places(records, ordered), _of_places(left, ordered)
        for name, values in full_places.items():
            want = _scipy_ks(values, left_places.get(name, []))
            got = rows.loc[("location", name), "ks"]
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)
            assert rows.loc[("location", name), "n_kept"] == len(left_places.get(name, []))

    profile = Profile(visits_of(records))
    for t in (1.0, 0.5, 1 / 3, 0.25):
        left = [rows if r <= t else [] for rows, r in zip(records, risk_of, strict=True)]
        table = profile.by_threshold(risk_of, [t]).drop(columns="threshold")
        compared(table, left)
    # a release: the people at risk ≤ 1/2, without their first visit
    released = [rows[1:] if r <= 0.5 else [] for rows, r in zip(records, risk_of, strict=True)]
    compared(profile.against(visits_of(released)), released)


@settings(max_examples=200, deadline=None)
@given(
    full=st.lists(st.integers(0, 6).map(float), min_size=1, max_size=12),
    kept=st.lists(st.integers(0, 6).map(float), min_size=1, max_size=12),
)
def test_distortion_is_scipys_ks_and_wasserstein(full, kept):
    from scipy import stats

    got = distortion(np.array(full), np.array(kept))
    with warnings.catch_warnings():  # scipy's p-value of tiny samples
        warnings.simplefilter("ignore", RuntimeWarning)
        want = stats.ks_2samp(full, kept, method="asymp").statistic
    assert got["ks"] == pytest.approx(want)
    assert got["wasserstein"] == pytest.approx(stats.wasserstein_distance(full, kept))


@settings(max_examples=200, deadline=None)
@given(
    x=st.lists(st.integers(0, 5).map(float), min_size=2, max_size=15),
    data=st.data(),
)
def test_correlation_is_scipys_pearson_and_spearman(x, data):
    """Pearson's r, and Spearman's as Pearson's of the average ranks, as scipy gives them."""
    import pandas as pd
    from scipy import stats

    y = data.draw(
        st.lists(st.sampled_from([1.0, 0.5, 1 / 3, 0.25, 0.1]), min_size=len(x), max_size=len(x))
    )
    row = risk_correlation(pd.DataFrame({"m": x}), np.array(y)).iloc[0]
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert math.isnan(row["pearson"]) and math.isnan(row["spearman"])
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert row["pearson"] == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
        assert row["spearman"] == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6) | st.just(float("nan")), max_size=20))
def test_quantiles_are_numpys(values):
    got = quantiles(np.array(values, dtype=float))
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        assert all(math.isnan(v) for v in got.values())
        return
    want = np.quantile(finite, [0.1, 0.25, 0.5, 0.75, 0.9])
    assert list(got.values()) == list(want)
    assert distortion(np.array(values), np.array(finite))["median_full"] == np.median(finite)


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.integers(0, 6).map(float) | st.floats(0, 1e4), max_size=25),
    data=st.data(),
)
def test_a_part_is_compared_as_any_sample(values, data):
    """compare_subset (one pass, the kept people being part of everyone) gives
    compare_sorted's KS exactly and its Wasserstein up to the order of summation."""
    full = np.sort(np.array(values, dtype=float))
    drawn = data.draw(st.lists(st.booleans(), min_size=full.size, max_size=full.size))
    kept = np.array(drawn, dtype=bool)
    got, want = compare_subset(full, kept), compare_sorted(full, full[kept])
    assert got.keys() == want.keys()
    for key in ("ks", "n_full", "n_kept", "median_full"):
        assert got[key] == want[key] or (math.isnan(got[key]) and math.isnan(want[key]))
    assert got["wasserstein"] == pytest.approx(
        want["wasserstein"], rel=1e-12, abs=1e-9, nan_ok=True
    )


def test_ranks_are_remembered_by_content():
    memo = RankMemo()
    a = np.array([3.0, 1.0, 1.0])
    first = memo(a)
    assert list(first) == [3.0, 1.5, 1.5]
    assert memo(a.copy()) is first  # the same values: ranked once
    assert list(memo(np.array([1.0, 3.0, 1.0]))) == [1.5, 3.0, 1.5]
