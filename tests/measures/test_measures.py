"""RAC curves and i-RAC indexes (Pratesi et al., PRUDEnce, Definitions 3-4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.attacks.presence import PresenceAttack
from prudence_cli.engine import Engine
from prudence_cli.measures import rac
from prudence_cli.measures.rac import integrate, rac_curve, summarize


def test_example_8_irac_by_hand(example_view):
    level = KnowledgeLevel("presence", (("h", 1), ("visits", "exact")))
    risk = PresenceAttack().risks(example_view, level, Engine()).risk
    coverage = example_view.coverage("locations")  # blue 3, pink 1, purple 2, green 2, orange 1
    summary = summarize(risk, coverage)
    # risks 1, 1/2, 1/2, 1, 1/2 and 0 for grey (absent): mean 3.5 / 6
    assert summary.i_rac_u == pytest.approx(2.5 / 6)
    # Σ c·(1 − r) / Σ c = (0 + 0.5 + 1 + 0 + 0.5) / 9
    assert summary.i_rac_d == pytest.approx(2 / 9)
    assert summary.users == 6 and summary.users_in_view == 5
    assert summary.share_at_risk_1 == pytest.approx(2 / 6)
    curve = rac_curve(risk, coverage)
    assert curve["risk"].tolist() == [0.0, 0.5, 1.0]
    assert curve["rac_u"].tolist() == pytest.approx([1 / 6, 4 / 6, 1.0])
    assert curve["rac_d"].tolist() == pytest.approx([0.0, 4 / 9, 1.0])


def test_visits_coverage(example_view):
    assert example_view.coverage("visits").tolist() == [12, 3, 7, 7, 3, 0]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 1.0, 0.5, 1 / 3, 0.25, 0.1, 1 / 7]), st.integers(0, 9)),
        min_size=1,
        max_size=30,
    )
)
def test_closed_forms_equal_the_integral_of_the_step_curves(pairs):
    risk = np.array([r for r, _ in pairs])
    coverage = np.array([c for _, c in pairs], dtype=float)
    summary = summarize(risk, coverage)
    curve = rac_curve(risk, coverage)
    assert summary.i_rac_u == pytest.approx(integrate(curve, "rac_u"))
    if coverage.sum():
        assert summary.i_rac_d == pytest.approx(integrate(curve, "rac_d"))
    # a curve is non-decreasing and ends at 1
    assert (np.diff(curve["rac_u"]) >= 0).all() and curve["rac_u"].iloc[-1] == 1.0


def test_release_measured_against_the_original_total():
    risk = np.array([0.2, 0.2])
    coverage = np.array([3.0, 1.0])
    assert summarize(risk, coverage, total=8.0).i_rac_d == pytest.approx(0.8 * 4 / 8)


def _literal_curve(risk: np.ndarray, coverage: np.ndarray) -> pd.DataFrame:
    """RAC_U(r) and RAC_D(r) (Pratesi et al., PRUDEnce, Definition 3) at 0, 1 and every
    risk, as the definition reads: the share of people at risk ≤ r, and their coverage
    over everyone's — summed one person at a time in order of risk (stably), the order
    whose floats the engine's curve must give."""
    points = sorted({0.0, 1.0, *risk.tolist()})
    order = sorted(range(risk.shape[0]), key=lambda u: risk[u])
    total = float(coverage.sum())
    rows = []
    for r in points:
        data = 0.0
        for u in order:
            if risk[u] <= r:
                data += float(coverage[u])
        at_or_below = sum(1 for u in range(risk.shape[0]) if risk[u] <= r)
        rows.append((r, at_or_below / max(risk.shape[0], 1), data / total if total else np.nan))
    return pd.DataFrame(rows, columns=["risk", "rac_u", "rac_d"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, 1.0, 0.5, 1 / 3, 0.25, 0.1, 1 / 7]),
            st.floats(0, 1e6, allow_nan=False, allow_subnormal=False),
        ),
        max_size=40,
    ),
    st.integers(1, 7),
    st.sampled_from(["fractions", "whole", "past 2^53"]),
)
def test_the_curve_counted_a_chunk_at_a_time_is_the_definition_to_the_bit(pairs, chunk, kind):
    """Fractions are summed in the people's order of risk; whole numbers per distinct
    risk, in any order (exact) — unless their sum may pass 2^53, where order counts."""
    risk = np.array([r for r, _ in pairs], dtype=float)
    coverage = np.array([c for _, c in pairs], dtype=float)
    if kind != "fractions":
        coverage = np.floor(coverage)
    if kind == "past 2^53":  # one huge count: the others' ones are lost, or not, by order
        coverage[: len(pairs) // 2] = 1.0
        coverage[len(pairs) // 2 :][:1] = 2.0**53
    expected = _literal_curve(risk, coverage)
    for got in (rac_curve(risk, coverage, chunk=chunk), rac_curve(risk, coverage)):
        pd.testing.assert_frame_equal(got, expected, check_exact=True)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 1.0, 0.5, 1 / 3, 0.1, 1 / 7]), st.integers(0, 10**6)),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.integers(1, 39), max_size=6),
    st.randoms(use_true_random=False),
    st.integers(1, 5),
)
def test_coverage_in_pieces_measures_as_the_vector_to_the_bit(pairs, cuts, rnd, chunk):
    """A view's coverage read piece by piece, in any order, with people in no piece
    (they hold nothing), gives the vector's curve and i-RAC row, float for float; the
    i-RAC_D of the per-risk sums is Σ c·(1 − r) / Σ c (Pratesi et al., PRUDEnce,
    Definition 4)."""
    from prudence_cli.measures.per_risk import per_risk

    risk = np.array([r for r, _ in pairs], dtype=float)
    coverage = np.array([c for _, c in pairs], dtype=float)
    bounds = sorted({0, len(pairs), *(c for c in cuts if c < len(pairs))})
    pieces = [(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    rnd.shuffle(pieces)
    if len(pieces) > 1:  # the last piece not held: its people hold nothing
        a, b = pieces.pop()
        coverage[a:b] = 0.0
    held = [(a, coverage[a:b].astype(np.int32)) for a, b in pieces]
    table = per_risk(risk, lambda: held, chunk)
    assert table is not None
    curve = rac_curve(risk, coverage)
    pd.testing.assert_frame_equal(rac.curve_per_risk(len(pairs), table), curve, check_exact=True)
    # (as text: each float's shortest exact form, and NaN, of no coverage, equal to itself)
    assert repr(rac.summarize_per_risk(risk, table)) == repr(summarize(risk, coverage))
    if coverage.sum():
        literal = sum(float(c) * (1.0 - float(r)) for r, c in zip(risk, coverage, strict=True))
        assert summarize(risk, coverage).i_rac_d == pytest.approx(literal / coverage.sum())


def test_coverage_with_fractions_is_not_summed_per_risk():
    """Sums of fractions depend on their order: none per risk, and i-RAC_D is the dot
    product over the people, as the curve is their running sum in order of risk."""
    from prudence_cli.measures.per_risk import of_vector, per_risk

    risk = np.array([0.5, 1.0, 0.1, 0.5])
    coverage = np.array([1.5, 2.0, 0.25, 3.0])
    assert per_risk(risk, of_vector(coverage)) is None
    assert per_risk(np.array([np.nan, 1.0]), of_vector(np.array([1.0, 2.0]))) is None
    expected = float(np.dot(coverage, 1.0 - risk)) / float(coverage.sum())
    assert summarize(risk, coverage).i_rac_d == expected
