"""Placing the points: the visits of each (user, location) pair, as np.unique counts them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.dataviews.build import visits


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 6)), max_size=80),
    n_locations=st.integers(7, 9),
    by_user=st.booleans(),
)
def test_visits_are_what_np_unique_counts(rows, n_locations, by_user):
    """Points sorted by user (as selected) or not: the same pairs and counts."""
    if by_user:
        rows = sorted(rows, key=lambda row: row[0])
    user = np.array([u for u, _ in rows], dtype=np.int32)
    location = np.array([v for _, v in rows], dtype=np.int32)
    pair_count, pairs = visits(user, location, n_locations)
    key = user.astype(np.int64) * n_locations + location
    expected, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    assert np.array_equal(pair_count, counts[inverse.ravel()])
    assert pair_count.dtype == np.int64
    assert np.array_equal(pairs.user, expected // n_locations)
    assert np.array_equal(pairs.location, expected % n_locations)
    assert np.array_equal(pairs.count, counts)
    assert pairs.user.dtype == pairs.location.dtype == pairs.count.dtype == np.int32
