"""Kernels (run as Python or compiled, `jit.py`): counting inside key groups — pairing runs
of equal keys, counting the members inside each query's bounds (sorted search, Fenwick
sweeps, brute force for small groups), and folding counts into running minima.

Plain arrays in, plain arrays out; codes are in `kernels.py`.
"""

from __future__ import annotations

import numpy as np

from prudence_cli.engine.jit import kernel, prange
from prudence_cli.engine.kernels import CONTAINS, DOMINANCE, RATIO

# --- counting inside a key group -----------------------------------------------------------


@kernel
def _bit_add(tree, i):
    while i < tree.shape[0]:
        tree[i] += 1
        i += i & -i


@kernel
def _bit_sum(tree, i):
    total = 0
    while i > 0:
        total += tree[i]
        i -= i & -i
    return total


@kernel
def _bit2_add(tree, i, j):
    while i < tree.shape[0]:
        k = j
        while k < tree.shape[1]:
            tree[i, k] += 1
            k += k & -k
        i += i & -i


@kernel
def _bit2_sum(tree, i, j):
    total = 0
    while i > 0:
        k = j
        while k > 0:
            total += tree[i, k]
            k -= k & -k
        i -= i & -i
    return total


@kernel
def _brute(mv, lo, hi, out):
    for i in range(lo.shape[0]):
        c = 0
        for k in range(mv.shape[0]):
            ok = True
            for j in range(mv.shape[1]):
                if mv[k, j] < lo[i, j] or mv[k, j] > hi[i, j]:
                    ok = False
                    break
            if ok:
                c += 1
        out[i] = c


@kernel
def _inside_all(mv, lo, hi):
    """True when every member lies in every query's box (the common easy case)."""
    for j in range(mv.shape[1]):
        if lo[:, j].max() > mv[:, j].min() or hi[:, j].min() < mv[:, j].max():
            return False
    return True


@kernel
def _dominance_sweep(mv, lo, out):
    """Counts of members ≥ lo for 2 or 3 columns: sweep column 0, Fenwick tree on the rest."""
    m = mv.shape[0]
    order_m = np.argsort(-mv[:, 0])
    order_q = np.argsort(-lo[:, 0])
    ys = np.unique(mv[:, 1])
    if mv.shape[1] == 2:
        tree = np.zeros(ys.shape[0] + 1, np.int64)
        p = 0
        for t in range(lo.shape[0]):
            i = order_q[t]
            while p < m and mv[order_m[p], 0] >= lo[i, 0]:
                _bit_add(tree, np.searchsorted(ys, mv[order_m[p], 1]) + 1)
                p += 1
            out[i] = p - _bit_sum(tree, np.searchsorted(ys, lo[i, 1]))
        return
    zs = np.unique(mv[:, 2])
    tree2 = np.zeros((ys.shape[0] + 1, zs.shape[0] + 1), np.int64)
    p = 0
    for t in range(lo.shape[0]):
        i = order_q[t]
        while p < m and mv[order_m[p], 0] >= lo[i, 0]:
            r = order_m[p]
            _bit2_add(tree2, np.searchsorted(ys, mv[r, 1]) + 1, np.searchsorted(zs, mv[r, 2]) + 1)
            p += 1
        ry = np.searchsorted(ys, lo[i, 1])
        rz = np.searchsorted(zs, lo[i, 2])
        low_y = _bit2_sum(tree2, ry, zs.shape[0])
        low_z = _bit2_sum(tree2, ys.shape[0], rz)
        out[i] = p - low_y - low_z + _bit2_sum(tree2, ry, rz)


@kernel
def _box_sweep(mv, lo, hi, out):
    """Counts of members inside 2-column boxes: F(x ≤ hi0) − F(x < lo0), where F counts
    inserted members with lo1 ≤ y ≤ hi1 on a Fenwick tree."""
    m = mv.shape[0]
    order_m = np.argsort(mv[:, 0])
    ys = np.unique(mv[:, 1])
    tree = np.zeros(ys.shape[0] + 1, np.int64)
    order_q = np.argsort(hi[:, 0])
    p = 0
    for t in range(lo.shape[0]):
        i = order_q[t]
        while p < m and mv[order_m[p], 0] <= hi[i, 0]:
            _bit_add(tree, np.searchsorted(ys, mv[order_m[p], 1]) + 1)
            p += 1
        out[i] = _bit_sum(tree, np.searchsorted(ys, hi[i, 1], side="right")) - _bit_sum(
            tree, np.searchsorted(ys, lo[i, 1])
        )
    tree[:] = 0
    order_q = np.argsort(lo[:, 0])
    p = 0
    for t in range(lo.shape[0]):
        i = order_q[t]
        while p < m and mv[order_m[p], 0] < lo[i, 0]:
            _bit_add(tree, np.searchsorted(ys, mv[order_m[p], 1]) + 1)
            p += 1
        out[i] -= _bit_sum(tree, np.searchsorted(ys, hi[i, 1], side="right")) - _bit_sum(
            tree, np.searchsorted(ys, lo[i, 1])
        )


@kernel
def count_in_group(dominance, mv, lo, hi, brute_limit, out):
    """out[i] = number of member rows inside query i's bounds (lo ≤ value ≤ hi)."""
    m = mv.shape[0]
    q = lo.shape[0]
    s = mv.shape[1]
    if m == 0:
        out[:] = 0
        return
    if _inside_all(mv, lo, hi):
        out[:] = m
        return
    if s == 1:
        ordered = np.sort(mv[:, 0])
        for i in range(q):
            out[i] = np.searchsorted(ordered, hi[i, 0], side="right") - np.searchsorted(
                ordered, lo[i, 0]
            )
        return
    if m * q <= brute_limit or s > 3 or (not dominance and s > 2):
        _brute(mv, lo, hi, out)
        return
    if not dominance:
        _box_sweep(mv, lo, hi, out)
        return
    if s == 3:
        ny = np.unique(mv[:, 1]).shape[0]
        nz = np.unique(mv[:, 2]).shape[0]
        if (ny + 1) * (nz + 1) > 4_000_000:
            _brute(mv, lo, hi, out)
            return
    _dominance_sweep(mv, lo, out)


@kernel
def _count_ratio_group(mv, lo, hi, ref, brute_limit, out):
    """Boxes on members' values divided by their value at each query's reference column."""
    s = mv.shape[1]
    for r in range(s):
        chosen = np.flatnonzero(ref == r)
        if chosen.shape[0] == 0:
            continue
        ratios = np.empty_like(mv)
        for k in range(mv.shape[0]):
            for j in range(s):
                ratios[k, j] = mv[k, j] / mv[k, r]
        part = np.empty(chosen.shape[0], np.int64)
        count_in_group(False, ratios, lo[chosen], hi[chosen], brute_limit, part)
        for t in range(chosen.shape[0]):
            out[chosen[t]] = part[t]


@kernel
def _compare_rows(a, i, b, j):
    for c in range(a.shape[1]):
        if a[i, c] < b[j, c]:
            return -1
        if a[i, c] > b[j, c]:
            return 1
    return 0


@kernel
def match_groups(mkeys, qkeys):
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


@kernel
def _brute_rows(mvals, a, b, qlo, qhi, c, d, counts):
    """Inline brute count for a small group: no slicing, no allocation."""
    s = mvals.shape[1]
    for i in range(c, d):
        n = 0
        for k in range(a, b):
            ok = True
            for j in range(s):
                if mvals[k, j] < qlo[i, j] or mvals[k, j] > qhi[i, j]:
                    ok = False
                    break
            if ok:
                n += 1
        counts[i] = n


@kernel(parallel=True)
def grouped_counts(match, mvals, qlo, qhi, qref, qs, qe, ms, me, brute_limit):
    """Support of every query against its key group, groups in parallel."""
    counts = np.zeros(qlo.shape[0], np.int64)
    for g in prange(qs.shape[0]):
        a, b, c, d = ms[g], me[g], qs[g], qe[g]
        if match == CONTAINS:
            for i in range(c, d):
                counts[i] = b - a
        elif match != RATIO and (b - a) * (d - c) <= 64:
            _brute_rows(mvals, a, b, qlo, qhi, c, d, counts)
        elif match == RATIO:
            _count_ratio_group(mvals[a:b], qlo[c:d], qhi[c:d], qref[c:d], brute_limit, counts[c:d])
        else:
            count_in_group(
                match == DOMINANCE, mvals[a:b], qlo[c:d], qhi[c:d], brute_limit, counts[c:d]
            )
    return counts


@kernel(parallel=True)
def self_dominance(mvals, starts, ends, brute_limit):
    """Per member row: the members of its key group whose values are all ≥ its own."""
    counts = np.zeros(mvals.shape[0], np.int64)
    s = mvals.shape[1]
    for g in prange(starts.shape[0]):
        a, b = starts[g], ends[g]
        if (b - a) * (b - a) <= 64:
            for i in range(a, b):
                n = 0
                for k in range(a, b):
                    ok = True
                    for j in range(s):
                        if mvals[k, j] < mvals[i, j]:
                            ok = False
                            break
                    if ok:
                        n += 1
                counts[i] = n
        else:
            group = mvals[a:b]
            count_in_group(
                True, group, group, np.full_like(group, np.inf), brute_limit, counts[a:b]
            )
    return counts


@kernel
def runs(keys):
    """Start and end of each run of equal rows of sorted keys."""
    n = keys.shape[0]
    starts = np.empty(n, np.int64)
    ends = np.empty(n, np.int64)
    g = 0
    i = 0
    while i < n:
        e = i + 1
        while e < n and _compare_rows(keys, e, keys, i) == 0:
            e += 1
        starts[g] = i
        ends[g] = e
        g += 1
        i = e
    return starts[:g], ends[:g]


@kernel
def self_containment(codes, owner_bits, queried, support):
    """From sorted (key, owner) codes: support of a key = its distinct owners; each
    queried owner takes the minimum over its keys."""
    n = codes.shape[0]
    mask = (np.int64(1) << owner_bits) - 1
    i = 0
    while i < n:
        key = codes[i] >> owner_bits
        e = i
        distinct = 0
        while e < n and (codes[e] >> owner_bits) == key:
            if e == i or codes[e] != codes[e - 1]:
                distinct += 1
            e += 1
        for t in range(i, e):
            u = codes[t] & mask
            if queried[u] and distinct < support[u]:
                support[u] = distinct
        i = e


@kernel
def scatter_min(support, owners, counts):
    for i in range(owners.shape[0]):
        u = owners[i]
        if counts[i] < support[u]:
            support[u] = counts[i]


@kernel
def distinct_rows(keys, owners):
    """Mask of the first row of each run of equal (key, owner) rows (rows sorted)."""
    n = keys.shape[0]
    keep = np.ones(n, np.bool_)
    for i in range(1, n):
        if owners[i] == owners[i - 1] and _compare_rows(keys, i, keys, i - 1) == 0:
            keep[i] = False
    return keep


# --- orders of small integers ---------------------------------------------------------------


@kernel
def radix_order(values):
    """The stable order of `values` (non-negative integers of at most 32 bits, of any
    range): np.argsort(values, kind="stable"), by counting sorts of 16 bits at a time,
    the low bits first, as many as the largest value has (two for 32 bits). Its memory
    is the values' (two orders), none of their range, which `counting_order` needs."""
    n = values.shape[0]
    top = 0
    for i in range(n):
        if values[i] > top:
            top = values[i]
    order = np.arange(n)
    scratch = np.empty(n, np.int64)
    counts = np.zeros(65537, np.int64)
    shift = 0
    while shift == 0 or (top >> shift) > 0:
        counts[:] = 0
        for i in range(n):
            counts[((values[i] >> shift) & 0xFFFF) + 1] += 1
        for d in range(65536):
            counts[d + 1] += counts[d]
        for i in range(n):
            j = order[i]
            d = (values[j] >> shift) & 0xFFFF
            scratch[counts[d]] = j
            counts[d] += 1
        order, scratch = scratch, order
        shift += 16
    return order


@kernel
def _value_starts(values, n_values):
    """Where each value's run begins in the stable order of `values` (a counting sort's
    first pass)."""
    starts = np.zeros(n_values + 1, np.int64)
    for i in range(values.shape[0]):
        starts[np.int64(values[i]) + 1] += 1  # (a value at its type's largest: no wrap)
    for v in range(n_values):
        starts[v + 1] += starts[v]
    return starts


@kernel
def counting_order(values, n_values):
    """The stable order of `values` (integers in [0, n_values)) by a counting sort: the
    same as np.argsort(values, kind="stable"), in two passes."""
    starts = _value_starts(values, n_values)
    order = np.empty(values.shape[0], np.int64)
    for i in range(values.shape[0]):
        v = values[i]
        order[starts[v]] = i
        starts[v] += 1
    return order


@kernel
def counting_rank(values, n_values):
    """Each position's place in the stable order of `values` (integers in [0, n_values))
    by a counting sort, as int32: the inverse of `counting_order`, with no order made."""
    starts = _value_starts(values, n_values)
    rank = np.empty(values.shape[0], np.int32)
    for i in range(values.shape[0]):
        v = values[i]
        rank[i] = starts[v]
        starts[v] += 1
    return rank


@kernel(parallel=True)
def segment_order(offsets, keys):
    """Positions sorted by `keys` within each CSR segment, the segments in place: the order
    of (segment, key) when no segment repeats a key. Insertion sort for short segments."""
    order = np.arange(keys.shape[0])
    for u in prange(offsets.shape[0] - 1):
        a, b = offsets[u], offsets[u + 1]
        if b - a > 32:
            order[a:b] = a + np.argsort(keys[a:b], kind="mergesort")
            continue
        for i in range(a + 1, b):
            x = order[i]
            j = i
            while j > a and keys[order[j - 1]] > keys[x]:
                order[j] = order[j - 1]
                j -= 1
            order[j] = x
    return order


@kernel(parallel=True)
def sort_runs(values, bounds):
    """Sort values[bounds[r]:bounds[r + 1]] in place for every r, the runs in parallel:
    the whole array sorted when each run holds larger values than the ones before."""
    for r in prange(bounds.shape[0] - 1):
        values[bounds[r] : bounds[r + 1]].sort()


@kernel(parallel=True)
def sort_rows_in_runs(keys, vals, own, bounds):
    """Sort the rows (keys, vals, own) by key, stably, within each run
    bounds[r]:bounds[r + 1], in place, the runs in parallel: all of them sorted when each
    run holds larger keys than the ones before."""
    for r in prange(bounds.shape[0] - 1):
        a, b = bounds[r], bounds[r + 1]
        order = a + np.argsort(keys[a:b], kind="mergesort")
        keys[a:b] = keys[order]
        vals[a:b] = vals[order]
        own[a:b] = own[order]
