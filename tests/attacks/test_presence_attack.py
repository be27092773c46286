"""The presence attack (Pratesi et al., PRUDEnce, 4.1.1): worked examples and the reference
definition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.attacks.presence import PresenceAttack, known_counts
from prudence_cli.engine import CountingProblem, Elements, Engine, QuerySpec
from prudence_cli.engine.runner import LocalRunner
from tests.conftest import presence_view
from tests.reference import presence_risks

# each test runs with the kernels as Python and compiled (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernels")

ATTACK = PresenceAttack()


def level(h: int | str, visits: str) -> KnowledgeLevel:
    return KnowledgeLevel("presence", (("h", h), ("visits", visits)))


def test_example_9_candidates_of_d2_at_least_2(example_view):
    """Mr. Smith parked twice at D2: purple (3), green (3) and blue (4) match → 1/3."""
    d2 = example_view.locations["label"].tolist().index("D2")
    n = example_view.n_users
    members = example_view.elements()
    mine = (example_view.user == 0) & (example_view.location == d2)  # blue's D2 pair
    query = Elements(members.offsets, members.elements, np.full(len(mine), 2.0)).select(mine)
    sizes = np.array([1] + [0] * (n - 1))
    problem = CountingProblem(members, QuerySpec(query, size_lo=sizes, size_hi=sizes))
    assert Engine().min_support(problem).minimum[0] == 3


@pytest.mark.parametrize(
    ("h", "visits", "expected"),
    [
        # blue is alone with B2 ≥ 5; pink/orange share C2; purple's best is B2 ≥ 4
        # (blue and purple); green alone at D1; grey is absent from the view.
        (1, "exact", [1, 1 / 2, 1 / 2, 1, 1 / 2, 0]),
        (2, "exact", [1, 1 / 2, 1 / 2, 1, 1 / 2, 0]),
        ("all", "exact", [1, 1 / 2, 1 / 2, 1, 1 / 2, 0]),
        # half: only blue's B2 (ceil(5/2) = 3 ≥ f = 3) is usable: B2 ≥ 3 → blue, purple.
        # Every other instance is below f, so all 5 users of the view are candidates.
        (1, "half", [1 / 2, 1 / 5, 1 / 5, 1 / 5, 1 / 5, 0]),
        (3, "half", [1 / 2, 1 / 5, 1 / 5, 1 / 5, 1 / 5, 0]),
        # none: a count of 1 is below f = 3: the attacker learns nothing.
        (2, "none", [1 / 5, 1 / 5, 1 / 5, 1 / 5, 1 / 5, 0]),
    ],
)
def test_example_8_risks_by_hand(example_view, h, visits, expected):
    risks = ATTACK.risks(example_view, level(h, visits), Engine()).risk
    np.testing.assert_allclose(risks, expected)


def test_known_counts_round_half_up():
    counts = np.array([1, 2, 3, 4, 5])
    assert known_counts(counts, "exact").tolist() == [1, 2, 3, 4, 5]
    assert known_counts(counts, "half").tolist() == [1, 1, 2, 2, 3]
    assert known_counts(counts, "none").tolist() == [1, 1, 1, 1, 1]


def test_known_ones_are_kept_at_one(example_view):
    known = np.array([False, False, True, False, False, False])
    risks = ATTACK.risks(example_view, level(2, "exact"), Engine(), known_ones=known).risk
    assert risks[2] == 1.0
    assert risks[1] == 0.5


@st.composite
def presence_data(draw):
    n_users = draw(st.integers(1, 9))
    n_locations = draw(st.integers(1, 6))
    frequency = draw(st.integers(1, 4))
    data = {}
    for u in range(n_users):
        counts = draw(
            st.dictionaries(st.integers(0, n_locations - 1), st.integers(1, 9), max_size=5)
        )
        data[u] = counts
    return data, list(range(n_users)), frequency


@settings(max_examples=150, deadline=None)
@given(
    presence_data(),
    st.sampled_from([1, 2, 3, 4, "all"]),
    st.sampled_from(["exact", "half", "none"]),
    st.sampled_from(["auto", "keyed", "posting"]),
    st.sampled_from([0, 4096]),
    st.sampled_from([1, 3]),
)
def test_engine_equals_reference(case, h, visits, strategy, brute_limit, shards):
    data, users, frequency = case
    kept = {u: {loc: c for loc, c in d.items() if c >= frequency} for u, d in data.items()}
    view = presence_view(kept, users, frequency)
    # 3 shards: the levels are made in ranges of users and counted from them
    engine = Engine(
        strategy=strategy,
        brute_limit=brute_limit,
        partition_instances=5,
        runner=LocalRunner(shards=shards),
    )
    got = ATTACK.risks(view, level(h, visits), engine).risk
    expected = presence_risks(kept, users, frequency, h, visits)
    np.testing.assert_allclose(got, [expected[u] for u in users])


@settings(max_examples=40, deadline=None)
@given(presence_data(), st.sampled_from(["exact", "half", "none"]))
def test_risk_is_monotone_in_h(case, visits):
    data, users, frequency = case
    kept = {u: {loc: c for loc, c in d.items() if c >= frequency} for u, d in data.items()}
    view = presence_view(kept, users, frequency)
    previous = np.zeros(len(users))
    for h in (1, 2, 3, "all"):
        risks = ATTACK.risks(view, level(h, visits), Engine()).risk
        assert (risks >= previous - 1e-12).all()
        previous = risks
