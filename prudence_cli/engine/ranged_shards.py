"""The shard side of a ranged level (engine/ranged.py): what each range gives of its
lists — the work of partitions per first element, the pieces of a shard — and the shard
its worker joins from the pieces, with the partition tasks that read it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from prudence_cli.engine.indexes import _element_order, _Postings, _query_sizes_ok
from prudence_cli.engine.plan import begun_at, first_weights
from prudence_cli.engine.problem import CountingProblem, Elements
from prudence_cli.engine.shards import shard
from prudence_cli.engine.tasks import _keyed_self_task, _keyed_task, _posting_task, _whole_task
from prudence_cli.engine.whole import whole_targets, without_whole


@dataclass(frozen=True)
class Part:
    """A range's share of a level: its problem, its whole-record targets (whole.py), and
    the problem left without their whole queries."""

    problem: CountingProblem
    whole: np.ndarray
    rest: CountingProblem


def surveyed(problem: CountingProblem) -> Part:
    """The range's `Part`: its whole-record targets told apart."""
    whole = whole_targets(problem)
    return Part(problem, whole, without_whole(problem, whole) if whole.any() else problem)


def joined(problems: list[CountingProblem]) -> CountingProblem:
    """One problem of the users of `problems`, one after the other."""
    first = problems[0]
    members = _joined_lists([p.members for p in problems])
    own = all(p.queries.elements is p.members for p in problems)
    queries = members if own else _joined_lists([p.queries.elements for p in problems])
    uppers = [p.queries.upper for p in problems if p.queries.upper is not None]
    upper = np.concatenate(uppers) if uppers else None
    spec = replace(
        first.queries,
        elements=queries,
        size_lo=np.concatenate([p.queries.size_lo for p in problems]),
        size_hi=np.concatenate([p.queries.size_hi for p in problems]),
        upper=upper,
    )
    return replace(first, members=members, queries=spec)


def _joined_lists(lists: list[Elements]) -> Elements:
    lengths = np.concatenate([part.lengths for part in lists])
    offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return Elements(
        offsets,
        np.concatenate([part.elements for part in lists]),
        np.concatenate([part.values for part in lists]),
    )


def _first_weights(part: Part, kind: str, s: int, n: int, own: bool) -> np.ndarray:
    """Per element, the range's work of partitions beginning there: the keys of size s
    (members', and the queries' of their targets unless the level's queries are the
    members' `own`), the queries (posting checks), or the whole-record queries' elements
    (`kind` whole)."""
    if kind == "whole":
        q = part.problem.queries.elements
        users = np.flatnonzero(part.whole)
        first = q.elements[q.offsets[users]]  # a whole record is never empty
        return np.bincount(first, weights=q.lengths[users].astype(float), minlength=n)
    problem = part.rest
    spec = problem.queries
    asking = _query_sizes_ok(spec, s)
    weights = np.zeros(n)
    if kind == "keyed":
        weights += _weights_of(problem.members, s, n)
        if own:
            return weights
    weights += _weights_of(spec.elements, s, n, asking)
    return weights


def _weights_of(lists: Elements, s: int, n: int, users: np.ndarray | None = None) -> np.ndarray:
    owners = np.repeat(np.arange(lists.n_users, dtype=np.int64), lists.lengths)
    begun = begun_at(lists.offsets, np.arange(lists.elements.shape[0]), owners, s)
    return first_weights(lists, owners, begun, n, users)


def _cut(part: Part, lo: int, hi: int, kind: str) -> tuple[CountingProblem, np.ndarray | None]:
    """The range's piece of the shard of elements [lo, hi): the suffixes of its lists
    (shards.shard) of the rest, or (`kind` whole) of the problem whole-record queries
    read, with the targets whose whole query begins in [lo, hi) (held whole, then)."""
    if kind != "whole":
        return shard(part.rest, lo, hi).problem, None
    cut = shard(part.problem, lo, hi).problem
    lengths = part.problem.queries.elements.lengths
    begins = part.whole & (lengths > 0) & (cut.queries.elements.lengths == lengths)
    return cut, begins


class Firsts:
    """A shard's positions ordered by element: those of partition [lo, hi) are a slice,
    in the order the planning process's start index gives them (indexes._StartIndex)."""

    def __init__(self, lists: Elements, n_elements: int) -> None:
        order = _element_order(lists.elements, n_elements)
        self.order = order.astype(np.int32) if order.shape[0] < 2**31 else order
        del order
        self.bounds = np.zeros(n_elements + 1, dtype=np.int64)
        np.cumsum(np.bincount(lists.elements, minlength=n_elements), out=self.bounds[1:])

    def starts(self, lo: int, hi: int) -> np.ndarray:
        return self.order[self.bounds[lo] : self.bounds[hi]].astype(np.int64)


@dataclass
class ShardData:
    """A shard as its tasks take it, made on its worker."""

    problem: CountingProblem
    n_elements: int
    members: Firsts | None = None
    queries: Firsts | None = None
    postings: _Postings | None = None
    whole: np.ndarray | None = None  # whole-record targets, by first query element
    whole_first: np.ndarray | None = None


def _joined_shard(n: int, kind: str, *pieces: tuple[CountingProblem, Any]) -> ShardData:
    """The shard of `kind` from its ranges' `pieces`, with what its tasks read."""
    problem = joined([piece for piece, _ in pieces])
    data = ShardData(problem, n)
    if kind == "keyed":
        data.members = Firsts(problem.members, n)
        if not problem.self_queries:
            data.queries = Firsts(problem.queries.elements, n)
        return data
    data.postings = _Postings(problem.members, n, not problem.ordered)
    if kind == "posting":
        data.queries = Firsts(problem.queries.elements, n)
        return data
    whole = np.flatnonzero(np.concatenate([flags for _, flags in pieces]))
    q = problem.queries.elements
    first = q.elements[q.offsets[whole]]
    order = np.argsort(first, kind="stable")
    data.whole, data.whole_first = whole[order], first[order]
    return data


def _keyed_part(
    data: ShardData, lo: int, hi: int, s: int, brute_limit: int, worker: Any
) -> tuple[np.ndarray, np.ndarray]:
    problem = data.problem
    assert data.members is not None
    m_starts = data.members.starts(lo, hi)
    if problem.self_queries:
        members = problem.members
        owners = np.searchsorted(members.offsets, m_starts, side="right") - 1
        per_start = begun_at(members.offsets, m_starts, owners, s)
        return _keyed_self_task(
            problem, m_starts, per_start, s, data.n_elements, brute_limit, worker
        )
    assert data.queries is not None
    q_starts = data.queries.starts(lo, hi)
    return _keyed_task(problem, m_starts, q_starts, s, data.n_elements, brute_limit, worker)


def _posting_part(
    data: ShardData, lo: int, hi: int, s: int, worker: Any
) -> tuple[np.ndarray, np.ndarray]:
    assert data.queries is not None and data.postings is not None
    return _posting_task((data.problem, data.postings), data.queries.starts(lo, hi), s, worker)


def _whole_part(data: ShardData, lo: int, hi: int, worker: Any) -> tuple[np.ndarray, np.ndarray]:
    assert data.whole is not None and data.whole_first is not None and data.postings is not None
    a, b = np.searchsorted(data.whole_first, [lo, hi])
    return _whole_task((data.problem, data.postings), data.whole[a:b], worker)
