"""The shard side of a ranged level (engine/ranged.py): what each range gives of its
lists — the work of partitions per first element, the pieces of a shard — and the shard
its worker joins from the pieces, with the partition tasks that read it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from prudence_cli.arrays import union_sorted
from prudence_cli.engine.indexes import _element_order, _Postings, _query_sizes_ok
from prudence_cli.engine.per_element import PerElement, element_runs, renumbered
from prudence_cli.engine.plan import begun_at
from prudence_cli.engine.problem import CountingProblem, Elements, QuerySpec, nbytes
from prudence_cli.engine.shards import shard, shard_positions
from prudence_cli.engine.tasks import (
    Worker,
    _as_planned,
    _compact,
    _keyed_self_task,
    _keyed_task,
    _posting_task,
    _whole_task,
)
from prudence_cli.engine.whole import whole_targets, without_whole


@dataclass(frozen=True)
class Part:
    """A range's share of a level: its problem, its whole-record targets (whole.py), and
    the problem left without their whole queries."""

    problem: CountingProblem
    whole: np.ndarray
    rest: CountingProblem

    def __sizeof__(self) -> int:
        # what a Dask worker counts of it when it decides what to spill to disk
        return nbytes(self.problem, self.whole, self.rest)


def surveyed(problem: CountingProblem) -> Part:
    """The range's `Part`: its whole-record targets told apart."""
    whole = whole_targets(problem)
    return Part(problem, whole, without_whole(problem, whole) if whole.any() else problem)


# a piece of a shard: a range's problem cut to the shard, of the range's people who hold a
# suffix in it only (`held`, sorted, of the range's `of`; None: every one of them), and
# which of its targets are whole (None: not the whole-record queries' shard)
Piece = tuple[CountingProblem, "np.ndarray | None", "np.ndarray | None", int]


def people_held(problem: CountingProblem, flags: np.ndarray | None) -> Piece:
    """A range's problem cut to a shard (shards.shard: every person, most with nothing)
    as a piece of the people who hold something in it: the others hold no position, so
    their lists go by their offsets alone, and the shard's per-person arrays are as
    long as the people it counts, not as the level's."""
    members, spec = problem.members, problem.queries
    holding = members.lengths > 0
    if spec.elements is not members:
        holding |= spec.elements.lengths > 0
    held = np.flatnonzero(holding)
    if held.shape[0] == problem.n_users:
        return problem, flags, None, problem.n_users

    def kept(lists: Elements) -> Elements:
        return Elements(np.r_[lists.offsets[held], lists.offsets[-1]], lists.elements, lists.values)

    lists = kept(members)
    totals = None if spec.list_totals is None else spec.list_totals[held]
    spec = replace(
        spec,
        elements=lists if spec.elements is members else kept(spec.elements),
        size_lo=spec.size_lo[held],
        size_hi=spec.size_hi[held],
        list_totals=totals,
    )
    cut = replace(problem, members=lists, queries=spec)
    return cut, None if flags is None else flags[held], held, problem.n_users


@dataclass(frozen=True)
class PieceSize:
    """What joining a piece needs to know before reading it (`piece_size`)."""

    users: int  # the people it holds
    of: int  # the people of its range
    members: int  # positions of its members' lists
    queries: int  # positions of its queries' lists (the members' again when their own)
    own: bool  # its queries are its members
    upper: bool
    flags: bool
    totals: bool  # its queries keep their whole lists' totals (compositions)


def piece_size(piece: Piece) -> PieceSize:
    problem, flags, _, of = piece
    spec = problem.queries
    return PieceSize(
        problem.n_users,
        of,
        int(problem.members.elements.shape[0]),
        int(spec.elements.elements.shape[0]),
        spec.elements is problem.members,
        spec.upper is not None,
        flags is not None,
        spec.list_totals is not None,
    )


class _Joining:
    """The arrays of a joined piece, filled piece by piece (the k-th at the positions the
    sizes before it leave), made when the first piece comes (of its types)."""

    def __init__(self, sizes: list[PieceSize]) -> None:
        self.sizes = sizes
        self.own = all(size.own for size in sizes)
        self.users = np.cumsum([0] + [size.users for size in sizes]).tolist()
        self.first = np.cumsum([0] + [size.of for size in sizes]).tolist()  # in the level
        self.members = np.cumsum([0] + [size.members for size in sizes]).tolist()
        self.queries = np.cumsum([0] + [size.queries for size in sizes]).tolist()
        if len({(size.upper, size.totals) for size in sizes}) > 1:
            raise ValueError("the pieces of a shard disagree on their queries' bounds or totals")
        self.made = False

    def _make(self, first: CountingProblem) -> None:
        users, spec = self.users[-1], first.queries
        self.made = True
        self.settings = (first.match, first.ordered, spec.mode, spec.compose, spec.delta)
        self.member_lists = _empty_lists(first.members, users, self.members[-1])
        self.query_lists = self.member_lists
        if not self.own:
            self.query_lists = _empty_lists(spec.elements, users, self.queries[-1])
        self.size_lo = np.empty(users, dtype=spec.size_lo.dtype)
        self.size_hi = np.empty(users, dtype=spec.size_hi.dtype)
        self.upper = np.empty(self.queries[-1]) if self.sizes[0].upper else None
        self.flags = np.zeros(users, dtype=bool) if self.sizes[0].flags else None
        self.totals = np.empty(users) if self.sizes[0].totals else None
        # who each is among the level's people
        self.people = np.empty(users, dtype=np.int32 if self.first[-1] < 2**31 else np.int64)

    def put(
        self,
        problem: CountingProblem,
        flags: np.ndarray | None,
        held: np.ndarray | None,
        of: int,
        k: int,
    ) -> None:
        """The k-th piece, in its place."""
        if not self.made:
            self._make(problem)
        spec = problem.queries
        u, n = self.users[k], problem.n_users
        self.people[u : u + n] = self.first[k] + (np.arange(n) if held is None else held)
        _put_lists(self.member_lists, problem.members, u, self.members[k])
        if not self.own:
            _put_lists(self.query_lists, spec.elements, u, self.queries[k])
        self.size_lo[u : u + n] = spec.size_lo
        self.size_hi[u : u + n] = spec.size_hi
        if self.upper is not None and spec.upper is not None:
            q = self.queries[k]
            self.upper[q : q + spec.upper.shape[0]] = spec.upper
        if self.flags is not None and flags is not None:
            self.flags[u : u + n] = flags
        if self.totals is not None and spec.list_totals is not None:
            self.totals[u : u + n] = spec.list_totals

    def __sizeof__(self) -> int:
        if not self.made:
            return 0
        held = (self.member_lists, self.query_lists, self.size_lo, self.size_hi, self.upper)
        return nbytes(*held, self.flags, self.totals, self.people)

    def joined(self) -> tuple[CountingProblem, np.ndarray | None, np.ndarray]:
        """The shard's problem, of the people its pieces hold, which of its targets are
        whole, and who its people are among the level's."""
        if not self.made:
            raise ValueError("a shard is joined from one piece at least")
        match, ordered, mode, compose, delta = self.settings
        spec = QuerySpec(
            self.query_lists,
            self.size_lo,
            self.size_hi,
            self.upper,
            mode,
            compose,
            delta,
            self.totals,
        )
        return CountingProblem(self.member_lists, spec, match, ordered), self.flags, self.people


def _empty_lists(like: Elements, users: int, positions: int) -> Elements:
    offsets = np.zeros(users + 1, dtype=np.int64)
    elements = np.empty(positions, dtype=like.elements.dtype)
    return Elements(offsets, elements, np.empty(positions, dtype=like.values.dtype))


def _put_lists(into: Elements, lists: Elements, u: int, at: int) -> None:
    n, size = lists.n_users, lists.elements.shape[0]
    into.offsets[u + 1 : u + n + 1] = lists.offsets[1:] + at
    into.elements[at : at + size] = lists.elements
    into.values[at : at + size] = lists.values


def _first_weights(part: Part, kind: str, s: int, n: int, own: bool) -> PerElement:
    """Per element, the range's work of partitions beginning there: the keys of size s
    (members', and the queries' of their targets unless the level's queries are the
    members' `own`), the queries (posting checks), or the whole-record queries' elements
    (`kind` whole); over the level's `n` elements, kept as the range's own (PerElement)."""
    if kind == "whole":
        q = part.problem.queries.elements
        users = np.flatnonzero(part.whole)
        first = q.elements[q.offsets[users]]  # a whole record is never empty
        return PerElement.counted(first, n, q.lengths[users].astype(float))
    problem = part.rest
    spec = problem.queries
    asking = _query_sizes_ok(spec, s)
    if kind != "keyed":
        return _begun(spec.elements, s, n, asking)
    members = _begun(problem.members, s, n)
    # the queries' added to the members' (as plan.first_weights adds them: the same sums)
    return members if own else members + _begun(spec.elements, s, n, asking)


def _begun(lists: Elements, s: int, n: int, users: np.ndarray | None = None) -> PerElement:
    """How many s-subsets of the `lists` begin at each of the `n` elements (only those of
    `users` when given, a weight a list)."""
    owners = np.repeat(np.arange(lists.n_users, dtype=np.int64), lists.lengths)
    weights = begun_at(lists.offsets, np.arange(lists.elements.shape[0]), owners, s).astype(float)
    if users is not None:
        weights *= users[owners]
    return PerElement.counted(lists.elements, n, weights)


def _measured(part: Part, kind: str, starts: list[int], ends: np.ndarray) -> np.ndarray:
    """The positions of the range's pieces (`_cut`) of the shards [starts[a], ends[b]),
    counted, not cut (shards.shard_positions)."""
    return shard_positions(part.problem if kind == "whole" else part.rest, starts, ends)


def _cut(part: Part, lo: int, hi: int, kind: str) -> Piece:
    """The range's piece of the shard of elements [lo, hi): the suffixes of its lists
    (shards.shard) of the rest, or (`kind` whole) of the problem whole-record queries
    read, with the targets whose whole query begins in [lo, hi) (held whole, then); of
    the people who hold a suffix (`people_held`)."""
    if kind != "whole":
        return people_held(shard(part.rest, lo, hi).problem, None)
    cut = shard(part.problem, lo, hi).problem
    lengths = part.problem.queries.elements.lengths
    begins = part.whole & (lengths > 0) & (cut.queries.elements.lengths == lengths)
    return people_held(cut, begins)


@dataclass(frozen=True)
class Numbered:
    """A shard's problem with its elements numbered 0, 1, ... in the order of their ids
    in the level (`ids`, increasing: number c is element ids[c]), and the positions of
    its lists in order of element (stable), as they come out of the numbering."""

    problem: CountingProblem
    ids: np.ndarray
    member_order: np.ndarray
    query_order: np.ndarray  # the members' again when the queries are their own lists


def numbered(problem: CountingProblem) -> Numbered:
    """The shard's elements numbered by the distinct ones it holds (`Numbered`): what its
    worker builds per element (the start indexes' bounds, the posting lists' offsets) is
    then as long as the elements it holds, at most one a position, not as the level's
    (tens of millions of visits). The numbering keeps the ids' order, so every list
    stays in order, every key and every comparison of elements is the same, and the
    partition [lo, hi) of ids is the range of numbers `ShardData.span` gives. Made from
    a stable sort of each list's positions by element (a radix sort: indexes.
    _element_order with no range), nothing the size of the level."""
    members, spec = problem.members, problem.queries
    own = spec.elements is members
    m_order, m_distinct, m_runs = element_runs(members.elements)
    if own:
        ids = m_distinct
    else:
        q_order, q_distinct, q_runs = element_runs(spec.elements.elements)
        ids = union_sorted(m_distinct, q_distinct)
    lists = renumbered(members, m_order, np.searchsorted(ids, m_distinct), m_runs)
    if own:
        spec = replace(spec, elements=lists)
        return Numbered(replace(problem, members=lists, queries=spec), ids, m_order, m_order)
    codes = np.searchsorted(ids, q_distinct)
    spec = replace(spec, elements=renumbered(spec.elements, q_order, codes, q_runs))
    return Numbered(replace(problem, members=lists, queries=spec), ids, m_order, q_order)


class Firsts:
    """A shard's positions ordered by element: those of partition [lo, hi) are a slice,
    in the order the planning process's start index gives them (indexes._StartIndex).
    `order`: that order, when it is known already (`numbered`)."""

    def __init__(self, lists: Elements, n_elements: int, order: np.ndarray | None = None) -> None:
        if order is None:
            order = _element_order(lists.elements, n_elements)
        self.order = order.astype(np.int32, copy=False) if order.shape[0] < 2**31 else order
        del order
        self.bounds = np.zeros(n_elements + 1, dtype=np.int64)
        np.cumsum(np.bincount(lists.elements, minlength=n_elements), out=self.bounds[1:])

    def starts(self, lo: int, hi: int) -> np.ndarray:
        return self.order[self.bounds[lo] : self.bounds[hi]].astype(np.int64)


@dataclass
class ShardData:
    """A shard as its tasks take it, made on its worker."""

    problem: CountingProblem
    n_elements: int  # the element numbers of its lists are below it
    ids: np.ndarray | None = None  # the level's id of each element number (None: the same)
    members: Firsts | None = None
    queries: Firsts | None = None
    postings: _Postings | None = None
    whole: np.ndarray | None = None  # whole-record targets, by first query element
    whole_first: np.ndarray | None = None
    people: np.ndarray | None = None  # who its people are among the level's (None: the same)
    level: int = 0  # the level's people

    def of_level(self, result: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """A task's result (its people, their least support) with the level's people."""
        owners, counts = result
        if self.people is None:
            return owners, counts
        return _compact(self.level, self.people[owners], counts)

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """The element numbers of the level's elements [lo, hi)."""
        if self.ids is None:
            return lo, hi
        ids = self.ids
        top = int(np.iinfo(ids.dtype).max)

        def at(bound: int) -> int:  # searched as the ids' type: no copy of them
            return ids.shape[0] if bound > top else int(np.searchsorted(ids, ids.dtype.type(bound)))

        return at(lo), at(hi)

    def __sizeof__(self) -> int:
        held: list[object] = [self.problem, self.ids, self.whole, self.whole_first, self.people]
        for firsts in (self.members, self.queries):
            if firsts is not None:
                held += [firsts.order, firsts.bounds]
        if self.postings is not None:
            held += [self.postings.users, self.postings.offsets]
        return nbytes(*held)


@dataclass(frozen=True)
class ShardJoiner:
    """Joins the shard of `kind` (runner.Joiner), from its ranges' pieces, on its worker:
    its elements numbered among themselves (`numbered`), with what its tasks read
    (`ShardData`)."""

    kind: str
    worker: Worker | None = None  # how its kernels run (None: as its process has chosen)

    def piece_size(self, piece: Piece) -> PieceSize:
        return piece_size(piece)

    def join_start(self, sizes: list[PieceSize]) -> _Joining:
        return _Joining(sizes)

    def join_piece(self, joining: _Joining, piece: Piece, k: int) -> _Joining:
        joining.put(*piece, k)
        return joining

    def join_finish(self, joining: _Joining) -> ShardData:
        if self.worker is not None:
            _as_planned(self.worker)
        problem, flags, people = joining.joined()
        level = int(joining.first[-1])
        del joining
        shard = numbered(problem)
        problem, n = shard.problem, shard.ids.shape[0]
        data = ShardData(problem, n, shard.ids, people=people, level=level)
        m_order: np.ndarray | None = shard.member_order
        q_order = shard.query_order
        del shard
        # each order goes as soon as an index holds it (as it is) or nothing needs it
        if self.kind == "keyed":
            data.members = Firsts(problem.members, n, m_order)
            del m_order
            if not problem.self_queries:
                data.queries = Firsts(problem.queries.elements, n, q_order)
            return data
        if self.kind == "posting":
            data.queries = Firsts(problem.queries.elements, n, q_order)
        del q_order
        distinct = not problem.ordered
        if not distinct:
            m_order = None  # the posting lists of ordered lists are sorted pairs
        data.postings = _Postings(problem.members, n, distinct, m_order)
        del m_order
        if self.kind == "posting":
            return data
        assert flags is not None
        whole = np.flatnonzero(flags)
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
    lo, hi = data.span(lo, hi)
    m_starts = data.members.starts(lo, hi)
    if problem.self_queries:
        members = problem.members
        owners = _owners(members.offsets, m_starts)
        per_start = begun_at(members.offsets, m_starts, owners, s)
        return data.of_level(
            _keyed_self_task(problem, m_starts, per_start, s, data.n_elements, brute_limit, worker)
        )
    assert data.queries is not None
    q_starts = data.queries.starts(lo, hi)
    return data.of_level(
        _keyed_task(problem, m_starts, q_starts, s, data.n_elements, brute_limit, worker)
    )


def _owners(offsets: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The list of each of `positions` (CSR `offsets`), searched in position order: a
    partition's starts come in element order, and a search per start in that order costs
    the offsets in cache misses (several times longer, measured at 10M people)."""
    order = np.argsort(positions)
    found = np.empty(positions.shape[0], dtype=np.int64)
    found[order] = np.searchsorted(offsets, positions[order], side="right") - 1
    return found


def _posting_part(
    data: ShardData, lo: int, hi: int, s: int, worker: Any
) -> tuple[np.ndarray, np.ndarray]:
    assert data.queries is not None and data.postings is not None
    starts = data.queries.starts(*data.span(lo, hi))
    return data.of_level(_posting_task((data.problem, data.postings), starts, s, worker))


def _whole_part(data: ShardData, lo: int, hi: int, worker: Any) -> tuple[np.ndarray, np.ndarray]:
    assert data.whole is not None and data.whole_first is not None and data.postings is not None
    a, b = np.searchsorted(data.whole_first, data.span(lo, hi))
    return data.of_level(_whole_task((data.problem, data.postings), data.whole[a:b], worker))
