"""Array helpers shared by the stages: the same results as numpy's own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.arrays import distinct, stable_order


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
