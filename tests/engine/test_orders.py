"""The orders the engine's indexes are built on: a counting sort of element ids and a sort
within each record, against numpy's sorts, as Python and compiled."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.engine import jit
from prudence_cli.engine.group_kernels import counting_order, segment_order, sort_rows_in_runs
from prudence_cli.engine.indexes import _COUNTING_SORT_FROM, _element_order

# each test runs with the kernels as Python and compiled (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernels")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), max_size=200), st.integers(0, 3))
def test_counting_order_is_the_stable_order(values, spare):
    array = np.array(values, dtype=np.int32)
    n_values = int(array.max(initial=-1)) + 1 + spare
    got = counting_order(array, n_values)
    assert got.tolist() == np.argsort(array, kind="stable").tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 99), unique=True, max_size=40), max_size=30))
def test_segment_order_sorts_each_record_in_place(records):
    lengths = [len(r) for r in records]
    offsets = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    keys = np.array([k for r in records for k in r], dtype=np.int32)
    owners = np.repeat(np.arange(len(records)), lengths)
    expected = np.argsort(owners * 100 + keys, kind="stable")
    assert segment_order(offsets, keys).tolist() == expected.tolist()


def test_the_element_order_is_the_same_whichever_sort_makes_it():
    rng = np.random.default_rng(5)
    elements = rng.integers(0, 500, _COUNTING_SORT_FROM + 7).astype(np.int32)
    with jit.running("compiled"):
        counted = _element_order(elements, 500)
    with jit.running("python"):
        sorted_ = _element_order(elements, 500)
    assert np.array_equal(counted, sorted_)
    assert np.array_equal(counted, np.argsort(elements, kind="stable"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), max_size=30), max_size=12))
def test_rows_sorted_run_by_run_are_the_rows_stably_sorted(runs):
    """Runs of keys, each run's keys above the ones before (as the engine enumerates
    them), sorted in place run by run: the stable sort of all the rows."""
    keys = np.array([10 * r + k for r, run in enumerate(runs) for k in run], dtype=np.int64)
    bounds = np.zeros(len(runs) + 1, dtype=np.int64)
    np.cumsum([len(run) for run in runs], out=bounds[1:])
    vals = np.arange(2 * keys.shape[0], dtype=float).reshape(-1, 2)
    own = np.arange(keys.shape[0], dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    expected = keys[order], vals[order], own[order]
    sort_rows_in_runs(keys, vals, own, bounds)
    for got, want in zip((keys, vals, own), expected, strict=True):
        assert got.tolist() == want.tolist()
