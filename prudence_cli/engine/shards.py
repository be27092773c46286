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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from prudence_cli.engine.problem import CountingProblem, Elements


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


def shard_ranges(
    partitions: list[tuple[int, int]], weights: np.ndarray, shards: int
) -> Iterator[tuple[tuple[int, int], list[tuple[int, int]]]]:
    """Consecutive `partitions` grouped into at most `shards` ranges of about equal
    weight: ((lo, hi) of the group, its partitions)."""
    if not partitions:
        return
    cumulative = np.cumsum(weights)
    total = float(cumulative[-1]) if cumulative.size else 0.0
    group: list[tuple[int, int]] = []
    done = 0
    for k, (lo, hi) in enumerate(partitions):
        group.append((lo, hi))
        reached = float(cumulative[hi - 1]) if hi > 0 else 0.0
        left = len(partitions) - k - 1
        if left == 0 or (done + 1 < shards and reached >= total * (done + 1) / shards):
            yield (group[0][0], group[-1][1]), group
            group, done = [], done + 1
