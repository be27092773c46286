"""Array helpers shared by the stages: the same results as numpy's own."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.arrays import stable_order


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
