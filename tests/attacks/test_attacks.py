"""Every attack of Pellungrini et al. (and the presence attack's relatives) against a literal
reference implementation, on many random small datasets, and on hand-made examples."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.engine import Engine
from prudence_cli.engine.runner import LocalRunner
from tests.conftest import (
    OnWorkers,
    presence_view,
    probability_view,
    ranges_number_as_the_whole,
    trajectory_view,
)
from tests.reference import trajectory_attack_risks, vector_attack_risks

# each test runs with the kernels as Python and compiled (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernels")

ENGINES = [
    Engine(),
    Engine(strategy="keyed", brute_limit=0, partition_instances=5),
    Engine(strategy="posting"),
    # levels made in ranges of users and counted shard by shard (attacks/ranged.py)
    Engine(runner=LocalRunner(shards=3), partition_instances=3),
    Engine(strategy="posting", runner=LocalRunner(shards=2)),
]


def risks(attack: str, view, engine: Engine = ENGINES[0], **knowledge) -> np.ndarray:
    names = [d.name for d in ATTACKS[attack].knowledge]
    level = KnowledgeLevel(attack, tuple((n, knowledge[n]) for n in names))
    return ATTACKS[attack].risks(view, level, engine).risk


# --- hand-made examples ---------------------------------------------------------------------
# Three people over locations 0-3 and hours 8-10:
#   a: 0@8, 1@9, 0@10      b: 0@8, 1@9, 2@10      c: 1@8, 0@9, 0@10
TRIPS = {
    "a": [(0, 8), (1, 9), (0, 10)],
    "b": [(0, 8), (1, 9), (2, 10)],
    "c": [(1, 8), (0, 9), (0, 10)],
}
PEOPLE = ["a", "b", "c", "d"]  # d: selected but absent from the view


@pytest.mark.parametrize(
    ("attack", "h", "expected"),
    [
        # {0, 0} is held by a and c; b's {2} is unique
        ("location", 1, [1 / 3, 1, 1 / 3, 0]),
        ("location", 2, [1 / 2, 1, 1 / 2, 0]),
        # a's pairs (0,1), (0,0), (1,0) are each held by 2 people; b's (1,2) only by b
        ("location_sequence", 2, [1 / 2, 1, 1 / 2, 0]),
        ("location_sequence", 3, [1, 1, 1, 0]),
        # visits: a's 0@10 is shared with c only; b's 2@10 is unique
        ("visit", 1, [1 / 2, 1, 1, 0]),
    ],
)
def test_trajectory_attacks_by_hand(attack, h, expected):
    view = trajectory_view(TRIPS, PEOPLE)
    np.testing.assert_allclose(risks(attack, view, h=h), expected)


# Counts: a: {0: 5, 1: 2}, b: {0: 3, 1: 3, 2: 1}, c: {0: 5, 1: 2, 3: 1}
COUNTS = {"a": {0: 5, 1: 2}, "b": {0: 3, 1: 3, 2: 1}, "c": {0: 5, 1: 2, 3: 1}}


@pytest.mark.parametrize(
    ("attack", "knowledge", "expected"),
    [
        ("unique_location", {"h": 1}, [1 / 3, 1, 1, 0]),
        # a ranks 0 > 1; b ranks 0, 1 (tie 3-3 broken by id) > 2; c ranks 0 > 1 > 3
        ("unique_location_sequence", {"h": 2}, [1 / 3, 1, 1, 0]),
        # a's (0 ≥ 5, 1 ≥ 2) matches a and c
        ("frequency", {"h": 2}, [1 / 2, 1, 1, 0]),
        ("home_work", {}, [1 / 2, 1 / 1, 1 / 2, 0]),
        # proportions with 0 as reference: a 2/5 = 0.4, b 1.0, c 0.4
        ("proportion", {"h": 2, "delta": 0.1}, [1 / 2, 1, 1, 0]),
    ],
)
def test_frequency_vector_attacks_by_hand(attack, knowledge, expected):
    view = presence_view(COUNTS, PEOPLE)
    np.testing.assert_allclose(risks(attack, view, **knowledge), expected)


def test_probability_attack_by_hand():
    # shares: a 5/7 and 2/7; b 3/7, 3/7, 1/7; c 5/8, 2/8, 1/8
    view = probability_view(COUNTS, PEOPLE)
    # location 0 within ±0.1 of a's 0.714: a and c (0.625); b's 0.43 is alone
    np.testing.assert_allclose(risks("probability", view, h=1, delta=0.1), [1 / 2, 1, 1, 0])
    # δ = 0: only exact shares match; everyone is unique on some location
    np.testing.assert_allclose(risks("probability", view, h=1, delta=0.0), [1, 1, 1, 0])


# --- property tests against the literal definitions ----------------------------------------


@st.composite
def trajectories(draw):
    n_users = draw(st.integers(1, 7))
    data = {
        u: draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), max_size=6))
        for u in range(n_users)
    }
    # the dataview collapses consecutive repeats of a visit
    for u, visits in data.items():
        data[u] = [v for i, v in enumerate(visits) if i == 0 or v != visits[i - 1]]
    return data, list(range(n_users))


@st.composite
def count_vectors(draw):
    n_users = draw(st.integers(1, 8))
    data = {
        u: draw(st.dictionaries(st.integers(0, 5), st.integers(1, 6), max_size=5))
        for u in range(n_users)
    }
    return data, list(range(n_users))


@settings(max_examples=60, deadline=None)
@given(trajectories(), st.data())
def test_ranges_number_visits_as_the_whole_view(case, data):
    """A range of users given the whole view's visit codes (VisitCodes, gathered from any
    cut of the view into parts) numbers its visits as the whole view does: its visit sets
    are the whole view's rows of its users."""
    view = trajectory_view(*case)
    cuts = sorted(data.draw(st.lists(st.integers(0, view.n_users), max_size=3)))
    codes = ranges_number_as_the_whole(view, "visits", "visit_sets", [0, *cuts, view.n_users])
    own = view.numbered("visits").codes
    assert (codes.low, codes.span) == (own.low, own.span) or not view.rows
    assert np.array_equal(codes.keys, own.keys)
    whole = view.visit_sets()
    assert int(whole.elements.max(initial=-1)) < max(codes.keys.shape[0], 1)
    with pytest.raises(ValueError, match="number no"):
        view.numbered("places")


@settings(max_examples=60, deadline=None)
@given(trajectories(), st.data(), st.sampled_from([1, 2, 5, 1000]), st.integers(1, 3))
def test_ranges_numbered_in_blocks_number_visits_as_the_whole_view(case, data, block, workers):
    """Each range given its own visits' codes from blocks of at most about `block` visits
    (kept_codes.numbered_in_blocks; ranges kept on `workers` workers) holds the whole
    view's frame, its own visits in it, and each one's rank among the whole view's: it
    numbers its visits as the whole view does. A view of `block` distinct visits or
    fewer is numbered whole (None; ranges holding the same visits count them once)."""
    from prudence_cli.dataviews.kept_codes import numbered_in_blocks
    from prudence_cli.dataviews.trajectory import VisitCodes

    view = trajectory_view(*case)
    cuts = sorted(data.draw(st.lists(st.integers(0, view.n_users), max_size=4)))
    pairs = list(itertools.pairwise([0, *cuts, view.n_users]))
    parts = [view.users(a, b) for a, b in pairs]
    told = [part.visit_codes() for part in parts]
    whole = VisitCodes.of(told)
    own = numbered_in_blocks(OnWorkers(workers), VisitCodes, told, block)
    if whole.keys.shape[0] <= block:
        assert own is None
        return
    sets = view.visit_sets()
    for (a, b), part, codes, mine in zip(pairs, parts, own, told, strict=True):
        assert codes.frame == whole.frame and codes.count == whole.keys.shape[0]
        assert codes.keys.tolist() == mine.keys_in(whole.frame).tolist()
        assert codes.numbers.tolist() == np.searchsorted(whole.keys, codes.keys).tolist()
        ranged = part.numbered("visits", codes).visit_sets()
        lo, hi = sets.offsets[a], sets.offsets[b]
        assert np.array_equal(ranged.offsets, sets.offsets[a : b + 1] - lo)
        assert np.array_equal(ranged.elements, sets.elements[lo:hi])


def test_the_distinct_keys_of_ranges_are_estimated_from_their_smallest_hashes():
    """A bottom-k sketch of each range's keys (`_sketch`) estimates how many distinct
    keys the ranges hold together (its standard error about 3 %: 4.5 % off here, within
    10 %), a key held by several ranges counted once; exactly when the ranges hold fewer
    than k together."""
    from prudence_cli.dataviews.kept_codes import SKETCH, _distinct_keys, _sketch
    from prudence_cli.dataviews.trajectory import VisitCodes

    rng = np.random.default_rng(1)
    shared = rng.choice(10**8, 300_000, replace=False)
    told = [VisitCodes(0, 1, np.unique(rng.choice(shared, 200_000))) for _ in range(4)]
    told.append(VisitCodes(0, 1, np.unique(rng.integers(2 * 10**8, 3 * 10**8, 50_000))))
    exact = np.unique(np.concatenate([t.keys for t in told])).shape[0]
    estimate = _distinct_keys([_sketch(t, (0, 1)) for t in told])
    assert abs(estimate - exact) <= 0.1 * exact and exact < sum(t.keys.shape[0] for t in told)
    few = [VisitCodes(0, 1, np.arange(a, a + 400)) for a in (0, 200, 300)]
    assert _distinct_keys([_sketch(t, (0, 1)) for t in few]) == 700 < SKETCH
    # in another frame than its own, a range's keys hash as the whole view's
    a, b = VisitCodes(2, 2, np.array([0, 3])), VisitCodes(0, 4, np.array([2, 7]))
    assert _distinct_keys([_sketch(a, (0, 4)), _sketch(b, (0, 4))]) == 2


def test_visits_are_cut_into_blocks_of_about_as_many_sampled_keys():
    """Worked by hand: samples 1, 5, 9 standing for 2 keys each and 2, 3 for 1 each
    weigh 2, 1, 1, 2, 2 in key order (running 2, 3, 4, 6, 8); two blocks cut where half
    the weight (4) is reached, at key 3: keys below it in the first block."""
    from prudence_cli.dataviews.kept_codes import _cut, _splitters
    from prudence_cli.dataviews.trajectory import VisitCodes

    samples = [(np.array([1, 5, 9]), 2), (np.array([2, 3]), 1)]
    assert _splitters(samples, 2).tolist() == [3]
    assert _splitters(samples, 4).tolist() == [1, 3, 5]
    assert _splitters(samples, 1).tolist() == []
    cut = _cut(VisitCodes(0, 1, np.array([1, 2, 3, 4, 9])), (0, 1), np.array([3, 5]))
    assert [piece.tolist() for piece in cut] == [[1, 2], [3, 4], [9]]


def test_blocks_of_visits_chosen_from_a_sample_hold_about_as_many_keys_each():
    """Splitters chosen from about 1,024 keys of each range cut the ranges' keys into
    blocks of about as many keys (counted with each range's): within 5 % here, with
    one range's keys spread and another's packed in a narrow band."""
    from prudence_cli.dataviews.kept_codes import SAMPLED, _cut, _sampled, _splitters
    from prudence_cli.dataviews.trajectory import VisitCodes

    rng = np.random.default_rng(0)
    keys = [rng.integers(0, 10**7, 60_000), rng.integers(10**6, 10**6 + 80_000, 60_000)]
    keys += [rng.integers(0, 10**5, 30_000)]
    told = [VisitCodes(0, 1, np.unique(k)) for k in keys]
    held = sum(t.keys.shape[0] for t in told)
    splitters = _splitters([_sampled(t, (0, 1), SAMPLED) for t in told], 10)
    pieces = [_cut(t, (0, 1), splitters) for t in told]
    sizes = [sum(p[b].shape[0] for p in pieces) for b in range(10)]
    assert sum(sizes) == held and max(sizes) <= 1.05 * held / 10 and min(sizes) >= 0.95 * held / 10


def test_a_views_visits_are_framed_from_its_first_time_bin():
    """Worked by hand: visits (place 1, bin 5) and (0, 7) in the frame of bins 5-7 (not
    from bin 0: the keys keep their headroom): keys 1 × 3 + 0 = 3 and 0 × 3 + 2 = 2."""
    view = trajectory_view({"a": [(1, 5)], "b": [(0, 7)]}, ["a", "b"])
    codes = view.visit_codes()
    assert codes.frame == (5, 3) and codes.keys.tolist() == [2, 3]
    assert view.users(0, 0).visit_codes().frame == (0, 1)


def test_visit_codes_of_parts_in_other_frames_are_joined_in_the_frame_of_both():
    """Worked by hand: part a holds (place 0, bin 2) and (1, 3), its frame bins 2-3;
    part b holds (0, 1) and (2, 0), bins 0-1. Together, bins 0-3: keys place × 4 + bin."""
    from prudence_cli.dataviews.trajectory import VisitCodes

    a = VisitCodes(2, 2, np.array([0 * 2 + 0, 1 * 2 + 1]))
    b = VisitCodes(0, 2, np.array([0 * 2 + 1, 2 * 2 + 0]))
    none = VisitCodes(0, 1, np.zeros(0, dtype=np.int64))
    for joined in (VisitCodes.joined(a, b), VisitCodes.joined(b, a), VisitCodes.of([none, a, b])):
        assert joined.frame == (0, 4) and joined.keys.tolist() == [1, 2, 7, 8]
    assert VisitCodes.joined(none, a) is a and VisitCodes.joined(a, none) is a


@settings(max_examples=60, deadline=None)
@given(
    trajectories(),
    st.sampled_from(["location", "location_sequence", "visit"]),
    st.sampled_from([1, 2, 3, "all"]),
    st.sampled_from(range(len(ENGINES))),
)
def test_trajectory_attacks_equal_reference(case, attack, h, engine_index):
    data, users = case
    view = trajectory_view(data, users)
    expected = trajectory_attack_risks(data, users, attack, h)
    got = risks(attack, view, ENGINES[engine_index], h=h)
    np.testing.assert_allclose(got, [expected[u] for u in users])


@settings(max_examples=60, deadline=None)
@given(
    count_vectors(),
    st.sampled_from(
        ["unique_location", "unique_location_sequence", "frequency", "home_work", "proportion"]
    ),
    st.sampled_from([1, 2, 3, "all"]),
    st.sampled_from([0.0, 0.1, 0.34]),
    st.sampled_from(range(len(ENGINES))),
)
def test_vector_attacks_equal_reference(case, attack, h, delta, engine_index):
    data, users = case
    view = presence_view(data, users)
    expected = vector_attack_risks(data, users, attack, h, delta)
    knowledge = {"h": h, "delta": delta}
    got = risks(attack, view, ENGINES[engine_index], **knowledge)
    np.testing.assert_allclose(got, [expected[u] for u in users])


@settings(max_examples=60, deadline=None)
@given(
    count_vectors(),
    st.sampled_from([1, 2, 3, "all"]),
    st.sampled_from([0.0, 0.05, 0.2]),
    st.sampled_from(range(len(ENGINES))),
)
def test_probability_attack_equals_reference(case, h, delta, engine_index):
    data, users = case
    view = probability_view(data, users)
    expected = vector_attack_risks(data, users, "probability", h, delta)
    got = risks("probability", view, ENGINES[engine_index], h=h, delta=delta)
    np.testing.assert_allclose(got, [expected[u] for u in users])


@settings(max_examples=30, deadline=None)
@given(trajectories(), st.sampled_from(["location", "location_sequence", "visit"]))
def test_known_ones_shortcut_gives_the_same_risks(case, attack):
    data, users = case
    view = trajectory_view(data, users)
    low = risks(attack, view, h=1)
    level = KnowledgeLevel(attack, (("h", 2),))
    shortcut = ATTACKS[attack].risks(view, level, Engine(), known_ones=low >= 1).risk
    np.testing.assert_allclose(shortcut, risks(attack, view, h=2))


@settings(max_examples=30, deadline=None)
@given(
    trajectories(),
    st.sampled_from(["location", "location_sequence", "visit"]),
    st.sampled_from([2, 3, "all"]),
)
def test_risks_made_in_place_of_ranged_supports_are_the_same_floats(case, attack, h):
    """A level counted in ranges turns its float supports into its risks in place
    (attacks/base._counted): bit for bit the risks made beside integer supports, with
    the people known at risk 1 at a smaller h, the blind and the absent."""
    data, users = case
    view = trajectory_view(data, users)
    known = risks(attack, view, h=1) >= 1
    level = KnowledgeLevel(attack, (("h", h),))
    whole = ATTACKS[attack].risks(view, level, ENGINES[0], known_ones=known).risk
    for engine in ENGINES[3:]:  # the engines of ranges
        ranged = ATTACKS[attack].risks(view, level, engine, known_ones=known).risk
        np.testing.assert_array_equal(ranged, whole)


def test_every_attack_is_declared_in_the_config_table_and_only_those():
    """The config validates attacks through config/knowledge.py without loading them:
    that table and the registry name the same attacks."""
    from prudence_cli.attacks.registry import ATTACKS
    from prudence_cli.config.knowledge import ATTACK_SCHEMAS
    from prudence_cli.randomized.attacks import PROFILE_ATTACKS

    registered = {**ATTACKS, **PROFILE_ATTACKS}
    assert set(registered) == set(ATTACK_SCHEMAS)
    for name, attack in registered.items():
        assert attack.schema is ATTACK_SCHEMAS[name]


@pytest.mark.parametrize("attack", ["location", "location_sequence", "visit"])
def test_h_all_on_a_record_of_thousands_of_visits_takes_well_under_a_second(attack):
    """One record of 5,000 visits and 30 pieces of it: at h = all each person's whole
    record is one query, so the attack costs about one pass over the records (issue 21:
    it used to build a table of C(n, k) big integers per record length)."""
    rng = np.random.default_rng(21)
    long = [(int(p), t // 20) for t, p in enumerate(rng.integers(0, 500, 5000))]
    long = [v for i, v in enumerate(long) if i == 0 or v != long[i - 1]]
    trips = {0: long}
    for u in range(1, 31):
        start = int(rng.integers(0, len(long) - 40))
        trips[u] = long[start : start + 40]
    users = list(trips)
    view = trajectory_view(trips, users)
    risks(attack, trajectory_view({0: long[:50]}, [0]), h="all")  # kernels loaded
    started = time.perf_counter()
    got = risks(attack, view, h="all")
    assert time.perf_counter() - started < 0.5
    expected = trajectory_attack_risks(trips, users, attack, "all")
    np.testing.assert_allclose(got, [expected[u] for u in users])
