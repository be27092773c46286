"""The sums behind EM- and KL-disclosure (measures/disclosure.py), as kernels: per sampled
user i, over the members of its class E_i (the users whose record holds every bin of
A_i, found through the posting lists of the bins) — how many, and how many of them are
active in each bin — and from those counts EM_i, KL_i and the per-bin sums.

A user's class is counted here whole (`em_kl_sums`), or in ranges of users where they
are kept (measures/disclosure_ranges.py): each range counts its own members
(`member_bins`), and `em_kl_of_counts` adds the ranges' counts up, in range order, into
the same bins in the same order — a bin's place is where the first member active in it
(in user order) puts it — so the sums are added in the same order, to the bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prudence_cli.engine import Elements
from prudence_cli.engine.jit import kernel
from prudence_cli.engine.kernels import candidates

# sampled users per EM/KL task: fixed, so that the sums are added in the same order
# wherever the tasks run
EM_KL_CHUNK = 4096


@dataclass(frozen=True)
class Disclosure:
    class_size: np.ndarray  # |E_i| per user of the view (0 for users absent)
    unicity: float
    k_disclosure: float
    sampled: np.ndarray  # users whose EM_i and KL_i were computed
    em_user: np.ndarray  # EM_i of the sampled users
    kl_user: np.ndarray
    em_attribute: np.ndarray  # EM_j per bin, estimated on the sample
    kl_attribute: np.ndarray

    @property
    def em(self) -> float:
        return float(self.em_user.mean()) if self.em_user.size else float("nan")

    @property
    def kl(self) -> float:
        return float(self.kl_user.mean()) if self.kl_user.size else float("nan")

    @property
    def em_ci(self) -> float:
        return _half_width(self.em_user)

    @property
    def kl_ci(self) -> float:
        return _half_width(self.kl_user)


def draw_knowledge(
    records: Elements, points: int, weighted: bool, rng: np.random.Generator
) -> np.ndarray:
    """Mask over the record rows: the p bins known of each user (all when fewer), drawn
    without replacement with probability ∝ activity (Efraimidis-Spirakis keys) or
    uniformly."""
    n_rows = records.elements.shape[0]
    owners = np.repeat(np.arange(records.n_users), records.lengths)
    weights = records.values if weighted else np.ones(n_rows)
    keys = np.log(rng.random(n_rows)) / np.maximum(weights, 1e-300)
    order = np.lexsort((-keys, owners))
    rank = np.empty(n_rows, dtype=np.int64)
    rank[order] = np.arange(n_rows) - records.offsets[owners[order]]
    return rank < points


def sampled_users(present: np.ndarray, samples: int | None, rng: np.random.Generator) -> np.ndarray:
    """The users whose EM_i and KL_i are computed: every user present, or `samples` of
    them drawn without replacement (ascending)."""
    users = np.flatnonzero(present)
    if samples is not None and samples < users.shape[0]:
        users = np.sort(rng.choice(users, size=samples, replace=False))
    return users


def bin_shares(active: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per bin, q = |D_j| / n (of the users `active` in it, among n), and the KL term of
    a bin no member of a class is active in, −ln(1 − q)."""
    q = active.astype(float) / max(n, 1)
    untouched_kl = np.zeros_like(q)  # a bin everyone is active in is always "touched"
    below = q < 1
    untouched_kl[below] = -np.log1p(-q[below])
    return q, untouched_kl


def postings(records: Elements, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The posting lists of the bins [0, n_bins): offsets, and the users of each bin
    (ascending)."""
    post_offsets = np.zeros(n_bins + 1, dtype=np.int64)
    np.cumsum(np.bincount(records.elements, minlength=n_bins), out=post_offsets[1:])
    owners = np.repeat(np.arange(records.n_users), records.lengths)
    order = np.argsort(records.elements, kind="stable")
    return post_offsets, owners[order].astype(np.int64)


def chunks_added(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """The EM/KL sums of chunks of sampled users (each `em_kl_sums`' output), in chunk
    order: the per-user values one after the other, the per-bin sums added in turn."""
    em_user = np.concatenate([p[0] for p in parts])
    kl_user = np.concatenate([p[1] for p in parts])
    em_sum, kl_sum, touched = (p.copy() for p in parts[0][2:])
    for part in parts[1:]:
        em_sum += part[2]
        kl_sum += part[3]
        touched += part[4]
    return em_user, kl_user, em_sum, kl_sum, touched


def finished(
    sizes: np.ndarray,
    present: np.ndarray,
    users: np.ndarray,
    found: tuple[np.ndarray, ...],
    q: np.ndarray,
    untouched_kl: np.ndarray,
    n_bins: int,
    dimensionality: int | None,
) -> Disclosure:
    """The measures, from the class sizes, the users `present`, the sampled `users` and
    their EM/KL sums (`chunks_added`), averaged over d = `dimensionality` or n_bins."""
    em_user, kl_user, em_sum, kl_sum, touched = found
    n = int(present.sum())
    s = max(users.shape[0], 1)
    em_attribute = (em_sum + (s - touched) * q) / s
    kl_attribute = (kl_sum + (s - touched) * untouched_kl) / s
    in_view = sizes[present]
    d = max(n_bins, dimensionality or 0, 1)
    return Disclosure(
        class_size=sizes,
        unicity=float(np.mean(in_view == 1)) if n else float("nan"),
        k_disclosure=float(np.mean(1.0 / in_view)) if n else float("nan"),
        sampled=users,
        em_user=em_user / d,
        kl_user=kl_user / d,
        em_attribute=em_attribute,
        kl_attribute=kl_attribute,
    )


@kernel
def em_kl_sums(
    offsets,
    elements,
    post_offsets,
    post_users,
    q_offsets,
    q_elements,
    users,
    q,
    untouched_kl,
    q_total,
    kl_total,
):
    """Per sampled user: Σ_j EM_ij and Σ_j KL_ij; per bin: the sums over the sample of
    EM_ij and KL_ij where some member of E_i is active, and how many users touched it."""
    n_bins = q.shape[0]
    em_user = np.zeros(users.shape[0])
    kl_user = np.zeros(users.shape[0])
    em_sum = np.zeros(n_bins)
    kl_sum = np.zeros(n_bins)
    touched = np.zeros(n_bins)
    counts = np.zeros(n_bins)
    seen = np.empty(n_bins, np.int64)
    for t in range(users.shape[0]):
        i = users[t]
        lists = (offsets, elements, post_offsets, post_users)
        members, n_seen = _class_bins(
            *lists, q_elements, q_offsets[i], q_offsets[i + 1], counts, seen
        )
        sums = (em_sum, kl_sum, touched)
        em_user[t], kl_user[t] = _user_terms(
            seen, n_seen, counts, members, q, untouched_kl, q_total, kl_total, *sums
        )
    return em_user, kl_user, em_sum, kl_sum, touched


@kernel
def member_bins(offsets, elements, post_offsets, post_users, q_offsets, q_elements):
    """Per query t of q_elements[q_offsets[t]:q_offsets[t + 1]]: how many users of these
    lists hold it (its members here), and the bins they are active in with how many of
    them are, each bin where its first member (in user order) puts it: (members,
    offsets of t's bins, bins, counts)."""
    n_queries = q_offsets.shape[0] - 1
    n_bins = post_offsets.shape[0] - 1
    members = np.zeros(n_queries, np.int64)
    out_offsets = np.zeros(n_queries + 1, np.int64)
    out_bins = np.empty(max(n_queries, 16), np.int64)
    out_counts = np.empty(max(n_queries, 16), np.int64)
    counts = np.zeros(n_bins, np.int64)
    seen = np.empty(n_bins, np.int64)
    at = 0
    for t in range(n_queries):
        lists = (offsets, elements, post_offsets, post_users)
        found, n_seen = _class_bins(
            *lists, q_elements, q_offsets[t], q_offsets[t + 1], counts, seen
        )
        members[t] = found
        if at + n_seen > out_bins.shape[0]:
            size = max(2 * out_bins.shape[0], at + n_seen)
            grown_bins = np.empty(size, np.int64)
            grown_counts = np.empty(size, np.int64)
            grown_bins[:at] = out_bins[:at]
            grown_counts[:at] = out_counts[:at]
            out_bins, out_counts = grown_bins, grown_counts
        for k in range(n_seen):
            e = seen[k]
            out_bins[at] = e
            out_counts[at] = counts[e]
            counts[e] = 0
            at += 1
        out_offsets[t + 1] = at
    return members, out_offsets, out_bins[:at], out_counts[:at]


@kernel
def class_members(offsets, elements, post_offsets, post_users, q_offsets, q_elements):
    """Per query t of q_elements[q_offsets[t]:q_offsets[t + 1]] (not empty): how many
    users of these lists hold all of it (the members of its class here)."""
    n_queries = q_offsets.shape[0] - 1
    members = np.zeros(n_queries, np.int64)
    for t in range(n_queries):
        a = q_offsets[t]
        b = q_offsets[t + 1]
        for v in candidates(post_offsets, post_users, q_elements, a, b):
            if _holds(elements, offsets[v], offsets[v + 1], q_elements, a, b):
                members[t] += 1
    return members


@kernel
def em_kl_of_counts(
    members,
    offsets,
    bins,
    counts_in,
    n_ranges,
    q,
    untouched_kl,
    q_total,
    kl_total,
    em_sum,
    kl_sum,
    touched,
):
    """`em_kl_sums` of the queries whose members the `n_ranges` ranges counted
    (`member_bins`), range r's results for query t at members[r, t] and, in `bins` and
    `counts_in`, at positions offsets[r, t] to offsets[r, t + 1]: the ranges' counts added
    up, range after range, each bin where the first range active in it put it. The
    per-user values are returned; the per-bin sums added to `em_sum`, `kl_sum` and
    `touched` (a chunk's, over several calls)."""
    n_queries = members.shape[1]
    n_bins = q.shape[0]
    em_user = np.zeros(n_queries)
    kl_user = np.zeros(n_queries)
    counts = np.zeros(n_bins)
    seen = np.empty(n_bins, np.int64)
    for t in range(n_queries):
        n_seen = 0
        total = 0
        for r in range(n_ranges):
            total += members[r, t]
            for p in range(offsets[r, t], offsets[r, t + 1]):
                e = bins[p]
                if counts[e] == 0:
                    seen[n_seen] = e
                    n_seen += 1
                counts[e] += counts_in[p]
        sums = (em_sum, kl_sum, touched)
        em_user[t], kl_user[t] = _user_terms(
            seen, n_seen, counts, total, q, untouched_kl, q_total, kl_total, *sums
        )
    return em_user, kl_user


@kernel
def _class_bins(offsets, elements, post_offsets, post_users, q_elements, a, b, counts, seen):
    """The class of the query q_elements[a:b] among these lists (the users whose sorted
    list holds all of it, found through the posting lists): how many members, and how
    many bins they are active in — each member adds 1 to its bins' `counts`, each bin
    listed in `seen` when first met (members in user order)."""
    members = 0
    n_seen = 0
    for v in candidates(post_offsets, post_users, q_elements, a, b):
        va = offsets[v]
        vb = offsets[v + 1]
        if not _holds(elements, va, vb, q_elements, a, b):
            continue
        members += 1
        for r in range(va, vb):
            e = elements[r]
            if counts[e] == 0:
                seen[n_seen] = e
                n_seen += 1
            counts[e] += 1
    return members, n_seen


@kernel
def _holds(elements, va, vb, q_elements, a, b):
    """Whether the sorted list elements[va:vb] holds every element of q_elements[a:b]."""
    for j in range(a, b):
        pos = va + np.searchsorted(elements[va:vb], q_elements[j])
        if pos == vb or elements[pos] != q_elements[j]:
            return False
    return True


@kernel
def _user_terms(
    seen, n_seen, counts, members, q, untouched_kl, q_total, kl_total, em_sum, kl_sum, touched
):
    """A user's Σ_j EM_ij and Σ_j KL_ij, from its class's `members` and their `counts` in
    the `n_seen` bins `seen` (in that order, each count then reset to 0): the untouched
    bins' totals `q_total` and `kl_total`, corrected bin by bin; its terms added to the
    per-bin sums."""
    em = q_total
    kl = kl_total
    for k in range(n_seen):
        e = seen[k]
        p1 = counts[e] / members
        em_term = abs(p1 - q[e])
        kl_term = 0.0
        if p1 > 0:
            kl_term += p1 * math.log(p1 / q[e])
        if p1 < 1:
            kl_term += (1 - p1) * math.log((1 - p1) / (1 - q[e]))
        em += em_term - q[e]
        kl += kl_term - untouched_kl[e]
        em_sum[e] += em_term
        kl_sum[e] += kl_term
        touched[e] += 1
        counts[e] = 0
    return em, kl


def _half_width(values: np.ndarray) -> float:
    if values.size < 2:
        return float("nan")
    return float(1.96 * values.std(ddof=1) / np.sqrt(values.size))
