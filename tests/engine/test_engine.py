"""The counting engine against a literal statement of its problem (tests/reference.py),
for every match, query mode and strategy, on problems with big key groups and many
partitions."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.engine import (
    CountingProblem,
    Elements,
    Engine,
    QuerySpec,
    _key_order,
    _partitions,
    plan,
)
from prudence_cli.engine.plan import _partitions_in_turn
from prudence_cli.engine.tasks import _partial, distinct_queries
from prudence_cli.errors import BudgetError
from tests.reference import engine_support

# each test runs with the kernels as Python and compiled (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernels")

MATCH_MODES = [
    ("dominance", "subsets"),
    ("box", "subsets"),
    ("ratio", "ratios"),
    ("dominance", "compositions"),
    ("contains", "subsets"),
    ("sequence", "subsets"),  # contains, ordered
    ("dominance", "self"),  # queries are the members' own subsets
    ("contains", "self"),
    ("sequence", "self"),
]


def random_problem(rng, n_users, n_elements, h, match="dominance", mode="subsets"):
    ordered = match == "sequence"
    match = "contains" if ordered else match
    lengths = rng.integers(0, min(n_elements, 6) + 1, n_users)
    if ordered:  # sequences with repeats
        elements = rng.integers(0, n_elements, lengths.sum())
    else:
        elements = np.concatenate(
            [np.sort(rng.choice(n_elements, n, replace=False)) for n in lengths] or [[]]
        )
    members = Elements.from_rows(
        n_users,
        np.repeat(np.arange(n_users), lengths),
        elements,
        rng.integers(1, 6, lengths.sum()).astype(float),
    )
    keep = rng.random(elements.shape[0]) < 0.8
    if mode == "ratios":
        lower = members.values
    elif match == "box":
        lower = members.values - rng.integers(0, 2, members.values.shape)
    else:
        lower = (members.values - rng.integers(0, 3, members.values.shape)).clip(1)
    upper = members.values + rng.integers(0, 2, members.values.shape)
    queries = Elements(members.offsets, members.elements, lower).select(keep)
    if mode == "self":
        queries, mode = members, "subsets"
    usable = queries.lengths
    size_hi = np.minimum(usable, h)
    size_lo = np.ones_like(size_hi) if mode == "compositions" else size_hi
    size_lo = np.where(size_hi > 0, size_lo, 0)
    spec = QuerySpec(
        queries,
        size_lo=size_lo,
        size_hi=size_hi,
        upper=upper[keep] if match == "box" else None,
        mode=mode,
        compose=h,
        delta=0.25,
    )
    return CountingProblem(members, spec, match=match, ordered=ordered)


@pytest.mark.parametrize(("match", "mode"), MATCH_MODES)
@pytest.mark.parametrize("strategy", ["keyed", "posting"])
def test_big_groups_match_the_reference(match, mode, strategy):
    rng = np.random.default_rng(7)
    problem = random_problem(rng, n_users=120, n_elements=6, h=2, match=match, mode=mode)
    engine = Engine(strategy=strategy, brute_limit=16, partition_instances=200)
    got = engine.min_support(problem)
    assert got.minimum.tolist() == engine_support(problem)
    assert not got.sampled


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 40),
    st.integers(1, 9),
    st.integers(1, 4),
    st.sampled_from(MATCH_MODES),
)
def test_random_problems_match_the_reference(seed, n_users, n_elements, h, match_mode):
    match, mode = match_mode
    problem = random_problem(np.random.default_rng(seed), n_users, n_elements, h, match, mode)
    expected = engine_support(problem)
    for strategy in ("auto", "keyed", "posting"):
        engine = Engine(strategy=strategy, brute_limit=0, partition_instances=7)
        assert engine.min_support(problem).minimum.tolist() == expected


@pytest.mark.parametrize(("match", "mode"), MATCH_MODES)
def test_sampling_is_a_seeded_lower_bound(match, mode):
    problem = random_problem(np.random.default_rng(3), 80, 8, 3, match, mode)
    exact = np.array(engine_support(problem))
    engine = Engine(max_instances=1, sample=3, seed=11, seed_key=(1, 2))
    first = engine.min_support(problem)
    assert first.sampled and first.instances > 0
    queried = exact > 0
    # fewer instances can only leave the minimum support as large or larger
    assert (first.minimum[queried] >= exact[queried]).all()
    assert (first.minimum[queried] >= 1).all()
    again = Engine(max_instances=1, sample=3, seed=11, seed_key=(1, 2)).min_support(problem)
    assert np.array_equal(first.minimum, again.minimum)


def test_budget_stops_before_enumerating_and_names_the_ways_out():
    problem = random_problem(np.random.default_rng(1), 50, 8, 3)
    with pytest.raises(BudgetError, match=r"smaller h, or set engine.sample: N"):
        Engine(max_instances=10).min_support(problem)


def test_key_order_is_lexicographic_with_and_without_packing():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, size=(500, 3)).astype(np.int32)
    expected = sorted(tuple(row) for row in keys)
    for n_elements in (50, 2**30):  # packed into int64, then too wide: lexsort
        order = _key_order(keys, n_elements)
        assert [tuple(keys[i]) for i in order] == expected


def test_partitions_cover_every_element_within_budget():
    weights = np.array([3.0, 0, 5, 9, 1, 1, 1, 0])
    ranges = _partitions(weights, budget=5)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(weights)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    for lo, hi in ranges:
        assert weights[lo:hi].sum() <= 5 or hi - lo == 1


def partitions_by_definition(weights, budget):
    """The greedy partitioning, literally: add each element to the open partition, and
    close it first when it holds work and the element would take it past the budget."""
    ranges, lo, acc = [], 0, 0.0
    for e, w in enumerate(weights):
        if acc > 0 and acc + float(w) > budget:
            ranges.append((lo, e))
            lo, acc = e, 0.0
        acc += float(w)
    if acc > 0:
        ranges.append((lo, len(weights)))
    return ranges


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.just(0), st.integers(0, 12), st.integers(0, 2**40)), max_size=60),
    st.integers(1, 40),
    st.sampled_from(["float", "int"]),
)
def test_partitions_searched_are_the_greedy_partitions(weights, budget, dtype):
    array = np.array(weights, dtype=np.float64 if dtype == "float" else np.int64)
    expected = partitions_by_definition(weights, budget)
    for chunk in (1 << 20, 7):  # summed and walked a chunk of elements at a time
        with mock.patch.object(plan, "_CHUNK", chunk):
            assert _partitions(array, budget) == expected
            assert _partitions_in_turn(array.astype(np.float64), budget) == expected
            unaligned = np.frombuffer(bytearray(array.nbytes + 1), array.dtype, array.size, 1)
            unaligned[:] = array  # as a Dask worker's frame can hold it
            assert _partitions(unaligned, budget) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2**40), max_size=40),
    st.lists(st.integers(0, 45), max_size=8),
    st.sampled_from([1 << 20, 1, 3, 7]),
)
def test_running_sums_at_ends_are_the_cumulative_sums(weights, ends, chunk):
    """`sums_at` (a chunk at a time) gives Σ weights[:e], as the running sum does; an
    end past the weights, their total."""
    array = np.array(weights, dtype=np.float64)
    ends = sorted(ends)
    running = np.concatenate([[0.0], np.cumsum(array)])
    expected = [running[min(e, len(weights))] for e in ends]
    unaligned = np.frombuffer(bytearray(array.nbytes + 1), array.dtype, array.size, 1)
    unaligned[:] = array
    with mock.patch.object(plan, "_CHUNK", chunk):
        assert plan.sums_at(array, ends).tolist() == expected
        assert plan.sums_at(unaligned, ends).tolist() == expected


def test_partitions_are_searched_with_no_vector_of_running_sums():
    """The running sums are made a chunk at a time (`_running`): cutting 4M elements'
    weights (32 MB) holds about a chunk's sums beside them (8 MB), not a vector of all
    of them (32 MB more)."""
    import tracemalloc

    weights = np.random.default_rng(0).integers(0, 4, 1 << 22).astype(np.float64)
    expected = partitions_by_definition(weights[:20_000].tolist(), 5000)
    tracemalloc.start()
    try:
        parts = _partitions(weights, 5000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert parts[: len(expected) - 1] == expected[:-1] and parts[-1][1] == weights.shape[0]
    assert peak < 20 * 2**20, peak


def test_partitions_of_inexact_sums_are_made_in_turn():
    """Weights that are not whole, or whose total passes 2^53, are partitioned an element
    at a time: the definition's floating-point sums, not a search of rounded ones."""
    for weights in ([0.5, 0.25, 4.5, 0.0, 3.0], [2.0**62, 1.0, 3.0, 2.0**62, 0.0, 2.0]):
        array = np.array(weights)
        assert _partitions(array, 4) == partitions_by_definition(weights, 4)


def test_a_query_asked_by_many_is_checked_once_as_its_match_reads_it():
    keys = np.array([[1, 2], [1, 2], [1, 2], [1, 3]], dtype=np.int32)
    lo = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 1.0], [1.0, 1.0]])
    hi, ref = lo + 1, np.array([0, 1, 0, 0])
    # contains reads the elements only: the first three are one query
    first, again = distinct_queries("contains", keys, lo, hi, ref)
    assert first.tolist() == [0, 3] and again.tolist() == [0, 0, 0, 1]
    # dominance reads the bounds: the third is another query
    first, again = distinct_queries("dominance", keys, lo, hi, ref)
    assert keys[first][again].tolist() == keys.tolist() and len(first) == 3
    assert again[0] == again[1] != again[2]
    # a ratio reads its reference too: all four differ
    assert len(distinct_queries("ratio", keys, lo, hi, ref)[0]) == 4


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(1, 50)), max_size=30),
    st.sampled_from([41, 100, 5000]),  # rows against people: scattered, and sorted
)
def test_partial_minimum_is_the_least_count_per_owner(rows, n_users):
    """A partition's result, by the vector of every person or by sorting its rows, is the
    literal least count of each owner, owners increasing, in 32 bits when they fit."""
    owners = np.array([u for u, _ in rows], dtype=np.int64)
    counts = np.array([c for _, c in rows], dtype=np.int64)
    least: dict[int, int] = {}
    for u, c in rows:
        least[u] = min(c, least.get(u, c))
    users, values = _partial(n_users, owners, counts)
    assert users.tolist() == sorted(least) and values.tolist() == [least[u] for u in sorted(least)]
    assert users.dtype == values.dtype == np.int32
    # a count past 32 bits travels as it is, in 64
    users, values = _partial(n_users, np.array([3, 3]), np.array([2**40, 2**35]))
    assert values.dtype == np.int64 and values.tolist() == [2**35]


def test_element_codes_beyond_32_bits_are_refused_not_wrapped():
    """Codes are int32 in the engine: a code of 2^31 would wrap to another element (and
    count people as holding what they do not); it is refused with what to do."""
    from prudence_cli.engine.problem import Elements

    user = np.array([0, 0, 1])
    fine = Elements.from_rows(2, user, np.array([5, 2**31 - 1, 7], dtype=np.int64))
    assert fine.elements.dtype == np.int32 and fine.elements[1] == 2**31 - 1
    with pytest.raises(BudgetError, match="coarser dataview"):
        Elements.from_rows(2, user, np.array([5, 2**31, 7], dtype=np.int64))
