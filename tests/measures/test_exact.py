"""Exact sums (measures/exact.py): the correctly rounded sum of any doubles, the same bits
however the terms are split — checked against Python's exact rationals."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.measures import exact
from prudence_cli.measures.exact import ExactSum, exact_sum, sum_of

FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)


def _reference(values: list[float]) -> float:
    """The exact sum as a rational, rounded once to the nearest double."""
    total = sum((Fraction(v) for v in values), Fraction(0))
    try:
        return float(total)
    except OverflowError:
        return math.inf if total > 0 else -math.inf


@settings(max_examples=300, deadline=None)
@given(st.lists(FINITE, max_size=60), st.data())
def test_an_exact_sum_is_the_rational_sum_rounded_once_however_it_is_split(values, data):
    expected = _reference(values)
    assert sum_of(np.array(values)) == expected
    cuts = sorted(data.draw(st.lists(st.integers(0, len(values)), max_size=4)))
    pieces = [values[a:b] for a, b in zip([0, *cuts], [*cuts, len(values)], strict=True)]
    order = data.draw(st.permutations(range(len(pieces))))
    total = sum((exact_sum(np.array(pieces[i])) for i in order), ExactSum())
    assert float(total) == expected


def test_subnormals_signed_zeros_and_cancellation():
    tiny = 5e-324
    assert sum_of(np.array([tiny, tiny, -tiny])) == tiny
    assert sum_of(np.array([1e308, -1e308, 1e-308])) == 1e-308
    assert sum_of(np.array([1.0, 1e100, 1.0, -1e100])) == 2.0  # numpy's sum gives 0.0
    assert sum_of(np.array([-0.0, 0.0])) == 0.0
    assert sum_of(np.zeros(0)) == 0.0
    halfway = np.array([1.0, 2.0**-53])  # a tie: to even
    assert sum_of(halfway) == 1.0 and sum_of(np.r_[halfway, 2.0**-80]) == 1.0 + 2.0**-52


def test_non_finite_terms_add_as_ieee_addition():
    assert math.isnan(sum_of(np.array([1.0, np.nan])))
    assert sum_of(np.array([1.0, np.inf])) == math.inf
    assert sum_of(np.array([-np.inf, 1.0])) == -math.inf
    assert math.isnan(float(exact_sum(np.array([np.inf])) + exact_sum(np.array([-np.inf]))))
    assert sum_of(np.array([1.7e308, 1.7e308])) == math.inf  # the exact sum overflows


def test_long_sums_flush_their_per_exponent_parts_before_they_stop_being_exact(monkeypatch):
    """Per exponent, the parts are summed in float64 for at most 2**26 terms at a time;
    with a smaller limit the same sums, over many flushes."""
    rng = np.random.default_rng(3)
    values = rng.standard_normal(50_000) * 10.0 ** rng.integers(-5, 6, 50_000)
    expected = math.fsum(values.tolist())  # correctly rounded too
    assert sum_of(values) == expected
    monkeypatch.setattr(exact, "_BLOCK", 64)
    monkeypatch.setattr(exact, "_EXACT", 256)
    assert sum_of(values) == expected


@pytest.mark.parametrize("n", [1, 2**16 - 1, 2**16, 2**16 + 1, 200_003])
def test_sums_across_block_boundaries(n):
    values = np.random.default_rng(n).random(n) - 0.5
    assert sum_of(values) == math.fsum(values.tolist())
