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

import numpy as np

from prudence_cli.engine import CountingProblem, Elements, Engine, QuerySpec
from prudence_cli.engine.jit import choose
from prudence_cli.measures import disclosure_sums as sums
from prudence_cli.measures.disclosure_ranges import disclosure_in_ranges
from prudence_cli.measures.disclosure_sums import (
    Disclosure,
    bin_shares,
    chunks_added,
    draw_knowledge,
    em_kl_sums,
    finished,
    postings,
    sampled_users,
)

__all__ = ["Disclosure", "class_sizes", "disclosure", "disclosure_in_ranges", "draw_knowledge"]


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
    n_bins = int(records.elements.max(initial=-1)) + 1
    active = np.bincount(records.elements, minlength=n_bins)  # |D_j|
    users = sampled_users(present, samples, rng)
    q, untouched_kl = bin_shares(active, int(present.sum()))
    query = Elements(records.offsets, records.elements, records.values).select(known)
    choose(int(sizes[users].sum() * (records.lengths.mean() if records.n_users else 0)))
    shared = (
        records.offsets,
        records.elements,
        *postings(records, n_bins),
        query.offsets,
        query.elements,
        q,
        untouched_kl,
    )
    found = _em_kl_by_chunks(engine, shared, users)
    return finished(sizes, present, users, found, q, untouched_kl, n_bins, dimensionality)


# an EM/KL task's shared data: the records (offsets, elements), the posting lists
# (offsets, users), the knowledge (offsets, elements), q and the untouched KL per bin
Shared = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]


def _em_kl_by_chunks(engine: Engine, shared: Shared, users: np.ndarray) -> tuple[np.ndarray, ...]:
    """`em_kl_sums` of `users` in chunks of EM_KL_CHUNK, each a task on the engine's runner
    (on a cluster: the workers), the per-bin sums added in chunk order."""
    chunk = sums.EM_KL_CHUNK
    chunks = [users[k : k + chunk] for k in range(0, max(users.shape[0], 1), chunk)]
    tasks = ((k, chunk.astype(np.int64), engine.worker()) for k, chunk in enumerate(chunks))
    found = dict(engine.runner.run(_em_kl_task, engine.runner.share(shared), tasks))
    return chunks_added([found[k] for k in range(len(chunks))])


def _em_kl_task(
    shared: Shared, k: int, users: np.ndarray, worker: tuple[int | None, bool]
) -> tuple[int, tuple[np.ndarray, ...]]:
    """One chunk of sampled users (the `k`-th): `em_kl_sums`' per-user values and per-bin
    sums (a task: its kernels run as the planning process chose)."""
    from prudence_cli.engine.tasks import _as_planned

    _as_planned(worker)
    lists, (q, untouched) = shared[:6], shared[6:]  # records, postings, the knowledge
    found = em_kl_sums(*lists, users, q, untouched, float(q.sum()), float(untouched.sum()))
    return k, found
