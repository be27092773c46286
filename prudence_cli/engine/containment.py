"""Containment of explicit keys in lists, on the engine's indexes and kernels: distinct
subsequences with their counts, the number of lists holding each query, and the largest
value of the queries each list holds."""

from __future__ import annotations

import numpy as np

from prudence_cli.engine import compiled, jit
from prudence_cli.engine.indexes import _enumerate_members, _key_order, _Postings
from prudence_cli.engine.plan import _sum_binomials
from prudence_cli.engine.problem import CountingProblem, Elements, QuerySpec


def distinct_subsequences(lists: Elements, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct h-subsequence of the lists (rows of a (k, h) array, sorted) and the
    number of lists holding it."""
    n_elements = int(lists.elements.max(initial=-1)) + 1
    jit.choose(_sum_binomials(lists.lengths, h))
    starts = np.arange(lists.elements.shape[0], dtype=np.int64)
    keys, _, owners = _enumerate_members(lists, starts, h)
    order = _key_order(keys, n_elements, owners)
    keys, owners = keys[order], owners[order]
    keep = compiled.group_kernels.distinct_rows(keys, owners)
    keys = keys[keep]
    run_starts, run_ends = compiled.group_kernels.runs(keys)
    return keys[run_starts], (run_ends - run_starts).astype(np.int64)


def containment_counts(lists: Elements, queries: np.ndarray, ordered: bool = True) -> np.ndarray:
    """For each query (a row of `queries`), the number of lists holding it (as a
    subsequence when `ordered`, else as a subset of a sorted list)."""
    if queries.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    n_elements = max(int(lists.elements.max(initial=-1)), int(queries.max(initial=-1))) + 1
    jit.choose(_checks(lists, queries, n_elements))
    h = queries.shape[1]
    offsets = np.arange(0, queries.size + 1, h, dtype=np.int64)
    flat = queries.ravel().astype(np.int32)
    spec = QuerySpec(
        lists, size_lo=np.zeros(lists.n_users, np.int64), size_hi=np.zeros(lists.n_users, np.int64)
    )
    problem = CountingProblem(lists, spec, match="contains", ordered=ordered)
    inf = np.full(flat.shape, np.inf)
    return _Postings(lists, n_elements, not ordered).verify(
        problem, offsets, flat, -inf, inf, np.zeros(queries.shape[0], dtype=np.int64)
    )


def max_over_containing(lists: Elements, queries: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per list: the largest value of the queries it holds as a subsequence (0 if none)."""
    out = np.zeros(lists.n_users)
    if queries.shape[0] == 0:
        return out
    n_elements = max(int(lists.elements.max(initial=-1)), int(queries.max(initial=-1))) + 1
    jit.choose(_checks(lists, queries, n_elements))
    postings = _Postings(lists, n_elements)
    h = queries.shape[1]
    offsets = np.arange(0, queries.size + 1, h, dtype=np.int64)
    order = np.argsort(-values, kind="stable")  # largest first: later ones rarely matter
    compiled.kernels.spread_max(
        lists.offsets,
        lists.elements,
        postings.offsets,
        postings.users,
        offsets,
        queries[order].ravel().astype(np.int32),
        values[order].astype(float),
        out,
    )
    return out


def _checks(lists: Elements, queries: np.ndarray, n_elements: int) -> int:
    """About the candidate checks of `queries` against the lists' posting lists: each
    element of a query, times the mean length of a posting list."""
    return int(queries.size * (lists.elements.shape[0] / max(n_elements, 1) + 1))
