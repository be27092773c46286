"""The engine's instance counts (binomials in log space, never a table) and whole-record
queries (h = all, or h at or above a record's length: one query, whatever the length),
against literal enumerations and math.comb."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.engine import CountingProblem, Elements, Engine, QuerySpec
from prudence_cli.engine.indexes import _StartIndex
from prudence_cli.engine.plan import _SATURATE, _binomials, binomial
from tests.engine.test_engine import MATCH_MODES, random_problem
from tests.reference import engine_support, queries_of_size, subsets_by_first_element

# each test runs with the kernels as Python and compiled (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernels")


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 6000), st.integers(-2, 6002))
def test_binomial_is_exact_below_saturation_and_saturates_above(n, k):
    expected = math.comb(n, k) if 0 <= k <= n else 0
    assert binomial(n, k) == min(expected, _SATURATE)


def test_binomial_at_the_saturation_edge():
    # C(66, 33) ≈ 7.2e18 > 2**62; C(64, 32) ≈ 1.8e18 < 2**62; C(10**9, 2) fits
    for n, k in [(66, 33), (64, 32), (65, 32), (63, 31), (10**9, 2), (10**6, 4), (3000, 1500)]:
        assert binomial(n, k) == min(math.comb(n, k), _SATURATE)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.integers(1, 9), st.integers(1, 5))
def test_subsets_per_first_element_match_enumeration(seed, n_users, n_elements, s):
    problem = random_problem(np.random.default_rng(seed), n_users, n_elements, s)
    lists = problem.members
    got = _StartIndex(lists, n_elements).weights(s, n_elements)
    assert got.tolist() == subsets_by_first_element(lists, s, n_elements)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 25),
    st.integers(1, 8),
    st.integers(1, 4),
    st.sampled_from(MATCH_MODES),
)
def test_planned_counts_match_enumeration(seed, n_users, n_elements, h, match_mode):
    """Members: exactly the s-subsets of every list; queries: exactly the queries drawn
    (an upper bound in compositions mode, which counts parts without their caps)."""
    problem = random_problem(np.random.default_rng(seed), n_users, n_elements, h, *match_mode)
    for plan in Engine().plan(problem):
        lists = problem.members
        assert plan.members == sum(subsets_by_first_element(lists, plan.size, n_elements))
        drawn = sum(queries_of_size(problem, plan.size))
        if problem.queries.mode == "compositions":
            assert plan.queries >= drawn
        else:
            assert plan.queries == drawn


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 40),
    st.integers(1, 9),
    st.sampled_from(MATCH_MODES),
    st.sampled_from(["auto", "keyed", "posting"]),
)
def test_whole_records_match_the_reference(seed, n_users, n_elements, match_mode, strategy):
    """h = all (h above every length): each target's one query is its whole list."""
    problem = random_problem(np.random.default_rng(seed), n_users, n_elements, 99, *match_mode)
    got = Engine(strategy=strategy, max_instances=n_users).min_support(problem)
    assert got.minimum.tolist() == engine_support(problem)
    assert not got.sampled
    assert got.instances == int((problem.queries.size_hi > 0).sum())


def long_record_problem(length: int, others: int, seed: int = 5) -> CountingProblem:
    """One record of `length` visits over 400 places, `others` short ones (30 visits) made
    of pieces of it, as ordered lists; every target's query is its whole record."""
    rng = np.random.default_rng(seed)
    long = rng.integers(0, 400, length)
    lists = [long]
    for _ in range(others):
        start = int(rng.integers(0, length - 30))
        lists.append(long[start : start + 30].copy())
    lengths = np.array([len(x) for x in lists])
    members = Elements.from_rows(
        len(lists), np.repeat(np.arange(len(lists)), lengths), np.concatenate(lists)
    )
    spec = QuerySpec(members, size_lo=lengths, size_hi=lengths)
    return CountingProblem(members, spec, match="contains", ordered=True)


def test_a_record_of_thousands_of_visits_at_h_all_is_one_query_in_well_under_a_second():
    small = long_record_problem(200, 20)
    assert Engine().min_support(small).minimum.tolist() == engine_support(small)
    problem = long_record_problem(6000, 50)
    engine = Engine(max_instances=51)  # one instance per target and not one more
    started = time.perf_counter()
    got = engine.min_support(problem)
    seconds = time.perf_counter() - started
    assert seconds < 0.5
    assert got.instances == 51 and not got.sampled
    assert got.minimum[0] == 1  # nobody else holds the whole long record
    assert (got.minimum[1:] >= 2).all()  # the long record holds every piece of itself


@pytest.mark.parametrize("h", [31, 50])
def test_targets_shorter_than_h_know_their_whole_record_exactly_in_a_sampled_level(h):
    """At h = 31 or 50 the long record's h-subsequences are far over the budget, so the
    level is sampled; the 30-visit records are whole-record queries, exact all the same."""
    problem = long_record_problem(6000, 50)
    lengths = problem.queries.elements.lengths
    sizes = np.minimum(lengths, h)
    spec = QuerySpec(problem.members, size_lo=sizes, size_hi=sizes)
    level = CountingProblem(problem.members, spec, match="contains", ordered=True)
    got = Engine(max_instances=1000, sample=3, seed=1).min_support(level)
    assert got.sampled
    short = np.where(lengths < h, sizes, 0)
    only_short = CountingProblem(
        problem.members, QuerySpec(problem.members, short, short), "contains", ordered=True
    )
    expected = engine_support(only_short)
    assert got.minimum[1:].tolist() == expected[1:]
    assert got.minimum[0] >= 1


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-3, 3000), max_size=40), st.integers(0, 40), st.booleans())
def test_binomials_per_entry_equal_math_comb(values, s, dense):
    """Both ways: a table up to the largest value (dense entries) or one per distinct one."""
    n = np.array(values * (3000 if dense else 1), dtype=np.int64)
    expected = [min(math.comb(v, s), _SATURATE) if v >= 0 else 0 for v in n.tolist()]
    assert _binomials(n, s).tolist() == expected
