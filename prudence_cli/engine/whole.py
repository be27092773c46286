"""Whole-record queries: a target whose query is its entire list of query elements (h = all,
or h at or above the length of the record) has exactly one query of that size, whatever
the length — C(L, L) = 1. It is checked as one explicit query against the posting lists,
never enumerated, planned or counted in binomials.

For every match but `ratio`, containment is monotone: a user holding the whole record also
holds each of its parts with the same bounds, so the whole record's support is the
target's minimum and its smaller queries need not be asked. Ratio queries take their
reference from the subset, so their smaller sizes stay.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from prudence_cli.engine.plan import SizePlan
from prudence_cli.engine.problem import CountingProblem, QuerySpec, whole_lists


def whole_targets(problem: CountingProblem) -> np.ndarray:
    """Targets (bool per user) that have one query holding their whole query list, with
    each element's own bound: in `compositions` mode that needs H_u = Σ lower, so that
    every part is the element's whole multiplicity."""
    spec = problem.queries
    whole_lists(spec)
    lengths = spec.elements.lengths
    whole = (np.maximum(spec.size_lo, 1) <= lengths) & (lengths <= spec.size_hi)
    if spec.mode == "compositions":
        whole &= spec.compose >= spec.totals()
    return whole


def without_whole(problem: CountingProblem, whole: np.ndarray) -> CountingProblem:
    """The problem left once the `whole` targets' whole-record queries are answered: none
    of their queries when containment is monotone, else their sizes below the whole
    (those still asked: a sampled count takes the sizes of the targets that draw out,
    ranged_sampled._exact_only)."""
    spec = problem.queries
    if spec.mode == "ratios":
        below = np.minimum(spec.elements.lengths - 1, spec.size_hi)
        none = whole & (np.maximum(spec.size_lo, 1) > below)
        size_lo = np.where(none, 0, spec.size_lo)
        size_hi = np.where(none, 0, np.where(whole, below, spec.size_hi))
    else:
        size_lo = np.where(whole, 0, spec.size_lo)
        size_hi = np.where(whole, 0, spec.size_hi)
    return replace(problem, queries=replace(spec, size_lo=size_lo, size_hi=size_hi))


def whole_in_keyed(
    problem: CountingProblem, whole: np.ndarray, plans: list[SizePlan]
) -> tuple[np.ndarray, CountingProblem]:
    """A whole record as long as a size the keyed plans enumerate is one more key of that
    size, counted in its key group with the others, rather than checked against the
    posting lists (where a short record of popular places costs the length of their
    lists, for each such person). When queries are the members' own subsets it is one
    of the subsets counted there already; otherwise the target's one query is its whole
    record, at that size (containment is monotone: no smaller part of it can have a
    smaller support, so it is the same one instance either way); not for other targets'
    ratios, whose smaller sizes stay. The whole targets left, and the problem without
    them."""
    spec = problem.queries
    keyed = [plan.size for plan in plans if plan.strategy == "keyed"]
    inside = whole & np.isin(spec.elements.lengths, keyed)
    if (spec.mode == "ratios" and not problem.self_queries) or not inside.any():
        return whole, without_whole(problem, whole) if whole.any() else problem
    whole = whole & ~inside
    if not problem.self_queries:
        lengths = spec.elements.lengths
        size_lo = np.where(inside, lengths, spec.size_lo)
        size_hi = np.where(inside, lengths, spec.size_hi)
        problem = replace(problem, queries=replace(spec, size_lo=size_lo, size_hi=size_hi))
    return whole, without_whole(problem, whole) if whole.any() else problem


def whole_queries(
    spec: QuerySpec, users: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The whole-record query of each of `users`, as explicit queries (CSR offsets,
    elements, lower and upper bounds, reference position) for the posting checks."""
    q = spec.elements
    starts = q.offsets[users]
    lengths = q.offsets[users + 1] - starts
    q_offsets = np.zeros(users.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=q_offsets[1:])
    positions = np.repeat(starts - q_offsets[:-1], lengths) + np.arange(q_offsets[-1])
    elements = q.elements[positions]
    lower = q.values[positions]
    q_ref = np.zeros(users.shape[0], dtype=np.int64)
    if spec.mode == "ratios":
        # the reference is the element with the largest value, ties to the first
        nonempty = q_offsets[:-1][lengths > 0]
        top = np.zeros(users.shape[0])
        top[lengths > 0] = np.maximum.reduceat(lower, nonempty)
        local = np.arange(q_offsets[-1]) - np.repeat(q_offsets[:-1], lengths)
        first = np.where(lower == np.repeat(top, lengths), local, np.iinfo(np.int64).max)
        q_ref[lengths > 0] = np.minimum.reduceat(first, nonempty)
        ratio = lower / np.repeat(top, lengths)
        return q_offsets, elements, ratio - spec.delta, ratio + spec.delta, q_ref
    if spec.mode == "compositions" or spec.upper is None:
        upper = np.full(elements.shape[0], np.inf)
    else:
        upper = spec.upper[positions]
    return q_offsets, elements, lower, upper, q_ref
