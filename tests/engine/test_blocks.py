"""A level's vectors per element in blocks of elements (engine/blocks.py): the rank by
rarity made block by block, and each range's own elements' values looked up in the
blocks, are those of the whole vector."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from prudence_cli.engine import blocks
from prudence_cli.engine.indexes import rarity_rank
from prudence_cli.engine.per_element import PerElement
from prudence_cli.engine.ranged import split
from prudence_cli.engine.runner import LocalRunner
from tests.conftest import OnWorkers
from tests.engine.test_engine import random_problem

pytestmark = pytest.mark.usefixtures("kernels")


def _blocks_of(whole: np.ndarray, block: int | None, ranges: int, seed: int) -> tuple:
    """`whole` added up a block at a time from `ranges` ranges' shares of it."""
    at = blocks.cuts(whole.shape[0], block)
    owner = np.random.default_rng(seed).integers(0, ranges, whole.shape[0])
    own = [np.where(owner == r, whole, 0) for r in range(ranges)]
    found = LocalRunner().summed_blocks(
        lambda vector: blocks.in_blocks(PerElement.of(vector), at), own, at.shape[0] - 1
    )
    return found, at


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 6) | st.integers(0, 300), max_size=120),
    st.sampled_from([None, 1, 2, 5, 16]),
    st.integers(1, 3),
    st.integers(0, 9),
)
@example([0, 0, 0], 1, 1, 0)  # every element held by no one
@example([4, 1, 4, 1, 0, 4], 2, 2, 0)  # ties across blocks: by id
def test_the_rank_made_in_blocks_is_the_whole_vectors(holders, block, ranges, seed):
    """Each block ranks its elements from where each count of holders begins in the
    whole order and in the blocks before it: `rarity_rank` of the whole vector (by how
    few hold each, ties by id), in 32 bits."""
    whole = np.array(holders, dtype=np.int64)
    found, at = _blocks_of(whole, block, ranges, seed)
    rank = blocks.ranked(LocalRunner(), found, at, (None, True))
    got = np.concatenate(rank) if rank else np.zeros(0, np.int32)
    assert got.dtype == np.int32 and got.tolist() == rarity_rank(whole).tolist()


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(1, 5),
    st.sampled_from([1, 3, 8, 1000]),
    st.sampled_from(["contains", "sequence"]),
    st.integers(1, 3),
)
def test_each_range_looks_up_its_own_elements_as_the_whole_vector_gives_them(
    seed, ranges, block, match, workers
):
    """A range given its own elements' values of a vector in blocks (`looked_up`) reads
    at each of its lists' elements what the whole vector holds there; it holds those
    elements only. The ranges kept on a worker ask together: each block is read once a
    worker holding ranges, however many it holds."""
    problem = random_problem(np.random.default_rng(seed), 30, 20, 2, match=match)
    level = split(problem, LocalRunner(), ranges)
    n = int(max(problem.members.elements.max(initial=-1),
                problem.queries.elements.elements.max(initial=-1))) + 1  # fmt: skip
    whole = np.random.default_rng(seed).integers(0, 50, n)
    found, at = _blocks_of(whole, block, 2, seed)
    runner = OnWorkers(workers)
    for part, own in zip(level.parts, blocks.looked_up(runner, found, at, level.parts),
                         strict=True):  # fmt: skip
        lists = (part.problem.members.elements, part.problem.queries.elements.elements)
        assert own.ids.tolist() == np.union1d(*lists).tolist() and own.size == n
        for elements in lists:
            assert own[elements].tolist() == whole[elements].tolist()
        assert len(own) == n
    assert runner.ran[blocks._read_each] == len(found) * min(workers, ranges)
    assert runner.ran[blocks._pieces] == len(found) * min(workers, ranges)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=30), st.lists(st.integers(0, 40), max_size=30))
def test_a_vector_of_some_elements_reads_as_the_whole_one_at_them(values, asked):
    """`PerElement[elements]` is `whole()[elements]`, in either form (0 where none)."""
    whole = np.zeros(41, dtype=np.int64)
    whole[: len(values)] = values
    elements = np.array(asked, dtype=np.int64)
    for vector in (PerElement.of(whole), PerElement(None, whole, 41)):
        assert vector[elements].tolist() == whole[elements].tolist()
    ids = np.flatnonzero(whole)
    assert PerElement(ids, whole[ids], 41)[elements].tolist() == whole[elements].tolist()
