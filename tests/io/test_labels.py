"""Ids as Categoricals (io.labels): short ids packed into numbers, and numbered part by
part, give the Categorical of the plain way (`Labels`, the careful path's)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.io import labels
from prudence_cli.io.labels import Labels, arrow_categorical, packed_categorical, packed_ids

# ids of at most 8 bytes of UTF-8 and no NUL: one, two and three bytes a character
SHORT_IDS = st.text(
    alphabet=st.sampled_from(["a", "b", "z", "0", "9", " ", "\t", "~", "é", "ü", "€", "中"]),
    max_size=2,
) | st.text(alphabet=st.sampled_from(["a", "b", "0", "1", "-"]), min_size=5, max_size=8)


def _plain(ids: list[str]) -> pd.Categorical:
    numbered = Labels()
    return numbered.categorical(numbered.codes(np.array(ids, dtype=object)))


def _assert_same(fast: pd.Categorical, plain: pd.Categorical) -> None:
    assert fast.categories.dtype == plain.categories.dtype
    assert list(fast.categories) == list(plain.categories)
    assert fast.codes.dtype == plain.codes.dtype
    np.testing.assert_array_equal(fast.codes, plain.codes)


@settings(max_examples=300, deadline=None)
@given(
    ids=st.lists(SHORT_IDS, min_size=1, max_size=60),
    part_rows=st.sampled_from([1, 3, 16, labels._PART_ROWS]),
)
def test_packed_ids_are_numbered_as_labels_number_them(ids, part_rows):
    """Whatever the number of parts the keys are numbered in (one part per row or less,
    up to 256 parts, or one table)."""
    keys = packed_ids(pa.array(ids, type=pa.string()))
    assert keys is not None
    default = labels._PART_ROWS
    labels._PART_ROWS = part_rows
    try:
        fast, distinct = packed_categorical(keys)
    finally:
        labels._PART_ROWS = default
    _assert_same(fast, _plain(ids))
    assert list(distinct) == sorted(set(keys.tolist()))


def test_many_keys_are_numbered_in_parts_as_labels_number_them():
    rng = np.random.default_rng(7)
    people = np.array([f"p{k:05d}" for k in rng.permutation(60_000)], dtype=object)
    ids = people[rng.integers(0, len(people), 300_000)]
    keys = packed_ids(pa.array(ids, type=pa.string()))
    assert keys is not None and len(keys) >= 4 * labels._PART_ROWS  # several parts
    fast, _ = packed_categorical(keys)
    _assert_same(fast, _plain(list(ids)))


@pytest.mark.parametrize("ids", [["b", "a", "é", "a"], ["person-000000002", "person-1", "x"]])
def test_arrow_labels_are_numbered_as_labels_number_them(ids):
    encoded = pa.array(ids, type=pa.string()).dictionary_encode()
    fast = arrow_categorical(encoded.indices.to_numpy(), encoded.dictionary)
    _assert_same(fast, _plain(ids))
