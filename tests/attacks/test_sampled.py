"""Sampled levels are honest lower bounds, as tight as the data allows (issue 21): never
above the exact risk at h, never below the risk at a smaller h of the same attack (given,
or computed for the floor when nobody asked for it), and not sampled past risk 1."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.engine import CountingProblem, Engine
from prudence_cli.engine.runner import LocalRunner
from tests.attacks.test_attacks import count_vectors, trajectories
from tests.conftest import presence_view, probability_view, trajectory_view
from tests.reference import trajectory_attack_risks, vector_attack_risks

# each test runs with the kernels as Python and compiled (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernels")

TRAJECTORY = ["location", "location_sequence", "visit"]
VECTOR = ["unique_location", "unique_location_sequence", "frequency", "probability"]


def level(attack: str, h: int, delta: float = 0.1) -> KnowledgeLevel:
    values = {"h": h, "delta": delta}
    return KnowledgeLevel(
        attack, tuple((d.name, values[d.name]) for d in ATTACKS[attack].knowledge)
    )


def instances(attack: str, view, at: KnowledgeLevel) -> int:
    """What an exact count of the level enumerates (the budget's measure)."""
    a = ATTACKS[attack]
    members, spec = a.instances(view, at)  # type: ignore[attr-defined]
    problem = CountingProblem(members, spec, match=a.match, ordered=a.ordered)  # type: ignore[attr-defined]
    return Engine().instances(problem)


def reference(attack: str, data, users, h: int) -> np.ndarray:
    if attack in TRAJECTORY:
        found = trajectory_attack_risks(data, users, attack, h)
    else:
        found = vector_attack_risks(data, users, attack, h, 0.1)
    return np.array([found[u] for u in users])


def view_of(attack: str, data, users):
    if attack in TRAJECTORY:
        return trajectory_view(data, users)
    return (probability_view if attack == "probability" else presence_view)(data, users)


@st.composite
def cases(draw):
    attack = draw(st.sampled_from(TRAJECTORY + VECTOR))
    data, users = draw(trajectories() if attack in TRAJECTORY else count_vectors())
    return attack, data, users


@settings(max_examples=80, deadline=None)
@given(cases(), st.sampled_from([2, 3]), st.integers(1, 4), st.integers(0, 2**16))
def test_a_sampled_level_lies_between_the_exact_risks_at_h_minus_1_and_h(case, h, k, seed):
    """The smaller h given as computed (as an assessment that asked for it passes it)."""
    attack, data, users = case
    view = view_of(attack, data, users)
    exact, below = reference(attack, data, users, h), reference(attack, data, users, h - 1)
    lower = level(attack, h - 1)
    engine = Engine(max_instances=0, sample=k, seed=seed)
    got = ATTACKS[attack].risks(view, level(attack, h), engine, computed={lower.key: below})
    assert (got.risk <= exact + 1e-12).all()
    assert (got.risk >= below).all()
    if got.sampled:
        assert got.floor == (lower.key,) and not got.computed_for_floor


@settings(max_examples=80, deadline=None)
@given(cases(), st.sampled_from([2, 3]), st.integers(1, 4), st.integers(0, 2**16))
def test_a_smaller_h_nobody_asked_for_is_computed_exactly_for_the_floor(case, h, k, seed):
    """A budget that fits h - 1 but not h: h - 1 is computed exactly, and floors h."""
    attack, data, users = case
    view = view_of(attack, data, users)
    lower, upper = level(attack, h - 1), level(attack, h)
    budget = instances(attack, view, lower)
    assume(instances(attack, view, upper) > budget)
    engine = Engine(max_instances=budget, sample=k, seed=seed)
    got = ATTACKS[attack].risks(view, upper, engine)
    # the same draws when the levels are made in ranges of users (gathered to sample)
    ranged = Engine(max_instances=budget, sample=k, seed=seed, runner=LocalRunner(shards=2))
    again = ATTACKS[attack].risks(view, upper, ranged)
    np.testing.assert_array_equal(again.risk, got.risk)
    assert (again.sampled, again.floor, again.instances) == (got.sampled, got.floor, got.instances)
    below = reference(attack, data, users, h - 1)
    assert (got.risk <= reference(attack, data, users, h) + 1e-12).all()
    if got.sampled:
        assert (got.risk >= below).all()
        assert got.floor == (lower.key,)
        floor = got.computed_for_floor[lower.key]
        assert not floor.sampled
        np.testing.assert_allclose(floor.risk, below)


@settings(max_examples=40, deadline=None)
@given(cases(), st.integers(1, 3), st.integers(0, 2**16))
def test_every_level_sampled_still_never_falls_below_a_smaller_h(case, k, seed):
    """With nothing fitting the budget, h = 3 is floored by h = 2 and h = 1 (themselves
    sampled, h = 1 floored by nothing): risks never decrease with h."""
    attack, data, users = case
    view = view_of(attack, data, users)
    engine = Engine(max_instances=0, sample=k, seed=seed)
    got = ATTACKS[attack].risks(view, level(attack, 3), engine)
    if not got.sampled:
        return
    computed = got.computed_for_floor
    assert set(got.floor) == set(computed) <= {level(attack, 2).key, level(attack, 1).key}
    for result in computed.values():
        assert (got.risk >= result.risk).all()
    assert (got.risk <= reference(attack, data, users, 3) + 1e-12).all()


def test_proportion_is_not_floored_by_a_smaller_h():
    """Risk may fall with h in the proportion attack: a smaller h is no lower bound."""
    data = {0: {0: 5, 1: 2, 2: 1}, 1: {0: 5, 1: 2, 3: 2}, 2: {0: 3, 1: 3, 2: 1}}
    users = [0, 1, 2]
    view = presence_view(data, users)
    ones = {level("proportion", 1).key: np.ones(3)}
    engine = Engine(max_instances=0, sample=1, seed=1)
    got = ATTACKS["proportion"].risks(view, level("proportion", 2), engine, computed=ones)
    assert got.sampled and got.floor == () and not got.computed_for_floor
    exact = vector_attack_risks(data, users, "proportion", 2, 0.1)
    assert (got.risk <= np.array([exact[u] for u in users]) + 1e-12).all()


def test_people_at_risk_1_at_a_smaller_h_are_not_sampled_again():
    """Everyone has a place of their own among 21. With 100 samples, h = 3 (1,330
    instances each) and h = 2 (210) would be sampled; h = 1 (21) fits, so it is counted
    exactly for the floor: everyone is at risk 1, and h = 2 and h = 3 check no instance at
    all. The sample counters say so."""
    trips = {
        u: [(10 + u, 0)] + [(p, t) for t, p in enumerate([0, 1, 2, 3] * 5, 1)] for u in range(6)
    }
    users = list(trips)
    view = trajectory_view(trips, users)
    engine = Engine(max_instances=30, sample=100, seed=2)
    got = ATTACKS["location_sequence"].risks(view, level("location_sequence", 3), engine)
    assert (got.risk == 1).all() and not got.sampled
    assert got.instances == 0
    h2, h1 = (got.computed_for_floor[level("location_sequence", h).key] for h in (2, 1))
    assert h2.instances == 0 and not h2.sampled
    assert h1.instances == 6 * 21 and not h1.sampled
    assert got.floor == (level("location_sequence", 2).key, level("location_sequence", 1).key)


# compiled only: as Python, its 80,000 draws take half a minute (a level this size is
# compiled whenever the kernels choose for themselves)
@pytest.mark.parametrize("kernels", ["compiled"], indirect=True)
def test_sampling_stops_once_a_person_reaches_risk_1():
    """40 records of 80 visits over 60 shared places, 2,000 samples: h = 4 is sampled (so
    are h = 3 and 2 for its floor), and its sample counter stays far below 40 × 2,000,
    because a person stops drawing once at risk 1 — at h = 3 almost everyone already is."""
    rng = np.random.default_rng(4)
    trips = {u: [(int(p), t) for t, p in enumerate(rng.integers(0, 60, 80))] for u in range(40)}
    users = list(trips)
    view = trajectory_view(trips, users)
    engine = Engine(max_instances=1000, sample=2000, seed=3)
    got = ATTACKS["location_sequence"].risks(view, level("location_sequence", 4), engine)
    assert got.sampled and (got.risk == 1).all()
    assert got.instances < 40 * 10
    h3 = got.computed_for_floor[level("location_sequence", 3).key]
    assert h3.sampled and h3.instances < 40 * 2000 / 2
