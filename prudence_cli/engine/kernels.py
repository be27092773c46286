"""Compiled counting kernels (numba). Plain arrays in, plain arrays out.

The engine module (`prudence_cli.engine`) plans the work and calls these; nothing here
knows about attacks, dataviews or files.
"""

from __future__ import annotations

import numba as nb
import numpy as np

UNSET = np.int64(2**62)  # "no instance counted yet" for a running minimum


@nb.njit(cache=True)
def _first_positions(offsets, elements, u, lo, hi):  # pragma: no cover - compiled
    """User u's element range [a, b) and the positions [i0, i1) of its elements in [lo, hi)."""
    a = offsets[u]
    b = offsets[u + 1]
    i0 = a + np.searchsorted(elements[a:b], lo)
    i1 = a + np.searchsorted(elements[a:b], hi)
    return a, b, i0, i1


@nb.njit(cache=True)
def count_subsets(offsets, elements, s, binom, lo, hi):  # pragma: no cover - compiled
    """Number of s-subsets, over all users, whose smallest element lies in [lo, hi)."""
    total = 0
    for u in range(offsets.shape[0] - 1):
        a, b, i0, i1 = _first_positions(offsets, elements, u, lo, hi)
        if b - a < s:
            continue
        for i in range(i0, i1):
            total += binom[b - 1 - i, s - 1]
    return total


@nb.njit(cache=True)
def enumerate_subsets(offsets, elements, values, s, lo, hi, keys, vals, owners):  # pragma: no cover
    """Write every s-subset (elements ascending) whose smallest element lies in [lo, hi).

    keys[k] are the subset's elements, vals[k] the matching values, owners[k] the user.
    Returns the number of rows written.
    """
    k = 0
    idx = np.empty(s, np.int64)
    for u in range(offsets.shape[0] - 1):
        a, b, i0, i1 = _first_positions(offsets, elements, u, lo, hi)
        if b - a < s:
            continue
        for i in range(i0, i1):
            if b - i < s:
                break
            for j in range(s):
                idx[j] = i + j
            while True:
                for j in range(s):
                    keys[k, j] = elements[idx[j]]
                    vals[k, j] = values[idx[j]]
                owners[k] = u
                k += 1
                j = s - 1
                while j >= 1 and idx[j] == b - s + j:
                    j -= 1
                if j < 1:
                    break
                idx[j] += 1
                for t in range(j + 1, s):
                    idx[t] = idx[t - 1] + 1
    return k


@nb.njit(cache=True)
def _compare_rows(a, i, b, j):  # pragma: no cover - compiled
    for c in range(a.shape[1]):
        if a[i, c] < b[j, c]:
            return -1
        if a[i, c] > b[j, c]:
            return 1
    return 0


@nb.njit(cache=True)
def match_groups(mkeys, qkeys):  # pragma: no cover - compiled
    """Pair each run of equal query keys with the run of equal member keys (both sorted).

    Returns (q_start, q_end, m_start, m_end) per query run; an absent member run is empty.
    """
    q = qkeys.shape[0]
    m = mkeys.shape[0]
    qs = np.empty(q, np.int64)
    qe = np.empty(q, np.int64)
    ms = np.empty(q, np.int64)
    me = np.empty(q, np.int64)
    g = 0
    i = 0
    p = 0
    while i < q:
        e = i + 1
        while e < q and _compare_rows(qkeys, e, qkeys, i) == 0:
            e += 1
        while p < m and _compare_rows(mkeys, p, qkeys, i) < 0:
            p += 1
        pe = p
        while pe < m and _compare_rows(mkeys, pe, qkeys, i) == 0:
            pe += 1
        qs[g] = i
        qe[g] = e
        ms[g] = p
        me[g] = pe
        g += 1
        i = e
        p = pe
    return qs[:g], qe[:g], ms[:g], me[:g]


@nb.njit(cache=True)
def _bit_add(tree, i):  # pragma: no cover - compiled
    n = tree.shape[0]
    while i < n:
        tree[i] += 1
        i += i & -i


@nb.njit(cache=True)
def _bit_sum(tree, i):  # pragma: no cover - compiled
    total = 0
    while i > 0:
        total += tree[i]
        i -= i & -i
    return total


@nb.njit(cache=True)
def _bit2_add(tree, i, j):  # pragma: no cover - compiled
    while i < tree.shape[0]:
        k = j
        while k < tree.shape[1]:
            tree[i, k] += 1
            k += k & -k
        i += i & -i


@nb.njit(cache=True)
def _bit2_sum(tree, i, j):  # pragma: no cover - compiled
    total = 0
    while i > 0:
        k = j
        while k > 0:
            total += tree[i, k]
            k -= k & -k
        i -= i & -i
    return total


@nb.njit(cache=True)
def _dominance_brute(mv, qt, out):  # pragma: no cover - compiled
    for i in range(qt.shape[0]):
        c = 0
        for k in range(mv.shape[0]):
            ok = True
            for j in range(mv.shape[1]):
                if mv[k, j] < qt[i, j]:
                    ok = False
                    break
            if ok:
                c += 1
        out[i] = c


@nb.njit(cache=True)
def _dominance_sweep(mv, qt, out):  # pragma: no cover - compiled
    """Dominance counts for 2 or 3 dimensions: sweep dimension 0, Fenwick tree on the rest."""
    m = mv.shape[0]
    s = mv.shape[1]
    order_m = np.argsort(-mv[:, 0])
    order_q = np.argsort(-qt[:, 0])
    ys = np.unique(mv[:, 1])
    if s == 2:
        tree = np.zeros(ys.shape[0] + 1, np.int64)
        p = 0
        for t in range(qt.shape[0]):
            i = order_q[t]
            while p < m and mv[order_m[p], 0] >= qt[i, 0]:
                _bit_add(tree, np.searchsorted(ys, mv[order_m[p], 1]) + 1)
                p += 1
            below = _bit_sum(tree, np.searchsorted(ys, qt[i, 1]))
            out[i] = p - below
        return
    zs = np.unique(mv[:, 2])
    tree2 = np.zeros((ys.shape[0] + 1, zs.shape[0] + 1), np.int64)
    p = 0
    ny = ys.shape[0]
    nz = zs.shape[0]
    for t in range(qt.shape[0]):
        i = order_q[t]
        while p < m and mv[order_m[p], 0] >= qt[i, 0]:
            r = order_m[p]
            _bit2_add(tree2, np.searchsorted(ys, mv[r, 1]) + 1, np.searchsorted(zs, mv[r, 2]) + 1)
            p += 1
        ry = np.searchsorted(ys, qt[i, 1])
        rz = np.searchsorted(zs, qt[i, 2])
        low_y = _bit2_sum(tree2, ry, nz)
        low_z = _bit2_sum(tree2, ny, rz)
        both = _bit2_sum(tree2, ry, rz)
        out[i] = p - low_y - low_z + both


@nb.njit(cache=True)
def dominance_counts(mv, qt, brute_limit, out):  # pragma: no cover - compiled
    """out[i] = number of member rows k with mv[k, j] >= qt[i, j] for every column j."""
    m = mv.shape[0]
    q = qt.shape[0]
    s = mv.shape[1]
    if m == 0:
        out[:] = 0
        return
    trivial = True
    for j in range(s):
        if qt[:, j].max() > mv[:, j].min():
            trivial = False
            break
    if trivial:
        out[:] = m
        return
    if s == 1:
        ordered = np.sort(mv[:, 0])
        for i in range(q):
            out[i] = m - np.searchsorted(ordered, qt[i, 0])
        return
    if m * q <= brute_limit or s > 3:
        _dominance_brute(mv, qt, out)
        return
    if s == 3:
        ny = np.unique(mv[:, 1]).shape[0]
        nz = np.unique(mv[:, 2]).shape[0]
        if (ny + 1) * (nz + 1) > 4_000_000:
            _dominance_brute(mv, qt, out)
            return
    _dominance_sweep(mv, qt, out)


@nb.njit(parallel=True, cache=True)
def grouped_dominance(mvals, qvals, qs, qe, ms, me, brute_limit):  # pragma: no cover
    """Dominance counts of every query run against its member run, runs in parallel."""
    counts = np.zeros(qvals.shape[0], np.int64)
    for g in nb.prange(qs.shape[0]):
        dominance_counts(
            mvals[ms[g] : me[g]], qvals[qs[g] : qe[g]], brute_limit, counts[qs[g] : qe[g]]
        )
    return counts


@nb.njit(cache=True)
def scatter_min(support, owners, counts):  # pragma: no cover - compiled
    for i in range(owners.shape[0]):
        u = owners[i]
        if counts[i] < support[u]:
            support[u] = counts[i]


@nb.njit(parallel=True, cache=True)
def posting_support(  # pragma: no cover - compiled
    offsets,
    elements,
    values,
    post_offsets,
    post_users,
    post_values,
    qoffsets,
    qelements,
    qthresholds,
    s,
    targets,
    support,
):
    """Min support per target user by intersecting posting lists (no member enumeration).

    For each s-subset of a target's query elements, scan the posting list of its rarest
    element and check the other elements by binary search in each candidate's sorted
    elements. Counting stops once it cannot lower the target's minimum.
    """
    for t in nb.prange(targets.shape[0]):
        u = targets[t]
        a = qoffsets[u]
        b = qoffsets[u + 1]
        best = UNSET
        idx = np.empty(s, np.int64)
        for j in range(s):
            idx[j] = a + j
        while True:
            pivot = 0
            shortest = UNSET
            for j in range(s):
                e = qelements[idx[j]]
                length = post_offsets[e + 1] - post_offsets[e]
                if length < shortest:
                    shortest = length
                    pivot = j
            e = qelements[idx[pivot]]
            th = qthresholds[idx[pivot]]
            c = 0
            for p in range(post_offsets[e], post_offsets[e + 1]):
                if post_values[p] < th:
                    continue
                v = post_users[p]
                va = offsets[v]
                vb = offsets[v + 1]
                ok = True
                for j in range(s):
                    if j == pivot:
                        continue
                    ej = qelements[idx[j]]
                    pos = va + np.searchsorted(elements[va:vb], ej)
                    if pos == vb or elements[pos] != ej or values[pos] < qthresholds[idx[j]]:
                        ok = False
                        break
                if ok:
                    c += 1
                    if c >= best:
                        break
            if c < best:
                best = c
            if best <= 1:
                break
            j = s - 1
            while j >= 0 and idx[j] == b - s + j:
                j -= 1
            if j < 0:
                break
            idx[j] += 1
            for k in range(j + 1, s):
                idx[k] = idx[k - 1] + 1
        support[u] = best
