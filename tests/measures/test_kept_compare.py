"""The people's mobility measures compared on the Dask workers (measures/kept_compare.py):
in buckets of values, with exact sums, they give the local Profile's rows and
correlations to the bit — whatever the ranges of people, the buckets, ties, missing
values, or values one within tolerance on either side of a bucket's edge."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prudence_cli.measures.buckets import RiskRanks, risk_counts
from prudence_cli.measures.distributions import (
    average_ranks,
    compare_subset,
    risk_correlation,
    sorted_quantiles,
)
from prudence_cli.measures.mobility import COMPARED

pytest.importorskip("distributed")

from prudence_cli.engine.runner import DaskRunner  # noqa: E402
from prudence_cli.measures.kept_compare import KeptPeople, range_samples  # noqa: E402
from tests.engine.test_distributed import _futures_left  # noqa: E402

THRESHOLDS = (1.0, 0.5, 1 / 3, 0.25)


@pytest.fixture(scope="module")
def cluster():
    runner = DaskRunner(workers=3)
    yield runner
    runner.close()


def _local(frame: pd.DataFrame, risk: np.ndarray) -> tuple[list[pd.DataFrame], pd.DataFrame]:
    """Profile._compared's person rows at each threshold, and the correlation table, as a
    local run computes them (over every person at once)."""
    rows = []
    for t in THRESHOLDS:
        people = risk <= t
        found = []
        for name in frame.columns:
            values = frame[name].to_numpy(dtype=float)
            order = np.argsort(values, kind="stable")[: np.count_nonzero(~np.isnan(values))]
            full, kept = values[order], people[order]
            found.append(
                {
                    "kind": "person",
                    "measure": name,
                    **compare_subset(full, kept),
                    **sorted_quantiles(full[kept]),
                }
            )
        rows.append(pd.DataFrame(found, columns=COMPARED))
    return rows, risk_correlation(frame, risk)


def _kept(cluster, frame: pd.DataFrame, cuts: list[int], buckets: int) -> KeptPeople:
    """`frame`'s people cut into ranges at `cuts`, each range's measures on a worker."""
    n = len(frame)
    first = np.unique(np.r_[0, cuts, n].astype(np.int64)) if n else np.array([0, 0])
    frames = [
        frame.iloc[a:b].reset_index(drop=True) for a, b in zip(first[:-1], first[1:], strict=True)
    ]
    futures = [cluster.client.scatter(f, hash=False) for f in frames]
    samples = [range_samples(f) for f in frames]
    return KeptPeople(cluster.client, futures, first, samples, list(frame.columns), set(), buckets)


@st.composite
def measures(draw):
    """People with measures of every awkward kind, and their risks at one or two levels."""
    n = draw(st.integers(0, 120))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    spread = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)
    ties = rng.integers(0, 4, n).astype(float)
    missing = rng.normal(size=n)
    missing[rng.random(n) < 0.3] = np.nan
    base = rng.normal(size=max(n // 8, 1))
    # values one within distributions.RTOL of each other: one value, a run across buckets
    close = base[rng.integers(0, base.size, n)] * (1 + rng.integers(-3, 4, n) * 1e-12)
    frame = pd.DataFrame(
        {"spread": spread, "ties": ties, "missing": missing, "close": close, "none": np.nan}
    )
    levels = draw(st.integers(1, 2))
    risks = [rng.choice([0.0, 0.1, 0.25, 1 / 3, 0.5, 1.0], n) for _ in range(levels)]
    if n and draw(st.booleans()):
        risks[0][:] = 1.0  # nobody kept below 1
    cuts = draw(st.lists(st.integers(0, n), max_size=4))
    return frame, risks, sorted(cuts), draw(st.integers(1, 7))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(found=measures())
def test_kept_comparisons_are_the_local_ones_to_the_bit(cluster, found):
    frame, risks, cuts, buckets = found
    kept = _kept(cluster, frame, cuts, buckets)
    rows, correlation = kept.compared(risks, THRESHOLDS)
    for level, risk in enumerate(risks):
        expected_rows, expected_correlation = _local(frame, risk)
        for t, expected in enumerate(expected_rows):
            got = pd.DataFrame(rows[level][t], columns=COMPARED)
            pd.testing.assert_frame_equal(got, expected, check_exact=True)
        pd.testing.assert_frame_equal(correlation[level], expected_correlation, check_exact=True)


def test_a_hand_computed_comparison(cluster):
    """Four people of values 1, 2, 2, 4, risks 0.2, 1, 0.2, 0.4, in two ranges and three
    buckets. At t = 1/2 the people of values 1, 2, 4 stay: the CDFs at 1, 2, 4 are 1/4,
    3/4, 1 and 1/3, 2/3, 1: KS = 1/12, Wasserstein = 1/12 · 1 + 1/12 · 2 = 1/4."""
    frame = pd.DataFrame({"m": [1.0, 2.0, 2.0, 4.0]})
    risk = np.array([0.2, 1.0, 0.2, 0.4])
    kept = _kept(cluster, frame, [2], 3)
    rows, correlation = kept.compared([risk], (0.5,))
    (row,) = rows[0][0]
    assert row["n_full"] == 4 and row["n_kept"] == 3 and row["median_full"] == 2.0
    assert row["ks"] == pytest.approx(1 / 12) and row["wasserstein"] == pytest.approx(1 / 4)
    assert (row["q10"], row["q50"], row["q90"]) == pytest.approx((1.2, 2.0, 3.6))
    # ranks 1, 2.5, 2.5, 4 against 1.5, 4, 1.5, 3: deviations -1.5, 0, 0, 1.5 and -1, 1.5,
    # -1, 0.5, so Spearman's r = 2.25 / sqrt(4.5 × 4.5) = 1/2
    assert correlation[0]["spearman"][0] == 0.5
    assert correlation[0]["people"][0] == 4


def test_the_risks_go_once_per_range_for_every_measure_and_are_let_go_of(cluster, monkeypatch):
    """Three measures over three ranges: each range's risks are sent once (not once a
    measure), and none of them is left on the cluster once compared."""
    from prudence_cli.engine import connect

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({name: rng.random(9) for name in ("a", "b", "c")})
    risk = rng.random(9)
    kept = _kept(cluster, frame, [3, 6], 2)
    expected = kept.compared([risk], THRESHOLDS)
    before = set(cluster.client.futures)  # the ranges' measures
    sent = []

    def counted(client, value, workers):
        future = sent_to(client, value, workers)
        sent.append(future.key)
        return future

    sent_to = connect.sent_to
    monkeypatch.setattr(connect, "sent_to", counted)
    assert kept.compared([risk], THRESHOLDS)[0] == expected[0]
    assert len(sent) == 3
    assert not _futures_left(cluster, before) & set(sent)


def _counts_fail(people, k, *args):
    if k == 1:
        raise ValueError("a range's risks could not be counted")
    from prudence_cli.measures.buckets import counted_risks

    return counted_risks(people, k, *args)


def test_a_comparison_that_fails_leaves_no_future_on_the_client(cluster, monkeypatch):
    """A range's task failing: Dask keeps its error with the traceback, which holds the
    comparison's frames; the risks sent and the other ranges' counts go all the same."""
    from prudence_cli.measures import kept_compare

    frame = pd.DataFrame({"m": np.arange(9.0)})
    kept = _kept(cluster, frame, [3, 6], 2)
    before = set(cluster.client.futures)  # the ranges' measures
    monkeypatch.setattr(kept_compare, "counted_risks", _counts_fail)
    with pytest.raises(ValueError, match="could not be counted") as failed:
        kept.compared([np.full(9, 0.5)], THRESHOLDS)
    assert failed.value is not None and _futures_left(cluster, before) <= before


def test_a_nan_risk_is_refused(cluster):
    kept = _kept(cluster, pd.DataFrame({"m": [1.0, 2.0]}), [], 2)
    with pytest.raises(ValueError, match="NaN"):
        kept.compared([np.array([0.5, np.nan])], THRESHOLDS)


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(0, 60),
    seed=st.integers(0, 2**32 - 1),
    cuts=st.lists(st.integers(0, 60), max_size=5),
)
def test_the_ranks_of_risks_read_from_the_ranges_table_are_average_ranks(n, seed, cuts):
    """The ranks a range reads from the table of distinct risks (RiskRanks), made of every
    range's counts, are average_ranks over the risks of everyone with a value, bit for bit
    — the literal ranks the assessing process used to make per person."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=n)
    values[rng.random(n) < 0.3] = np.nan
    frame = pd.DataFrame({"m": values})
    risks = np.stack(
        [rng.choice([0.0, 1 / 7, 0.25, 1 / 3, 0.5, 1.0], n), 1.0 / rng.integers(1, 9, n)]
    )
    first = np.unique(np.r_[0, [c for c in cuts if c <= n], n].astype(np.int64))
    ranges = list(zip(first[:-1].tolist(), first[1:].tolist(), strict=True))
    counted = [risk_counts(frame.iloc[a:b], "m", risks[:, a:b]) for a, b in ranges]
    table = RiskRanks.of(counted)
    present = ~np.isnan(values)
    got = [table.of_risks(risks[:, a:b][:, present[a:b]]) for a, b in ranges]
    for level in range(2):
        expected = average_ranks(risks[level][present])
        found = np.concatenate([g[level] for g in got]) if got else np.zeros(0)
        assert found.tobytes() == expected.tobytes()


def test_the_ranks_table_by_hand():
    """Risks 0.5, 1, 0.5, 0.2 in two ranges: sorted 0.2, 0.5, 0.5, 1, ranks 1, 2.5, 2.5, 4."""
    frame = pd.DataFrame({"m": [1.0, 2.0, 3.0, 4.0]})
    risks = np.array([[0.5, 1.0, 0.5, 0.2]])
    table = RiskRanks.of(
        [
            risk_counts(frame.iloc[:2], "m", risks[:, :2]),
            risk_counts(frame.iloc[2:], "m", risks[:, 2:]),
        ]
    )
    assert table.values[0].tolist() == [0.2, 0.5, 1.0]
    assert table.ranks[0].tolist() == [1.0, 2.5, 4.0]
    assert table.of_risks(risks).tolist() == [[2.5, 4.0, 2.5, 1.0]]
