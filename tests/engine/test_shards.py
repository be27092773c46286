"""Shards of a level (engine/shards.py): each worker's part of the data gives, partition by
partition, the supports the whole data gives — for every match, query mode, strategy
and ordering — and is smaller than the whole."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.engine import Elements, Engine
from prudence_cli.engine.indexes import _enumerate_queries
from prudence_cli.engine.runner import LocalRunner
from prudence_cli.engine.shards import shard, shard_ranges, suffixes
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
    grouped = list(shard_ranges(parts, weights, 2))
    assert grouped == [((0, 6), [(0, 1), (1, 3), (3, 6)]), ((6, 9), [(6, 7), (7, 9)])]
    assert list(shard_ranges(parts, weights, 9)) == [((lo, hi), [(lo, hi)]) for lo, hi in parts]
    assert [r for r, _ in shard_ranges(parts, weights, 1)] == [(0, 9)]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    case=st.sampled_from(MATCH_MODES),
    strategy=st.sampled_from(["keyed", "posting"]),
    partition=st.sampled_from([1, 3, 20]),
    shards=st.integers(2, 5),
    h=st.integers(1, 3),
)
def test_sharded_supports_are_the_whole_datas(seed, case, strategy, partition, shards, h):
    match, mode = case
    problem = random_problem(np.random.default_rng(seed), 40, 9, h, match=match, mode=mode)
    whole = Engine(strategy=strategy, partition_instances=partition).min_support(problem)
    cut = Engine(
        strategy=strategy, partition_instances=partition, runner=LocalRunner(shards=shards)
    ).min_support(problem)
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
        for (lo, hi), _ in shard_ranges(parts, weights, 4)
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
