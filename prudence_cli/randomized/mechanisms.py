"""d_χ-private randomization of user profiles (Olivier and Quertier, randomized sanitization
mechanisms, section III).

Each user's profile a_i (a row of an n × m matrix, m locations) is released as a noisy
profile ã_i. Noise touches only the coordinates of χ_i: every location (`neighbourhood:
all`), or N(b_i, n_i) — the user's visited locations and the n_i unvisited locations of
highest affinity to them (Definition 8). Coordinates outside χ_i are released as they are,
which is exactly what d_χ-privacy with that χ allows (and leaks: that they were not
visited).

Mechanisms
- `randomized_response` (boolean profiles, Proposition 7): each coordinate of χ_i is
  flipped with probability p. The mechanism is d_{χ,ε}-private when
  1/(1+e^ε) ≤ p ≤ e^ε/(1+e^ε); the default p is the lower end 1/(1+e^ε), the least noise
  that ε allows.
- `laplace` (count profiles, Proposition 9): max(0, [c_ij + d_ij]) with d_ij Laplace of
  scale 1/ε — the scale for which the proof of Proposition 9 holds (log-density ratio
  ε|c − c'|; the paper's text states a standard deviation of 1/(√2 ε), i.e. the scale
  1/(2ε), which would only give 2ε-privacy; we follow the proposition). [·] rounds to the
  nearest integer: the floor would lower every count by ½ on average. Rounding and
  clamping are post-processing, so the mechanism stays ε-private.
- `geometric` (count profiles): max(0, c_ij + k) with k two-sided geometric,
  P(k) ∝ e^{−ε|k|}, the discrete analogue (Ghosh et al.), also ε-private per unit of ℓ1.

Sampling. All randomness comes from one numpy `Generator` (PCG64) seeded from the config
seed and the setting. Neither count mechanism samples a floating-point Laplace variate:
floating-point Laplace samplers leak the input through the set of representable outputs
(Mironov, CCS 2012). Since c_ij is an integer, [c_ij + d] = c_ij + [d], and [d] has an
exact discrete law: |d| is exponential with rate ε, so [d] = 0 with probability 1 − e^(−ε/2)
and otherwise ±(1 + G) with a fair sign and G geometric on {0, 1, ...} with success
1 − e^(−ε) (memorylessness). The two-sided geometric is G1 − G2. Integer noise is added to
integer counts, so the output carries no floating-point trace of the input. Randomized
response compares a uniform draw with p, independent of the data.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import sparse

from prudence_cli.config.mechanisms import Setting
from prudence_cli.dataviews.profiles import visited_together
from prudence_cli.engine.jit import choose, kernel

_BLOCK_CELLS = 1 << 22  # dense cells per block when noise covers every location


@dataclass(frozen=True, eq=False)
class Affinity:
    """Aff_{j1 j2} = |{i : b_ij1 = 1 and b_ij2 = 1}| / n (Olivier and Quertier, randomized
    sanitization mechanisms, section V.B), m × m: its counts kept whole, so that sums of
    them compare exactly (`neighbourhoods`: 1/5 + 2/5 ties with 3/5, which the floats
    0.2 + 0.4 and 0.6 do not)."""

    counts: sparse.csr_matrix  # whole numbers (float64), indices sorted
    users: int  # n

    @cached_property
    def matrix(self) -> sparse.csr_matrix:
        """Aff itself, the counts over n, each division rounded once (scipy's `/ n`
        multiplies by 1/n: 17 × fl(1/1700) < 0.01, where Algorithm 12 compares with τ)."""
        out = self.counts.copy()
        out.data = out.data / self.users
        return out


def affinity(boolean: sparse.csr_matrix) -> Affinity:
    """The affinity of the profiles `boolean` (nonzero: visited)."""
    return Affinity(visited_together(boolean), max(boolean.shape[0], 1))


def neighbourhoods(boolean: sparse.csr_matrix, aff: Affinity, n_i: int) -> sparse.csr_matrix:
    """χ_i = N(b_i, n_i) as a boolean n × m matrix: the visited locations of b_i and the
    n_i unvisited locations j of largest Aff(i, j) = Σ_{j1 visited} Aff_{j1 j}, ties to
    the smaller location id. Locations of affinity 0 (never seen together with any of the
    user's) are not chosen: adding them is exactly the inconsistency Algorithm 12 finds."""
    b = (boolean > 0).astype(np.float64).tocsr()
    b.sort_indices()
    scores = (b @ aff.counts).tocsr()  # Aff(i, j) × n: whole numbers, added exactly
    scores.sort_indices()
    choose(scores.nnz + b.nnz)
    indptr, indices = _top_unvisited(
        b.indptr, b.indices, scores.indptr, scores.indices, scores.data, n_i
    )
    data = np.ones(indices.shape[0], dtype=bool)
    return sparse.csr_matrix((data, indices, indptr), shape=boolean.shape)


@kernel
def _top_unvisited(b_ptr, b_idx, s_ptr, s_idx, s_val, k):
    n = b_ptr.shape[0] - 1
    indptr = np.zeros(n + 1, dtype=np.int64)
    chosen = np.empty(b_idx.shape[0] + n * k, dtype=np.int32)
    w = 0
    for i in range(n):
        visited = b_idx[b_ptr[i] : b_ptr[i + 1]]
        cand = np.empty(s_ptr[i + 1] - s_ptr[i], dtype=np.int64)
        score = np.empty(cand.shape[0])
        c = 0
        for p in range(s_ptr[i], s_ptr[i + 1]):
            j = s_idx[p]
            pos = np.searchsorted(visited, j)
            if (pos < visited.shape[0] and visited[pos] == j) or s_val[p] <= 0:
                continue
            cand[c] = j
            score[c] = -s_val[p]
            c += 1
        order = np.argsort(score[:c], kind="mergesort")  # candidates ascend by id: stable
        extra = cand[order[: min(k, c)]]
        row = np.concatenate((visited.astype(np.int64), extra))
        row.sort()
        for j in row:
            chosen[w] = j
            w += 1
        indptr[i + 1] = w
    return indptr, chosen[:w]


def randomize(
    profiles: sparse.csr_matrix,
    setting: Setting,
    rng: np.random.Generator,
    chi: sparse.csr_matrix | None = None,
) -> sparse.csr_matrix:
    """The noisy profiles M(a_i) of every row, as a sparse n × m int64 matrix.

    `profiles` holds counts (count mechanisms) or 1s (randomized response); `chi` is the
    boolean matrix of each row's χ_i, None for every location (then `setting.neighbourhood`
    must be None too)."""
    if (chi is None) != (setting.neighbourhood is None):
        raise ValueError("give chi exactly when the setting has a neighbourhood")
    profiles = profiles.tocsr()
    if chi is None:
        return sparse.vstack(list(_dense_blocks(profiles, setting, rng)), format="csr")
    return _on_chi(profiles, chi.tocsr(), setting, rng)


def _dense_blocks(
    profiles: sparse.csr_matrix, setting: Setting, rng: np.random.Generator
) -> Iterator[sparse.csr_matrix]:
    n, m = profiles.shape
    rows = max(1, _BLOCK_CELLS // max(m, 1))
    if n == 0:
        yield sparse.csr_matrix((0, m), dtype=np.int64)
    for start in range(0, n, rows):
        block = profiles[start : start + rows].toarray()
        yield sparse.csr_matrix(noisy(block, setting, rng))


def _on_chi(
    profiles: sparse.csr_matrix,
    chi: sparse.csr_matrix,
    setting: Setting,
    rng: np.random.Generator,
) -> sparse.csr_matrix:
    n, m = profiles.shape
    chi.sort_indices()
    chi_rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(chi.indptr))
    chi_keys = chi_rows * m + chi.indices
    coo = profiles.tocoo()
    keys = coo.row.astype(np.int64) * m + coo.col
    values = np.zeros(chi_keys.shape[0], dtype=np.int64)
    at = np.searchsorted(chi_keys, keys)
    inside = (at < chi_keys.shape[0]) & (chi_keys[np.minimum(at, chi_keys.shape[0] - 1)] == keys)
    values[at[inside]] = coo.data[inside]
    out_values = noisy(values, setting, rng)
    # coordinates outside χ_i are released unchanged
    outside = ~inside
    rows = np.concatenate((chi_rows, coo.row[outside].astype(np.int64)))
    cols = np.concatenate((chi.indices.astype(np.int64), coo.col[outside].astype(np.int64)))
    data = np.concatenate((out_values, coo.data[outside].astype(np.int64)))
    out = sparse.csr_matrix((data, (rows, cols)), shape=(n, m), dtype=np.int64)
    out.eliminate_zeros()
    out.sort_indices()
    return out


def noisy(values: np.ndarray, setting: Setting, rng: np.random.Generator) -> np.ndarray:
    """The mechanism applied to every entry of `values` (an array of any shape)."""
    values = np.asarray(values, dtype=np.int64)
    if setting.mechanism == "randomized_response":
        p = setting.p
        assert p is not None
        flips = rng.random(values.shape) < p
        return np.where(flips, 1 - (values > 0), (values > 0)).astype(np.int64)
    if setting.mechanism == "laplace":
        noise = rounded_laplace(setting.epsilon, values.shape, rng)
    else:
        noise = two_sided_geometric(setting.epsilon, values.shape, rng)
    return np.maximum(values + noise, 0)


def rounded_laplace(epsilon: float, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """[d], d Laplace of scale 1/ε rounded to the nearest integer, from its exact law."""
    moved = rng.random(shape) < math.exp(-epsilon / 2)
    g = rng.geometric(-math.expm1(-epsilon), size=shape).astype(np.int64)  # 1 + G
    sign = np.where(rng.random(shape) < 0.5, 1, -1)
    return np.where(moved, sign * g, 0)


def two_sided_geometric(
    epsilon: float, shape: tuple[int, ...], rng: np.random.Generator
) -> np.ndarray:
    """k with P(k) = (1−α)/(1+α) α^|k|, α = e^−ε: the difference of two geometrics."""
    q = -math.expm1(-epsilon)
    return rng.geometric(q, size=shape).astype(np.int64) - rng.geometric(q, size=shape).astype(
        np.int64
    )


def noise_log_pmf(mechanism: str, epsilon: float, k: np.ndarray) -> np.ndarray:
    """log P(noise = k) of a count mechanism (its exact discrete law)."""
    k = np.abs(np.asarray(k, dtype=np.int64))
    if mechanism == "laplace":
        moved = math.log(0.5) - epsilon / 2 + math.log(-math.expm1(-epsilon)) - (k - 1) * epsilon
        return np.where(k == 0, math.log(-math.expm1(-epsilon / 2)), moved)
    if mechanism == "geometric":
        return math.log(-math.expm1(-epsilon) / (1 + math.exp(-epsilon))) - k * epsilon
    raise ValueError(f"{mechanism!r} is not a count mechanism")
