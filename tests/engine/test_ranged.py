"""Levels held in ranges of users (engine/ranged.py): planned from each range's sums as
the whole level is, and counted shard by shard from the ranges' pieces, they give the
whole level's supports and instance counts bit for bit — for every match, query mode,
strategy, ordering, number of ranges and of shards."""

from __future__ import annotations

import operator
from dataclasses import replace
from functools import reduce

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.engine import Elements, Engine, QuerySpec
from prudence_cli.engine.problem import CountingProblem
from prudence_cli.engine.ranged import split, support, work
from prudence_cli.engine.ranged_shards import _Joining, piece_size
from prudence_cli.engine.runner import LocalRunner
from prudence_cli.engine.whole import whole_targets, without_whole
from tests.engine.test_engine import MATCH_MODES, random_problem

pytestmark = pytest.mark.usefixtures("kernels")


def gather(level, runner) -> CountingProblem:
    """The ranged level's problem in this process: its ranges' users one after the other."""
    pieces = [(p, None, None, p.n_users) for p in runner.each(_problem_of, level.parts)]
    joining = _Joining([piece_size(piece) for piece in pieces])
    for k, piece in enumerate(pieces):
        joining.put(*piece, k)
    problem, _, people = joining.joined()
    assert np.array_equal(people, np.arange(problem.n_users))  # every person, in order
    return problem


def _problem_of(part) -> CountingProblem:
    return part.problem


def _same_problem(a: CountingProblem, b: CountingProblem) -> None:
    for x, y in ((a.members, b.members), (a.queries.elements, b.queries.elements)):
        np.testing.assert_array_equal(x.offsets, y.offsets)
        np.testing.assert_array_equal(x.elements, y.elements)
        np.testing.assert_array_equal(x.values, y.values)
    np.testing.assert_array_equal(a.queries.size_lo, b.queries.size_lo)
    np.testing.assert_array_equal(a.queries.size_hi, b.queries.size_hi)
    assert a.self_queries == b.self_queries


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    case=st.sampled_from(MATCH_MODES),
    strategy=st.sampled_from(["auto", "keyed", "posting"]),
    partition=st.sampled_from([1, 3, 20, 10_000]),
    ranges=st.integers(1, 6),
    shards=st.integers(2, 5),
    h=st.sampled_from([1, 2, 3, 6]),
    block=st.sampled_from([None, 1, 3, 16]),
)
def test_a_ranged_level_counts_as_the_whole_level(
    seed, case, strategy, partition, ranges, shards, h, block
):
    """Also with its weights per element added up and cut in blocks of `block` elements
    (blocks.py), as on a cluster."""
    match, mode = case
    problem = random_problem(np.random.default_rng(seed), 40, 9, h, match=match, mode=mode)
    settings_ = dict(strategy=strategy, partition_instances=partition)
    whole = Engine(**settings_).min_support(problem)
    engine = Engine(**settings_, runner=LocalRunner(shards=shards, element_block=block))
    level = split(problem, engine.runner, ranges)
    assert level.n_users == problem.n_users and len(level.parts) == ranges
    _same_problem(gather(level, engine.runner), problem)
    # planned as the whole level is
    planned = work(engine, level)
    rest = without_whole(problem, whole_targets(problem))
    assert planned.plans == Engine(strategy=strategy).plan(rest)
    assert planned.total == Engine(strategy=strategy).instances(problem)
    counted = support(engine, level)
    np.testing.assert_array_equal(counted.minimum, whole.minimum)
    assert counted.instances == whole.instances and not counted.sampled
    # as floats, the vector the risks are made in (attacks/base.py): the same numbers
    floats = support(engine, level, floats=True).minimum
    assert floats.dtype == np.float64 and counted.minimum.dtype.kind == "i"
    np.testing.assert_array_equal(floats, whole.minimum)


@pytest.mark.parametrize("strategy", ["keyed", "posting"])
@pytest.mark.parametrize(("match", "mode"), MATCH_MODES)
def test_a_levels_partitions_found_in_blocks_are_the_whole_vectors(match, mode, strategy):
    """The partitions of each size and of whole records, and the weight up to each
    one's end, found a block of elements at a time (blocks.partitioned), are those of
    the weights whole: the shards are the same."""
    from unittest import mock

    from prudence_cli.engine import ranged

    problem = random_problem(np.random.default_rng(11), 60, 12, 3, match=match, mode=mode)
    found: dict[object, list] = {}
    fitted = ranged.fitted_shards

    def recorded(parts, reaches, *args):
        found[block].append((list(parts), np.asarray(reaches).tolist()))
        return fitted(parts, reaches, *args)

    for block in (None, 1, 2, 5):
        found[block] = []
        runner = LocalRunner(shards=2, element_block=block)
        engine = Engine(strategy=strategy, partition_instances=7, runner=runner)
        with mock.patch.object(ranged, "fitted_shards", recorded):
            support(engine, split(problem, runner, 3))
    assert len(found[None]) > 1 and any(len(parts) > 2 for parts, _ in found[None])
    assert found[1] == found[None] and found[2] == found[None] and found[5] == found[None]


@pytest.mark.parametrize("strategy", ["keyed", "posting"])
def test_a_levels_holders_go_before_its_partitions_are_counted(strategy, monkeypatch):
    """The plan's holders per element (on a cluster, 8 bytes an element on a worker) are
    let go once the ranges are relabelled, before any partition is counted: only a
    sampled level reads its holders again, from the plan of the whole level."""
    from prudence_cli.engine import ranged

    kept_while_counting = []
    count = ranged._Level.count

    def counting(self, plan, minimum):
        kept_while_counting.append(self.planned.holders.kept)
        return count(self, plan, minimum)

    monkeypatch.setattr(ranged._Level, "count", counting)
    problem = random_problem(np.random.default_rng(5), 60, 12, 2, match="contains")
    engine = Engine(strategy=strategy, runner=LocalRunner(shards=2))
    level = split(problem, engine.runner, 3)
    planned = work(engine, level)
    assert planned.holders.kept is not None
    got = support(engine, level, planned)
    assert kept_while_counting and all(kept is None for kept in kept_while_counting)
    expected = Engine(strategy=strategy).min_support(problem).minimum
    np.testing.assert_array_equal(got.minimum, expected)


@pytest.mark.parametrize(("match", "mode"), [("sequence", "subsets"), ("contains", "subsets")])
def test_an_ordered_sampled_level_lets_its_plans_holders_go_first(match, mode, monkeypatch):
    """A sampled level draws by the holders of each element: an unordered one by its
    plan's, which it keeps until drawn; an ordered one by each range's distinct holders,
    so its plan's (on a cluster, 8 bytes an element on a worker) go before anything is
    counted. The same supports either way."""
    from prudence_cli.engine import ranged_sampled

    problem = random_problem(np.random.default_rng(5), 60, 12, 3, match=match, mode=mode)
    settings_ = dict(max_instances=10, sample=4, seed=7)
    engine = Engine(**settings_, runner=LocalRunner(shards=2))
    level = split(problem, engine.runner, 3)
    planned = work(engine, level)
    kept_while_counting = []
    count = ranged_sampled.counted

    def counting(*args, **kwargs):
        kept_while_counting.append(planned.holders.kept)
        return count(*args, **kwargs)

    monkeypatch.setattr(ranged_sampled, "counted", counting)
    got = ranged_sampled.sampled_support(engine, level, planned)
    assert got.sampled and len(kept_while_counting) == 1
    assert (kept_while_counting[0] is None) == (match == "sequence")
    np.testing.assert_array_equal(got.minimum, Engine(**settings_).min_support(problem).minimum)


def test_each_range_is_given_its_own_elements_of_a_level_in_blocks(monkeypatch):
    """A level longer than a block gives each range its own elements' holders (to plan
    it) and ranks by rarity (to relabel it), not the level's vectors whole; a level of
    one block, the whole vectors. The same supports either way."""
    from prudence_cli.engine import ranged
    from prudence_cli.engine.per_element import PerElement

    given: list[tuple[str, object, object]] = []
    for name in ("_size_work", "_prepared"):
        original = getattr(ranged, name)

        def recorded(part, values, *args, _original=original, _name=name):
            given.append((_name, part, values))
            return _original(part, values, *args)

        monkeypatch.setattr(ranged, name, recorded)
    problem = random_problem(np.random.default_rng(3), 40, 12, 2, match="contains")
    n = int(problem.members.elements.max()) + 1
    expected = Engine(strategy="keyed").min_support(problem).minimum
    for block in (None, 4):
        given.clear()
        runner = LocalRunner(shards=2, element_block=block)
        level = split(problem, runner, 3)
        got = support(Engine(strategy="keyed", runner=runner), level)
        np.testing.assert_array_equal(got.minimum, expected)
        assert sorted(name for name, _, _ in given) == ["_prepared"] * 3 + ["_size_work"] * 3
        for _, part, values in given:
            if block is None:
                assert isinstance(values, np.ndarray) and values.shape == (n,)
                continue
            own = np.union1d(part.problem.members.elements, part.problem.queries.elements.elements)
            assert isinstance(values, PerElement) and values.ids.tolist() == own.tolist()


@pytest.mark.parametrize("match", ["contains", "sequence"])
def test_a_sampled_level_in_blocks_draws_by_each_ranges_own_holders(match, monkeypatch):
    """A sampled level longer than a block gives each range drawing its own elements'
    holders (ordered: the distinct ones), not the level's whole; of one block, the whole
    vector. The same supports either way."""
    from prudence_cli.engine import ranged_sampled
    from prudence_cli.engine.per_element import PerElement

    given: list[tuple[object, object]] = []
    original = ranged_sampled._drawer

    def recorded(part, rarity, key):
        given.append((part, rarity))
        return original(part, rarity, key)

    monkeypatch.setattr(ranged_sampled, "_drawer", recorded)
    problem = random_problem(np.random.default_rng(5), 300, 2000, 3, match=match)
    n = int(problem.members.elements.max()) + 1
    members = problem.members  # how many users hold each element (once, however often)
    owners = np.repeat(np.arange(members.n_users), members.lengths)
    pairs = np.unique(members.elements.astype(np.int64) * members.n_users + owners)
    holders = np.bincount(pairs // members.n_users, minlength=n)
    settings_ = dict(max_instances=10, sample=4, seed=7)
    expected = Engine(**settings_).min_support(problem).minimum
    for block in (None, 4):
        given.clear()
        engine = Engine(**settings_, runner=LocalRunner(shards=2, element_block=block))
        got = engine.min_support(split(problem, engine.runner, 3))
        assert got.sampled and given
        np.testing.assert_array_equal(got.minimum, expected)
        for part, rarity in given:
            if block is None:
                assert isinstance(rarity, np.ndarray) and rarity.shape == (n,)
                continue
            lists = (part.problem.members.elements, part.problem.queries.elements.elements)
            own = np.union1d(*lists)
            assert isinstance(rarity, PerElement) and rarity.ids.tolist() == own.tolist()
            assert rarity.values.tolist() == holders[own].tolist()


def test_more_ranges_than_users_leave_some_empty():
    problem = random_problem(np.random.default_rng(1), 3, 5, 2, match="contains", mode="self")
    engine = Engine(runner=LocalRunner(shards=3))
    level = split(problem, engine.runner, 8)
    assert level.first[0] == 0 and level.first[-1] == 3 and np.all(np.diff(level.first) >= 0)
    np.testing.assert_array_equal(
        support(engine, level).minimum, Engine().min_support(problem).minimum
    )


def test_a_level_over_the_budget_is_sampled_in_its_ranges_as_the_whole_level():
    problem = random_problem(np.random.default_rng(5), 60, 12, 3, match="dominance")
    settings_ = dict(max_instances=10, sample=4, seed=7)
    whole = Engine(**settings_).min_support(problem)
    engine = Engine(**settings_, runner=LocalRunner(shards=2))
    counted = engine.min_support(split(problem, engine.runner, 3))
    assert counted.sampled and whole.sampled
    np.testing.assert_array_equal(counted.minimum, whole.minimum)
    assert counted.instances == whole.instances == 83  # 32 whole, 36 exact, 15 drawn
    floats = engine.min_support(split(problem, engine.runner, 3), floats=True)
    assert floats.minimum.dtype == np.float64 and floats.instances == 83
    np.testing.assert_array_equal(floats.minimum, whole.minimum)


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    case=st.sampled_from(MATCH_MODES),
    sample=st.integers(1, 12),
    partition=st.sampled_from([1, 5, 10_000]),
    ranges=st.integers(1, 6),
    h=st.sampled_from([1, 2, 3, 4, 8]),
    every_size=st.booleans(),
    block=st.sampled_from([None, 1, 3, 16]),
)
def test_a_sampled_ranged_level_draws_and_finds_what_the_whole_level_does(
    seed, case, sample, partition, ranges, h, every_size, block
):
    """Over the budget, a level in ranges is sampled where its ranges are: each target
    draws the queries it draws in the whole level (its own random numbers, the holders
    over the whole level), checked against every range's users: the same supports,
    instances and lower-bound flag, however many ranges and chunks — also when targets
    ask every size up to h (a whole record's ratios keep their smaller sizes), and when
    the holders are in blocks of `block` elements (each range then draws by its own
    elements' holders only)."""
    match, mode = case
    problem = random_problem(np.random.default_rng(seed), 40, 9, h, match=match, mode=mode)
    if every_size and not problem.self_queries:
        spec = problem.queries
        sizes = replace(spec, size_lo=np.where(spec.size_hi > 0, 1, 0))
        problem = replace(problem, queries=sizes)
    settings_ = dict(max_instances=5, sample=sample, seed=seed, partition_instances=partition)
    whole = Engine(**settings_).min_support(problem)
    engine = Engine(**settings_, runner=LocalRunner(shards=3, element_block=block))
    counted = engine.min_support(split(problem, engine.runner, ranges))
    np.testing.assert_array_equal(counted.minimum, whole.minimum)
    assert (counted.instances, counted.sampled) == (whole.instances, whole.sampled)


@pytest.mark.parametrize(("seed", "sample"), [(0, 20), (2, 20), (3, 8)])
def test_a_whole_record_that_draws_its_ratios_draws_them_in_its_range_too(seed, sample):
    """A target whose whole record is asked, and whose smaller ratios (each its own
    reference) are drawn: its ratios are left to the draws in its range, not counted
    there exactly as well (seed 2: a least support of 1 where the whole level finds 2)."""
    problem = random_problem(np.random.default_rng(seed), 40, 6, 8, "ratio", "ratios")
    spec = problem.queries
    problem = replace(problem, queries=replace(spec, size_lo=np.where(spec.size_hi > 0, 1, 0)))
    settings_ = dict(max_instances=3, sample=sample, seed=seed)
    whole = Engine(**settings_).min_support(problem)
    engine = Engine(**settings_, runner=LocalRunner(shards=2))
    counted = engine.min_support(split(problem, engine.runner, 2))
    np.testing.assert_array_equal(counted.minimum, whole.minimum)
    assert (counted.instances, counted.sampled) == (whole.instances, True)


def test_worked_example_of_two_ranges():
    # members: u0 {0, 1}, u1 {0, 1, 2}, u2 {1, 2}, u3 {2}; queries: their own pairs
    # (h = 2; u3 knows its one place). Ranges [u0, u1] and [u2, u3].
    # supports: u0's {0,1}: u0, u1 -> 2; u1's {0,1}: 2, {0,2}: 1, {1,2}: 2 -> 1;
    # u2's {1,2}: u1, u2 -> 2; u3's {2}: u1, u2, u3 -> 3.
    members = Elements.from_rows(
        4, np.array([0, 0, 1, 1, 1, 2, 2, 3]), np.array([0, 1, 0, 1, 2, 1, 2, 2])
    )
    sizes = np.minimum(2, members.lengths)  # h = 2, or all of a shorter record
    spec = QuerySpec(members, sizes, sizes)
    problem = CountingProblem(members, spec, match="contains")
    engine = Engine(runner=LocalRunner(shards=2), partition_instances=1)
    level = split(problem, engine.runner, 2)
    assert level.first.tolist() == [0, 2, 4]
    assert support(engine, level).minimum.tolist() == [2, 1, 2, 3]


@pytest.mark.parametrize("case", MATCH_MODES)
def test_a_level_of_whole_records_over_the_budget_is_counted_exactly_not_gathered(case):
    """Whole records are never sampled: a level made only of them, over the budget with
    `sample` set, is counted exactly from its ranges (it was gathered, then split again,
    until the recursion limit)."""
    match, mode = case
    problem = random_problem(np.random.default_rng(4), 30, 8, 6, match=match, mode=mode)
    settings_ = dict(max_instances=1, sample=1, seed=3)
    whole = Engine(**settings_).min_support(problem)
    engine = Engine(**settings_, runner=LocalRunner(shards=2))
    counted = engine.min_support(split(problem, engine.runner, 3))
    np.testing.assert_array_equal(counted.minimum, whole.minimum)
    assert (counted.instances, counted.sampled) == (whole.instances, whole.sampled)


def test_home_work_sampled_on_ranges_is_the_local_result():
    from prudence_cli.attacks.base import KnowledgeLevel
    from prudence_cli.attacks.registry import ATTACKS
    from tests.conftest import presence_view

    counts = {"a": {0: 5, 1: 2}, "b": {0: 3, 1: 3, 2: 1}, "c": {0: 5, 1: 2, 3: 1}}
    view = presence_view(counts, ["a", "b", "c", "d"])
    level = KnowledgeLevel("home_work", ())
    settings_ = dict(max_instances=1, sample=1)
    here = ATTACKS["home_work"].risks(view, level, Engine(**settings_))
    ranged = Engine(**settings_, runner=LocalRunner(shards=2))
    there = ATTACKS["home_work"].risks(view, level, ranged)
    np.testing.assert_array_equal(there.risk, here.risk)
    assert there.risk.tolist() == [0.5, 1.0, 0.5, 0.0]


def test_ranges_drawn_at_once_by_threads_of_one_worker_draw_their_own_queries():
    """A worker with several threads draws for several of its ranges at once: each draw
    is its range's (a drawer each, kept while the range is there and its sampling goes
    on), never another's; a range let go takes its drawer with it."""
    from concurrent.futures import ThreadPoolExecutor

    from prudence_cli.engine import ranged_sampled

    problem = random_problem(np.random.default_rng(4), 90, 9, 3, match="dominance")
    level = split(problem, LocalRunner(), 6)
    at = np.array([0, 9])
    rarity = reduce(operator.add, [ranged_sampled._holder_blocks(p, at)[0] for p in level.parts])
    rarity = rarity.whole()
    calls = [
        (part, np.arange(part.rest.n_users), int(first), round_, 3, 77, rarity)
        for part, first in zip(level.parts, level.first[:-1], strict=True)
        for round_ in (1, 2, 3)
    ]
    alone = []
    for call in calls:
        alone.append(ranged_sampled._queries(*call))
        ranged_sampled._forget(call[0])
    assert ranged_sampled._drawers == {}
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda call: ranged_sampled._queries(*call), calls * 3))
    for one, drawn in zip(alone * 3, together, strict=True):
        for a, b in zip(one, drawn, strict=True):
            np.testing.assert_array_equal(a, b)
    assert len(ranged_sampled._drawers) == len(level.parts)
    ranged_sampled._forget(level.parts[0])
    assert len(ranged_sampled._drawers) == len(level.parts) - 1
    del calls, call, level  # the ranges let go (as Dask does when it spills or forgets one)
    assert ranged_sampled._drawers == {}


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), folded=st.sampled_from([1, 3, 1 << 18]))
def test_partition_results_fold_into_floats_as_into_integers(seed, folded):
    """tasks.fold_results: a float minimum (the risks' vector) takes the results, a few
    rows at a time, as the integer one does by the kernel."""
    from prudence_cli.engine import tasks

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    results = [
        (
            rng.integers(0, n, int(rng.integers(0, 12))).astype(np.int32),
            rng.integers(1, 50, 12).astype(np.int32),
        )
        for _ in range(int(rng.integers(0, 5)))
    ]
    results = [(owners, counts[: owners.shape[0]]) for owners, counts in results]
    whole = np.full(n, np.iinfo(np.int32).max, dtype=np.int32)
    tasks.fold_results(whole, iter(results))
    floats = np.full(n, float(np.iinfo(np.int32).max))
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(tasks, "_FOLDED", folded)
        tasks.fold_results(floats, iter(results))
    np.testing.assert_array_equal(floats, whole)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), ranges=st.integers(1, 5), lo=st.integers(0, 8))
def test_a_shard_holds_only_the_people_with_a_position_in_it(seed, ranges, lo):
    """A shard's per-person arrays are as long as the people whose lists reach into its
    elements (ranged_shards.people_held), not the level's, and it knows who they are
    among the level's people."""
    from prudence_cli.engine.ranged_shards import ShardJoiner, _cut

    problem = random_problem(np.random.default_rng(seed), 30, 9, 2, match="dominance")
    runner = LocalRunner(shards=2)
    level = split(problem, runner, ranges)
    hi = lo + 2
    joiner = ShardJoiner("posting")
    pieces = runner.each(_cut, level.parts, lo, hi, "posting")
    joining = joiner.join_start([joiner.piece_size(piece) for piece in pieces])
    for k, piece in enumerate(pieces):
        joining = joiner.join_piece(joining, piece, k)
    data = joiner.join_finish(joining)
    members, queries = problem.members, problem.queries.elements
    reach = [
        any(lo <= e < hi for e in lists.elements[lists.offsets[u] : lists.offsets[u + 1]])
        for u in range(problem.n_users)
        for lists in (members, queries)
    ]
    expected = [u for u in range(problem.n_users) if reach[2 * u] or reach[2 * u + 1]]
    assert data.people is not None and data.people.tolist() == expected
    assert data.problem.n_users == len(expected) and data.level == problem.n_users


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    match=st.sampled_from(["dominance", "sequence"]),
    own=st.booleans(),
    spread=st.integers(1, 50),
    radix=st.booleans(),
)
def test_a_shard_numbers_its_elements_by_those_it_holds_in_their_order(
    seed, match, own, spread, radix
):
    """ranged_shards.numbered: each position's number is the rank of its element among
    the distinct elements of the shard's members and queries (queries may hold elements
    no member holds), so the shard's ids give every element back, lists stay in order,
    and the orders by element are numpy's stable ones, whichever sort makes them (the
    radix sort of large shards, when the kernels run compiled)."""
    from prudence_cli.engine import indexes, ranged_shards

    rng = np.random.default_rng(seed)
    problem = random_problem(rng, 12, 8, 2, match=match, mode="self" if own else "subsets")
    spread_out = replace(problem.members, elements=problem.members.elements * spread + 3)
    spec = problem.queries
    q = spec.elements.elements
    asked = q * spread + 3 + rng.integers(0, 2, q.shape[0]).astype(q.dtype)  # some no member
    queries = spread_out if own else replace(spec.elements, elements=asked)
    problem = replace(problem, members=spread_out, queries=replace(spec, elements=queries))
    with pytest.MonkeyPatch.context() as patched:
        if radix:  # every shard is a large one
            patched.setattr(indexes, "_COUNTING_SORT_FROM", 0)
        shard = ranged_shards.numbered(problem)
    held = np.concatenate([problem.members.elements, problem.queries.elements.elements])
    assert shard.ids.tolist() == sorted(set(held.tolist()))
    for before, after, order in (
        (problem.members, shard.problem.members, shard.member_order),
        (problem.queries.elements, shard.problem.queries.elements, shard.query_order),
    ):
        np.testing.assert_array_equal(shard.ids[after.elements], before.elements)
        np.testing.assert_array_equal(after.offsets, before.offsets)
        np.testing.assert_array_equal(after.values, before.values)
        np.testing.assert_array_equal(order, np.argsort(before.elements, kind="stable"))
    assert (shard.problem.queries.elements is shard.problem.members) == own


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(["keyed", "posting"]))
def test_a_shards_indexes_are_as_long_as_the_elements_it_holds_not_the_levels(seed, kind):
    """What a shard's worker builds per element (start indexes' bounds, posting lists'
    offsets) is as long as the distinct elements of the shard's lists, and a partition
    of the level's ids [lo, hi) is found among them (`ShardData.span`)."""
    from prudence_cli.engine.ranged_shards import ShardJoiner, _cut

    n = 400
    problem = random_problem(np.random.default_rng(seed), 30, n, 2, match="dominance")
    runner = LocalRunner(shards=2)
    level = split(problem, runner, 3)
    lo, hi = n // 4, n // 2
    joiner = ShardJoiner(kind)
    pieces = runner.each(_cut, level.parts, lo, hi, kind)
    joining = joiner.join_start([joiner.piece_size(piece) for piece in pieces])
    for k, piece in enumerate(pieces):
        joining = joiner.join_piece(joining, piece, k)
    data = joiner.join_finish(joining)
    lists = [data.problem.members, data.problem.queries.elements]
    held = np.unique(np.concatenate([data.ids[lists_.elements] for lists_ in lists]))
    assert data.n_elements == held.shape[0] < n
    np.testing.assert_array_equal(data.ids, held)
    indexes = [data.members, data.queries] if kind == "keyed" else [data.queries]
    bounds = [firsts.bounds for firsts in indexes if firsts is not None]
    if data.postings is not None:
        bounds.append(data.postings.offsets)
    assert bounds and all(b.shape[0] == data.n_elements + 1 for b in bounds)
    a, b = data.span(lo, hi)
    assert data.ids[a:b].tolist() == [e for e in held.tolist() if lo <= e < hi]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    case=st.sampled_from(MATCH_MODES),
    ranges=st.integers(1, 5),
    bounded=st.booleans(),
)
def test_a_range_checks_queries_among_its_own_elements_as_among_the_levels(
    seed, case, ranges, bounded
):
    """A sampled level's range keeps posting lists over the elements it holds when that
    is smaller than over the level's (ranged_sampled._Posted): every query, drawn by any
    range (here, each person's whole list with and without value bounds and with a
    reference position, some holding elements no one holds, in buffers that run on
    past them), gets the support that posting lists over all the level's elements give
    it in that range."""
    from prudence_cli.engine.indexes import _Postings
    from prudence_cli.engine.ranged_sampled import _Posted

    rng = np.random.default_rng(seed)
    problem = random_problem(rng, 40, 12, 3, match=case[0], mode=case[1])
    lists = problem.members
    rows = []  # each person's list, some ending with element 12, which no one holds
    for u in range(lists.n_users):
        a, b = lists.offsets[u], lists.offsets[u + 1]
        if a < b:
            tail = [(12, 1.0)] if rng.random() < 0.3 else []
            rows.append(list(zip(lists.elements[a:b], lists.values[a:b], strict=True)) + tail)
    offsets = np.r_[0, np.cumsum([len(r) for r in rows])].astype(np.int64)
    elements = np.array([e for r in rows for e, _ in r], dtype=lists.elements.dtype)
    values = np.array([v for r in rows for _, v in r], dtype=float)
    if bounded:
        lower, upper = values * 0.5, values * 1.5
    else:
        lower, upper = np.full(elements.shape, -np.inf), np.full(elements.shape, np.inf)
    refs = np.array([rng.integers(0, len(r)) for r in rows], dtype=np.int64)  # (ratio)
    owners = np.arange(len(rows))
    # a drawer's buffers run on past the queries
    elements = np.r_[elements, np.array([3, 7, 12], dtype=elements.dtype)]
    lower, upper = np.r_[lower, [np.nan] * 3], np.r_[upper, [np.nan] * 3]
    queries = (offsets, elements, lower, upper, refs, owners)
    for part in split(problem, LocalRunner(), ranges).parts:
        whole = _Postings(part.problem.members, 13, not problem.ordered)
        expected = whole.verify(part.rest, offsets, elements, lower, upper, refs)
        # the level's 13 elements, or a level of a million of which the range holds a few
        for n in (13, 1_000_000):
            posted = _Posted(part, n)
            assert np.array_equal(posted.verify(queries), expected)
        held = np.unique(part.problem.members.elements)  # its offsets go with these alone
        assert np.array_equal(posted.ids, held) and posted.postings.offsets.size == held.size + 1


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    ranges=st.integers(1, 4),
    s=st.sampled_from([1, 2, 9, 11]),
    kind=st.sampled_from(["keyed", "posting"]),
    own=st.booleans(),
)
def test_a_ranges_partition_weights_are_those_of_the_whole_vectors_to_the_bit(
    seed, ranges, s, kind, own
):
    """A range's weights of the partitions beginning at each element (ranged_shards.
    _first_weights, kept as the elements it holds or whole) are, bit for bit, those of
    vectors over all the level's elements, the members' and then the queries' added
    (plan.first_weights): on long lists, whose sums pass 2^53 and are not exact."""
    from prudence_cli.engine.indexes import _query_sizes_ok
    from prudence_cli.engine.plan import begun_at, first_weights
    from prudence_cli.engine.ranged_shards import _first_weights

    rng = np.random.default_rng(seed)
    n_users, n_elements = 30, 400
    lengths = rng.integers(0, 300, n_users)
    rows = [np.sort(rng.choice(n_elements, k, replace=False)) for k in lengths]
    owners = np.repeat(np.arange(n_users), lengths)
    members = Elements.from_rows(n_users, owners, np.concatenate(rows), np.ones(lengths.sum()))
    size_hi = np.where(rng.random(n_users) < 0.7, np.minimum(lengths, 12), 0)
    spec = QuerySpec(members, size_lo=np.minimum(size_hi, 2), size_hi=size_hi)
    problem = CountingProblem(members, spec, match="contains")

    def dense(lists, n, users=None):
        owners = np.repeat(np.arange(lists.n_users, dtype=np.int64), lists.lengths)
        begun = begun_at(lists.offsets, np.arange(lists.elements.shape[0]), owners, s)
        return first_weights(lists, owners, begun, n, users)

    for part in split(problem, LocalRunner(), ranges).parts:
        rest = part.rest
        for n in (n_elements, 1_000_000):  # the range holding most of them, or few
            expected = np.zeros(n)
            if kind == "keyed":
                expected += dense(rest.members, n)
            if kind == "posting" or not own:
                expected += dense(rest.queries.elements, n, _query_sizes_ok(rest.queries, s))
            found = _first_weights(part, kind, s, n, own)
            assert found.size == n and np.array_equal(found.whole(), expected)
