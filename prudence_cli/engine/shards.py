"""Shards of a level's data: on a cluster, each worker receives only what its partitions
read, not the whole level.

A partition is a range [lo, hi) of first elements (plan._partitions); its tasks
enumerate the keys that begin at a position whose element is in the range, and every
key beginning at position p of a list is made of p and positions after it. So a shard —
consecutive partitions, one range [L, H) — needs of each list only its suffix from the
first position whose element is in [L, H), and nothing of a list with no such element.
Posting checks need no more: a member that holds a query's first element e (in [L, H))
holds it at or after that position, with every later element of the query after it
(ordered lists) or larger than it (sorted ones).

The suffixes keep the lists' users (the offsets of every user, empty where nothing is
kept), so that results are reduced by user code as before, and `kept` renumbers the
planning process's positions (of its start indexes) into the shard's. Queries drawn as
compositions keep the totals of their whole lists (`QuerySpec.list_totals`): a
composition's size H_u is of the whole list, its parts of the positions it is made of.
Counting on the shards gives every support bit for bit (the tests compare them on random
problems).

Suffixes overlap: a list whose rarest element is in the first shard is held there almost
whole, and again, from later positions, in the next shards it reaches. So a shard is not
the level divided by the number of shards (on a trajectory's visits, a quarter of the
partitions held three quarters of the level). Where the workers have a memory limit,
`fitted_shards` measures the shards before any is cut (`shard_positions`, counts only)
and cuts the groups, or a partition, until each fits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from prudence_cli.engine.plan import _gb, sums_at
from prudence_cli.engine.problem import CountingProblem, Elements
from prudence_cli.errors import BudgetError


@dataclass(frozen=True)
class Suffixes:
    """A shard's lists, and which of the whole lists' positions they hold (increasing)."""

    lists: Elements
    kept: np.ndarray

    def at(self, positions: np.ndarray) -> np.ndarray:
        """The shard's positions of positions of the whole lists (all of them kept)."""
        found: np.ndarray = np.searchsorted(self.kept, positions)
        held = found < self.kept.size
        if not held.all() or not np.array_equal(self.kept[found], positions):
            # a kernel would read outside its lists
            raise AssertionError("a partition starts at a position its shard does not hold")
        return found


def suffixes(lists: Elements, lo: int, hi: int) -> Suffixes:
    """Each list's suffix from its first position whose element is in [lo, hi). Memory:
    a byte per position of the whole lists, and the suffixes."""
    offsets = lists.offsets
    ends = offsets[1:]
    inside = np.flatnonzero((lists.elements >= lo) & (lists.elements < hi))
    first = ends.copy()  # none: an empty suffix
    if inside.size:
        whose = np.searchsorted(offsets, inside, side="right") - 1
        new = np.r_[True, whose[1:] != whose[:-1]]  # positions rise within each list
        first[whose[new]] = inside[new]
    n = lists.elements.shape[0]
    step = np.zeros(n + 1, dtype=np.int8)  # +1 where a suffix begins, -1 where it ends
    has = first < ends
    np.add.at(step, first[has], 1)
    np.add.at(step, ends[has], -1)
    keep = np.cumsum(step[:-1], dtype=np.int8).view(bool)
    sizes = ends - first
    new_offsets = np.zeros_like(offsets)
    np.cumsum(sizes, out=new_offsets[1:])
    cut = Elements(new_offsets, lists.elements[keep], lists.values[keep])
    return Suffixes(cut, np.flatnonzero(keep))


@dataclass(frozen=True)
class Shard:
    """The part of a level one worker holds: the problem on its suffixes, and how the
    positions of the planning process's indexes are found in it."""

    problem: CountingProblem
    members: Suffixes
    queries: Suffixes | None  # None: the queries are the members' own lists

    def member_positions(self, positions: np.ndarray) -> np.ndarray:
        return self.members.at(positions)

    def query_positions(self, positions: np.ndarray) -> np.ndarray:
        return (self.queries or self.members).at(positions)


def shard(problem: CountingProblem, lo: int, hi: int) -> Shard:
    """The level's data that the partitions within [lo, hi) read."""
    members = suffixes(problem.members, lo, hi)
    spec = problem.queries
    if spec.mode == "compositions" and spec.list_totals is None:
        spec = replace(spec, list_totals=spec.totals())
    if spec.elements is problem.members:
        queries = None
        spec = replace(spec, elements=members.lists)
    else:
        queries = suffixes(spec.elements, lo, hi)
        upper = spec.upper[queries.kept] if spec.upper is not None else None
        spec = replace(spec, elements=queries.lists, upper=upper)
    return Shard(replace(problem, members=members.lists, queries=spec), members, queries)


def reached(partitions: list[tuple[int, int]], weights: np.ndarray) -> np.ndarray:
    """The weight up to each of `partitions`' ends, and in all last: what grouping them
    (`shard_ranges`) needs of a vector per element."""
    return sums_at(weights, [hi for _, hi in partitions] + [weights.shape[0]])


def shard_ranges(
    partitions: list[tuple[int, int]], reaches: np.ndarray, shards: int
) -> Iterator[tuple[tuple[int, int], list[tuple[int, int]]]]:
    """Consecutive `partitions` grouped into at most `shards` ranges of about equal
    weight (`reaches`: the weight up to each one's end, and in all; `reached`): ((lo, hi)
    of the group, its partitions)."""
    if not partitions:
        return
    *reaches, total = np.asarray(reaches).tolist()
    group: list[tuple[int, int]] = []
    done = 0
    for k, (lo, hi) in enumerate(partitions):
        group.append((lo, hi))
        reached = float(reaches[k])
        left = len(partitions) - k - 1
        if left == 0 or (done + 1 < shards and reached >= total * (done + 1) / shards):
            yield (group[0][0], group[-1][1]), group
            group, done = [], done + 1


# lists are measured about this many positions at a time (a few arrays of 8 bytes each)
_MEASURED_POSITIONS = 1 << 20
# a partition too large for a shard is tried in this many pieces (by element) at a time;
# sorted lists, measured from every piece's start at once, in fewer (a matrix of starts
# by ends per range)
_PIECES = 64
_PIECES_AT_ONCE = 16
# cuts measured ahead of a start at a time: a range's matrix of starts by ends, 2 MB
_WINDOW = 512

Span = tuple[int, int]
Measure = Callable[[Sequence[int], np.ndarray], np.ndarray]


def suffix_sizes(lists: Elements, starts: Sequence[int], ends: np.ndarray) -> np.ndarray:
    """sizes[a, b]: how many positions `suffixes(lists, starts[a], ends[b])` keeps, without
    cutting (0 where ends[b] <= starts[a]).

    For a start L, a list's suffix in [L, H) begins at its first position whose element
    is in [L, H). Scanning the list, the positions whose element is at least L and below
    every earlier such element (its records: positions rising, elements falling) are the
    only ones that can be it: the first record whose element is below H. So each record
    adds (the next record's position, or the list's end) − its position to every H above
    its element, and the sizes are a cumulative sum over the ends. A chunk of sorted
    lists has one record per list and start, found for every start at once
    (`_sorted_sizes`)."""
    ends = np.asarray(ends, dtype=np.int64)
    sizes = np.zeros((len(starts), ends.shape[0]), dtype=np.int64)
    offsets = lists.offsets
    first = 0
    while first < offsets.shape[0] - 1:
        last = int(np.searchsorted(offsets, offsets[first] + _MEASURED_POSITIONS, "right")) - 1
        last = max(last, first + 1)
        chunk = offsets[first : last + 1] - offsets[first]
        elements = lists.elements[offsets[first] : offsets[last]]
        if _sorted(chunk, elements):
            sizes += _sorted_sizes(chunk, elements, starts, ends)
        else:
            for a, start in enumerate(starts):
                sizes[a] += _chunk_sizes(chunk, elements, start, ends)
        first = last
    return sizes


def _sorted(offsets: np.ndarray, elements: np.ndarray) -> bool:
    """Whether each list is in increasing order (repeats allowed)."""
    falls = np.flatnonzero(elements[1:] < elements[:-1]) + 1
    return bool(np.isin(falls, offsets).all())  # a fall only where a list begins


def _sorted_sizes(
    offsets: np.ndarray, elements: np.ndarray, starts: Sequence[int], ends: np.ndarray
) -> np.ndarray:
    """`_chunk_sizes` of sorted lists for every start: position p (element e, after e' in
    its list, or none) is the record of the starts in (e', e], adding (list's end − p)
    from the first end above e."""
    order = np.argsort(np.asarray(starts, dtype=np.int64), kind="stable")
    ranked = np.asarray(starts, dtype=np.int64)[order]
    n = elements.shape[0]
    if n == 0:
        return np.zeros((len(starts), ends.shape[0]), dtype=np.int64)
    previous = np.empty(n, dtype=np.int64)
    previous[0] = -1
    previous[1:] = elements[:-1]
    previous[offsets[:-1][offsets[:-1] < n]] = -1  # a list's first position follows none
    values = elements.astype(np.int64)
    lo = np.searchsorted(ranked, previous, side="right")
    hi = np.searchsorted(ranked, values, side="right")
    held = np.flatnonzero(lo < hi)
    owner = np.searchsorted(offsets, held, side="right") - 1
    weight = (offsets[owner + 1] - held).astype(float)
    column = np.searchsorted(ends, values[held], side="right")
    width = ends.shape[0] + 1
    steps = np.bincount(
        lo[held] * width + column, weights=weight, minlength=(len(starts) + 1) * width
    )
    steps -= np.bincount(hi[held] * width + column, weights=weight, minlength=steps.shape[0])
    grid = steps.reshape(len(starts) + 1, width).cumsum(axis=0).cumsum(axis=1)
    found = np.empty((len(starts), ends.shape[0]), dtype=np.int64)
    found[order] = np.rint(grid[: len(starts), : ends.shape[0]]).astype(np.int64)
    return found


def _chunk_sizes(
    offsets: np.ndarray, elements: np.ndarray, start: int, ends: np.ndarray
) -> np.ndarray:
    inside = np.flatnonzero(elements >= start)
    if not inside.size:
        return np.zeros(ends.shape[0], dtype=np.int64)
    owner = np.searchsorted(offsets, inside, side="right") - 1
    values = elements[inside].astype(np.int64) - start
    span = int(values.max()) + 1
    values -= owner * span  # each list's values below all earlier lists': the minimum restarts
    running = np.minimum.accumulate(values)
    record = np.empty(inside.shape[0], dtype=bool)
    record[0] = True
    np.less(values[1:], running[:-1], out=record[1:])
    positions, whose = inside[record], owner[record]
    following = offsets[whose + 1]
    same = whose[1:] == whose[:-1]
    following[:-1][same] = positions[1:][same]
    bucket = np.searchsorted(ends, elements[positions], side="right")
    added = np.bincount(bucket, weights=following - positions, minlength=ends.shape[0] + 1)
    return np.cumsum(added[: ends.shape[0]]).astype(np.int64)


def shard_positions(
    problem: CountingProblem, starts: Sequence[int], ends: np.ndarray
) -> np.ndarray:
    """`suffix_sizes` of what `shard(problem, lo, hi)` holds: its members' lists, and its
    queries' when they are not the members'."""
    sizes = suffix_sizes(problem.members, starts, ends)
    if problem.queries.elements is not problem.members:
        sizes += suffix_sizes(problem.queries.elements, starts, ends)
    return sizes


@dataclass(frozen=True)
class ShardBudget:
    """What a shard may cost a worker (bytes, `cost` of its positions): `budget` is its
    share of the smallest worker's limit (0: no limit, nothing measured), `ceiling` the
    limit itself, which even a shard of one element must fit."""

    budget: int
    ceiling: int
    cost: Callable[[int], int]
    ordered: bool = False  # its lists are not sorted: measured a start at a time


def fitted_shards(
    partitions: list[Span], reaches: np.ndarray, count: int, measure: Measure, fit: ShardBudget
) -> Iterator[tuple[Span, list[Span]]]:
    """`shard_ranges(partitions, reaches, count)`, each group cut further where its shard
    would cost more than the budget. `measure(starts, ends)` gives the positions of the
    shards [starts[a], ends[b]) (`shard_positions`, summed over a level's ranges): one
    pass for the groups, then one for a cut group of sorted lists (every start at once),
    or one per shard of ordered ones. A group is cut at the furthest of its partitions'
    ends, or of the cuts inside each partition (`_pieces`), whose
    shard fits (a partition is any range of first elements: cut, it is two); where even
    the first cut does not, narrower, down to one element: BudgetError if that one is over
    the ceiling."""
    groups = list(shard_ranges(partitions, reaches, count))
    if fit.budget <= 0 or not groups:
        yield from groups
        return
    if fit.cost(0) > fit.budget:  # no cut makes a shard fit: each would hold one element
        raise BudgetError(
            f"on the Dask workers, any shard of this level needs about {_gb(fit.cost(0))} "
            "for what it holds of every element alone, more than a third of the smallest "
            f"worker's memory limit ({_gb(fit.ceiling)}): give the workers more memory "
            "(dask worker --memory-limit)"
        )
    ends = np.array([hi for _, hi in partitions], dtype=np.int64)
    measured = measure([group[0][0] for _, group in groups], ends)
    for (span, group), sizes in zip(groups, measured, strict=True):
        if fit.cost(int(sizes[np.searchsorted(ends, span[1])])) <= fit.budget:
            yield span, group
        else:
            yield from _fitted(group, measure, fit)


def _fitted(
    group: list[Span], measure: Measure, fit: ShardBudget
) -> Iterator[tuple[Span, list[Span]]]:
    """Consecutive shards of `group`'s elements, each reaching as far as fits, measured
    `_WINDOW` cuts ahead at a time (from every start among them at once, sorted lists)."""
    lo, hi = group[0][0], group[-1][1]
    pieces = _PIECES if fit.ordered else _PIECES_AT_ONCE
    cuts = np.unique(np.concatenate([_pieces(a, b, pieces) for a, b in group]))
    rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    first = -1  # the start the rows' window was measured from
    while lo < hi:
        if lo not in rows:
            window = cuts[cuts > lo][:_WINDOW]
            starts = [lo] if fit.ordered else [lo, *window[:-1].tolist()]
            measured = measure(starts, window)
            rows = {
                a: (window[window > a], row[window > a])
                for a, row in zip(starts, measured, strict=True)
            }
            first = lo
        ends, sizes = rows[lo]
        fitting = [k for k, size in enumerate(sizes) if fit.cost(int(size)) <= fit.budget]
        if lo != first and len(fitting) == len(ends) and ends[-1] < hi:
            rows = {}  # the rest of its window fits: measured again from here, further
            continue
        end = int(ends[fitting[-1]]) if fitting else _fitting_prefix(lo, int(ends[0]), measure, fit)
        yield (lo, end), [(max(a, lo), min(b, end)) for a, b in group if a < end and b > lo]
        lo = end


def _pieces(lo: int, hi: int, pieces: int = _PIECES) -> np.ndarray:
    """The ends of [lo, hi) cut in `pieces` about equal ranges of elements (hi among them)."""
    return np.unique(np.ceil(np.linspace(lo, hi, pieces + 1)[1:]).astype(np.int64))


def _fitting_prefix(lo: int, hi: int, measure: Measure, fit: ShardBudget) -> int:
    """The furthest `cut` in (lo, hi) tried whose shard [lo, cut) fits the budget, tried
    in `_PIECES` pieces of [lo, hi), each time narrower; lo + 1 if none does."""
    while hi - lo > 1:
        cuts = _pieces(lo, hi)
        sizes = measure([lo], cuts)[0]
        fits = [k for k, size in enumerate(sizes) if fit.cost(int(size)) <= fit.budget]
        if fits:
            return int(cuts[fits[-1]])
        hi = int(cuts[0])
    alone = fit.cost(int(measure([lo], np.array([lo + 1], dtype=np.int64))[0, 0]))
    if alone > fit.ceiling:
        raise BudgetError(
            f"on the Dask workers, the lists holding one element of this level alone "
            f"need about {_gb(alone)}, more than the smallest worker's memory limit, "
            f"{_gb(fit.ceiling)}: give the workers more memory (dask worker "
            "--memory-limit), or use a smaller h or engine.sample"
        )
    return lo + 1
