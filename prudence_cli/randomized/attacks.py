"""Attacks on randomized profiles (Olivier and Quertier, randomized sanitization mechanisms,
sections IV and V).

The attacker holds the published noisy profiles ã_i (an unordered list) and true profiles
leaked in one of three scenarios:
- `1`: every sampled user's true profile over the first part T1 of the period, while the
  noisy profiles of the second part T2 are published;
- `2.1`: every user's true profile restricted to a random subset J of the locations (the
  attacker restricts the noisy profiles to J too);
- `2.2`: the full true profiles of a random subset I of the users.

Attacks, each reporting a success rate:
- `reidentification` (Definition 10, Algorithm 11): profileGuess(i, δ) = {k : d(a_k, ã_i)
  ≤ δ}, ℓ1 distance; the attack on ã_i is a (δ, M)-success when i's own leaked profile is
  in the guess and the guess holds at most M profiles; r(δ, M, n) = successes / n.
- `consistent_reidentification` (Algorithm 12, then 11): first discard from ã_i every
  location j that has affinity Aff_jj' < τ with at least N other locations j' of ã_i.
- `noise_estimate` (Algorithms 13, 14): from a user's leaked and noisy profile, estimate
  the mechanism's parameter; success when the relative error is at most `within`.
  Randomized response: p̃ = share of the locations of J where they differ (Algorithm 13).
  Count mechanisms: the maximum-likelihood ε under the mechanism's exact law (rounding and
  clamping at 0 included) over J. The seed's Algorithm 14 is a moment estimate whose √2
  constant matches neither its stated noise nor Proposition 9; the likelihood estimate is
  the strongest attacker of the same knowledge.
- `significant_poi` (Definition 15, Algorithm 16; count profiles): the guess for user i's
  most visited location is the set of the noisy profile's maxima, intersected with the
  maxima of every candidate (leaked) profile of profileGuess(i, δ); success when it holds
  a true most visited location of i (over every location, in the published period);
  r̃(δ, n) = successes / n.

δ is an ℓ1 distance, or `P%`: P % of the noisy profile's ℓ1 norm (on J).
The affinity matrix Aff is computed from the true profiles of every user in the view: the
worst case of Olivier and Quertier's experiments, where public statistics equal the data's own.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy import sparse

from prudence_cli.attacks.base import AttackSpec, KnowledgeLevel
from prudence_cli.config.mechanisms import Setting
from prudence_cli.dataviews.profiles import ProfilesView
from prudence_cli.engine.jit import choose, kernel, prange

MAX_DISTANCES = 25_000_000  # released × leaked profiles compared per attack


@dataclass(frozen=True)
class Scenario:
    """What the attacker holds besides the noisy profiles of `release`."""

    name: str
    release: sparse.csr_matrix  # true profiles that are sanitized and published (n × m)
    leaked: sparse.csr_matrix  # the attacker's true profiles (L × m), zero outside J
    leaked_row: np.ndarray  # per release row: the row of its own leaked profile, or −1
    columns: np.ndarray  # J: the locations the attacker compares


def build_scenarios(
    view: ProfilesView,
    users: np.ndarray,
    names: set[str],
    leak_users: float,
    leak_locations: float,
    rng: np.random.Generator,
) -> dict[str, Scenario]:
    """The scenarios `names` over the sampled `users` (codes of U), seeded by `rng`."""
    n, m = users.shape[0], view.n_locations
    every = np.arange(m)
    own = np.arange(n)
    full = view.matrix("all", users)
    out: dict[str, Scenario] = {}
    if "1" in names:
        out["1"] = Scenario(
            "1", view.matrix("second", users), view.matrix("first", users), own, every
        )
    if "2.1" in names:
        columns = np.sort(rng.choice(m, size=max(1, math.ceil(leak_locations * m)), replace=False))
        out["2.1"] = Scenario("2.1", full, restrict(full, columns), own, columns)
    if "2.2" in names:
        rows = np.sort(rng.choice(n, size=max(1, math.ceil(leak_users * n)), replace=False))
        leaked_row = np.full(n, -1, dtype=np.int64)
        leaked_row[rows] = np.arange(rows.shape[0])
        out["2.2"] = Scenario("2.2", full, full[rows], leaked_row, every)
    return out


def restrict(profiles: sparse.csr_matrix, columns: np.ndarray) -> sparse.csr_matrix:
    """The profiles with every location outside `columns` set to 0."""
    if columns.shape[0] == profiles.shape[1]:  # every location: nothing to zero
        return profiles
    mask = np.zeros(profiles.shape[1])
    mask[columns] = 1.0
    out = (profiles @ sparse.diags(mask)).astype(np.int64).tocsr()
    out.eliminate_zeros()
    out.sort_indices()
    return out


@dataclass
class Attempt:
    """One noisy release facing one scenario's attacker; caches distances."""

    scenario: Scenario
    noisy: sparse.csr_matrix  # the published profiles, one row per release row
    setting: Setting
    affinity: sparse.csr_matrix
    _seen: dict[Any, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.noisy.shape[0])

    def observed(self, tau: float | None = None, n_min: int | None = None) -> sparse.csr_matrix:
        """The noisy profiles on J, after Algorithm 12 when τ and N are given."""
        key = ("observed", tau, n_min)
        if key not in self._seen:
            noisy = restrict(self.noisy, self.scenario.columns)
            if tau is not None and n_min is not None:
                noisy = discard_inconsistencies(noisy, self.affinity, tau, n_min)
            self._seen[key] = noisy
        return self._seen[key]

    def distances(self, tau: float | None = None, n_min: int | None = None) -> np.ndarray:
        """d(a_k, ã_i) for every release row i and leaked profile k (n × L)."""
        key = ("distances", tau, n_min)
        if key not in self._seen:
            noisy = self.observed(tau, n_min)
            leaked = self.scenario.leaked
            if noisy.shape[0] * leaked.shape[0] > MAX_DISTANCES:
                raise ValueError(
                    f"{noisy.shape[0]:,} noisy × {leaked.shape[0]:,} leaked profiles is more "
                    f"than {MAX_DISTANCES:,} distances: lower randomize.users"
                )
            self._seen[key] = l1_distances(noisy, leaked)
        return self._seen[key]

    def radius(self, delta: float | str, tau: float | None = None, n_min: int | None = None):
        """δ per release row: the number, or P % of the row's ℓ1 norm on J."""
        if isinstance(delta, str):
            norms = np.asarray(self.observed(tau, n_min).sum(axis=1)).ravel()
            return norms * float(delta[:-1]) / 100.0
        return np.full(self.n, float(delta))

    def guesses(self, delta: float | str, tau: float | None = None, n_min: int | None = None):
        """profileGuess(i, δ) as a boolean n × L matrix."""
        d = self.distances(tau, n_min)
        return d <= self.radius(delta, tau, n_min)[:, None] + 1e-9


def l1_distances(a: sparse.csr_matrix, b: sparse.csr_matrix) -> np.ndarray:
    """Σ_j |a_ij − b_kj| for every row i of a and k of b."""
    a = a.tocsr()
    b = b.tocsr()
    a.sort_indices()
    b.sort_indices()
    rows = a.shape[0] * b.shape[0]
    choose(int(rows * (a.nnz / max(a.shape[0], 1) + b.nnz / max(b.shape[0], 1) + 1)))
    return _l1(
        a.indptr,
        a.indices,
        a.data.astype(np.float64),
        b.indptr,
        b.indices,
        b.data.astype(np.float64),
    )


@kernel(parallel=True)
def _l1(a_ptr, a_idx, a_val, b_ptr, b_idx, b_val):
    na = a_ptr.shape[0] - 1
    nb_ = b_ptr.shape[0] - 1
    out = np.empty((na, nb_))
    for i in prange(na):
        for k in range(nb_):
            p, pe = a_ptr[i], a_ptr[i + 1]
            q, qe = b_ptr[k], b_ptr[k + 1]
            total = 0.0
            while p < pe and q < qe:
                if a_idx[p] == b_idx[q]:
                    total += abs(a_val[p] - b_val[q])
                    p += 1
                    q += 1
                elif a_idx[p] < b_idx[q]:
                    total += abs(a_val[p])
                    p += 1
                else:
                    total += abs(b_val[q])
                    q += 1
            while p < pe:
                total += abs(a_val[p])
                p += 1
            while q < qe:
                total += abs(b_val[q])
                q += 1
            out[i, k] = total
    return out


def discard_inconsistencies(
    noisy: sparse.csr_matrix, aff: sparse.csr_matrix, tau: float, n_min: int
) -> sparse.csr_matrix:
    """Algorithm 12: drop every location j of a profile that has Aff_jj' < τ with at
    least N other locations j' of the same profile."""
    noisy = noisy.tocsr().copy()
    noisy.sort_indices()
    for i in range(noisy.shape[0]):
        start, end = noisy.indptr[i], noisy.indptr[i + 1]
        cols = noisy.indices[start:end]
        if cols.shape[0] <= n_min:
            continue
        block = aff[cols][:, cols].toarray()
        low = (block < tau).sum(axis=1) - (np.diag(block) < tau)
        noisy.data[start:end][low >= n_min] = 0
    noisy.eliminate_zeros()
    return noisy


def top_locations(profiles: sparse.csr_matrix) -> list[np.ndarray]:
    """Per row: the locations of its largest value (empty for an empty row)."""
    out = []
    for i in range(profiles.shape[0]):
        start, end = profiles.indptr[i], profiles.indptr[i + 1]
        values = profiles.data[start:end]
        if values.shape[0] == 0 or values.max() <= 0:
            out.append(np.empty(0, dtype=np.int64))
        else:
            out.append(np.sort(profiles.indices[start:end][values == values.max()]))
    return out


class ProfileAttack(AttackSpec):
    """An attack on noisy profiles; `success` gives its rate on one attempt."""

    kinds: ClassVar[frozenset[str]] = frozenset({"boolean", "count"})

    @abstractmethod
    def success(self, attempt: Attempt, level: KnowledgeLevel) -> dict[str, float]:
        """success_rate, successes and targets (and attack-specific measures)."""


def _rate(successes: int, targets: int) -> dict[str, float]:
    return {
        "success_rate": successes / targets if targets else math.nan,
        "successes": float(successes),
        "targets": float(targets),
    }


def _reidentified(attempt: Attempt, guess: np.ndarray, m_max: int) -> int:
    own = attempt.scenario.leaked_row
    rows = np.flatnonzero(own >= 0)
    hit = guess[rows, own[rows]]
    size = guess[rows].sum(axis=1)
    return int((hit & (size <= m_max)).sum())


class ReidentificationAttack(ProfileAttack):
    name = "reidentification"

    def success(self, attempt: Attempt, level: KnowledgeLevel) -> dict[str, float]:
        guess = attempt.guesses(level["delta"])
        return _rate(_reidentified(attempt, guess, level["M"]), attempt.n)


class ConsistentReidentificationAttack(ProfileAttack):
    name = "consistent_reidentification"

    def success(self, attempt: Attempt, level: KnowledgeLevel) -> dict[str, float]:
        guess = attempt.guesses(level["delta"], level["tau"], level["N"])
        return _rate(_reidentified(attempt, guess, level["M"]), attempt.n)


class NoiseEstimateAttack(ProfileAttack):
    name = "noise_estimate"

    def success(self, attempt: Attempt, level: KnowledgeLevel) -> dict[str, float]:
        scenario = attempt.scenario
        rows = np.flatnonzero(scenario.leaked_row >= 0)
        truth = scenario.leaked[scenario.leaked_row[rows]][:, scenario.columns].toarray()
        seen = attempt.noisy[rows][:, scenario.columns].toarray()
        setting = attempt.setting
        if setting.mechanism == "randomized_response":
            target = float(setting.p or 0.0)
            estimate = (truth != seen).mean(axis=1)
        else:
            target = setting.epsilon
            estimate = epsilon_mle(setting.mechanism, truth, seen)
        error = np.abs(estimate - target) / target
        out = _rate(int((error <= level["within"]).sum()), rows.shape[0])
        out["mean_relative_error"] = float(error.mean()) if rows.shape[0] else math.nan
        return out


_ALPHAS = np.exp(-np.geomspace(1e-3, 50.0, 4000))


def epsilon_mle(mechanism: str, truth: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Per row, the ε maximizing the likelihood of `seen` = max(0, truth + k) under the
    count mechanism's noise law (on a fine logarithmic grid of ε from 0.001 to 50).

    Terms: an unclamped output contributes P(k = seen − truth); an output 0 with truth 0
    contributes P(k ≤ 0), with truth c ≥ 1 it contributes P(k ≤ −c). With α = e^−ε:
    laplace (rounded): P(0) = 1 − √α, P(±j) = ½ √α (1−α) α^(j−1), P(k ≤ −c) = ½ √α α^(c−1),
    P(k ≤ 0) = 1 − √α/2; geometric: P(k) = (1−α)/(1+α) α^|k|, P(k ≤ −c) = α^c/(1+α)."""
    k = np.abs(seen - truth)
    free = seen > 0
    clamped = ~free
    n_zero = (free & (k == 0)).sum(axis=1)
    n_moved = (free & (k > 0)).sum(axis=1)
    s_moved = np.where(free & (k > 0), k, 0).sum(axis=1)
    n_still = (clamped & (truth == 0)).sum(axis=1)
    lifted = clamped & (truth > 0)
    n_lift = lifted.sum(axis=1)
    c_sum = np.where(lifted, truth, 0).sum(axis=1)
    a = _ALPHAS[None, :]
    log_a = np.log(a)
    if mechanism == "laplace":
        root = np.sqrt(a)
        ll = (
            n_zero[:, None] * np.log1p(-root)
            + n_moved[:, None] * np.log(0.5 * root * (1 - a))
            + (s_moved - n_moved)[:, None] * log_a
            + n_still[:, None] * np.log1p(-root / 2)
            + n_lift[:, None] * np.log(0.5 * root)
            + (c_sum - n_lift)[:, None] * log_a
        )
    else:
        ll = (
            (n_zero + n_moved)[:, None] * np.log((1 - a) / (1 + a))
            + s_moved[:, None] * log_a
            - n_still[:, None] * np.log1p(a)
            + c_sum[:, None] * log_a
            - n_lift[:, None] * np.log1p(a)
        )
    return -np.log(_ALPHAS[np.argmax(ll, axis=1)])


class SignificantPoiAttack(ProfileAttack):
    name = "significant_poi"
    kinds = frozenset({"count"})

    def success(self, attempt: Attempt, level: KnowledgeLevel) -> dict[str, float]:
        guess = attempt.guesses(level["delta"])
        scenario = attempt.scenario
        noisy_top = top_locations(attempt.noisy)  # the whole noisy profile is public
        leaked_top = top_locations(scenario.leaked)
        true_top = top_locations(scenario.release)
        hits = 0
        for i in range(attempt.n):
            poi = noisy_top[i]
            for k in np.flatnonzero(guess[i]):
                if poi.shape[0] == 0:
                    break
                poi = np.intersect1d(poi, leaked_top[k], assume_unique=True)
            hits += bool(np.intersect1d(poi, true_top[i]).shape[0])
        return _rate(hits, attempt.n)


PROFILE_ATTACKS: dict[str, ProfileAttack] = {
    a.name: a
    for a in (
        ReidentificationAttack(),
        ConsistentReidentificationAttack(),
        NoiseEstimateAttack(),
        SignificantPoiAttack(),
    )
}
