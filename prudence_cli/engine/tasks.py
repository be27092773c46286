"""Partition tasks of the counting engine (keyed, keyed on the members' own subsets,
posting, whole records), run by a runner (`runner.py`)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from prudence_cli.arrays import stable_order
from prudence_cli.engine import compiled, jit
from prudence_cli.engine.indexes import (
    _enumerate_codes,
    _enumerate_members,
    _enumerate_queries,
    _enumerate_sorted,
    _key_order,
    _Postings,
)
from prudence_cli.engine.jit import adopt, set_threads
from prudence_cli.engine.problem import MATCHES, CountingProblem
from prudence_cli.engine.vectorized import counts_by_numpy, least_owners, self_dominance_by_numpy
from prudence_cli.engine.whole import whole_queries

# --- partition tasks: module-level functions of (shared data, partition arguments), so
# that they pickle; each returns the partial minimum support of the users it touched.


def _partial(n_users: int, owners: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The least of `counts` per owner among `owners`: the owners in increasing order and
    their least count. Fewer rows than one for `_SORTED_BELOW` people (a shard of a large
    level) are sorted, not scattered into a vector of every person, which a task would
    fill and scan whole."""
    if owners.shape[0] * _SORTED_BELOW < n_users:
        order = stable_order(owners)
        return _compact(n_users, *least_per_owner(owners[order], counts[order]))
    local = np.full(n_users, compiled.kernels.UNSET, dtype=np.int64)
    compiled.group_kernels.scatter_min(local, owners, counts)
    return _touched(local)


# a partition sorts its rows, rather than scatter them, when it has fewer than one for
# this many people
_SORTED_BELOW = 16


def least_per_owner(owners: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of rows grouped by owner (each owner's rows next to each other): each owner, and
    the least of its counts."""
    if owners.size == 0:
        return owners, counts
    starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    return owners[starts], np.minimum.reduceat(counts, starts)


def _touched(local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The people with a count in `local` (UNSET: none) and their count."""
    touched = np.flatnonzero(local != compiled.kernels.UNSET)
    return _compact(local.shape[0], touched, local[touched])


def _compact(n_users: int, users: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A task's result as it travels back: people and supports as 32-bit integers when
    they fit (both are at most the number of people), the half of 64 bits that every
    partition result in flight costs the assessing process a person."""
    if n_users >= 2**31 or (counts.size and int(counts.max()) >= 2**31):
        return users, counts
    return users.astype(np.int32), counts.astype(np.int32)


_FOLDED = 1 << 18  # a partition result's rows folded into a float minimum at a time


def fold_results(minimum: np.ndarray, results: Iterator[tuple[np.ndarray, np.ndarray]]) -> None:
    """The partial minima of partition tasks folded into `minimum` as they come, each let
    go before the next is read: one result at a time here (a result may hold an entry
    for every person of the level). A minimum of floats (whole numbers: ranged.counted)
    takes them by numpy's ufunc, the kernels being compiled for integers (the counts as
    floats first, _FOLDED at a time: numpy's fast loop, 10× the one that converts them,
    without a float copy of the whole result)."""
    for result in results:
        if minimum.dtype.kind == "f":
            owners, counts = result
            for a in range(0, owners.shape[0], _FOLDED):
                b = a + _FOLDED
                np.minimum.at(minimum, owners[a:b], counts[a:b].astype(minimum.dtype))
            del owners, counts
        else:
            compiled.group_kernels.scatter_min(minimum, *result)
        del result


Worker = tuple[int | None, bool]  # numba threads in the task (None: as set), compiled or not


def _as_planned(worker: Worker) -> None:
    """Kernels in the task run as where the engine planned it (see Engine.worker)."""
    threads, run_compiled = worker
    if threads:
        set_threads(threads)
    adopt(run_compiled)


def _keyed_task(
    problem: CountingProblem,
    m_starts: np.ndarray,
    q_starts: np.ndarray,
    s: int,
    n_elements: int,
    brute_limit: int,
    worker: Worker,
) -> tuple[np.ndarray, np.ndarray]:
    """One partition of keyed counting: the members' and queries' keys starting in it."""
    _as_planned(worker)
    qkeys, qlo, qhi, qref, owners = _enumerate_queries(problem.queries, q_starts, s)
    if qkeys.shape[0] == 0:
        return _partial(problem.n_users, owners, np.zeros(0, dtype=np.int64))
    mkeys, mvals, mown = _enumerate_members(problem.members, m_starts, s)
    m_order = _key_order(mkeys, n_elements, mown if problem.ordered else None)
    mkeys, mvals, mown = mkeys[m_order], mvals[m_order], mown[m_order]
    if problem.ordered:
        keep = compiled.group_kernels.distinct_rows(mkeys, mown)
        mkeys, mvals = mkeys[keep], mvals[keep]
    q_order = _key_order(qkeys, n_elements)
    qkeys, qlo, qhi = qkeys[q_order], qlo[q_order], qhi[q_order]
    qref, owners = qref[q_order], owners[q_order]
    match = MATCHES.index(problem.match)
    counts = None
    if not jit.runs_compiled(compiled.group_kernels.grouped_counts):
        counts = counts_by_numpy(match, mkeys, mvals, qkeys, qlo, qhi, qref)
    if counts is None:
        qs, qe, ms, me = compiled.group_kernels.match_groups(mkeys, qkeys)
        counts = compiled.group_kernels.grouped_counts(
            match, mvals, qlo, qhi, qref, qs, qe, ms, me, brute_limit
        )
    return _partial(problem.n_users, owners, counts)


def _keyed_self_task(
    problem: CountingProblem,
    starts: np.ndarray,
    per_start: np.ndarray,
    s: int,
    n_elements: int,
    brute_limit: int,
    worker: Worker,
) -> tuple[np.ndarray, np.ndarray]:
    """One partition of keyed counting when the queries are the members' own subsets (the
    `per_start` beginning at each of `starts`): each key group is counted once, and every
    queried member row takes its count."""
    _as_planned(worker)
    members, spec = problem.members, problem.queries
    queried = (spec.size_lo <= s) & (s <= spec.size_hi)
    bits = max(1, int(n_elements).bit_length())
    owner_bits = max(1, int(members.n_users).bit_length())
    if problem.match == "contains" and bits * s + owner_bits <= 63:
        codes = _enumerate_codes(members, starts, per_start, s, bits, owner_bits)
        local = np.full(problem.n_users, compiled.kernels.UNSET, dtype=np.int64)
        containment = compiled.group_kernels.self_containment
        if jit.runs_compiled(containment):
            containment(codes, owner_bits, queried, local)
        else:  # as Python, numpy's loops beat the kernel's
            least_owners(codes, owner_bits, queried, local)
        return _touched(local)
    if bits * s <= 63:  # keys packed into one int64: sorted run by run, compared whole
        packed, vals, own = _enumerate_sorted(members, starts, per_start, s, bits)
        if problem.ordered:  # a subsequence found twice in a record counts once
            keep = np.r_[True, (packed[1:] != packed[:-1]) | (own[1:] != own[:-1])]
            packed, vals, own = packed[keep], vals[keep], own[keep]
        group_starts = np.flatnonzero(np.r_[True, packed[1:] != packed[:-1]])
        group_ends = np.r_[group_starts[1:], packed.shape[0]].astype(np.int64)
    else:
        keys, vals, own = _enumerate_members(members, starts, s, int(per_start.sum()))
        order = _key_order(keys, n_elements, own if problem.ordered else None)
        keys, vals, own = keys[order], vals[order], own[order]
        if problem.ordered:
            keep = compiled.group_kernels.distinct_rows(keys, own)
            keys, vals, own = keys[keep], vals[keep], own[keep]
        group_starts, group_ends = compiled.group_kernels.runs(keys)
    if problem.match == "contains":
        counts = np.repeat(group_ends - group_starts, group_ends - group_starts)
    else:
        dominance = compiled.group_kernels.self_dominance
        by_numpy = None
        if not jit.runs_compiled(dominance):  # as Python, numpy's loops beat the kernel's
            by_numpy = self_dominance_by_numpy(vals, group_starts, group_ends)
        if by_numpy is None:
            counts = dominance(vals, group_starts, group_ends, brute_limit)
        else:
            counts = by_numpy
    rows = queried[own]
    return _partial(problem.n_users, own[rows], counts[rows])


def _posting_task(
    shared: tuple[CountingProblem, _Postings],
    q_starts: np.ndarray,
    s: int,
    worker: Worker,
) -> tuple[np.ndarray, np.ndarray]:
    """One partition of posting-list checks: the queries whose keys start in it."""
    _as_planned(worker)
    problem, postings = shared
    qkeys, qlo, qhi, qref, owners = _enumerate_queries(problem.queries, q_starts, s)
    if qkeys.shape[0] == 0:
        return _partial(problem.n_users, owners, np.zeros(0, dtype=np.int64))
    first, again = distinct_queries(problem.match, qkeys, qlo, qhi, qref)
    qkeys, qlo, qhi, qref = qkeys[first], qlo[first], qhi[first], qref[first]
    offsets = np.arange(0, qkeys.size + 1, s, dtype=np.int64)
    counts = postings.verify(problem, offsets, qkeys.ravel(), qlo.ravel(), qhi.ravel(), qref)
    return _partial(problem.n_users, owners, counts[again])


def distinct_queries(
    match: str, keys: np.ndarray, lo: np.ndarray, hi: np.ndarray, ref: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct queries among the rows of `keys` (each a query's elements), with their
    bounds where `match` reads them and their reference where it is a ratio's: the first
    row of each, and each row's number among them. People who share places ask the same
    query (on popular places, thousands of them), and each check costs the shortest of
    its posting lists: each is checked once."""
    columns = [keys]
    if match != "contains":
        columns += [lo, hi]
    if match == "ratio":
        columns.append(ref[:, None])
    as_bytes = [np.ascontiguousarray(c).view(np.uint8).reshape(len(keys), -1) for c in columns]
    rows = np.hstack(as_bytes)
    whole = rows.view(np.dtype((np.void, rows.shape[1]))).ravel()
    _, first, again = np.unique(whole, return_index=True, return_inverse=True)
    return first, again.ravel()


def _with_postings(n_elements: int, problem: CountingProblem) -> tuple[CountingProblem, _Postings]:
    """A shard's problem with its posting lists, as posting and whole-record tasks take it
    (built on the worker that holds the shard)."""
    return problem, _Postings(problem.members, n_elements, not problem.ordered)


def _whole_task(
    shared: tuple[CountingProblem, _Postings], users: np.ndarray, worker: Worker
) -> tuple[np.ndarray, np.ndarray]:
    """A chunk of whole-record queries: each of `users`' whole query list, checked once."""
    _as_planned(worker)
    problem, postings = shared
    return _compact(
        problem.n_users, users, postings.verify(problem, *whole_queries(problem.queries, users))
    )
