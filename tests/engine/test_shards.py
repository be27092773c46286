"""Shards of a level (engine/shards.py): each worker's part of the data gives, partition by
partition, the supports the whole data gives — for every match, query mode, strategy
and ordering — and is smaller than the whole."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.engine import Elements, Engine
from prudence_cli.engine import shards as shards_module
from prudence_cli.engine.indexes import _enumerate_queries
from prudence_cli.engine.plan import shard_bytes
from prudence_cli.engine.runner import LocalRunner
from prudence_cli.engine.shards import (
    ShardBudget,
    fitted_shards,
    reached,
    shard,
    shard_positions,
    shard_ranges,
    suffix_sizes,
    suffixes,
)
from prudence_cli.errors import BudgetError
from tests.engine.test_engine import MATCH_MODES, random_problem

pytestmark = pytest.mark.usefixtures("kernels")


def test_each_list_keeps_its_suffix_from_its_first_element_in_range():
    # user 0: 1 4 6 9; user 1: 0 2; user 2: 7 5 3 (ordered: as written); user 3: none
    lists = Elements.from_rows(
        4,
        np.array([0, 0, 0, 0, 1, 1, 2, 2, 2]),
        np.array([1, 4, 6, 9, 0, 2, 7, 5, 3]),
        np.arange(9, dtype=float),
    )
    cut = suffixes(lists, 4, 6)  # elements 4 and 5
    assert cut.lists.offsets.tolist() == [0, 3, 3, 5, 5]
    assert cut.lists.elements.tolist() == [4, 6, 9, 5, 3]
    assert cut.lists.values.tolist() == [1.0, 2.0, 3.0, 7.0, 8.0]
    assert cut.kept.tolist() == [1, 2, 3, 7, 8]
    assert cut.at(np.array([7, 1])).tolist() == [3, 0]
    with pytest.raises(AssertionError, match="does not hold"):
        cut.at(np.array([0]))


def test_partitions_are_grouped_into_shards_of_about_equal_weight():
    weights = np.array([5.0, 1, 1, 1, 1, 1, 5, 0, 1])
    parts = [(0, 1), (1, 3), (3, 6), (6, 7), (7, 9)]
    reaches = reached(parts, weights)
    assert reaches.tolist() == [5, 7, 10, 15, 16, 16]  # to each partition's end, in all
    grouped = list(shard_ranges(parts, reaches, 2))
    assert grouped == [((0, 6), [(0, 1), (1, 3), (3, 6)]), ((6, 9), [(6, 7), (7, 9)])]
    assert list(shard_ranges(parts, reaches, 9)) == [((lo, hi), [(lo, hi)]) for lo, hi in parts]
    assert [r for r, _ in shard_ranges(parts, reaches, 1)] == [(0, 9)]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    case=st.sampled_from(MATCH_MODES),
    strategy=st.sampled_from(["keyed", "posting"]),
    partition=st.sampled_from([1, 3, 20]),
    shards=st.integers(2, 5),
    h=st.integers(1, 3),
    share=st.sampled_from([0.0, 0.3, 0.02]),
)
def test_sharded_supports_are_the_whole_datas(seed, case, strategy, partition, shards, h, share):
    """Cut in `shards`, and further where a shard would hold more than `share` of the
    level's positions (fitted_shards; 0: no limit)."""
    match, mode = case
    problem = random_problem(np.random.default_rng(seed), 40, 9, h, match=match, mode=mode)
    whole = Engine(strategy=strategy, partition_instances=partition).min_support(problem)
    runner = LocalRunner(shards=shards)
    if share:
        positions = problem.members.elements.shape[0] + problem.queries.elements.elements.shape[0]
        budget = shard_bytes(int(share * positions), problem.n_users, 9)
        runner.shard_limits = lambda: (budget, 10**12)  # type: ignore[method-assign]
    cut = Engine(strategy=strategy, partition_instances=partition, runner=runner).min_support(
        problem
    )
    np.testing.assert_array_equal(cut.minimum, whole.minimum)
    assert cut.instances == whole.instances


def test_a_shard_holds_less_than_the_level():
    rng = np.random.default_rng(3)
    problem = random_problem(rng, 2_000, 400, 2, match="dominance", mode="self")
    n = problem.members.elements.shape[0]
    parts = [(lo, lo + 50) for lo in range(0, 400, 50)]
    weights = np.bincount(problem.members.elements, minlength=400).astype(float)
    sizes = [
        shard(problem, lo, hi).problem.members.elements.shape[0]
        for (lo, hi), _ in shard_ranges(parts, reached(parts, weights), 4)
    ]
    assert len(sizes) == 4 and max(sizes) < 0.8 * n and min(sizes) < 0.4 * n


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), h=st.sampled_from([2, 3, 6]), lo=st.integers(0, 8))
def test_a_shard_draws_the_compositions_of_the_whole_lists(seed, h, lo):
    """A composition's size H_u = min(H, Σ lower) is of the target's whole list, not of
    the suffix a shard holds: the shard's queries begun in [lo, lo + 2) are the whole
    level's, no more (a suffix's smaller total would draw sub-multisets never asked)."""
    rng = np.random.default_rng(seed)
    problem = random_problem(rng, 30, 9, h, match="dominance", mode="compositions")
    piece = shard(problem, lo, lo + 2)
    spec, cut = problem.queries, piece.problem.queries
    q = spec.elements
    starts = np.flatnonzero((q.elements >= lo) & (q.elements < lo + 2))
    for s in range(1, h + 1):
        whole = _enumerate_queries(spec, starts, s)
        found = _enumerate_queries(cut, piece.query_positions(starts), s)
        for a, b in zip(whole, found, strict=True):
            np.testing.assert_array_equal(a, b)


def _random_lists(rng: np.random.Generator, users: int, n: int, ordered: bool) -> Elements:
    lengths = rng.integers(0, 9, size=users)
    rows = []
    for u, length in enumerate(lengths):
        picked = rng.integers(0, n, size=length)  # repeats too (multisets, sequences)
        rows += [(u, e) for e in (picked if ordered else np.sort(picked))]
    user = np.array([u for u, _ in rows], dtype=np.int64)
    elements = np.array([e for _, e in rows], dtype=np.int32)
    return Elements.from_rows(users, user, elements)


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    ordered=st.booleans(),
    chunk=st.sampled_from([1, 7, 1 << 20]),
    n=st.integers(1, 12),
)
def test_suffix_sizes_are_the_positions_the_suffixes_keep(seed, ordered, chunk, n):
    """Counted without cutting, in chunks of lists: `suffixes`' sizes, every (start, end)."""
    rng = np.random.default_rng(seed)
    lists = _random_lists(rng, int(rng.integers(0, 30)), n, ordered)
    starts = sorted({int(x) for x in rng.integers(0, n + 1, size=3)})
    ends = np.unique(rng.integers(0, n + 2, size=5))
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(shards_module, "_MEASURED_POSITIONS", chunk)
        sizes = suffix_sizes(lists, starts, ends)
    literal = [
        [suffixes(lists, lo, hi).lists.elements.shape[0] if hi > lo else 0 for hi in ends]
        for lo in starts
    ]
    assert sizes.tolist() == literal


def test_suffix_sizes_by_hand():
    # user 0: 1 4 6 9; user 1: 0 2; user 2: 7 5 3 (ordered: as written)
    lists = Elements.from_rows(
        3, np.array([0, 0, 0, 0, 1, 1, 2, 2, 2]), np.array([1, 4, 6, 9, 0, 2, 7, 5, 3])
    )
    # from 4: [4, 5) keeps 4 6 9 and nothing of user 2 (7 5 3 has no 4); [4, 6) adds 5 3;
    # [4, 8) begins user 2 at 7: 7 5 3
    assert suffix_sizes(lists, [4], np.array([5, 6, 8])).tolist() == [[3, 5, 6]]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    case=st.sampled_from(MATCH_MODES),
    budget=st.integers(0, 400),
    count=st.integers(1, 4),
    one_start=st.booleans(),
    window=st.sampled_from([2, 5, 512]),
)
def test_fitted_shards_fit_their_budget_and_cover_the_partitions(
    seed, case, budget, count, one_start, window
):
    """Each shard, cut as `shard` cuts it, holds at most the budget's positions, or is one
    element; the shards are consecutive and their partitions cover the same elements;
    without a budget they are `shard_ranges`'. Measured a start at a time (as ordered
    lists are) or every start at once."""
    match, mode = case
    problem = random_problem(np.random.default_rng(seed), 40, 9, 3, match=match, mode=mode)
    n = 9
    parts = [(0, 2), (2, 3), (3, 7), (7, 9)]
    weights = np.arange(n, dtype=float)
    fit = ShardBudget(budget, 10**9, lambda size: size, one_start)  # a start a pass
    with pytest.MonkeyPatch.context() as patched:  # cuts measured `window` ahead at a time
        patched.setattr(shards_module, "_WINDOW", window)
        measure = partial(shard_positions, problem)
        found = list(fitted_shards(parts, reached(parts, weights), count, measure, fit))
    if budget == 0:
        assert found == list(shard_ranges(parts, reached(parts, weights), count))
    assert [p for _, group in found for p in group][0][0] == 0
    flat = [p for _, group in found for p in group]
    assert all(a[1] == b[0] for a, b in zip(flat, flat[1:], strict=False)) and flat[-1][1] == n
    for (lo, hi), group in found:
        assert (lo, hi) == (group[0][0], group[-1][1])
        held = shard(problem, lo, hi).problem
        size = held.members.elements.shape[0]
        if held.queries.elements is not held.members:
            size += held.queries.elements.elements.shape[0]
        assert budget == 0 or size <= budget or hi - lo == 1


def test_a_level_whose_one_element_does_not_fit_a_worker_is_refused():
    """Cut down to one element, a shard still over the worker's whole limit: a clear
    error before anything is counted, not a worker lost half-way."""
    problem = random_problem(np.random.default_rng(1), 40, 9, 2, match="contains", mode="self")
    measure = partial(shard_positions, problem)
    alone = measure([0], np.array([1]))[0, 0]
    assert alone > 2
    nine = reached([(0, 9)], np.ones(9))
    with pytest.raises(BudgetError, match="memory limit.*dask worker --memory-limit"):
        list(fitted_shards([(0, 9)], nine, 2, measure, ShardBudget(1, 2, lambda size: size)))
    fitting = ShardBudget(1, int(alone), lambda size: size)  # over the share, within the limit
    assert next(fitted_shards([(0, 9)], nine, 2, measure, fitting)) == ((0, 1), [(0, 1)])


def _widths(starts, ends):
    """A level whose shard [lo, hi) holds hi - lo positions."""
    ends = np.asarray(ends)
    return np.array([np.where(ends > lo, ends - lo, 0) for lo in starts], dtype=np.int64)


@pytest.mark.parametrize("ordered", [False, True])
def test_shards_reach_as_far_as_fits_past_a_window_and_inside_a_wide_partition(ordered):
    """Each shard as wide as the budget allows, also from a start in the middle of a
    measured window (not stopped at its end), and in a partition far over the budget
    (narrowed until a cut fits)."""
    fit = ShardBudget(400, 10**9, lambda size: size, ordered)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(shards_module, "_WINDOW", 512)
        ones = [(e, e + 1) for e in range(1000)]
        reaches = reached(ones, np.ones(1000))
        found = [span for span, _ in fitted_shards(ones, reaches, 1, _widths, fit)]
    assert found == [(0, 400), (400, 800), (800, 1000)]
    fit = ShardBudget(10, 10**9, lambda size: size, ordered)
    found = list(fitted_shards([(0, 1000)], reached([(0, 1000)], np.ones(1000)), 1, _widths, fit))
    assert all(hi - lo <= 10 for (lo, hi), _ in found) and found[0][0][1] - found[0][0][0] >= 5
    assert [group for _, group in found] == [[span] for span, _ in found]
    assert found[0][0][0] == 0 and found[-1][0][1] == 1000
    assert all(a[0][1] == b[0][0] for a, b in zip(found, found[1:], strict=False))


def test_a_shard_whose_fixed_part_alone_does_not_fit_is_refused():
    fit = ShardBudget(100, 300, lambda size: 150 + size)
    with pytest.raises(BudgetError, match="of every element alone.*--memory-limit"):
        list(fitted_shards([(0, 9)], reached([(0, 9)], np.ones(9)), 2, _widths, fit))
