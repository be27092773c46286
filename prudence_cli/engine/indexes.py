"""Indexes and enumeration helpers of the counting engine: start indexes (a partition of
element ids as a slice of first positions), posting lists, the calls of the enumeration
kernels, relabelling by rarity, key ordering and per-segment sums."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from prudence_cli.arrays import stable_order
from prudence_cli.engine import compiled, jit
from prudence_cli.engine.plan import _segment_min as _segment_min
from prudence_cli.engine.plan import begun_at, first_weights
from prudence_cli.engine.problem import MATCHES, MODES, CountingProblem, Elements, QuerySpec
from prudence_cli.engine.vectorized import blocks, queries_by_numpy, subset_positions

# elements from which a compiled counting sort orders them (numpy's sort below)
_COUNTING_SORT_FROM = 1 << 16


def _element_order(elements: np.ndarray, n_elements: int | None = None) -> np.ndarray:
    """`np.argsort(elements, kind="stable")` of element ids below `n_elements`: when the
    kernels run compiled, a counting sort (two passes, the ids are small integers), or,
    with no `n_elements` (ids whose range is the level's, wider than the positions: a
    shard's), a radix sort, whose memory is the positions'; otherwise numpy's sort. The
    stable order is unique, so all give the same."""
    if elements.shape[0] >= _COUNTING_SORT_FROM:
        kernels = compiled.group_kernels
        if n_elements is not None and jit.runs_compiled(kernels.counting_order):
            counted: np.ndarray = kernels.counting_order(elements, n_elements)
            return counted
        if n_elements is None and jit.runs_compiled(kernels.radix_order):
            sorted_: np.ndarray = kernels.radix_order(elements)
            return sorted_
    return stable_order(elements)


class _StartIndex:
    """Positions of a CSR list ordered by element, so that a partition [lo, hi) of element
    ids is a contiguous slice of first positions."""

    def __init__(self, lists: Elements, n_elements: int) -> None:
        self.lists = lists
        self.order = _element_order(lists.elements, n_elements)
        self.sorted = lists.elements[self.order]
        self.owners = np.repeat(np.arange(lists.n_users, dtype=np.int64), lists.lengths)
        self._subsets: dict[int, np.ndarray] = {}

    def subsets(self, s: int) -> np.ndarray:
        """Per position, how many s-subsets of its list begin there (`begun_at`)."""
        if s not in self._subsets:
            positions = np.arange(self.lists.elements.shape[0])
            self._subsets[s] = begun_at(self.lists.offsets, positions, self.owners, s)
        return self._subsets[s]

    def starts(self, lo: int, hi: int) -> np.ndarray:
        a, b = np.searchsorted(self.sorted, [lo, hi])
        return self.order[a:b]

    def weights(self, s: int, n_elements: int, users: np.ndarray | None = None) -> np.ndarray:
        """Number of s-subsets per first element (optionally only for `users`)."""
        return first_weights(self.lists, self.owners, self.subsets(s), n_elements, users)


def chosen_rows(offsets: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR offsets of the `chosen` lists of `offsets` (ascending), one after the
    other, and the rows they take their positions from."""
    lengths = np.diff(offsets)[chosen]
    kept = np.zeros(chosen.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=kept[1:])
    return kept, np.repeat(offsets[chosen] - kept[:-1], lengths) + np.arange(kept[-1])


class _Postings:
    """Distinct (element, user) pairs grouped by element, for candidate scans."""

    def __init__(
        self,
        members: Elements,
        n_elements: int,
        distinct: bool = False,
        order: np.ndarray | None = None,
    ) -> None:
        """`distinct`: no list repeats an element (unordered problems), so every
        (element, user) pair is already distinct and the members' stable order by
        element suffices (`order`, when it is known already)."""
        if distinct:
            # owners as int32 while they are sorted: on a worker's shard of tens of millions
            # of places, the posting lists are what its memory peaks at
            narrow = np.int32 if members.n_users < 2**31 else np.int64
            owners = np.repeat(np.arange(members.n_users, dtype=narrow), members.lengths)
            if order is None:
                order = _element_order(members.elements, n_elements)
            users = owners[order]
            del owners, order
            self.users = users.astype(np.int64)
            del users
            counts = np.bincount(members.elements, minlength=n_elements)
        else:
            n = max(members.n_users, 1)
            owners = np.repeat(np.arange(members.n_users, dtype=np.int64), members.lengths)
            pairs = np.sort(members.elements.astype(np.int64) * n + owners)
            first = np.ones(pairs.shape[0], dtype=bool)
            first[1:] = pairs[1:] != pairs[:-1]
            pairs = pairs[first]
            self.users = pairs % n
            counts = np.bincount(pairs // n, minlength=n_elements)
        self.offsets = np.zeros(n_elements + 1, dtype=np.int64)
        np.cumsum(counts, out=self.offsets[1:])
        self.members = members
        self.distinct = distinct
        self._by_value_keys: tuple[np.ndarray, np.ndarray] | None = None

    def verify(
        self,
        problem: CountingProblem,
        q_offsets: np.ndarray,
        q_elements: np.ndarray,
        q_lo: np.ndarray,
        q_hi: np.ndarray,
        q_ref: np.ndarray,
    ) -> np.ndarray:
        """The support of each explicit query (CSR `q_offsets` over `q_elements`, their
        bounds and reference positions). A query of one element of an unordered problem
        is a search in that element's members sorted by value (`_by_value`): checking
        each person of a popular place's posting list would cost the list's length per
        query, for every person who holds only that place."""
        counts = np.zeros(q_offsets.shape[0] - 1, dtype=np.int64)
        lengths = np.diff(q_offsets)
        single = lengths == 1
        if self.distinct and problem.match != "ratio" and single.any():
            first = q_offsets[:-1][single]
            counts[single] = self._by_value(
                problem.match, q_elements[first], q_lo[first], q_hi[first]
            )
            rest = np.flatnonzero(~single)
            if rest.size == 0:
                return counts
            kept, rows = chosen_rows(q_offsets, rest)
            q_offsets, q_elements, q_lo, q_hi = kept, q_elements[rows], q_lo[rows], q_hi[rows]
            counts[rest] = self._checked(problem, q_offsets, q_elements, q_lo, q_hi, q_ref[rest])
            return counts
        return self._checked(problem, q_offsets, q_elements, q_lo, q_hi, q_ref)

    def _by_value(
        self, match: str, elements: np.ndarray, lo: np.ndarray, hi: np.ndarray
    ) -> np.ndarray:
        """Per query of one element: the members holding it (contains), or holding it
        with a value in [lo, hi] — a search among the members' (element, value) keys,
        sorted once per posting lists (`_value_keys`): [lo, hi] is the ranks of the
        distinct values from the first at or above lo to the last at or below hi."""
        start, end = self.offsets[elements], self.offsets[elements + 1]
        if match == "contains":
            return end - start
        values, keys = self._value_keys()
        width = np.int64(values.shape[0] + 1)
        base = elements.astype(np.int64) * width
        first = np.searchsorted(values, lo, side="left")
        last = np.searchsorted(values, hi, side="right") - 1
        above = np.searchsorted(keys, base + first, side="left")
        below = np.searchsorted(keys, base + last, side="right")
        return np.maximum(below - above, 0).astype(np.int64)

    def _value_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """The members' distinct values (ascending), and one integer key per member row,
        its element then its value's rank among them, sorted."""
        if self._by_value_keys is None:
            m = self.members
            values, rank = np.unique(m.values, return_inverse=True)
            width = np.int64(values.shape[0] + 1)
            keys = np.sort(m.elements.astype(np.int64) * width + rank.reshape(-1))
            self._by_value_keys = values, keys
        return self._by_value_keys

    def _checked(
        self,
        problem: CountingProblem,
        q_offsets: np.ndarray,
        q_elements: np.ndarray,
        q_lo: np.ndarray,
        q_hi: np.ndarray,
        q_ref: np.ndarray,
    ) -> np.ndarray:
        """The support of each query, each candidate checked by the kernel."""
        counts = np.zeros(q_offsets.shape[0] - 1, dtype=np.int64)
        m = self.members
        compiled.kernels.verify_queries(
            MATCHES.index(problem.match),
            problem.ordered,
            m.offsets,
            m.elements,
            m.values,
            self.offsets,
            self.users,
            q_offsets,
            q_elements,
            q_lo,
            q_hi,
            q_ref,
            counts,
        )
        return counts


class _Indexes:
    """The start indexes and the posting lists of one count, each built at most once and
    shared by its whole-record queries, sizes and strategies."""

    def __init__(self, problem: CountingProblem) -> None:
        self.problem = problem
        self.n_elements = _n_elements(problem)
        self._starts: dict[int, _StartIndex] = {}
        self._postings: _Postings | None = None

    def starts(self, lists: Elements) -> _StartIndex:
        """The start index of `lists` (the members, or the queries' lists)."""
        index = self._starts.get(id(lists))
        if index is None:
            index = self._starts[id(lists)] = _StartIndex(lists, self.n_elements)
        return index

    def postings(self) -> _Postings:
        if self._postings is None:
            members, distinct = self.problem.members, not self.problem.ordered
            order = self.starts(members).order if distinct else None
            self._postings = _Postings(members, self.n_elements, distinct, order)
        return self._postings


def _enumerate_members(
    members: Elements, starts: np.ndarray, s: int, n: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every s-subset of the members' lists beginning at `starts` (keys, values, owners);
    `n`, how many there are, when known (else a first pass counts them)."""
    owners = np.repeat(np.arange(members.n_users, dtype=np.int64), members.lengths)
    if not jit.runs_compiled(compiled.enumeration_kernels.enumerate_members):
        positions = subset_positions(members.offsets[owners + 1], starts, s)
        keys = members.elements[positions].astype(np.int32)  # numpy's loops, as Python
        return keys, members.values[positions].astype(float), owners[positions[:, 0]]
    if n is None:
        n = compiled.enumeration_kernels.enumerate_members(
            members.offsets,
            owners,
            members.elements,
            members.values,
            starts,
            s,
            np.empty((0, s), dtype=np.int32),
            np.empty((0, s)),
            np.empty(0, np.int64),
        )
    keys = np.empty((n, s), dtype=np.int32)
    vals = np.empty((n, s))
    own = np.empty(n, dtype=np.int64)
    compiled.enumeration_kernels.enumerate_members(
        members.offsets, owners, members.elements, members.values, starts, s, keys, vals, own
    )
    return keys, vals, own


def _enumerate_packed(
    members: Elements,
    starts: np.ndarray,
    per_start: np.ndarray,
    s: int,
    bits: int,
    owner_bits: int = 0,
    rows: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The subsets of `_enumerate_members` beginning at `starts` (`per_start` at each), in
    that order, with their keys packed into one int64 (see the kernel): the rows where
    each start's subsets begin, the keys, and unless not `rows` their values and owners.
    `starts` ascend by element (a start index's slice), so the keys come out in runs of
    one first element, in ascending order of it: sorting each run sorts them all."""
    owners = np.repeat(np.arange(members.n_users, dtype=np.int64), members.lengths)
    first = np.zeros(starts.shape[0] + 1, dtype=np.int64)
    np.cumsum(per_start, out=first[1:])
    n = int(first[-1])
    keys = np.empty(n, np.int64)
    vals, own = np.empty((n if rows else 0, s)), np.empty(n if rows else 0, np.int64)
    kernel = compiled.enumeration_kernels.enumerate_packed
    if not jit.runs_compiled(kernel):  # as Python, numpy's loops beat the kernel's
        ends = members.offsets[owners + 1]
        for lo, hi in blocks(first):
            at = slice(first[lo], first[hi])
            positions = subset_positions(ends, starts[lo:hi], s)
            packed = np.zeros(positions.shape[0], np.int64)
            for j in range(s):
                packed = (packed << bits) | members.elements[positions[:, j]]
            if owner_bits > 0:
                packed = (packed << owner_bits) | owners[positions[:, 0]]
            keys[at] = packed
            if rows:
                vals[at] = members.values[positions]
                own[at] = owners[positions[:, 0]]
        return first, keys, vals, own
    kernel(
        members.offsets,
        owners,
        members.elements,
        members.values,
        starts,
        first,
        s,
        bits,
        owner_bits,
        keys,
        vals,
        own,
    )
    return first, keys, vals, own


def _enumerate_sorted(
    members: Elements, starts: np.ndarray, per_start: np.ndarray, s: int, bits: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The subsets of `_enumerate_packed` sorted by key (keys, values, owners): the order
    `_key_order` gives, by key then, for equal keys, by owner (the runs sort in place and
    in parallel when the kernels run compiled)."""
    first, keys, vals, own = _enumerate_packed(members, starts, per_start, s, bits)
    in_runs = compiled.group_kernels.sort_rows_in_runs
    if jit.runs_compiled(in_runs):
        in_runs(keys, vals, own, first[_run_bounds(members.elements[starts])])
        return keys, vals, own
    order = stable_order(keys)
    return keys[order], vals[order], own[order]


def _run_bounds(heads: np.ndarray) -> np.ndarray:
    """Where each run of equal values of `heads` begins, and the end."""
    changes = np.flatnonzero(heads[1:] != heads[:-1]) + 1
    return np.concatenate(([0], changes, [heads.shape[0]]))


def _enumerate_codes(
    members: Elements,
    starts: np.ndarray,
    per_start: np.ndarray,
    s: int,
    bits: int,
    owner_bits: int,
) -> np.ndarray:
    """The subsets of `_enumerate_packed` as codes holding their owner too, sorted (the
    runs in parallel when the kernels run compiled)."""
    first, codes, _, _ = _enumerate_packed(
        members, starts, per_start, s, bits, owner_bits, rows=False
    )
    if not jit.runs_compiled(compiled.group_kernels.sort_runs):
        codes.sort()
        return codes
    compiled.group_kernels.sort_runs(codes, first[_run_bounds(members.elements[starts])])
    return codes


def _enumerate_queries(
    spec: QuerySpec, starts: np.ndarray, s: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    q = spec.elements
    owners = np.repeat(np.arange(q.n_users, dtype=np.int64), q.lengths)
    upper = spec.upper if spec.upper is not None else np.full(q.values.shape, np.inf)
    totals = spec.totals()
    mode = MODES.index(spec.mode)
    if not jit.runs_compiled(compiled.enumeration_kernels.enumerate_queries):
        found = queries_by_numpy(spec, owners, upper, totals, starts, s)
        if found is not None:  # as Python, numpy's loops beat the kernel's
            return found

    def run(
        keys: np.ndarray, lo: np.ndarray, hi: np.ndarray, ref: np.ndarray, own: np.ndarray
    ) -> int:
        return int(
            compiled.enumeration_kernels.enumerate_queries(
                q.offsets,
                owners,
                q.elements,
                q.values,
                upper,
                starts,
                s,
                spec.size_lo,
                spec.size_hi,
                totals,
                mode,
                spec.compose,
                spec.delta,
                keys,
                lo,
                hi,
                ref,
                own,
            )
        )

    n = run(
        np.empty((0, s), np.int32),
        np.empty((0, s)),
        np.empty((0, s)),
        np.empty(0, np.int64),
        np.empty(0, np.int64),
    )
    out = (
        np.empty((n, s), np.int32),
        np.empty((n, s)),
        np.empty((n, s)),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
    )
    run(*out)
    return out


def _by_rarity(problem: CountingProblem) -> CountingProblem:
    """The same problem with element ids ranked by how few users hold them (rarest = 0):
    keys are partitioned by their first element, which for unordered problems is the
    smallest id: ranked this way it is the key's rarest element, so no partition is made
    of one very popular place. Supports do not depend on the labels. Not for ordered
    problems (their first element is fixed by the order) nor ratios (their reference
    breaks ties by position)."""
    if not relabels(problem.ordered, problem.queries.mode, problem.members.elements.size):
        return problem
    popularity = np.bincount(problem.members.elements, minlength=_n_elements(problem))
    return relabelled(problem, rarity_rank(popularity))


def relabels(ordered: bool, mode: str, elements: int) -> bool:
    """Whether a problem is relabelled by rarity before keyed counting (`_by_rarity`)."""
    return not ordered and mode != "ratios" and elements > 0


def rarity_rank(popularity: np.ndarray) -> np.ndarray:
    """Each element's new id: its rank by how few users hold it (`popularity`), ties by id;
    compiled, a counting sort's, with no order beside it (a level's holders: tens of
    millions of distinct visits, 8 bytes each the order, more to sort it)."""
    n = popularity.shape[0]
    counting = compiled.group_kernels.counting_rank
    held = popularity.dtype.kind in "iu" and popularity.min(initial=0) >= 0  # counts
    if n >= _COUNTING_SORT_FROM and held and jit.runs_compiled(counting):
        ranked: np.ndarray = counting(popularity, int(popularity.max(initial=0)) + 1)
        return ranked
    rank = np.empty(n, dtype=np.int32)
    rank[np.argsort(popularity, kind="stable")] = np.arange(n, dtype=np.int32)
    return rank


def relabelled(problem: CountingProblem, rank: np.ndarray) -> CountingProblem:
    """`problem` with its elements renamed by `rank`, each list sorted again."""
    spec = problem.queries
    members, _ = _relabel(problem.members, rank, None)
    if problem.self_queries:
        return replace(problem, members=members, queries=replace(spec, elements=members))
    queries, upper = _relabel(spec.elements, rank, spec.upper)
    return replace(problem, members=members, queries=replace(spec, elements=queries, upper=upper))


def _relabel(
    lists: Elements, rank: np.ndarray, upper: np.ndarray | None
) -> tuple[Elements, np.ndarray | None]:
    """Lists with elements renamed by `rank`, re-sorted within each user."""
    renamed = rank[lists.elements]
    within = compiled.group_kernels.segment_order
    if renamed.shape[0] >= _COUNTING_SORT_FROM and jit.runs_compiled(within):
        order = within(lists.offsets, renamed)
    else:
        owners = np.repeat(np.arange(lists.n_users, dtype=np.int64), lists.lengths)
        order = np.argsort(owners * len(rank) + renamed)  # elements are distinct per user
    relabelled = Elements(lists.offsets, renamed[order], lists.values[order])
    return relabelled, (upper[order] if upper is not None else None)


def _query_sizes_ok(spec: QuerySpec, s: int) -> np.ndarray:
    return ((spec.size_lo <= s) & (s <= spec.size_hi)).astype(float)


def _n_elements(problem: CountingProblem) -> int:
    return (
        int(
            max(
                problem.members.elements.max(initial=-1),
                problem.queries.elements.elements.max(initial=-1),
            )
        )
        + 1
    )


def _key_order(keys: np.ndarray, n_elements: int, owners: np.ndarray | None = None) -> np.ndarray:
    """Row order sorting keys lexicographically (then by owner when given); keys are
    packed into one int64 when they fit."""
    s = keys.shape[1]
    bits = max(1, int(n_elements).bit_length())
    if bits * s <= 63:
        packed = np.zeros(keys.shape[0], dtype=np.int64)
        for j in range(s):
            packed = (packed << bits) | keys[:, j].astype(np.int64)
        if owners is None:
            return stable_order(packed)
        return np.lexsort((owners, packed))
    columns = [keys[:, j] for j in range(s - 1, -1, -1)]
    return np.lexsort(([owners] if owners is not None else []) + columns)
