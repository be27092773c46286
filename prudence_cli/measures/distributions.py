"""How far a distribution moves: the Kolmogorov–Smirnov statistic and the 1-Wasserstein
distance between two samples, their quantiles, and the Pearson and Spearman correlation of
per-person values with risk — computed once from sorted samples, as scipy.stats defines
them (the tests compare the two), without importing scipy. Every sum over people or
values is exact, rounded once (measures/exact.py): the same bits however the people are
split, e.g. over Dask workers (measures/kept_compare.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from prudence_cli.measures.exact import sum_of

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)

# Two values of a measure closer than this are one value: the same mobility summed in
# another order (a person's places in another order) differs in the last bits, and the
# empirical CDFs must not step between them. Far below any measure's meaningful precision
# (a millimetre in 1,000 km, a billionth of an entropy).
RTOL, ATOL = 1e-9, 1e-12


def last_of_equal(ordered: np.ndarray) -> np.ndarray:
    """In sorted values, where each run of equal values (within RTOL/ATOL of the one
    before) ends: the points where an empirical CDF steps."""
    if ordered.size == 0:
        return np.zeros(0, dtype=bool)
    step = np.diff(ordered) > RTOL * np.abs(ordered[1:]) + ATOL
    return np.r_[step, True]


def distortion(full: np.ndarray, kept: np.ndarray) -> dict[str, float]:
    """How far the distribution of a measure on what is left (`kept`) is from the full
    one: the Kolmogorov–Smirnov statistic, the 1-Wasserstein distance (in the measure's
    unit), the counts; NaN when either side has no value. Computed as scipy.stats'
    ks_2samp and wasserstein_distance define them (the tests compare the two)."""
    return compare_sorted(np.sort(full[~np.isnan(full)]), np.sort(kept[~np.isnan(kept)]))


def compare_sorted(full: np.ndarray, kept: np.ndarray) -> dict[str, float]:
    """`distortion` of two sorted samples without NaN: both empirical CDFs evaluated on
    every distinct value of either (values within RTOL/ATOL of each other being one)."""
    median = _median(full)
    if full.size == 0 or kept.size == 0:
        return {
            "ks": np.nan,
            "wasserstein": np.nan,
            "n_full": full.size,
            "n_kept": kept.size,
            "median_full": median,
        }
    values = np.sort(np.concatenate([full, kept]), kind="stable")  # two sorted runs
    values = values[last_of_equal(values)]  # where either CDF steps
    gap = np.abs(
        np.searchsorted(full, values, side="right") / full.size
        - np.searchsorted(kept, values, side="right") / kept.size
    )
    return {
        "ks": float(gap.max()),
        "wasserstein": sum_of(gap[:-1] * np.diff(values)),
        "n_full": int(full.size),
        "n_kept": int(kept.size),
        "median_full": median,
    }


def compare_subset(full: np.ndarray, kept: np.ndarray) -> dict[str, float]:
    """`compare_sorted` of a sorted sample `full` without NaN and the part of it where
    `kept` (a mask in `full`'s order) is True, in one pass: both CDFs step only at the
    distinct values of `full`, where counting gives them — the same KS and Wasserstein
    (the tests compare the two)."""
    n, k = full.size, int(np.count_nonzero(kept))
    if n == 0 or k == 0:
        return compare_sorted(full, full[kept])
    last = np.flatnonzero(last_of_equal(full))  # of each distinct value
    gap = np.abs((last + 1) / n - np.cumsum(kept)[last] / k)
    return {
        "ks": float(gap.max()),
        "wasserstein": sum_of(gap[:-1] * np.diff(full[last])),
        "n_full": int(n),
        "n_kept": k,
        "median_full": _median(full),
    }


def _median(ordered: np.ndarray) -> float:
    """The median of sorted values, as np.median gives it; NaN without values."""
    return median_of(ordered.size, lambda at: float(ordered[at]))


def median_of(size: int, value: Callable[[int], float]) -> float:
    """The median of `size` sorted values, `value(i)` the i-th: np.median's."""
    half = size // 2
    if size == 0:
        return np.nan
    return float(value(half) if size % 2 else (value(half - 1) + value(half)) / 2)


def quantiles(values: np.ndarray, at: Sequence[float] = QUANTILES) -> dict[str, float]:
    """The quantiles `at` of the values that are not NaN (numpy's linear method)."""
    return sorted_quantiles(finite_sorted(values), at)


def sorted_quantiles(ordered: np.ndarray, at: Sequence[float] = QUANTILES) -> dict[str, float]:
    """`quantiles` of sorted values without NaN: numpy's linear interpolation between the
    two values around q × (n − 1), without sorting again (the tests compare the two)."""
    below, above, _ = quantile_positions(ordered.size, at)
    return interpolated(ordered[below], ordered[above], ordered.size, at)


def quantile_positions(
    size: int, at: Sequence[float] = QUANTILES
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the quantiles `at` of `size` sorted values fall: the positions of the values
    below and above each (empty without values), and how far between them."""
    if size == 0:
        nothing = np.zeros(0, dtype=np.int64)
        return nothing, nothing, np.zeros(0)
    index = np.asarray(at, dtype=float) * (size - 1)
    below = np.floor(index).astype(np.int64)
    return below, np.minimum(below + 1, size - 1), index - below


def interpolated(
    a: np.ndarray, b: np.ndarray, size: int, at: Sequence[float] = QUANTILES
) -> dict[str, float]:
    """The quantiles `at` from the values `a` and `b` at `quantile_positions`."""
    names = [f"q{round(q * 100)}" for q in at]
    if size == 0:
        return dict.fromkeys(names, np.nan)
    t = quantile_positions(size, at)[2]
    with np.errstate(invalid="ignore"):  # inf − inf between two infinite values
        points = np.where(t >= 0.5, b - (b - a) * (1 - t), a + (b - a) * t)
    return {name: float(v) for name, v in zip(names, points, strict=True)}


def risk_correlation(
    measures: pd.DataFrame | Mapping[str, np.ndarray],
    risk: np.ndarray,
    ranks: Callable[[np.ndarray], np.ndarray] | None = None,
) -> pd.DataFrame:
    """Pearson and Spearman correlation of each per-person measure with the risk, over
    the people with visits (the paper's Table 1); NaN where either side is constant.
    Spearman's is Pearson's of the average ranks, as scipy.stats.spearmanr defines it
    (the tests compare the two); `ranks` computes them (e.g. a `RankMemo`)."""
    ranks = ranks or average_ranks
    rows = []
    for name in measures:
        values = np.asarray(measures[name], dtype=float)
        ok = ~np.isnan(values) & ~np.isnan(risk)
        x, y = values[ok], risk[ok]
        constant = x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0
        rows.append(
            {
                "measure": name,
                "pearson": np.nan if constant else _pearson(x, y),
                "spearman": np.nan if constant else _pearson(ranks(x), ranks(y)),
                "people": int(x.size),
            }
        )
    return pd.DataFrame(rows, columns=["measure", "pearson", "spearman", "people"])


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    dx, dy = x - sum_of(x) / x.size, y - sum_of(y) / y.size
    # each side scaled by its largest deviation first: no overflow on large values
    dx, dy = dx / np.abs(dx).max(), dy / np.abs(dy).max()
    return pearson_of(sum_of(dx * dy), sum_of(dx * dx), sum_of(dy * dy))


def pearson_of(xy: float, xx: float, yy: float) -> float:
    """Pearson's r from the sums of the scaled deviations' products, within [-1, 1]."""
    r = float(xy / np.sqrt(xx * yy))
    return max(-1.0, min(1.0, r))


def average_ranks(values: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Ranks from 1, tied values sharing the average of their ranks; `order`, the values'
    stable sort order, when it is known."""
    if order is None:
        order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    # each vector let go once used: at most four of n at once besides `values` (a
    # person's vectors, in the assessing process: its memory at 1B people)
    del ordered
    sizes = np.diff(np.r_[starts, values.size])
    average = starts + (sizes + 1) / 2.0  # ranks starts+1 .. starts+size
    del starts
    in_order = np.repeat(average, sizes)
    del average, sizes
    ranks = np.empty(values.size)
    ranks[order] = in_order
    return ranks


class RankMemo:
    """`average_ranks`, each distinct array ranked once: a dataview's measures are
    correlated with the risk of every attack level, and the risks of one level with every
    measure (arrays told apart by a 128-bit digest of their bytes)."""

    def __init__(self) -> None:
        self._ranked: dict[bytes, np.ndarray] = {}

    def __call__(self, values: np.ndarray) -> np.ndarray:
        digest = _digest(values)
        if digest not in self._ranked:
            self._ranked[digest] = average_ranks(values)
        return self._ranked[digest]

    def remember(self, values: np.ndarray, order: np.ndarray) -> None:
        """Rank `values` from their known stable sort `order` (no sort), for later."""
        self._ranked[_digest(values)] = average_ranks(values, order)


def _digest(values: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(values).tobytes(), digest_size=16).digest()


def finite_sorted(values: np.ndarray) -> np.ndarray:
    """The values that are not NaN, sorted."""
    return np.sort(values[~np.isnan(values)])
