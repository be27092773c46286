"""Kernels (run as Python or compiled, `jit.py`): the codes they share, and posting-list
checks.

Plain arrays in, plain arrays out. `prudence_cli.engine` plans the work and calls these;
nothing here knows about attacks, dataviews or files. Match codes: 0 dominance, 1 box,
2 ratio, 3 contains; query modes: 0 subsets, 1 compositions, 2 ratios (see problem.py).

The kernels are split by concept: instance enumeration and sampling in
`enumeration_kernels.py`, counting inside key groups in `group_kernels.py`, and here the
posting-list checks of explicit queries (the posting strategy, sampling, containment).
"""

from __future__ import annotations

import numpy as np

from prudence_cli.engine.jit import kernel, prange

UNSET = np.int64(2**62)  # "no instance counted yet" for a running minimum
DOMINANCE, BOX, RATIO, CONTAINS = 0, 1, 2, 3
SUBSETS, COMPOSITIONS, RATIOS = 0, 1, 2


# --- posting lists: check candidates one query at a time ----------------------------------


@kernel
def rarest_element(post_offsets, q_elements, a, b):
    """The element of query q_elements[a:b] with the shortest posting list."""
    pivot = q_elements[a]
    for j in range(a + 1, b):
        e = q_elements[j]
        if post_offsets[e + 1] - post_offsets[e] < post_offsets[pivot + 1] - post_offsets[pivot]:
            pivot = e
    return pivot


@kernel
def candidates(post_offsets, post_users, q_elements, a, b):
    """The users in the posting lists of both the rarest and the second-rarest distinct
    element of query q_elements[a:b] (ascending): every user whose list holds the query is
    among them. The second list is searched, never scanned, from where the last match was,
    so the cost is that of the shortest list, in sequential memory."""
    pivot = rarest_element(post_offsets, q_elements, a, b)
    ps, pe = post_offsets[pivot], post_offsets[pivot + 1]
    other = -1
    for j in range(a, b):
        e = q_elements[j]
        if e != pivot and (
            other < 0
            or post_offsets[e + 1] - post_offsets[e] < post_offsets[other + 1] - post_offsets[other]
        ):
            other = e
    if other < 0:
        return post_users[ps:pe]
    out = np.empty(pe - ps, dtype=post_users.dtype)
    n = 0
    j = post_offsets[other]
    je = post_offsets[other + 1]
    for p in range(ps, pe):
        u = post_users[p]
        j += np.searchsorted(post_users[j:je], u)
        if j == je:
            break
        if post_users[j] == u:
            out[n] = u
            n += 1
    return out[:n]


@kernel
def _at_most_two(q_elements, a, b):
    """Whether the query q_elements[a:b] holds at most two distinct elements."""
    first = q_elements[a]
    second = first
    for j in range(a + 1, b):
        e = q_elements[j]
        if e != first and e != second:
            if second != first:
                return False
            second = e
    return True


@kernel
def _holds(match, ordered, offsets, elements, values, v, q_elements, q_lo, q_hi, a, b, r):
    """Does user v match the query at query positions [a, b) (reference a + r)?"""
    va = offsets[v]
    vb = offsets[v + 1]
    if match == CONTAINS and ordered:
        j = a
        for p in range(va, vb):
            if j < b and elements[p] == q_elements[j]:
                j += 1
        return j == b
    reference = 1.0
    if match == RATIO:
        pos = va + np.searchsorted(elements[va:vb], q_elements[a + r])
        if pos == vb or elements[pos] != q_elements[a + r]:
            return False
        reference = values[pos]
    for j in range(a, b):
        pos = va + np.searchsorted(elements[va:vb], q_elements[j])
        if pos == vb or elements[pos] != q_elements[j]:
            return False
        if match == CONTAINS:
            continue
        x = values[pos] / reference
        if x < q_lo[j] or x > q_hi[j]:
            return False
    return True


@kernel(parallel=True)
def verify_queries(
    match,
    ordered,
    offsets,
    elements,
    values,
    post_offsets,
    post_users,
    q_offsets,
    q_elements,
    q_lo,
    q_hi,
    q_ref,
    counts,
):
    """Support of each explicit query: check the candidates of its two rarest elements
    (none to check when the query is a set of one or two elements: every candidate, a
    user in the posting lists of both, holds it)."""
    for q in prange(q_offsets.shape[0] - 1):
        a = q_offsets[q]
        b = q_offsets[q + 1]
        if match == CONTAINS and not ordered and _at_most_two(q_elements, a, b):
            counts[q] = candidates(post_offsets, post_users, q_elements, a, b).shape[0]
            continue
        c = 0
        for v in candidates(post_offsets, post_users, q_elements, a, b):
            if _holds(
                match,
                ordered,
                offsets,
                elements,
                values,
                v,
                q_elements,
                q_lo,
                q_hi,
                a,
                b,
                q_ref[q],
            ):
                c += 1
        counts[q] = c


@kernel
def spread_max(offsets, elements, post_offsets, post_users, q_offsets, q_elements, q_value, out):
    """out[v] = max over the queries contained in v's list (in order) of q_value."""
    for q in range(q_offsets.shape[0] - 1):
        a = q_offsets[q]
        b = q_offsets[q + 1]
        value = q_value[q]
        for v in candidates(post_offsets, post_users, q_elements, a, b):
            if out[v] >= value:
                continue
            j = a
            for t in range(offsets[v], offsets[v + 1]):
                if j < b and elements[t] == q_elements[j]:
                    j += 1
            if j == b:
                out[v] = value
