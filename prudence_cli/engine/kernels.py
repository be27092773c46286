"""Compiled kernels (numba): instance enumeration, grouped counting, posting checks.

Plain arrays in, plain arrays out. `prudence_cli.engine` plans the work and calls these;
nothing here knows about attacks, dataviews or files. Match codes: 0 dominance, 1 box,
2 ratio, 3 contains; query modes: 0 subsets, 1 compositions, 2 ratios (see problem.py).
"""

from __future__ import annotations

import numba as nb
import numpy as np

UNSET = np.int64(2**62)  # "no instance counted yet" for a running minimum
DOMINANCE, BOX, RATIO, CONTAINS = 0, 1, 2, 3
SUBSETS, COMPOSITIONS, RATIOS = 0, 1, 2


# --- enumeration -------------------------------------------------------------------------


@nb.njit(cache=True)
def _next_combination(idx, first, end, s):
    """Advance idx[1:] to the next combination of positions in (first, end); False at the
    end. idx[0] stays at `first`."""
    j = s - 1
    while j >= 1 and idx[j] == end - s + j:
        j -= 1
    if j < 1:
        return False
    idx[j] += 1
    for t in range(j + 1, s):
        idx[t] = idx[t - 1] + 1
    return True


@nb.njit(cache=True)
def enumerate_members(offsets, owners, elements, values, starts, s, keys, vals, own):
    """Every s-subset of a user's list whose first position is in `starts` (list order).

    With keys=None-sized arrays (shape 0) only counts. Returns the number of subsets.
    """
    write = keys.shape[0] > 0
    k = 0
    idx = np.empty(s, np.int64)
    for t in range(starts.shape[0]):
        p = starts[t]
        u = owners[p]
        end = offsets[u + 1]
        if end - p < s:
            continue
        for j in range(s):
            idx[j] = p + j
        while True:
            if write:
                for j in range(s):
                    keys[k, j] = elements[idx[j]]
                    vals[k, j] = values[idx[j]]
                own[k] = u
            k += 1
            if not _next_combination(idx, p, end, s):
                break
    return k


@nb.njit(cache=True)
def _emit_compositions(idx, s, target, lower, write, k, keys, elements, lo, hi, ref, own, u):
    """Every way to write `target` as s positive parts, part j ≤ lower[idx[j]]."""
    parts = np.zeros(s, np.int64)
    suffix = np.zeros(s + 1, np.float64)
    for j in range(s - 1, -1, -1):
        suffix[j] = suffix[j + 1] + lower[idx[j]]
    if suffix[0] < target:
        return k
    pos = 0
    partial = np.zeros(s + 1, np.int64)
    while pos >= 0:
        if pos == s - 1:
            last = target - partial[pos]
            if 1 <= last <= lower[idx[pos]]:
                if write:
                    for j in range(s - 1):
                        lo[k, j] = parts[j]
                        hi[k, j] = np.inf
                        keys[k, j] = elements[idx[j]]
                    lo[k, s - 1] = last
                    hi[k, s - 1] = np.inf
                    keys[k, s - 1] = elements[idx[s - 1]]
                    ref[k] = 0
                    own[k] = u
                k += 1
            pos -= 1
            continue
        parts[pos] += 1
        partial[pos + 1] = partial[pos] + parts[pos]
        if parts[pos] > lower[idx[pos]] or partial[pos + 1] + (s - 1 - pos) > target:
            parts[pos] = 0
            pos -= 1
            continue
        if partial[pos + 1] + suffix[pos + 1] < target:
            continue
        pos += 1
        parts[pos] = 0
    return k


@nb.njit(cache=True)
def enumerate_queries(
    offsets,
    owners,
    elements,
    lower,
    upper,
    starts,
    s,
    size_lo,
    size_hi,
    totals,
    mode,
    compose,
    delta,
    keys,
    lo,
    hi,
    ref,
    own,
):
    """Every query of size s whose first position is in `starts` (list order).

    Shape-0 output arrays: count only. Returns the number of queries.
    """
    write = keys.shape[0] > 0
    k = 0
    idx = np.empty(s, np.int64)
    for t in range(starts.shape[0]):
        p = starts[t]
        u = owners[p]
        if s < size_lo[u] or s > size_hi[u]:
            continue
        end = offsets[u + 1]
        if end - p < s:
            continue
        for j in range(s):
            idx[j] = p + j
        while True:
            if mode == COMPOSITIONS:
                target = min(compose, totals[u])
                k = _emit_compositions(
                    idx, s, target, lower, write, k, keys, elements, lo, hi, ref, own, u
                )
            else:
                if write:
                    r = 0
                    if mode == RATIOS:
                        for j in range(1, s):
                            if lower[idx[j]] > lower[idx[r]]:
                                r = j
                    for j in range(s):
                        keys[k, j] = elements[idx[j]]
                        if mode == RATIOS:
                            x = lower[idx[j]] / lower[idx[r]]
                            lo[k, j] = x - delta
                            hi[k, j] = x + delta
                        else:
                            lo[k, j] = lower[idx[j]]
                            hi[k, j] = upper[idx[j]]
                    ref[k] = r
                    own[k] = u
                k += 1
            if not _next_combination(idx, p, end, s):
                break
    return k


# --- counting inside a key group -----------------------------------------------------------


@nb.njit(cache=True)
def _bit_add(tree, i):
    while i < tree.shape[0]:
        tree[i] += 1
        i += i & -i


@nb.njit(cache=True)
def _bit_sum(tree, i):
    total = 0
    while i > 0:
        total += tree[i]
        i -= i & -i
    return total


@nb.njit(cache=True)
def _bit2_add(tree, i, j):
    while i < tree.shape[0]:
        k = j
        while k < tree.shape[1]:
            tree[i, k] += 1
            k += k & -k
        i += i & -i


@nb.njit(cache=True)
def _bit2_sum(tree, i, j):
    total = 0
    while i > 0:
        k = j
        while k > 0:
            total += tree[i, k]
            k -= k & -k
        i -= i & -i
    return total


@nb.njit(cache=True)
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


@nb.njit(cache=True)
def _inside_all(mv, lo, hi):
    """True when every member lies in every query's box (the common easy case)."""
    for j in range(mv.shape[1]):
        if lo[:, j].max() > mv[:, j].min() or hi[:, j].min() < mv[:, j].max():
            return False
    return True


@nb.njit(cache=True)
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


@nb.njit(cache=True)
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


@nb.njit(cache=True)
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


@nb.njit(cache=True)
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


@nb.njit(cache=True)
def _compare_rows(a, i, b, j):
    for c in range(a.shape[1]):
        if a[i, c] < b[j, c]:
            return -1
        if a[i, c] > b[j, c]:
            return 1
    return 0


@nb.njit(cache=True)
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


@nb.njit(cache=True)
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


@nb.njit(parallel=True, cache=True)
def grouped_counts(match, mvals, qlo, qhi, qref, qs, qe, ms, me, brute_limit):
    """Support of every query against its key group, groups in parallel."""
    counts = np.zeros(qlo.shape[0], np.int64)
    for g in nb.prange(qs.shape[0]):
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


@nb.njit(parallel=True, cache=True)
def self_dominance(mvals, starts, ends, brute_limit):
    """Per member row: the members of its key group whose values are all ≥ its own."""
    counts = np.zeros(mvals.shape[0], np.int64)
    s = mvals.shape[1]
    for g in nb.prange(starts.shape[0]):
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


@nb.njit(cache=True)
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


@nb.njit(cache=True)
def enumerate_codes(offsets, owners, elements, starts, s, bits, owner_bits, out):
    """Like enumerate_members, but writes one int64 per subset: the subset's elements
    packed `bits` each, then the owner in the low `owner_bits`. Shape-0 out: count only."""
    write = out.shape[0] > 0
    k = 0
    idx = np.empty(s, np.int64)
    for t in range(starts.shape[0]):
        p = starts[t]
        u = owners[p]
        end = offsets[u + 1]
        if end - p < s:
            continue
        for j in range(s):
            idx[j] = p + j
        while True:
            if write:
                code = np.int64(0)
                for j in range(s):
                    code = (code << bits) | elements[idx[j]]
                out[k] = (code << owner_bits) | u
            k += 1
            if not _next_combination(idx, p, end, s):
                break
    return k


@nb.njit(cache=True)
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


@nb.njit(cache=True)
def scatter_min(support, owners, counts):
    for i in range(owners.shape[0]):
        u = owners[i]
        if counts[i] < support[u]:
            support[u] = counts[i]


@nb.njit(cache=True)
def distinct_rows(keys, owners):
    """Mask of the first row of each run of equal (key, owner) rows (rows sorted)."""
    n = keys.shape[0]
    keep = np.ones(n, np.bool_)
    for i in range(1, n):
        if owners[i] == owners[i - 1] and _compare_rows(keys, i, keys, i - 1) == 0:
            keep[i] = False
    return keep


# --- posting lists: check candidates one query at a time ----------------------------------


@nb.njit(cache=True)
def rarest_element(post_offsets, q_elements, a, b):
    """The element of query q_elements[a:b] with the shortest posting list."""
    pivot = q_elements[a]
    for j in range(a + 1, b):
        e = q_elements[j]
        if post_offsets[e + 1] - post_offsets[e] < post_offsets[pivot + 1] - post_offsets[pivot]:
            pivot = e
    return pivot


@nb.njit(cache=True)
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


@nb.njit(cache=True)
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


@nb.njit(parallel=True, cache=True)
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
    """Support of each explicit query: check the candidates of its two rarest elements."""
    for q in nb.prange(q_offsets.shape[0] - 1):
        a = q_offsets[q]
        b = q_offsets[q + 1]
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


# --- sampling --------------------------------------------------------------------------


@nb.njit(cache=True)
def sample_positions(n, s, randoms, scratch, out):
    """s distinct positions of [0, n), uniformly (partial Fisher-Yates), ascending."""
    for i in range(n):
        scratch[i] = i
    for i in range(s):
        j = i + int(randoms[i] * (n - i))
        scratch[i], scratch[j] = scratch[j], scratch[i]
    out[:s] = np.sort(scratch[:s])


@nb.njit(cache=True)
def sample_queries(
    offsets,
    elements,
    lower,
    upper,
    users,
    sizes,
    n_samples,
    mode,
    compose,
    totals,
    delta,
    randoms,
    q_offsets,
    q_elements,
    q_lo,
    q_hi,
    q_ref,
    q_owner,
):
    """n_samples random queries per user (uniform positions, from `randoms` in [0, 1)).

    subsets / ratios: s distinct positions of the user's query list, in list order;
    compositions: H_u distinct items of the user's multiset (element i repeated lower[i]
    times), grouped back into (element, multiplicity). Returns the number of queries.
    """
    n_max = 0
    for u in users:
        n_max = max(n_max, offsets[u + 1] - offsets[u])
        if mode == COMPOSITIONS:
            n_max = max(n_max, int(totals[u]))
    scratch = np.empty(max(n_max, 1), np.int64)
    picked = np.empty(max(n_max, 1), np.int64)
    q = 0
    e = 0
    q_offsets[0] = 0
    for t in range(users.shape[0]):
        u = users[t]
        a = offsets[u]
        n = offsets[u + 1] - a
        s = sizes[t]
        for _ in range(n_samples):
            row = randoms[q]
            if mode == COMPOSITIONS:
                target = int(min(compose, totals[u]))
                sample_positions(int(totals[u]), target, row, scratch, picked)
                j = 0
                cumulative = lower[a]
                for i in range(target):
                    while picked[i] >= cumulative:
                        j += 1
                        cumulative += lower[a + j]
                    if e > q_offsets[q] and q_elements[e - 1] == elements[a + j]:
                        q_lo[e - 1] += 1
                    else:
                        q_elements[e] = elements[a + j]
                        q_lo[e] = 1
                        q_hi[e] = np.inf
                        e += 1
                q_ref[q] = 0
            else:
                sample_positions(n, s, row, scratch, picked)
                r = 0
                if mode == RATIOS:
                    for j in range(1, s):
                        if lower[a + picked[j]] > lower[a + picked[r]]:
                            r = j
                for j in range(s):
                    p = a + picked[j]
                    q_elements[e] = elements[p]
                    if mode == RATIOS:
                        x = lower[p] / lower[a + picked[r]]
                        q_lo[e] = x - delta
                        q_hi[e] = x + delta
                    else:
                        q_lo[e] = lower[p]
                        q_hi[e] = upper[p]
                    e += 1
                q_ref[q] = r
            q_owner[q] = u
            q += 1
            q_offsets[q] = e
    return q


@nb.njit(cache=True)
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
