"""A range's vector per element (engine/per_element.py): counted and added up in
whichever form is smaller, it is always np.bincount of the ranges' elements together."""

from __future__ import annotations

import operator
from functools import reduce
from unittest import mock

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from prudence_cli.engine import blocks, plan
from prudence_cli.engine.per_element import SPARSE_FROM, PerElement, whole_of
from prudence_cli.engine.plan import held_partitions
from prudence_cli.engine.runner import LocalRunner
from tests.engine.test_engine import partitions_by_definition


def _ranges(draw, size: int, weighted: bool) -> list[tuple[np.ndarray, np.ndarray | None]]:
    ranges = []
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(0, min(2 * size + 2, 300)))
        elements = np.array(draw(st.lists(st.integers(0, size - 1), min_size=n, max_size=n)))
        elements = elements.astype(draw(st.sampled_from([np.int32, np.int64])))
        weights = None
        if weighted:
            weights = np.array(draw(st.lists(st.integers(0, 50), min_size=n, max_size=n)))
            weights = weights.astype(float)
        ranges.append((elements, weights))
    return ranges


@st.composite
def ranges_of_a_level(draw):
    size = draw(st.sampled_from([1, 3, 40, 150, 100_000]))
    weighted = draw(st.booleans())
    return size, weighted, _ranges(draw, size, weighted)


@settings(max_examples=200, deadline=None)
@given(ranges_of_a_level())
def test_counted_and_added_it_is_the_bincount_of_all_the_ranges(level):
    size, weighted, ranges = level
    vectors = [PerElement.counted(e, size, w) for e, w in ranges]
    for (e, w), v in zip(ranges, vectors, strict=True):
        assert np.array_equal(v.whole(), np.bincount(e, weights=w, minlength=size))
        assert v.size == size
    copies = [(None if v.ids is None else v.ids.copy(), v.values.copy()) for v in vectors]
    total = reduce(operator.add, vectors)
    elements = np.concatenate([e for e, _ in ranges])
    weights = np.concatenate([w for _, w in ranges]) if weighted else None
    expected = np.bincount(elements, weights=weights, minlength=size)
    if elements.size:  # (np.bincount of nothing gives integers even with weights)
        assert total.whole().dtype == expected.dtype
    assert np.array_equal(total.whole(), expected)
    assert np.array_equal(whole_of(total), expected)
    for v, (ids, values) in zip(vectors, copies, strict=True):  # an add changes neither
        assert np.array_equal(v.values, values)
        assert ids is None or np.array_equal(v.ids, ids)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=0, max_size=300), st.integers(0, 1))
def test_the_form_kept_is_ids_and_values_when_they_take_a_quarter_of_the_whole(values, zeros):
    whole = np.r_[np.array(values, dtype=np.int64), np.zeros(zeros * 500, dtype=np.int64)]
    v = PerElement.of(whole)
    sparse_bytes = int(np.count_nonzero(whole)) * (4 + 8)
    assert np.array_equal(v.whole(), whole)
    assert (v.ids is not None) == (sparse_bytes * SPARSE_FROM <= whole.nbytes)
    assert v.__sizeof__() == (whole.nbytes if v.ids is None else sparse_bytes)


def test_a_range_holding_few_of_many_elements_keeps_only_those():
    """A range that holds 3 of a level's 175M elements keeps 3 ids and 3 values (36
    bytes, not 1.4 GB), and so does their sum with another such range."""
    size = 175_200_000
    a = PerElement.counted(np.array([7, 174_000_000, 7], dtype=np.int32), size)
    b = PerElement.counted(np.array([5, 7], dtype=np.int32), size, np.array([2.0, 0.5]))
    assert a.ids.tolist() == [7, 174_000_000] and a.values.tolist() == [2, 1]
    assert a.ids.dtype == np.int32 and a.__sizeof__() == 2 * (4 + 8)
    total = a + b
    assert total.ids.tolist() == [5, 7, 174_000_000]
    assert total.values.tolist() == [2.0, 2.5, 1.0] and total.values.dtype == np.float64
    assert total.size == size


def test_vectors_of_different_lengths_add_up_to_the_longer():
    """A census counts up to its range's largest element: vectors of different lengths
    add up as if the shorter had zeros after it; `whole` grows one to a length asked."""
    short = PerElement.of(np.array([1, 2, 3]))
    long = PerElement.counted(np.array([9, 9]), 10)
    assert short.ids is None and long.ids is not None
    assert (short + long).whole().tolist() == [1, 2, 3, 0, 0, 0, 0, 0, 0, 2]
    assert (long + short).whole().tolist() == [1, 2, 3, 0, 0, 0, 0, 0, 0, 2]
    assert short.whole(5).tolist() == [1, 2, 3, 0, 0]
    assert long.whole(12).tolist() == [0] * 9 + [2, 0, 0]
    assert (PerElement.none() + short).whole().tolist() == [1, 2, 3]
    assert PerElement.none().whole(2).tolist() == [0, 0]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([50, 100_000]))
def test_fractional_weights_add_up_in_their_order_as_bincount_adds_them(seed, size):
    """Sums that are not exact (past 2^53, or fractions) are those of np.bincount, which
    adds each element's weights one after the other, and of adding the ranges' vectors
    whole: the same bits in either form."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, min(size, 30), 40), rng.integers(0, min(size, 30), 25)
    wa, wb = rng.random(40) * 1e17, rng.random(25) / 3
    one, two = PerElement.counted(a, size, wa), PerElement.counted(b, size, wb)
    assert (one.ids is not None) == (size == 100_000)
    expected = np.bincount(a, wa, minlength=size)
    assert np.array_equal(one.whole(), expected)
    assert np.array_equal((one + two).whole(), expected + np.bincount(b, wb, minlength=size))


def test_ids_are_64_bits_from_2_to_the_31_elements_and_zeros_are_no_entries():
    big = PerElement.counted(np.array([5, 2**31 + 7], dtype=np.int64), 2**31 + 8)
    assert big.ids.dtype == np.int64 and big.ids.tolist() == [5, 2**31 + 7]
    weighted = PerElement.counted(np.array([1, 9, 9, 4]), 1000, np.array([0.0, 2.0, 1.0, 0.0]))
    assert weighted.ids.tolist() == [9] and weighted.values.tolist() == [3.0]


@st.composite
def _held_weights(draw):
    """A vector of partition weights over `size` elements, most of them 0 (whole-record
    queries: few elements begin one), as the ranges' sum keeps it (PerElement)."""
    size = draw(st.integers(0, 80))
    held = draw(st.lists(st.integers(0, max(size - 1, 0)), max_size=size, unique=True))
    kind = draw(st.sampled_from(["small", "heavy", "halves", "huge"]))
    values = {
        "small": st.integers(0, 6),
        "heavy": st.one_of(st.integers(0, 3), st.integers(30, 90)),  # some alone over it
        "halves": st.integers(0, 12).map(lambda v: v / 2),  # not whole: made whole
        "huge": st.sampled_from([1.0, 2.0**52, 2.0**53, 3.0]),  # sums not exact
    }[kind]
    whole = np.zeros(size)
    for element in held if size else []:
        whole[element] = draw(values)
    budget = draw(st.integers(1, 40))
    return whole, budget


def _in_blocks(whole: np.ndarray, block: int | None, ranges: int, seed: int) -> tuple:
    """`whole` as the ranges' vectors added up a block at a time (LocalRunner): each
    range holds some of its weights, in the form PerElement keeps them."""
    at = blocks.cuts(whole.shape[0], block)
    rng = np.random.default_rng(seed)
    owner = rng.integers(0, ranges, whole.shape[0])
    own = [np.where(owner == r, whole, 0.0) for r in range(ranges)]
    found = LocalRunner(element_block=block).summed_blocks(
        lambda vector: blocks.in_blocks(PerElement.of(vector), at), own, at.shape[0] - 1
    )
    return found, at


@settings(max_examples=400, deadline=None)
@given(
    _held_weights(), st.sampled_from([None, 1, 2, 3, 7, 16]), st.integers(1, 3), st.integers(0, 9)
)
# sums past 2^53 that differ with the order they are made in: a chunk's running sums
# added to the carry (with chunks of 7), numpy's pairwise sum (8 partial sums)
@example((np.array([2.0**53, 0, 0, 0, 0, 0, 0, 1, 1]), 5), None, 1, 0)
@example((np.array([2.0**53, 0, 0, 0, 1, 0, 0, 1]), 5), None, 1, 0)
# blocks each of exact sums, whose total is not
@example((np.array([2.0**52, 0, 2.0**52, 1]), 5), 2, 1, 0)
def test_partitions_of_the_weights_in_blocks_are_the_whole_vectors(case, block, ranges, seed):
    """A level's partitions and their running sums, found a block of elements at a time
    from the weights each block holds (most elements begin no partition's queries), are
    those of the whole vector: the greedy definition, and Σ weights[:end] at each end
    and in all last. Each block is a sum of the ranges' pieces of it: the whole vector's
    numbers at its elements."""
    whole, budget = case
    expected = partitions_by_definition(whole.tolist(), budget)
    found, at = _in_blocks(whole, block, ranges, seed)
    assert np.array_equal(np.concatenate([b.whole() for b in found]), whole)
    assert [b.size for b in found] == np.diff(at).tolist()
    exact = plan.exact_extent(whole)
    # running sums that are not exact are made a chunk at a time from each block's first
    # element: the same as over the whole vector when blocks are made of chunks (as
    # blocks.CLUSTER_BLOCK is of plan._CHUNK)
    chunks = (1 << 20, 7) if exact or block is None else (block, 1)
    for chunk in chunks:
        with mock.patch.object(plan, "_CHUNK", chunk):
            reached = plan.sums_at(whole, [hi for _, hi in expected] + [whole.shape[0]])
            for weights in (found, [PerElement(None, whole, whole.shape[0])]):
                at_ = at if weights is found else blocks.cuts(whole.shape[0], None)
                of = sum(map(blocks.extent, weights), blocks.Extent(0.0, 0.0, True))
                parts, reaches = blocks.partitioned(LocalRunner(), weights, at_, budget, of)
                assert parts == expected
                assert reaches.tolist() == reached.tolist()
                assert of.heaviest == float(whole.max(initial=0)) and of.exact == exact
                if exact or len(weights) == 1:  # a sum made in blocks, when not exact
                    assert of.total == float(whole.sum())
    if exact:  # the running sums' definition
        running = np.concatenate([[0.0], np.cumsum(whole)])
        assert reached.tolist() == [running[hi] for _, hi in expected] + [running[-1]]


def test_running_sums_are_exact_of_whole_numbers_not_negative_below_2_to_the_53():
    """`exact_extent`: the sums that are the same in any order, so that the partitions
    may be searched in running sums and a level's total made in blocks."""
    assert plan.exact_extent(np.array([2.0**53 - 1])) and plan.exact_extent(np.zeros(0))
    assert plan.exact_extent(np.array([3, 4], dtype=np.int64))
    assert not plan.exact_extent(np.array([2.0**53]))
    assert not plan.exact_extent(np.array([2.0**52, 2.0**52]))
    assert not plan.exact_extent(np.array([1.0, -1.0, 3.0]))
    assert not plan.exact_extent(np.array([0.5, 2.0]))
    assert not plan.exact_extent(np.array([2**62, 2**62, 1], dtype=np.int64))  # no wrap
    # a total of 2^53 is cut in turn: its running sums are not exact
    assert plan._partitions(np.array([2.0**53, 1.0]), 1) == [(0, 1), (1, 2)]


def test_partitions_of_held_weights_worked_example():
    """Over 10 elements, weights 2 at 1, 9 at 4 (over the budget of 5 alone), 3 at 6 and
    4 at 7: [0, 4) holds 2, the elements of no work after it included; 4 closes right
    after itself; 6 and 7 together pass 5, so 6 takes 5 and 7 takes the rest."""
    ids, values = np.array([1, 4, 6, 7], dtype=np.int32), np.array([2.0, 9.0, 3.0, 4.0])
    parts, reaches = held_partitions(ids, values, 10, 5)
    assert parts == [(0, 4), (4, 5), (5, 7), (7, 10)]
    assert reaches.tolist() == [2.0, 11.0, 14.0, 18.0, 18.0]
    assert held_partitions(ids, np.array([0.5, 9.0, 3.0, 4.0]), 10, 5) is None  # not whole
