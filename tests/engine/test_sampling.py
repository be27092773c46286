"""Sampled levels in the engine: every support found is a true one (so risks are lower
bounds), targets with few instances are counted exactly, and a target whose support is 1
stops drawing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.engine import CountingProblem, Elements, Engine, QuerySpec
from tests.engine.test_engine import MATCH_MODES, random_problem
from tests.reference import engine_support, queries_of_size

# each test runs with the kernels as Python and compiled (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernels")


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 40),
    st.integers(2, 9),
    st.integers(2, 4),
    st.sampled_from(MATCH_MODES),
    st.integers(1, 6),
)
def test_sampled_supports_are_never_below_the_exact_ones(seed, n_users, n, h, match_mode, k):
    problem = random_problem(np.random.default_rng(seed), n_users, n, h, *match_mode)
    exact = np.array(engine_support(problem))
    got = Engine(max_instances=0, sample=k, seed=seed).min_support(problem)
    queried = exact > 0
    assert (got.minimum[queried] >= exact[queried]).all()
    if not got.sampled:  # only whole-record queries: exact
        assert got.minimum.tolist() == exact.tolist()
    assert (got.minimum[~queried] == 0).all()


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 30),
    st.integers(2, 8),
    st.integers(2, 3),
    st.sampled_from(MATCH_MODES),
)
def test_targets_with_at_most_sample_instances_are_counted_exactly(seed, n_users, n, h, match_mode):
    problem = random_problem(np.random.default_rng(seed), n_users, n, h, *match_mode)
    most = max(
        (
            sum(per_size)
            for per_size in zip(
                *(queries_of_size(problem, s) for s in range(1, h + 1)), strict=True
            )
        ),
        default=0,
    )
    if problem.queries.mode == "compositions":
        most = 10_000  # the planned count is an upper bound there: leave room for it
    got = Engine(max_instances=0, sample=max(most, 1)).min_support(problem)
    assert got.minimum.tolist() == engine_support(problem)


def unique_places(n_users: int, shared: int = 40, own: int = 3) -> CountingProblem:
    """Every user visits all `shared` places and `own` places of their own: each one's
    rarest elements are held by them alone."""
    lists = [
        np.concatenate([np.arange(shared), shared + u * own + np.arange(own)])
        for u in range(n_users)
    ]
    lengths = np.array([len(x) for x in lists])
    members = Elements.from_rows(
        n_users, np.repeat(np.arange(n_users), lengths), np.concatenate(lists)
    )
    sizes = np.full(n_users, 3)
    return CountingProblem(members, QuerySpec(members, sizes, sizes), match="contains")


def test_a_target_at_support_one_stops_drawing():
    problem = unique_places(30)
    got = Engine(max_instances=10, sample=2000, seed=1).min_support(problem)
    assert got.sampled
    assert (got.minimum == 1).all()
    # the rarest-elements query of each finds support 1: no random draw follows
    assert got.instances == 30


def test_targets_not_yet_at_one_keep_drawing_up_to_sample():
    """Two users with the same list: no draw can go below support 2, so both draw every
    one of their `sample` instances (after the rarest-elements one)."""
    same = np.tile(np.arange(20), 2)
    members = Elements.from_rows(2, np.repeat([0, 1], 20), same)
    sizes = np.full(2, 3)
    problem = CountingProblem(members, QuerySpec(members, sizes, sizes), match="contains")
    got = Engine(max_instances=10, sample=50, seed=1).min_support(problem)
    assert got.minimum.tolist() == [2, 2]
    assert got.instances == 2 * (1 + 50)


def _splitmix(z: int) -> int:
    """SplitMix64's finalizer, on Python integers (the literal definition)."""
    mask = 2**64 - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def _uniform(key: int, round_: int, target: int, j: int, i: int) -> float:
    """sampling.uniforms' number (target, round, draw j, position i), literally."""
    mask, gamma = 2**64 - 1, 0x9E3779B97F4A7C15
    seed = key ^ _splitmix(((target + 1) * gamma) & mask)
    seed = _splitmix((_splitmix(seed) + (round_ + 1) * gamma) & mask)
    z = _splitmix((seed + (((j << 24) + i + 1) * gamma)) & mask)
    return (z >> 11) * 2.0**-53


@settings(max_examples=50, deadline=None)
@given(
    st.integers(0, 2**64 - 1),
    st.integers(0, 30),
    st.lists(st.integers(0, 2**40), min_size=1, max_size=5),
    st.integers(1, 4),
    st.integers(1, 5),
)
def test_the_draws_random_numbers_are_splitmix64_at_their_point(key, round_, targets, k, width):
    from prudence_cli.engine.sampling import uniforms

    found = uniforms(key, round_, np.array(targets), k, width)
    assert found.shape == (len(targets) * k, width)
    for t, target in enumerate(targets):
        for j in range(k):
            row = [_uniform(key, round_, target, j, i) for i in range(width)]
            assert found[t * k + j].tolist() == row


def test_the_draws_random_numbers_are_uniform():
    from prudence_cli.engine.sampling import uniforms

    values = uniforms(12345, 1, np.arange(20_000), 4, 3).ravel()
    assert ((values >= 0) & (values < 1)).all()
    ordered = np.sort(values)  # Kolmogorov-Smirnov against U(0, 1): D < 1.63 / sqrt(n)
    n = ordered.size
    gap = max(np.max(np.arange(1, n + 1) / n - ordered), np.max(ordered - np.arange(n) / n))
    assert gap < 1.63 / np.sqrt(n)
    assert len(np.unique(values)) == n


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(MATCH_MODES), st.sampled_from([1, 7, 100]))
def test_a_targets_draws_do_not_depend_on_how_targets_are_chunked(seed, match_mode, chunk):
    """Each target's random numbers are its own: checking the draws a few targets at a
    time or all at once finds the same supports."""
    problem = random_problem(np.random.default_rng(seed), 30, 8, 3, *match_mode)
    settings_ = dict(max_instances=0, sample=6, seed=seed)
    alone = Engine(**settings_, partition_instances=1).min_support(problem)
    together = Engine(**settings_, partition_instances=chunk * 1000).min_support(problem)
    assert alone.minimum.tolist() == together.minimum.tolist()
    assert alone.instances == together.instances
