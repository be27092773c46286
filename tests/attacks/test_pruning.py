"""Pruning by a smaller h (attacks/base.py): an exact level may first count the next
smaller h, which nobody asked for, and skip the people it puts at risk 1. The risks are
those of the level counted in full, for every attack, h and engine strategy; an attack
whose risk may fall with h (proportion) is never pruned."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.engine import CountingProblem, Engine, Support
from prudence_cli.engine.runner import LocalRunner
from tests.attacks.test_attacks import count_vectors
from tests.attacks.test_sampled import cases, level, reference, view_of
from tests.conftest import presence_view, trajectory_view
from tests.reference import vector_attack_risks

# each test runs with the kernels as Python and compiled (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernels")

STRATEGIES = ["auto", "keyed", "posting"]


@dataclass
class Recording(Engine):
    """An engine that remembers the number of targets of every problem it counts."""

    targets: list[int] = field(default_factory=list)

    def min_support(self, problem: CountingProblem, floats: bool = False) -> Support:
        self.targets.append(int((problem.queries.size_hi > 0).sum()))
        return super().min_support(problem, floats)


@settings(max_examples=120, deadline=None)
@given(cases(), st.sampled_from([2, 3, 4]), st.sampled_from(STRATEGIES))
def test_pruned_risks_equal_the_full_count_and_the_definition(case, h, strategy):
    attack, data, users = case
    view = view_of(attack, data, users)
    at = level(attack, h)
    full = ATTACKS[attack].risks(view, at, Engine(strategy=strategy, prune_from=0))
    pruned = ATTACKS[attack].risks(view, at, Engine(strategy=strategy, prune_from=1, prune_gain=0))
    np.testing.assert_array_equal(pruned.risk, full.risk)
    # the same, each level made in ranges of users (attacks/ranged.py)
    runner = LocalRunner(shards=3)
    ranged = Engine(strategy=strategy, prune_from=1, prune_gain=0, runner=runner)
    np.testing.assert_array_equal(ATTACKS[attack].risks(view, at, ranged).risk, full.risk)
    np.testing.assert_allclose(pruned.risk, reference(attack, data, users, h))
    assert not pruned.sampled and not pruned.computed_for_floor and not pruned.floor


@settings(max_examples=40, deadline=None)
@given(count_vectors(), st.sampled_from([2, 3]), st.sampled_from([0.0, 0.34]))
def test_proportion_whose_risk_may_fall_with_h_is_never_pruned(case, h, delta):
    data, users = case
    view = presence_view(data, users)
    engine = Recording(prune_from=1, prune_gain=0)
    got = ATTACKS["proportion"].risks(view, level("proportion", h, delta), engine)
    expected = vector_attack_risks(data, users, "proportion", h, delta)
    np.testing.assert_allclose(got.risk, [expected[u] for u in users])
    assert len(engine.targets) == 1


def test_people_at_risk_1_at_a_smaller_h_are_not_queried_again():
    """Users 0 and 1 each have a visit nobody else has (risk 1 from h = 1); the others
    share every visit. Pruning counts h = 1, then h = 2 and 3 querying only the others."""
    shared = [(0, 0), (1, 1), (2, 2)]
    data = {0: [(9, 0), *shared], 1: [(8, 1), *shared], 2: shared, 3: shared, 4: shared}
    users = list(data)
    view = trajectory_view(data, users)
    engine = Recording(prune_from=1, prune_gain=0)
    got = ATTACKS["visit"].risks(view, level("visit", 3), engine)
    assert engine.targets == [5, 3, 3]  # h = 1 for all, then h = 2 and 3 for the others
    np.testing.assert_allclose(got.risk, [1.0, 1.0, 0.2, 0.2, 0.2])
    unpruned = Recording(prune_from=0)
    np.testing.assert_array_equal(
        ATTACKS["visit"].risks(view, level("visit", 3), unpruned).risk, got.risk
    )
    assert unpruned.targets == [5]


@pytest.mark.parametrize("given", [False, True])
def test_an_exact_level_is_counted_without_its_floor_or_the_smaller_hs_risks(given, monkeypatch):
    """Counting an exact level, the assessing process holds no vector of a number a
    person beside its supports: the smaller h's risks that pruned it (`given`: found
    among those computed before) and the floor they made are let go once they have
    marked the people at 1 — the same risks."""
    import gc
    import weakref

    from prudence_cli.attacks import base

    shared = [(0, 0), (1, 1), (2, 2)]
    data = {0: [(9, 0), *shared], 1: [(8, 1), *shared], 2: shared, 3: shared, 4: shared}
    view = trajectory_view(data, list(data))
    held: list[weakref.ref] = []
    for name in ("_made", "_floor_of", "_at_one"):
        made = getattr(base, name)

        def kept(*args, made=made):
            found = made(*args)
            vector = found[0] if isinstance(found, tuple) else found  # _floor_of: (floor, keys)
            if made.__name__ == "_at_one":  # the smaller h's risks
                held.append(weakref.ref(args[0]))
            elif vector is not None:  # (_at_one's is of who is at 1: a byte a person)
                held.append(weakref.ref(vector))
            return found

        monkeypatch.setattr(base, name, kept)
    alive: list[int] = []

    class Checking(Engine):
        def min_support(self, problem, floats=False):
            gc.collect()
            alive.append(sum(ref() is not None for ref in held))
            return super().min_support(problem, floats)

    computed = {}
    if given:
        below = ATTACKS["visit"].risks(view, level("visit", 1), Engine()).risk
        computed = {level("visit", 1).key: below}
        held.append(weakref.ref(below))
        del below
    engine = Checking(prune_from=1, prune_gain=0)
    got = ATTACKS["visit"].risks(view, level("visit", 2), engine, computed=computed)
    np.testing.assert_allclose(got.risk, [1.0, 1.0, 0.2, 0.2, 0.2])
    assert held and alive[-1] == int(given)  # what was given is the caller's
    if not given:  # h = 1 counted first, to prune h = 2
        assert len(alive) == 2


def test_a_level_below_the_threshold_or_with_its_smaller_h_known_is_not_pruned():
    data = {u: [(u % 3, 0), (u % 2, 1), (4, 2)] for u in range(6)}
    users = list(data)
    view = trajectory_view(data, users)
    at = level("visit", 2)
    cheap = Recording(prune_gain=0)  # the default threshold is far above this level's cost
    ATTACKS["visit"].risks(view, at, cheap)
    assert cheap.targets == [6]
    given_below = Recording(prune_from=1, prune_gain=0)
    below = ATTACKS["visit"].risks(view, level("visit", 1), Engine()).risk
    ATTACKS["visit"].risks(view, at, given_below, computed={level("visit", 1).key: below})
    assert len(given_below.targets) == 1


def _literal_floor(lower, floor, known_ones):
    """The floor a pruned level was once given: np.where over whole vectors."""
    made = floor if floor is not None else np.zeros(lower.shape[0])
    if floor is None and known_ones is not None:
        made = np.where(known_ones, 1.0, 0.0)
    return np.where(lower >= 1.0, 1.0, made)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(0, 50),
    given_floor=st.sampled_from(["floor", "known", "both", "none"]),
)
def test_the_people_a_pruned_level_does_not_query_are_those_its_floor_put_at_1(
    seed, n, given_floor
):
    """Who is at risk 1 at the smaller h or before it, made without a floor: those the
    floor of np.where over whole vectors put at 1, NaN included. A floor given with known
    ones holds them already."""
    from prudence_cli.attacks import base

    rng = np.random.default_rng(seed)
    lower = rng.choice([0.0, 0.25, 0.5, 1.0, np.nan], n)
    floor = rng.choice([0.0, 0.5, 1.0], n) if given_floor in ("floor", "both") else None
    known = rng.random(n) < 0.3 if given_floor in ("known", "both") else None
    before = floor >= 1 if floor is not None else known
    ones = base._at_one(lower, before)
    np.testing.assert_array_equal(ones, _literal_floor(lower, floor, known) >= 1)


def test_who_a_pruned_level_does_not_query_takes_no_other_vector_of_a_number_a_person():
    """4M people: a byte each, where np.where's floor took a vector of 32 MB and a mask
    beside the smaller h's risks."""
    import tracemalloc

    from prudence_cli.attacks import base

    rng = np.random.default_rng(3)
    lower = rng.choice([0.1, 0.5, 1.0], 4_000_000)
    before = rng.random(lower.shape[0]) < 0.5
    tracemalloc.start()
    try:
        base._at_one(lower, before)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * lower.shape[0]
