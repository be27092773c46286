"""The orders the engine's indexes are built on: a counting sort of element ids and a sort
within each record, against numpy's sorts, as Python and compiled; and the kernels'
Python ways with numpy's loops (enumerating subsets, the least support of an owner)
against the kernels and against itertools."""

from __future__ import annotations

from itertools import combinations
from unittest import mock

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from prudence_cli.engine import indexes, jit
from prudence_cli.engine.containment import containment_counts
from prudence_cli.engine.group_kernels import (
    counting_order,
    counting_rank,
    grouped_counts,
    match_groups,
    radix_order,
    segment_order,
    self_containment,
    self_dominance,
    sort_rows_in_runs,
)
from prudence_cli.engine.indexes import (
    _COUNTING_SORT_FROM,
    _element_order,
    _enumerate_members,
    _enumerate_packed,
    _enumerate_queries,
    _Postings,
    rarity_rank,
)
from prudence_cli.engine.problem import MATCHES, MODES, CountingProblem, Elements, QuerySpec
from prudence_cli.engine.vectorized import (
    blocks,
    counts_by_numpy,
    least_owners,
    row_ranks,
    self_dominance_by_numpy,
    subset_positions,
)

# each test runs with the kernels as Python and compiled (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernels")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), max_size=200), st.integers(0, 3))
def test_counting_order_is_the_stable_order(values, spare):
    array = np.array(values, dtype=np.int32)
    n_values = int(array.max(initial=-1)) + 1 + spare
    got = counting_order(array, n_values)
    assert got.tolist() == np.argsort(array, kind="stable").tolist()


def test_rarity_rank_of_values_that_are_not_counts_is_the_stable_order():
    """Negative or fractional values are no counts of holders: they are ranked by the
    stable order, never by the counting sort (which places each element by its value)."""
    for values in ([3, -1, 2, -1, 0], [0.5, 0.25, 0.5, 0.0, 2.0]):
        array = np.array(values)
        expected = np.empty(array.shape[0], dtype=np.int64)
        expected[np.argsort(array, kind="stable")] = np.arange(array.shape[0])
        with mock.patch.object(indexes, "_COUNTING_SORT_FROM", 0):
            assert rarity_rank(array).tolist() == expected.tolist()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 12) | st.integers(0, 255), max_size=200),
    st.sampled_from([np.int64, np.int32, np.uint8]),
)
@example([255, 3], np.uint8)  # a value at its type's largest: no wrap as Python
def test_rarity_rank_is_each_elements_place_in_the_stable_order(holders, dtype):
    """An element's rank by how few people hold it, ties by id, is its place in numpy's
    stable order, as `counting_rank` makes it (compiled, from a level of
    `_COUNTING_SORT_FROM` elements: here of any size) and as the order made whole."""
    array = np.array(holders, dtype=np.int64).astype(dtype)
    expected = np.empty(array.shape[0], dtype=np.int64)
    expected[np.argsort(array, kind="stable")] = np.arange(array.shape[0])
    got = counting_rank(array, int(array.max(initial=0)) + 1)
    assert got.dtype == np.int32 and got.tolist() == expected.tolist()
    with mock.patch.object(indexes, "_COUNTING_SORT_FROM", 0):
        assert rarity_rank(array).tolist() == expected.tolist()
    assert rarity_rank(array).tolist() == expected.tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**31 - 1) | st.integers(0, 12), max_size=200))
def test_radix_order_is_the_stable_order(values):
    """Of any non-negative 32-bit values: one pass below 2^16, two above."""
    array = np.array(values, dtype=np.int32)
    assert radix_order(array).tolist() == np.argsort(array, kind="stable").tolist()


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


# --- the kernels' Python ways with numpy's loops ------------------------------------------

RECORDS = st.lists(st.lists(st.integers(0, 30), max_size=7), max_size=8)


def _lists(records: list[list[int]]) -> Elements:
    lengths = [len(r) for r in records]
    offsets = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    elements = np.array([e for r in records for e in r], dtype=np.int32)
    values = np.arange(elements.shape[0], dtype=float) / 4
    return Elements(offsets, elements, values)


def literal_subsets(lists: Elements, starts: list[int], s: int) -> list[tuple[int, ...]]:
    """Every s-subset of positions of a record that begins at a start, start by start,
    each start's in lexicographic order (itertools)."""
    ends = np.repeat(lists.offsets[1:], lists.lengths)
    return [(p, *rest) for p in starts for rest in combinations(range(p + 1, ends[p]), s - 1)]


@settings(max_examples=80, deadline=None)
@given(RECORDS, st.integers(1, 4), st.data())
def test_numpy_enumerates_the_subsets_the_kernel_does(records, s, data):
    lists = _lists(records)
    n = int(lists.offsets[-1])
    starts = sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n)) if n else [])
    start_array = np.array(starts, dtype=np.int64)
    subsets = literal_subsets(lists, starts, s)
    ends = np.repeat(lists.offsets[1:], lists.lengths)
    got = subset_positions(ends, start_array, s)
    assert [tuple(row) for row in got.tolist()] == subsets
    per_start = np.array([sum(1 for t in subsets if t[0] == p) for p in starts], dtype=np.int64)
    owner_bits = data.draw(st.sampled_from([0, 4]))
    packed, members = [], []
    for mode in ("python", "compiled"):
        with jit.running(mode):
            packed.append(_enumerate_packed(lists, start_array, per_start, s, 5, owner_bits))
            members.append(_enumerate_members(lists, start_array, s))
    for outputs in (packed, members):
        for python_way, kernel_way in zip(*outputs, strict=True):
            assert python_way.dtype == kernel_way.dtype
            assert python_way.tolist() == kernel_way.tolist()


def test_a_long_record_with_a_large_h_makes_no_dead_end_rows():
    """s close to a record's length: few subsets, and no partial chain that cannot finish
    is laid out (C(30, 27) = 4,060 rows; the chains would be about a billion)."""
    lists = _lists([list(range(30))])
    ends = np.full(30, 30)
    got = subset_positions(ends, np.arange(30), 27)
    assert [tuple(row) for row in got.tolist()] == literal_subsets(lists, list(range(30)), 27)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5)), max_size=60), st.data())
def test_numpy_takes_the_least_owners_the_kernel_does(pairs, data):
    owner_bits = 3
    codes = np.sort(np.array([(k << owner_bits) | u for k, u in pairs], dtype=np.int64))
    queried = np.array(data.draw(st.lists(st.booleans(), min_size=8, max_size=8)))
    start = np.full(8, 99, dtype=np.int64)
    python_way, kernel_way = start.copy(), start.copy()
    least_owners(codes, owner_bits, queried, python_way)
    self_containment.py_func(codes, owner_bits, queried, kernel_way)
    assert python_way.tolist() == kernel_way.tolist()


COUNTS = st.lists(
    st.lists(st.tuples(st.integers(0, 20), st.integers(1, 4)), max_size=6), max_size=7
)


@settings(max_examples=120, deadline=None)
@given(COUNTS, st.integers(1, 4), st.sampled_from(MODES), st.integers(0, 6), st.data())
def test_numpy_enumerates_the_queries_the_kernel_does(records, s, mode, compose, data):
    """Every mode (subsets with bounds, compositions of min(H, total) visits, ratios):
    the same queries in the same order from numpy's loops and from the kernel."""
    lengths = [len(r) for r in records]
    offsets = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    lists = Elements(
        offsets,
        np.array([e for r in records for e, _ in r], dtype=np.int32),
        np.array([float(c) for r in records for _, c in r]),
    )
    n = int(offsets[-1])
    size_lo = np.array(
        data.draw(st.lists(st.integers(0, 3), min_size=len(records), max_size=len(records))),
        dtype=np.int64,
    )
    spec = QuerySpec(
        lists,
        size_lo,
        size_lo + 1,
        upper=lists.values + 2,
        mode=mode,
        compose=compose,
        delta=0.25,
    )
    starts = np.array(
        sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n))) if n else [],
        dtype=np.int64,
    )
    outputs = []
    for way in ("python", "compiled"):
        with jit.running(way):
            outputs.append(_enumerate_queries(spec, starts, s))
    for python_way, kernel_way in zip(*outputs, strict=True):
        assert python_way.dtype == kernel_way.dtype
        assert python_way.tolist() == kernel_way.tolist()


# few keys, so that groups pass 64 pairs and the kernels sweep rather than check each pair
KEYED = st.lists(
    st.tuples(st.integers(0, 1), st.integers(0, 2), st.integers(1, 5), st.integers(1, 5)),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(KEYED, KEYED, st.sampled_from(MATCHES), st.booleans())
def test_numpy_counts_the_supports_the_kernels_do(members, queries, match, bounded):
    """Members and queries of two-element keys (sorted by key), every match: each
    query's support from numpy's pairs equals the kernels' (brute force, sweeps)."""
    members, queries = sorted(members), sorted(queries)
    mkeys = np.array([[a, b] for a, b, _, _ in members], dtype=np.int32).reshape(-1, 2)
    mvals = np.array([[x, y] for _, _, x, y in members], dtype=float).reshape(-1, 2)
    qkeys = np.array([[a, b] for a, b, _, _ in queries], dtype=np.int32).reshape(-1, 2)
    qlo = np.array([[x, y] for _, _, x, y in queries], dtype=float).reshape(-1, 2)
    qlo = qlo / 2 if match == "ratio" else qlo
    qhi = qlo + 1.5 if bounded and match != "dominance" else np.full(qlo.shape, np.inf)
    qref = np.array([(x + y) % 2 for _, _, x, y in queries], dtype=np.int64)
    index = MATCHES.index(match)
    got = counts_by_numpy(index, mkeys, mvals, qkeys, qlo, qhi, qref)
    groups = match_groups(mkeys, qkeys)
    want = grouped_counts(index, mvals, qlo, qhi, qref, *groups, 4)
    assert got is not None and got.tolist() == want.tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=30), st.integers(1, 12))
def test_blocks_cover_the_items_in_order_and_bound_their_rows(sizes, rows):
    first = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=first[1:])
    found = blocks(first, rows)
    assert [lo for lo, _ in found] == [0, *[hi for _, hi in found[:-1]]][: len(found)]
    assert (found[-1][1] if found else 0) == len(sizes)
    for lo, hi in found:
        assert hi > lo and (first[hi] - first[lo] <= rows or hi == lo + 1)


def test_too_many_compositions_to_lay_out_are_left_to_the_kernel():
    """30 visits over 15 places twice each, h = 30: C(29, 14) ≈ 78M ways to split 30 in
    15 parts, one of which fits; numpy would lay them all out, the kernel's search finds
    the one (the Python way hands over before building anything)."""
    lists = Elements(np.array([0, 15]), np.arange(15, dtype=np.int32), np.full(15, 2.0))
    ones = np.ones(1, dtype=np.int64)
    spec = QuerySpec(lists, ones * 15, ones * 15, mode="compositions", compose=30)
    with jit.running("python"):
        keys, lo, hi, ref, own = _enumerate_queries(spec, np.array([0]), 15)
    assert keys.tolist() == [list(range(15))] and lo.tolist() == [[2.0] * 15]
    assert np.isinf(hi).all() and ref.tolist() == [0] and own.tolist() == [0]


def test_a_large_key_group_is_left_to_the_kernels_sweeps():
    """200 members and 200 queries of one key: 40,000 pairs for 400 rows, which numpy
    would check one by one where the kernels sweep."""
    keys = np.zeros((200, 1), dtype=np.int32)
    values = np.arange(200, dtype=float).reshape(-1, 1)
    box = MATCHES.index("box")
    ref = np.zeros(200, np.int64)
    assert counts_by_numpy(box, keys, values, keys, values, values + 5, ref) is None
    few = slice(0, 20)
    got = counts_by_numpy(
        box, keys[few], values[few], keys[few], values[few], values[few] + 5, ref[few]
    )
    assert got is not None and got.tolist() == [min(6, 20 - i) for i in range(20)]


SETS = st.lists(st.sets(st.integers(0, 9), max_size=6), min_size=1, max_size=25)


@settings(max_examples=120, deadline=None)
@given(SETS, st.lists(st.lists(st.integers(0, 9), min_size=1, max_size=3), max_size=12))
def test_a_query_of_one_or_two_places_counts_its_candidates_unchecked(sets, queries):
    """A set of one or two places (written with repeats or not) is held by exactly the
    people in both posting lists; three places are checked: as many as the literal count
    of the sets that hold each query."""
    lists = _lists([sorted(s) for s in sets])
    width = 3
    padded = np.array([(q * width)[:width] for q in queries], dtype=np.int32).reshape(-1, width)
    got = containment_counts(lists, padded, ordered=False).tolist()
    assert got == [sum(set(q) <= s for s in sets) for q in padded.tolist()]


VALUED = st.lists(
    st.dictionaries(st.integers(0, 5), st.integers(1, 4), max_size=4), min_size=1, max_size=30
)


@settings(max_examples=120, deadline=None)
@given(
    VALUED,
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5), st.integers(0, 5)), max_size=15),
    st.sampled_from(["dominance", "box", "contains"]),
)
def test_a_query_of_one_place_is_a_search_in_its_values(records, queries, match):
    """Queries of one place (unordered): the members holding it with a value in [lo, hi]
    (every holder, for contains), as many as the literal count; next to a query of two
    places checked by the kernel, each in its place."""
    lists = Elements(
        np.r_[0, np.cumsum([len(r) for r in records])].astype(np.int64),
        np.array([e for r in records for e in sorted(r)], dtype=np.int32),
        np.array([float(r[e]) for r in records for e in sorted(r)]),
    )
    n_elements = 7
    problem = CountingProblem(
        lists,
        QuerySpec(lists, np.zeros(len(records), np.int64), np.zeros(len(records), np.int64)),
        match=match,
    )
    # after two rows no query uses, as a sampled level's checks pass a buffer's tail
    flat = [5, 5, *[e for e, _, _ in queries], 0, 1]
    q_offsets = np.r_[np.arange(len(queries) + 1), len(queries) + 2].astype(np.int64) + 2
    lo = np.array([9.0, 9.0, *[float(a) for _, a, _ in queries], 1.0, 1.0])
    hi = np.array([9.0, 9.0, *[float(a + b) for _, a, b in queries], np.inf, np.inf])
    got = _Postings(lists, n_elements, distinct=True).verify(
        problem,
        q_offsets,
        np.array(flat, dtype=np.int32),
        lo,
        hi,
        np.zeros(len(queries) + 1, np.int64),
    )

    def holds(record, elements, low, high):
        return all(
            e in record and (match == "contains" or low[i] <= record[e] <= high[i])
            for i, e in enumerate(elements)
        )

    want = [
        sum(holds(r, [e], [lo[i]], [hi[i]]) for r in records)
        for i, (e, _, _) in enumerate(queries, 2)
    ]
    want.append(sum(holds(r, [0, 1], [1.0, 1.0], [np.inf, np.inf]) for r in records))
    assert got.tolist() == want


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 4),
    st.sampled_from([(0, 3), (0, 200), (-5, 5), (0, 2**40), (0, 2**31 - 1)]),
    st.data(),
)
def test_row_ranks_are_numpys_ranks_of_the_rows(width, bounds, data):
    """Packed into one integer when they fit, as records otherwise (negative values, or
    too wide together): the same ranks as numpy's unique rows."""
    low, high = bounds
    rows = data.draw(
        st.lists(st.lists(st.integers(low, high), min_size=width, max_size=width), max_size=60)
    )
    keys = np.array(rows, dtype=np.int64).reshape(len(rows), width)
    if high < 2**31:
        keys = keys.astype(np.int32)
    want = np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)
    np.testing.assert_array_equal(row_ranks(keys), want)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.integers(1, 9), max_size=12),
    st.integers(1, 3),
    st.sampled_from([0.0, 0.5]),
    st.data(),
)
def test_numpy_counts_self_dominance_as_the_kernel_does(sizes, s, step, data):
    """Each row's group members nowhere below it: numpy's pairs against the kernel's
    brute force (small groups) and sweeps (larger ones); ties and repeated rows count."""
    n = sum(sizes)
    values = data.draw(st.lists(st.integers(0, 3), min_size=n * s, max_size=n * s))
    mvals = np.array(values, dtype=float).reshape(n, s) * (1 + step)
    ends = np.cumsum(np.array(sizes, dtype=np.int64))
    starts = ends - np.array(sizes, dtype=np.int64)
    got = self_dominance_by_numpy(mvals, starts, ends)
    assert got is not None
    want = self_dominance(mvals, starts, ends, 0)
    assert got.tolist() == want.tolist()


def test_self_dominance_leaves_large_groups_and_odd_cuts_to_the_kernel():
    mvals = np.zeros((2000, 2))
    assert self_dominance_by_numpy(mvals, np.array([0]), np.array([2000])) is None
    assert self_dominance_by_numpy(mvals[:4], np.array([1]), np.array([4])) is None
