"""Kernels (run as Python or compiled, `jit.py`): enumeration of instances — every s-subset
of a list whose first position is in a partition, as keys and values, as packed codes, or
as bounded queries — and seeded sampling of random queries.

Plain arrays in, plain arrays out; codes are in `kernels.py`.
"""

from __future__ import annotations

import numpy as np

from prudence_cli.engine.jit import kernel, prange
from prudence_cli.engine.kernels import COMPOSITIONS, RATIOS

_BLOCK = 4096  # start positions per parallel block

# --- enumeration -------------------------------------------------------------------------


@kernel
def _first_combination(idx, first, end, s):
    """Set idx to the first combination of s positions of [first, end) that begins at
    `first`; False when fewer than s positions are left."""
    if end - first < s:
        return False
    for j in range(s):
        idx[j] = first + j
    return True


@kernel
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


@kernel
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
        if not _first_combination(idx, p, end, s):
            continue
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


@kernel
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


@kernel
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
        if not _first_combination(idx, p, end, s):
            continue
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


@kernel(parallel=True)
def enumerate_packed(
    offsets, owners, elements, values, starts, first, s, bits, owner_bits, keys, vals, own
):
    """Like enumerate_members, with each subset's elements packed `bits` each into one
    int64 key, then (owner_bits > 0) its owner in the low `owner_bits`; the subsets
    beginning at starts[t] go to rows first[t]:first[t + 1] of keys, and of vals and own
    unless they have no rows. Blocks of starts in parallel."""
    with_rows = vals.shape[0] > 0
    n_blocks = (starts.shape[0] + _BLOCK - 1) // _BLOCK
    for block in prange(n_blocks):
        idx = np.empty(s, np.int64)
        for t in range(block * _BLOCK, min((block + 1) * _BLOCK, starts.shape[0])):
            p = starts[t]
            u = owners[p]
            end = offsets[u + 1]
            if not _first_combination(idx, p, end, s):
                continue
            k = first[t]
            while True:
                key = np.int64(0)
                for j in range(s):
                    key = (key << bits) | elements[idx[j]]
                if owner_bits > 0:
                    key = (key << owner_bits) | u
                keys[k] = key
                if with_rows:
                    for j in range(s):
                        vals[k, j] = values[idx[j]]
                    own[k] = u
                k += 1
                if not _next_combination(idx, p, end, s):
                    break


# --- sampling --------------------------------------------------------------------------


@kernel
def sample_positions(n, s, randoms, scratch, out):
    """s distinct positions of [0, n), uniformly (partial Fisher-Yates), ascending."""
    for i in range(n):
        scratch[i] = i
    for i in range(s):
        j = i + int(randoms[i] * (n - i))
        scratch[i], scratch[j] = scratch[j], scratch[i]
    out[:s] = np.sort(scratch[:s])


@kernel
def _write_query(mode, a, picked, s, elements, lower, upper, delta, e, q_elements, q_lo, q_hi):
    """Write one query from `picked` (ascending): s positions of the list starting at a
    (subsets, ratios), or s items of its multiset, element i repeated lower[i] times
    (compositions), grouped back into (element, multiplicity). Returns (end, reference)."""
    if mode == COMPOSITIONS:
        start = e
        j = 0
        cumulative = lower[a]
        for i in range(s):
            while picked[i] >= cumulative:
                j += 1
                cumulative += lower[a + j]
            if e > start and q_elements[e - 1] == elements[a + j]:
                q_lo[e - 1] += 1
            else:
                q_elements[e] = elements[a + j]
                q_lo[e] = 1
                q_hi[e] = np.inf
                e += 1
        return e, 0
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
    return e, r


@kernel
def _longest(offsets, users, mode, totals):
    n_max = 1
    for u in users:
        n_max = max(n_max, offsets[u + 1] - offsets[u])
        if mode == COMPOSITIONS:
            n_max = max(n_max, int(totals[u]))
    return n_max


@kernel
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
    n_max = _longest(offsets, users, mode, totals)
    scratch = np.empty(n_max, np.int64)
    picked = np.empty(n_max, np.int64)
    q = 0
    e = 0
    q_offsets[0] = 0
    for t in range(users.shape[0]):
        u = users[t]
        a = offsets[u]
        n = offsets[u + 1] - a
        s = sizes[t]
        if mode == COMPOSITIONS:
            n = int(totals[u])
            s = int(min(compose, totals[u]))
        for _ in range(n_samples):
            sample_positions(n, s, randoms[q], scratch, picked)
            e, r = _write_query(
                mode, a, picked, s, elements, lower, upper, delta, e, q_elements, q_lo, q_hi
            )
            q_ref[q] = r
            q_owner[q] = u
            q += 1
            q_offsets[q] = e
    return q


@kernel
def rarest_queries(
    offsets,
    elements,
    lower,
    upper,
    users,
    sizes,
    mode,
    compose,
    totals,
    delta,
    rarity,
    held,
    q_offsets,
    q_elements,
    q_lo,
    q_hi,
    q_ref,
    q_owner,
):
    """One query per user made of its rarest elements (fewest holders in `rarity`, at
    `held` for each position of the lists: its element, or where that is in `rarity`;
    ties to the earlier position), in list order; in compositions mode, the whole
    multiplicity of the rarest elements first. A deterministic first draw: the fewer
    users hold a query's elements, the fewer can hold the query."""
    n_max = _longest(offsets, users, mode, totals)
    picked = np.empty(n_max, np.int64)
    e = 0
    q_offsets[0] = 0
    for t in range(users.shape[0]):
        u = users[t]
        a = offsets[u]
        n = offsets[u + 1] - a
        order = np.argsort(rarity[held[a : a + n]], kind="mergesort")
        s = sizes[t]
        if mode == COMPOSITIONS:
            s = int(min(compose, totals[u]))
            first = np.empty(n, np.int64)
            acc = 0
            for i in range(n):
                first[i] = acc
                acc += int(lower[a + i])
            k = 0
            for i in order:
                take = min(int(lower[a + i]), s - k)
                for x in range(take):
                    picked[k] = first[i] + x
                    k += 1
                if k == s:
                    break
        else:
            for i in range(s):
                picked[i] = order[i]
        picked[:s] = np.sort(picked[:s])
        e, r = _write_query(
            mode, a, picked, s, elements, lower, upper, delta, e, q_elements, q_lo, q_hi
        )
        q_ref[t] = r
        q_owner[t] = u
        q_offsets[t + 1] = e
    return users.shape[0]
