"""Array helpers shared by the stages: the same results as numpy's own."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.arrays import distinct, stable_order, union_sorted
from prudence_cli.cluster_views import locations_held


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.integers(0, 5),  # many ties: one 8-bit pass
            st.integers(0, (1 << 16) - 1),
            st.integers(0, (1 << 24) - 1),  # 16 bits, then 8
            st.integers(0, (1 << 32) - 1),  # two 16-bit passes
            st.integers(0, (1 << 39) - 1),  # keys made distinct by their position
            st.integers(-3, 3),  # negative: numpy's own sort
            st.integers(0, 1 << 40),  # too wide: numpy's own sort
        ),
        max_size=60,
    ),
    dtype=st.sampled_from([np.int32, np.int64, np.uint32, np.uint64]),
)
def test_stable_order_is_numpys_stable_argsort(values, dtype):
    info = np.iinfo(dtype)
    array = np.array([v for v in values if info.min <= v <= info.max], dtype=dtype)
    assert np.array_equal(stable_order(array), np.argsort(array, kind="stable"))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-(2**40), 2**40), max_size=60),
    st.sampled_from([np.int64, np.int32, np.uint16, np.int8, bool]),
)
def test_distinct_is_numpys_unique(values, dtype):
    """The sorted distinct integers, as np.unique gives them (same values, same dtype)."""
    array = np.array(values, dtype=np.int64)
    if dtype is not bool:
        info = np.iinfo(dtype)
        array = np.clip(array, info.min, info.max)
    array = array.astype(dtype)
    expected = np.unique(array)
    found = distinct(array)
    assert found.dtype == expected.dtype and np.array_equal(found, expected)


def test_distinct_takes_integers_only():
    with pytest.raises(TypeError, match="integers"):
        distinct(np.array([0.5, 0.5]))


@given(st.lists(st.lists(st.integers(-(2**40), 2**40), max_size=40), min_size=1, max_size=6))
def test_ranges_joined_one_at_a_time_are_the_distinct_values_of_all(parts):
    """Each part's distinct values joined in as they come (bin_numbering): np.unique of
    them all."""
    joined = np.zeros(0, dtype=np.int64)
    for part in parts:
        joined = union_sorted(joined, np.unique(np.array(part, dtype=np.int64)))
    expected = np.unique(np.array([v for p in parts for v in p], dtype=np.int64))
    assert joined.dtype == expected.dtype and np.array_equal(joined, expected)


@given(st.lists(st.lists(st.booleans(), max_size=30), max_size=5))
def test_the_locations_the_ranges_hold_are_those_of_some_range(held):
    """Each range's locations as bits (cluster_views.Built.used), ranges of any length:
    the codes some range holds, ascending, as int64."""
    ranges = [SimpleNamespace(used=np.packbits(np.array(h, dtype=bool))) for h in held]
    expected = sorted({i for h in held for i, b in enumerate(h) if b})
    found = locations_held(ranges)  # type: ignore[arg-type]
    assert found.dtype == np.int64 and found.tolist() == expected
