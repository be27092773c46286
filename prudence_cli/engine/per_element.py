"""A vector over a level's elements (places or distinct visits, ids 0..size-1) that one
range of people makes: its holders per element, or the work of the partitions beginning
at each. A range holds a few of the level's elements, so its vector is kept as the ids
it is not zero at and their values when that takes a quarter of the whole vector or
less; the ranges' vectors are added up (on a Dask cluster two by two, on the workers)
and made whole once, where the level's plan reads them. So what a worker holds of a
range grows with the elements of the range, not with the level's (a year of hours on
20,000 places is 175M distinct visits: 1.4 GB a range as a whole vector of float64).
Also the runs of a list of elements, and lists renumbered by them, which a shard and a
sampled range number their elements with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from prudence_cli.engine.indexes import _element_order
from prudence_cli.engine.problem import Elements

# a range's vector is kept as ids and values when that takes at most 1/SPARSE_FROM of the
# whole vector's bytes: where it is about as large, the whole vector is faster to count,
# add and read (at 3M people, 8 % more task time with the threshold at 1), and still no
# more than SPARSE_FROM times what the range's own elements take
SPARSE_FROM = 4


def smaller(sparse: int, whole: int) -> bool:
    """Whether `sparse` bytes are small enough against `whole` ones to keep a vector so."""
    return sparse * SPARSE_FROM <= whole


@dataclass(frozen=True)
class PerElement:
    """`values` at `ids` (ascending, distinct) and zero elsewhere, over `size` elements;
    with `ids` None, `values` is the whole vector (as long as `size`). Each is made in
    the form `smaller` chooses."""

    ids: np.ndarray | None
    values: np.ndarray
    size: int

    @classmethod
    def counted(
        cls, elements: np.ndarray, size: int, weights: np.ndarray | None = None
    ) -> PerElement:
        """`np.bincount(elements, weights, minlength=size)`: how often each element is
        among `elements` (ids below `size`), or the sum of its `weights` (floats, added
        in their order as np.bincount adds them), in the smaller form. The whole vector
        is counted when it is not much longer than `elements`; otherwise the distinct
        elements are sorted out of them."""
        if elements.shape[0] * SPARSE_FROM >= size:
            return cls.of(np.bincount(elements, weights=weights, minlength=size))
        order, ids, runs = element_runs(elements)
        values = runs if weights is None else _run_sums(weights[order], runs)
        return cls.of_entries(ids.astype(_id_type(size)), values, size)

    @classmethod
    def of(cls, whole: np.ndarray) -> PerElement:
        """The whole vector `whole`, in the smaller form."""
        size = whole.shape[0]
        if smaller(_sparse_bytes(int(np.count_nonzero(whole)), size, whole.dtype), whole.nbytes):
            ids: np.ndarray = np.flatnonzero(whole).astype(_id_type(size))
            return cls(ids, whole[ids], size)
        return cls(None, whole, size)

    @classmethod
    def none(cls) -> PerElement:
        """The vector over no element."""
        return cls(None, np.zeros(0, dtype=np.int64), 0)

    def __add__(self, other: PerElement) -> PerElement:
        """The sum, over as many elements as the longer of the two; neither is changed
        (on a cluster both are a task's inputs)."""
        size = max(self.size, other.size)
        dtype = np.result_type(self.values, other.values)
        both = self.values.shape[0] + other.values.shape[0]
        if (
            self.ids is not None
            and other.ids is not None
            and smaller(_sparse_bytes(both, size, dtype), size * dtype.itemsize)
        ):  # so even if no element is in both
            order, ids, runs = element_runs(np.concatenate((self.ids, other.ids)))
            values = np.concatenate((self.values, other.values)).astype(dtype, copy=False)
            return PerElement.of_entries(ids, _run_sums(values[order], runs), size)
        values = np.zeros(size, dtype=dtype)  # never an input's own
        for vector in (self, other):
            if vector.ids is None:
                values[: vector.values.shape[0]] += vector.values
            else:
                values[vector.ids] += vector.values
        if self.ids is None or other.ids is None:
            return PerElement(None, values, size)
        return PerElement.of(values)

    def __getitem__(self, elements: np.ndarray) -> np.ndarray:
        """The values at `elements` (ids below `size`), as `whole()[elements]`: what a
        range's task reads of a level's vector given the range's own elements only
        (blocks.looked_up)."""
        if self.ids is None:
            return self.values[elements]
        found = np.zeros(elements.shape[0], dtype=self.values.dtype)
        if self.ids.shape[0]:
            # searched in ascending order: five times faster than in the lists' order
            # (5M positions among 3M ids: 0.43 s against 2.28 s)
            order = np.argsort(elements)
            at = np.empty(elements.shape[0], dtype=np.intp)
            at[order] = np.searchsorted(self.ids, elements[order])
            np.minimum(at, self.ids.shape[0] - 1, out=at)
            held = self.ids[at] == elements
            found[held] = self.values[at[held]]
        return found

    def __len__(self) -> int:
        return self.size

    def whole(self, size: int | None = None) -> np.ndarray:
        """The whole vector, with zeros after it up to `size` when that is longer (its own
        values, not a copy, when they are the whole vector already as long)."""
        size = self.size if size is None else max(size, self.size)
        if self.ids is None:
            if self.values.shape[0] >= size:
                return self.values
            grown = np.zeros(size, dtype=self.values.dtype)
            grown[: self.values.shape[0]] = self.values
            return grown
        out = np.zeros(size, dtype=self.values.dtype)
        out[self.ids] = self.values
        return out

    def __sizeof__(self) -> int:  # for Dask's memory accounting
        return int(self.values.nbytes + (0 if self.ids is None else self.ids.nbytes))

    @classmethod
    def of_entries(cls, ids: np.ndarray, values: np.ndarray, size: int) -> PerElement:
        """`values` at `ids` (ascending, distinct, below `size`), in the smaller form."""
        held = values != 0  # (an element whose weights are all 0 is no entry)
        if not held.all():
            ids, values = ids[held], values[held]
        if smaller(_sparse_bytes(ids.shape[0], size, values.dtype), size * values.dtype.itemsize):
            return cls(ids, values, size)
        out = np.zeros(size, dtype=values.dtype)
        out[ids] = values
        return cls(None, out, size)


@dataclass
class Held:
    """A level's vector per element kept where the runner made it (on a cluster: its
    future), let go of (`release`) once the level no longer needs it, while the plan
    that holds it still lives (its caller's, until the level is counted)."""

    kept: Any

    def release(self) -> None:
        self.kept = None


def whole_of(vector: PerElement) -> np.ndarray:
    """`vector.whole()`, as a task (where the runner keeps the vector)."""
    return vector.whole()


def element_runs(elements: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stable order of `elements`, their distinct values (increasing) and how many
    positions hold each."""
    order = _element_order(elements)
    if order.shape[0] < 2**31:  # as the indexes hold it (Firsts), not a copy more
        order = order.astype(np.int32)
    ascending = elements[order]
    starts = np.zeros(0, dtype=np.int64)  # where each distinct value begins
    if ascending.size:
        starts = np.flatnonzero(np.r_[True, ascending[1:] != ascending[:-1]])
    return order, ascending[starts], np.diff(np.append(starts, order.shape[0]))


def renumbered(lists: Elements, order: np.ndarray, codes: np.ndarray, runs: np.ndarray) -> Elements:
    """`lists` with each position's element replaced by its number: `codes` of the
    distinct elements, held by `runs` positions each in `order`."""
    elements = np.empty_like(lists.elements)
    elements[order] = np.repeat(codes.astype(lists.elements.dtype), runs)
    return Elements(lists.offsets, elements, lists.values)


def _run_sums(values: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """The sum of each run of `values` (consecutive, `runs` long each): integers exact in
    any order; floats added one after the other in their order, as np.bincount adds them
    (np.add.reduceat adds pairwise: other sums once they are not exact)."""
    if runs.size == 0:
        return values[:0]
    if values.dtype.kind in "iub":
        return np.add.reduceat(values, np.cumsum(runs) - runs)
    return np.bincount(np.repeat(np.arange(runs.size), runs), weights=values, minlength=runs.size)


def _id_type(size: int) -> type:
    return np.int32 if size < 2**31 else np.int64


def _sparse_bytes(count: int, size: int, dtype: np.dtype) -> int:
    return count * (np.dtype(_id_type(size)).itemsize + np.dtype(dtype).itemsize)
