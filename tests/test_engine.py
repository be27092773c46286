"""The counting engine against a brute-force count, on problems larger than the
attack tests use (big key groups, several partitions, every strategy and path)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.engine import Engine, SubsetProblem, _key_order, _partitions
from prudence_cli.errors import BudgetError


def random_problem(rng: np.random.Generator, n_users: int, n_elements: int, h: int):
    lengths = rng.integers(0, min(n_elements, 7) + 1, n_users)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    elements = np.concatenate(
        [np.sort(rng.choice(n_elements, n, replace=False)) for n in lengths]
    ).astype(np.int32)
    values = rng.integers(1, 6, elements.shape[0]).astype(np.int32)
    thresholds = (values - rng.integers(0, 3, values.shape[0])).clip(1).astype(np.int32)
    eligible = rng.random(values.shape[0]) < 0.8
    cumulative = np.concatenate([[0], np.cumsum(eligible)])
    usable = cumulative[offsets[1:]] - cumulative[offsets[:-1]]
    sizes = np.minimum(usable, h).astype(np.int64)
    return SubsetProblem(offsets, elements, values, thresholds, eligible, sizes)


def brute_support(p: SubsetProblem) -> np.ndarray:
    users = [
        dict(zip(p.elements[a:b].tolist(), p.values[a:b].tolist(), strict=True))
        for a, b in zip(p.offsets[:-1], p.offsets[1:], strict=True)
    ]
    out = np.zeros(p.n_users, dtype=np.int64)
    for u in range(p.n_users):
        s = int(p.sizes[u])
        if s == 0:
            continue
        a, b = p.offsets[u], p.offsets[u + 1]
        mine = [
            (int(e), int(t))
            for e, t, ok in zip(p.elements[a:b], p.thresholds[a:b], p.eligible[a:b], strict=True)
            if ok
        ]
        out[u] = min(
            sum(all(v.get(e, 0) >= t for e, t in combo) for v in users)
            for combo in itertools.combinations(mine, s)
        )
    return out


@pytest.mark.parametrize("h", [1, 2, 3, 4])
@pytest.mark.parametrize("strategy", ["keyed", "posting"])
def test_large_groups_match_brute_force(h, strategy):
    rng = np.random.default_rng(h)
    problem = random_problem(rng, n_users=300, n_elements=8, h=h)
    engine = Engine(strategy=strategy, brute_limit=16, partition_instances=500)
    np.testing.assert_array_equal(engine.min_support(problem), brute_support(problem))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(1, 12), st.integers(1, 4))
def test_random_problems_match_brute_force(seed, n_users, n_elements, h):
    problem = random_problem(np.random.default_rng(seed), n_users, n_elements, h)
    expected = brute_support(problem)
    for strategy in ("auto", "keyed", "posting"):
        engine = Engine(strategy=strategy, brute_limit=0, partition_instances=7)
        np.testing.assert_array_equal(engine.min_support(problem), expected)


def test_key_order_is_lexicographic_with_and_without_packing():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, size=(500, 3)).astype(np.int32)
    expected = sorted(range(500), key=lambda i: tuple(keys[i]))
    for n_elements in (50, 2**30):  # packed into int64, then too wide: lexsort
        order = _key_order(keys, n_elements)
        assert [tuple(keys[i]) for i in order] == [tuple(keys[i]) for i in expected]


def test_partitions_cover_every_element_within_budget():
    weights = np.array([3.0, 0, 5, 9, 1, 1, 1, 0])
    ranges = _partitions(weights, budget=5)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(weights)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    for lo, hi in ranges:
        assert weights[lo:hi].sum() <= 5 or hi - lo == 1


def test_budget_stops_before_enumerating():
    problem = random_problem(np.random.default_rng(1), n_users=50, n_elements=8, h=3)
    with pytest.raises(BudgetError, match="engine.max_instances"):
        Engine(max_instances=10).min_support(problem)


def test_users_without_query_get_zero():
    problem = random_problem(np.random.default_rng(2), n_users=20, n_elements=5, h=2)
    support = Engine().min_support(problem)
    assert (support[problem.sizes == 0] == 0).all()
    assert (support[problem.sizes > 0] >= 1).all()
