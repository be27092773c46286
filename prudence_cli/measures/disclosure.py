"""Unicity, k-disclosure, EM- and KL-disclosure (the thesis on disclosure analysis of mobile-phone
data, chapter 4).

Data: the binary user × bin matrix X (X_ij = 1 when user i was active in bin j), n users
and d bins. Adversary knowledge A_i: p of user i's bins, drawn in proportion to i's
activity in each (the thesis's model) or uniformly. E_i: the users whose record holds every
bin of A_i (i among them).

- unicity = share of users with |E_i| = 1 (equation 4.1);
- k-disclosure = (1/n) Σ_i 1/|E_i| (4.2-4.3) — the mean of the per-user risk 1/|E_i|;
- EM_ij = | |E_ij|/|E_i| − |D_j|/n | (4.4), with |E_ij| the users of E_i active in j and
  |D_j| all users active in j; EM_i = mean over j (4.5), EM_j = mean over i (4.6), EM the
  overall mean (4.7);
- KL_ij = Σ_{t∈{0,1}} P(X_ij = t | A_i) ln[P(X_ij = t | A_i) / P(X_ij = t)] (4.15) with
  P(X_ij = 1 | A_i) = |E_ij|/|E_i| and P(X_ij = 1) = |D_j|/n; KL_i, KL_j and KL (4.18-4.19)
  as for EM. Zero probabilities: a term with P(X_ij = t | A_i) = 0 is 0 (the limit of
  x ln x); since E_i ⊆ D, P(X_ij = t | A_i) > 0 implies P(X_ij = t) > 0, so no term
  divides by zero. Natural logarithm (nats).

Bins no user of E_i is active in contribute |D_j|/n to EM_i and −ln(1 − |D_j|/n) to KL_i:
those are summed once over all bins, so each user costs only the bins of E_i.
EM and KL are averaged over a seeded sample of users (Monte Carlo) and reported with a
95 % confidence interval (1.96 standard errors); unicity and k-disclosure use every user.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prudence_cli.engine import CountingProblem, Elements, Engine, QuerySpec
from prudence_cli.engine.jit import choose, kernel
from prudence_cli.engine.kernels import candidates


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


def class_sizes(records: Elements, known: np.ndarray, engine: Engine) -> np.ndarray:
    """|E_i| per user: the users whose record holds every known bin of i."""
    queries = Elements(records.offsets, records.elements, np.ones(records.values.shape))
    queries = queries.select(known)
    sizes = queries.lengths.astype(np.int64)
    ones = Elements(records.offsets, records.elements, np.ones(records.values.shape))
    spec = QuerySpec(queries, size_lo=sizes, size_hi=sizes)
    return engine.min_support(CountingProblem(ones, spec, match="contains")).minimum


def disclosure(
    records: Elements,
    known: np.ndarray,
    engine: Engine,
    samples: int | None,
    rng: np.random.Generator,
    dimensionality: int | None = None,
) -> Disclosure:
    """The measures for the knowledge `known` (a mask over the record rows). d is the
    profile's `dimensionality` — every bin, including those nobody was active in (they
    add 0 to EM and KL but count in the averages) — or the number of active bins."""
    sizes = class_sizes(records, known, engine)
    present = records.lengths > 0
    n = int(present.sum())
    n_bins = int(records.elements.max(initial=-1)) + 1
    active = np.bincount(records.elements, minlength=n_bins).astype(float)  # |D_j|
    users = np.flatnonzero(present)
    if samples is not None and samples < users.shape[0]:
        users = np.sort(rng.choice(users, size=samples, replace=False))
    q = active / max(n, 1)
    untouched_kl = np.zeros_like(q)  # a bin everyone is active in is always "touched"
    below = q < 1
    untouched_kl[below] = -np.log1p(-q[below])
    query = Elements(records.offsets, records.elements, records.values).select(known)
    post_offsets = np.zeros(n_bins + 1, dtype=np.int64)
    np.cumsum(np.bincount(records.elements, minlength=n_bins), out=post_offsets[1:])
    owners = np.repeat(np.arange(records.n_users), records.lengths)
    order = np.argsort(records.elements, kind="stable")
    choose(int(sizes[users].sum() * (records.lengths.mean() if records.n_users else 0)))
    shared = (
        records.offsets,
        records.elements,
        post_offsets,
        owners[order].astype(np.int64),
        query.offsets,
        query.elements,
        q,
        untouched_kl,
    )
    em_user, kl_user, em_sum, kl_sum, touched = _em_kl_by_chunks(engine, shared, users)
    s = max(users.shape[0], 1)
    em_attribute = (em_sum + (s - touched) * q) / s
    kl_attribute = (kl_sum + (s - touched) * untouched_kl) / s
    in_view = sizes[present]
    return Disclosure(
        class_size=sizes,
        unicity=float(np.mean(in_view == 1)) if n else float("nan"),
        k_disclosure=float(np.mean(1.0 / in_view)) if n else float("nan"),
        sampled=users,
        em_user=em_user / max(n_bins, dimensionality or 0, 1),
        kl_user=kl_user / max(n_bins, dimensionality or 0, 1),
        em_attribute=em_attribute,
        kl_attribute=kl_attribute,
    )


# an EM/KL task's shared data: the records (offsets, elements), the posting lists
# (offsets, users), the knowledge (offsets, elements), q and the untouched KL per bin
Shared = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]

# sampled users per EM/KL task: fixed, so that the sums are added in the same order
# wherever the tasks run
EM_KL_CHUNK = 4096


def _em_kl_by_chunks(engine: Engine, shared: Shared, users: np.ndarray) -> tuple[np.ndarray, ...]:
    """`_em_kl` of `users` in chunks of EM_KL_CHUNK, each a task on the engine's runner
    (on a cluster: the workers), the per-bin sums added in chunk order."""
    chunks = [users[k : k + EM_KL_CHUNK] for k in range(0, max(users.shape[0], 1), EM_KL_CHUNK)]
    tasks = ((k, chunk.astype(np.int64), engine.worker()) for k, chunk in enumerate(chunks))
    found = dict(engine.runner.run(_em_kl_task, engine.runner.share(shared), tasks))
    parts = [found[k] for k in range(len(chunks))]
    em_user = np.concatenate([p[0] for p in parts])
    kl_user = np.concatenate([p[1] for p in parts])
    em_sum, kl_sum, touched = (p.copy() for p in parts[0][2:])
    for part in parts[1:]:
        em_sum += part[2]
        kl_sum += part[3]
        touched += part[4]
    return em_user, kl_user, em_sum, kl_sum, touched


def _em_kl_task(
    shared: Shared, k: int, users: np.ndarray, worker: tuple[int | None, bool]
) -> tuple[int, tuple[np.ndarray, ...]]:
    """One chunk of sampled users (the `k`-th): `_em_kl`'s per-user values and per-bin
    sums (a task: its kernels run as the planning process chose)."""
    from prudence_cli.engine.tasks import _as_planned

    _as_planned(worker)
    lists, (q, untouched) = shared[:6], shared[6:]  # records, postings, the knowledge
    found = _em_kl(*lists, users, q, untouched, float(q.sum()), float(untouched.sum()))
    return k, found


@kernel
def _em_kl(
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
        a = q_offsets[i]
        b = q_offsets[i + 1]
        members = 0
        n_seen = 0
        for v in candidates(post_offsets, post_users, q_elements, a, b):
            va = offsets[v]
            vb = offsets[v + 1]
            ok = True
            for j in range(a, b):
                pos = va + np.searchsorted(elements[va:vb], q_elements[j])
                if pos == vb or elements[pos] != q_elements[j]:
                    ok = False
                    break
            if not ok:
                continue
            members += 1
            for r in range(va, vb):
                e = elements[r]
                if counts[e] == 0:
                    seen[n_seen] = e
                    n_seen += 1
                counts[e] += 1
        em = q_total
        kl = kl_total
        for k in range(n_seen):
            e = seen[k]
            p1 = counts[e] / members
            em_term = abs(p1 - q[e])
            kl_term = 0.0
            if p1 > 0:
                kl_term += p1 * np.log(p1 / q[e])
            if p1 < 1:
                kl_term += (1 - p1) * np.log((1 - p1) / (1 - q[e]))
            em += em_term - q[e]
            kl += kl_term - untouched_kl[e]
            em_sum[e] += em_term
            kl_sum[e] += kl_term
            touched[e] += 1
            counts[e] = 0
        em_user[t] = em
        kl_user[t] = kl
    return em_user, kl_user, em_sum, kl_sum, touched


def _half_width(values: np.ndarray) -> float:
    if values.size < 2:
        return float("nan")
    return float(1.96 * values.std(ddof=1) / np.sqrt(values.size))
