"""A measure's values in buckets on the Dask workers: the tasks of the comparisons of
measures/kept_compare.py (see there), each run where its bucket is, and what each tells
the assessing process. Every sum is exact (measures/exact.py), so that the buckets'
parts add up to the bits of a sum over everyone's values at once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from prudence_cli.measures.distributions import ATOL, QUANTILES, RTOL, quantile_positions
from prudence_cli.measures.exact import ExactSum, exact_sum


def risk_counts(
    people: pd.DataFrame, name: str, risks: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per level (a row of `risks`), the distinct risks of a range's people with a value
    of measure `name`, and how many of them have each."""
    present = ~np.isnan(people[name].to_numpy(dtype=float))
    return [np.unique(row[present], return_counts=True) for row in risks]


def counted_risks(
    people: pd.DataFrame, k: int, name: str, risks: np.ndarray
) -> tuple[int, list[tuple[np.ndarray, np.ndarray]]]:
    """`risk_counts` of the k-th range, told which it is (results come as they finish)."""
    return k, risk_counts(people, name, risks)


@dataclass(frozen=True)
class RiskRanks:
    """Per level, the distinct risks of the people with a value of a measure, sorted,
    and the rank each has among those people's (average_ranks: tied risks share the
    average of their ranks): as long as the distinct risks, not the people, and each
    range reads its people's ranks from it."""

    values: list[np.ndarray]
    ranks: list[np.ndarray]

    @classmethod
    def of(cls, counted: list[list[tuple[np.ndarray, np.ndarray]]]) -> RiskRanks:
        """From every range's `risk_counts`: the same ranks as average_ranks over the
        risks of them all, to the bit (a start plus half a size, in the same types)."""
        values, ranks = [], []
        for level in range(len(counted[0]) if counted else 0):
            found = [c[level] for c in counted]
            distinct, inverse = np.unique(
                np.concatenate([f[0] for f in found]), return_inverse=True
            )
            sizes = np.zeros(distinct.size, dtype=np.int64)
            np.add.at(sizes, inverse.ravel(), np.concatenate([f[1] for f in found]))
            starts = np.cumsum(sizes) - sizes
            values.append(distinct)
            ranks.append(starts + (sizes + 1) / 2.0)
        return cls(values, ranks)

    def of_risks(self, risks: np.ndarray) -> np.ndarray:
        """The ranks of `risks` (a row per level, each risk one of the table's)."""
        out = np.empty(risks.shape)
        for level, (values, ranks) in enumerate(zip(self.values, self.ranks, strict=True)):
            out[level] = ranks[np.searchsorted(values, risks[level])]
        return out


def cut_range(
    people: pd.DataFrame, name: str, splitters: np.ndarray, risks: np.ndarray, table: RiskRanks
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """A range's people with a value of measure `name`, cut by `splitters`: per bucket,
    their values, their risks (a row per level) and those risks' ranks (`table`)."""
    values = people[name].to_numpy(dtype=float)
    present = ~np.isnan(values)
    x, y = values[present], risks[:, present]
    ranks = table.of_risks(y)
    bucket = np.searchsorted(splitters, x, side="right")
    order = np.argsort(bucket, kind="stable")
    ends = np.cumsum(np.bincount(bucket, minlength=splitters.size + 1))
    starts = ends - np.bincount(bucket, minlength=splitters.size + 1)
    return [
        (x[order[a:b]], y[:, order[a:b]], ranks[:, order[a:b]])
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    ]


def range_piece(cut: list[tuple[np.ndarray, ...]], j: int) -> tuple[np.ndarray, ...]:
    return cut[j]


@dataclass(frozen=True)
class Bucket:
    """A bucket's values in order, with their people's risks (a row per level) and those
    risks' ranks."""

    x: np.ndarray
    y: np.ndarray
    ry: np.ndarray

    def __sizeof__(self) -> int:  # for Dask's memory accounting
        return int(self.x.nbytes + self.y.nbytes + self.ry.nbytes)

    def ranks(self, before: int) -> np.ndarray:
        """The ranks of its values among everyone's (average_ranks): tied values, all in
        this bucket, share the average of their ranks."""
        x = self.x
        starts = np.flatnonzero(np.r_[True, x[1:] != x[:-1]]) if x.size else np.zeros(0, int)
        sizes = np.diff(np.r_[starts, x.size])
        return np.repeat((starts + before) + (sizes + 1) / 2.0, sizes)


def joined_bucket(*pieces: tuple[np.ndarray, np.ndarray, np.ndarray]) -> Bucket:
    """The ranges' pieces of a bucket, sorted by value."""
    x = np.concatenate([p[0] for p in pieces])
    y = np.concatenate([p[1] for p in pieces], axis=1)
    ry = np.concatenate([p[2] for p in pieces], axis=1)
    order = np.argsort(x, kind="stable")
    return Bucket(x[order], y[:, order], ry[:, order])


def bucket_count(bucket: Bucket, j: int) -> tuple[int, tuple[int, float | None]]:
    """How many values the bucket holds, and its first (None: none)."""
    return j, (int(bucket.x.size), float(bucket.x[0]) if bucket.x.size else None)


@dataclass(frozen=True)
class First:
    """A bucket's first pass: its people kept per level and threshold, its exact sums of
    values, risks and both ranks (per level for the risks), and the range of its values
    and, per level, of its risks (None: no value)."""

    kept: np.ndarray  # levels × thresholds
    sums: tuple[ExactSum, ExactSum, list[ExactSum], list[ExactSum]]  # x, rx, y, ry
    x_range: tuple[float, float] | None
    y_range: list[tuple[float, float]]


def first_pass(
    bucket: Bucket, j: int, before: np.ndarray, thresholds: np.ndarray
) -> tuple[int, First]:
    x, y, ry = bucket.x, bucket.y, bucket.ry
    kept = (y[:, :, None] <= thresholds[None, None, :]).sum(axis=1)
    sums = (
        exact_sum(x),
        exact_sum(bucket.ranks(int(before[j]))),
        [exact_sum(row) for row in y],
        [exact_sum(row) for row in ry],
    )
    if x.size == 0:
        return j, First(kept, sums, None, [])
    x_range = (float(x[0]), float(x[-1]))
    return j, First(kept, sums, x_range, [(float(r.min()), float(r.max())) for r in y])


@dataclass(frozen=True)
class Means:
    """The means over everyone with a value: of values, their ranks, and per level the
    risks and their ranks (sum_of / count, as distributions._pearson takes them)."""

    x: float
    rx: float
    y: list[float]
    ry: list[float]

    @classmethod
    def of(cls, first: list[First], n: int) -> Means:
        def mean(sums: Iterator[ExactSum]) -> float:
            return float(sum(sums, ExactSum())) / n if n else np.nan

        levels = len(first[0].sums[2]) if first else 0
        return cls(
            mean(f.sums[0] for f in first),
            mean(f.sums[1] for f in first),
            [mean(f.sums[2][i] for f in first) for i in range(levels)],
            [mean(f.sums[3][i] for f in first) for i in range(levels)],
        )


@dataclass(frozen=True)
class Wanted:
    """The positions of values the rows need: of everyone's, the median's two; of the
    kept at each level and threshold, the quantiles' (distributions.quantile_positions)."""

    full: tuple[int, ...]
    kept: list[list[np.ndarray]]


def wanted_positions(n: int, k: np.ndarray) -> Wanted:
    half = n // 2
    full = (half,) if n % 2 else ((half - 1, half) if n else ())
    kept = [
        [np.unique(np.concatenate(quantile_positions(int(c), QUANTILES)[:2])) for c in row]
        for row in k
    ]
    return Wanted(full, kept)


@dataclass(frozen=True)
class Step:
    """What a bucket holds of the steps of both CDFs at one level and threshold: its
    largest gap, its exact part of the Wasserstein sum, its first and last distinct
    values and the gap at the last."""

    ks: float
    inner: ExactSum
    first_value: float
    last_value: float
    last_gap: float


@dataclass(frozen=True)
class Second:
    steps: list[list[Step | None]]  # per level and threshold (None: no distinct value ends here)
    values: list[list[dict[int, float]]]  # the kept values wanted, by position among the kept
    full: dict[int, float]  # the values wanted, by position among everyone's
    deviations: tuple[float, float, list[float], list[float]]  # largest |x − mean|, ...


def second_pass(
    bucket: Bucket,
    j: int,
    before: np.ndarray,
    n: int,
    following: list[float | None],
    thresholds: np.ndarray,
    kept_before: np.ndarray,
    k: np.ndarray,
    means: Means,
    wanted: Wanted,
) -> tuple[int, Second]:
    x, y = bucket.x, bucket.y
    start = int(before[j])
    nxt = following[j]
    if x.size:  # where a run of values one within RTOL/ATOL ends (last_of_equal), chained
        step = np.diff(x) > RTOL * np.abs(x[1:]) + ATOL
        end = True if nxt is None else bool(nxt - x[-1] > RTOL * abs(nxt) + ATOL)
        last = np.flatnonzero(np.r_[step, end])
    else:
        last = np.zeros(0, dtype=np.int64)
    steps: list[list[Step | None]] = []
    values: list[list[dict[int, float]]] = []
    for level in range(y.shape[0]):
        steps.append([])
        values.append([])
        for t, threshold in enumerate(thresholds.tolist()):
            mask = y[level] <= threshold
            cumulative = np.cumsum(mask)
            found = int(kept_before[j, level, t])
            steps[-1].append(_steps(x, last, cumulative, start, found, n, int(k[level, t])))
            kept_at = np.flatnonzero(mask)
            positions = wanted.kept[level][t]
            inside = positions[(positions >= found) & (positions < found + kept_at.size)]
            values[-1].append({p: float(x[kept_at[p - found]]) for p in inside.tolist()})
    full = {p: float(x[p - start]) for p in wanted.full if start <= p < start + x.size}
    return j, Second(steps, values, full, _deviations(bucket, start, means))


def _steps(
    x: np.ndarray,
    last: np.ndarray,
    cumulative: np.ndarray,
    start: int,
    found: int,
    n: int,
    k: int,
) -> Step | None:
    """compare_subset's gaps at this bucket's distinct values (`last`: where each ends),
    the bucket starting at position `start` of everyone's values and `found` of the
    kept: the same floats as over everyone's values at once."""
    if last.size == 0 or n == 0 or k == 0:
        return None
    gap = np.abs((last + start + 1) / n - (cumulative[last] + found) / k)
    ends = x[last]
    return Step(
        float(gap.max()),
        exact_sum(gap[:-1] * np.diff(ends)),
        float(ends[0]),
        float(ends[-1]),
        float(gap[-1]),
    )


def _deviations(
    bucket: Bucket, start: int, means: Means
) -> tuple[float, float, list[float], list[float]]:
    """The largest |value − mean| of the values, their ranks, and per level the risks and
    their ranks (0 without values)."""

    def largest(values: np.ndarray, mean: float) -> float:
        return float(np.abs(values - mean).max()) if values.size else 0.0

    return (
        largest(bucket.x, means.x),
        largest(bucket.ranks(start), means.rx),
        [largest(row, m) for row, m in zip(bucket.y, means.y, strict=True)],
        [largest(row, m) for row, m in zip(bucket.ry, means.ry, strict=True)],
    )


@dataclass(frozen=True)
class Scales:
    """The largest deviations over every bucket (distributions._pearson's scales)."""

    x: float
    rx: float
    y: list[float]
    ry: list[float]

    @classmethod
    def of(cls, second: list[Second], means: Means) -> Scales:
        levels = len(means.y)
        parts = [s.deviations for s in second]
        return cls(
            max((p[0] for p in parts), default=0.0),
            max((p[1] for p in parts), default=0.0),
            [max((p[2][i] for p in parts), default=0.0) for i in range(levels)],
            [max((p[3][i] for p in parts), default=0.0) for i in range(levels)],
        )


@dataclass(frozen=True)
class Third:
    sums: list[list[ExactSum]]  # per level: xy, xx, yy, rxy, rxx, ryy


def third_pass(
    bucket: Bucket, j: int, before: np.ndarray, means: Means, scales: Scales
) -> tuple[int, Third]:
    """The exact sums of the scaled deviations' products (distributions._pearson), of
    the values and the risks, and of their ranks, per level."""
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant side is not used
        dx = (bucket.x - means.x) / scales.x
        drx = (bucket.ranks(int(before[j])) - means.rx) / scales.rx
        xx, rxx = exact_sum(dx * dx), exact_sum(drx * drx)
        sums = []
        for level in range(bucket.y.shape[0]):
            dy = (bucket.y[level] - means.y[level]) / scales.y[level]
            dry = (bucket.ry[level] - means.ry[level]) / scales.ry[level]
            sums.append(
                [
                    exact_sum(dx * dy),
                    xx,
                    exact_sum(dy * dy),
                    exact_sum(drx * dry),
                    rxx,
                    exact_sum(dry * dry),
                ]
            )
    return j, Third(sums)
