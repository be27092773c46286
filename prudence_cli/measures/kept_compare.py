"""The per-person mobility measures of a dataview kept on the Dask workers, compared
there with what is left at each risk threshold and correlated with risk: the assessing
process sends each range of people its people's risks once and receives a few numbers per
measure, level and threshold — never a per-person measure. The same numbers as a local
run's Profile, to the bit (measures/mobility.py; the tests compare the two).

A comparison needs each measure's values in order, over everyone; so, one measure at a
time:

1. **Buckets of values.** Splitters are chosen from an even sample of each range's
   values; each range cuts its people who have a value by them — the value x, with
   their risk y at each level and the rank of that risk among them (ry, read from a
   table of the distinct risks, which the ranges count and the assessing process adds
   up: no rank of a person is made there) — and each bucket, all values between two
   splitters, is joined and sorted on a worker. Equal values all fall in one bucket.
2. **Three passes over the buckets,** each told what the buckets before it hold: (a)
   with the count of values before it, its ranks of x (tied values sharing the average
   of their ranks), its people kept at each threshold and its exact sums
   (measures/exact.py) for the means; (b) with the kept before it, the next bucket's
   first value and the means: the steps of both empirical CDFs at its distinct values
   (two values within RTOL/ATOL are one, measures/distributions.py, chained across
   buckets by the next one's first value), its largest gap (KS), its exact part of the
   Wasserstein sum, the values at the quantiles' positions that fall in it, and its
   largest deviations from the means; (c) with those scales, the exact sums of the
   scaled deviations' products, from which Pearson's and Spearman's r follow.
3. The assessing process adds each bucket's parts — the Wasserstein terms between two
   buckets' distinct values it computes from their edges — and rounds each exact sum
   once: the same floats, whatever the buckets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli.measures.buckets import (
    First,
    Means,
    RiskRanks,
    Scales,
    Second,
    Third,
    Wanted,
    bucket_count,
    counted_risks,
    cut_range,
    first_pass,
    joined_bucket,
    range_piece,
    second_pass,
    third_pass,
    wanted_positions,
)
from prudence_cli.measures.distributions import (
    interpolated,
    median_of,
    pearson_of,
    quantile_positions,
)
from prudence_cli.measures.exact import ExactSum, exact_sum

_SAMPLE = 256  # values of each range's measure sampled to place the splitters


@dataclass(frozen=True)
class RangeSample:
    """What a range of people tells of one measure: how many have a value, which (the
    mask, packed), and an even sample of those values, sorted."""

    count: int
    present: np.ndarray  # np.packbits of the people with a value, in person order
    sample: np.ndarray


def range_samples(people: pd.DataFrame) -> dict[str, RangeSample]:
    """Per measure of a range's people (`person_measures`' frame), its RangeSample."""
    found = {}
    for name in people.columns:
        values = people[name].to_numpy(dtype=float)
        present = ~np.isnan(values)
        ordered = np.sort(values[present])
        at = np.linspace(0, ordered.size - 1, min(_SAMPLE, ordered.size)).round()
        found[name] = RangeSample(
            int(ordered.size), np.packbits(present), ordered[at.astype(np.int64)]
        )
    return found


@dataclass
class KeptPeople:
    """The per-person measures of a dataview kept on the workers: one frame per range of
    people (`person_measures`, in user order), each a future on the worker holding the
    range; `first` the first person of each range, and the last person + 1 at the end."""

    client: Any
    frames: list[Any]  # futures of pd.DataFrame
    first: np.ndarray
    samples: list[dict[str, RangeSample]]
    columns: list[str]
    needed: set[str]  # the workers holding the frames
    buckets: int | None = None  # buckets of values per measure (None: one per worker)
    workers: list[str] | None = None  # the worker holding each range's frame, if known

    def compared(
        self, risks: Sequence[np.ndarray], thresholds: Sequence[float]
    ) -> tuple[list[list[list[dict[str, Any]]]], list[pd.DataFrame]]:
        """Per level of `risks` (a risk per person each): per threshold, the rows of
        Profile.kept for the people measures (the people at risk ≤ t against everyone);
        and the correlation table (Profile.correlation), the same numbers."""
        for risk in risks:
            if risk.size and np.isnan(risk.min()):  # min propagates NaN: no mask a person
                raise ValueError("a risk is NaN: measures are compared under numbers only")
        levels = len(risks)
        if not levels:
            return [], []
        rows: list[list[dict[str, Any]]] = [[] for _ in range(levels * len(thresholds))]
        correlation: list[list[dict[str, Any]]] = [[] for _ in range(levels)]
        ranked: dict[bytes, RiskRanks] = {}
        sent = self._sent(risks)
        try:
            for name in self.columns:
                # the people with a value, range by range: measures that have the same
                # ones share the ranks of each level's risk among them
                key = b"".join(s[name].present.tobytes() for s in self.samples)
                measure = _Measure(self, name, sent, levels, ranked.get(key), thresholds)
                found = measure.compared()
                assert measure.table is not None  # made by `compared`
                ranked = {key: measure.table}
                for i, row in enumerate(found.kept):
                    rows[i].append(row)
                for level, row in enumerate(found.correlation):
                    correlation[level].append(row)
        finally:
            for future in sent:
                future.release()
        per_level = [rows[i * len(thresholds) : (i + 1) * len(thresholds)] for i in range(levels)]
        tables = [
            pd.DataFrame(found, columns=["measure", "pearson", "spearman", "people"])
            for found in correlation
        ]
        return per_level, tables

    def _sent(self, risks: Sequence[np.ndarray]) -> list[Any]:
        """Each range's risks, a row per level, sent once to the worker holding its
        measures (futures), for every measure compared."""
        from prudence_cli.engine.connect import sent_to

        sent = []
        try:
            for i in range(len(self.frames)):
                a, b = self.first[i], self.first[i + 1]
                at = [self.workers[i]] if self.workers else None
                sent.append(sent_to(self.client, np.stack([r[a:b] for r in risks]), at))
        except BaseException:
            for future in sent:
                future.release()
            raise
        return sent


@dataclass
class _Found:
    kept: list[dict[str, Any]] = field(default_factory=list)  # per level, then threshold
    correlation: list[dict[str, Any]] = field(default_factory=list)  # per level


class _Measure:
    """One measure's comparisons, over its buckets (see the module)."""

    def __init__(
        self,
        people: KeptPeople,
        name: str,
        sent: list[Any],
        levels: int,
        table: RiskRanks | None,
        thresholds: Sequence[float],
    ) -> None:
        self.people = people
        self.client = people.client
        self.name = name
        self.sent = sent  # each range's risks, on the worker of its measures (futures)
        self.levels = levels
        self.table = table  # the ranks of the risks among the people with a value, once known
        self.thresholds = np.asarray(thresholds, dtype=float)

    def compared(self) -> _Found:
        buckets = self._buckets()
        try:
            return self._passes(buckets)
        finally:
            for bucket in buckets:
                bucket.release()

    def _buckets(self) -> list[Any]:
        """The measure's buckets, joined and sorted on the workers (futures)."""
        people, client, risks = self.people, self.client, self.sent
        samples = [s[self.name] for s in people.samples]
        workers = sorted(client.nthreads())
        splitters = _splitters(samples, people.buckets or len(workers))
        if self.table is None:  # their ranks, from each range's distinct risks

            def count(k: int) -> Any:
                frame, sent = people.frames[k], risks[k]
                return client.submit(counted_risks, frame, k, self.name, sent, pure=False)

            self.table = RiskRanks.of(self._in_order(count, len(people.frames)))
        cuts = [
            client.submit(cut_range, frame, self.name, splitters, sent, self.table, pure=False)
            for frame, sent in zip(people.frames, risks, strict=True)
        ]
        buckets = [
            client.submit(
                joined_bucket,
                *(client.submit(range_piece, cut, j, pure=False) for cut in cuts),
                pure=False,
                workers=[workers[j % len(workers)]],
                allow_other_workers=True,
            )
            for j in range(splitters.size + 1)
        ]
        for cut in cuts:
            cut.release()  # each cut goes once its pieces are in their buckets
        return buckets

    def _each(self, task: Callable[..., Any], buckets: list[Any], *args: Any) -> list[Any]:
        """`task(bucket, j, *args)` of every bucket j, in bucket order."""

        def submit(j: int) -> Any:
            return self.client.submit(task, buckets[j], j, *args, pure=False)

        return self._in_order(submit, len(buckets))

    def _in_order(self, submit: Callable[[int], Any], count: int) -> list[Any]:
        """The results of `submit(j)` (a future of (j, result)) for j in range(count), in
        that order: a few at a time, stopped if a worker holding the ranges leaves, and
        every future let go of if one fails (cluster_tasks.windowed)."""
        from prudence_cli.cluster_tasks import windowed  # Dask's: only here

        found = dict(windowed(self.client, range(count), submit, self.people.needed))
        return [found[j] for j in range(count)]

    def _passes(self, buckets: list[Any]) -> _Found:
        counts = self._each(bucket_count, buckets)
        sizes = np.array([c[0] for c in counts], dtype=np.int64)
        before = np.r_[0, np.cumsum(sizes)[:-1]]
        n = int(sizes.sum())
        firsts = [c[1] for c in counts]
        following = [  # each bucket's next value (the first of the next bucket holding one)
            next((f for f in firsts[j + 1 :] if f is not None), None) for j in range(len(counts))
        ]
        first = self._each(first_pass, buckets, before, self.thresholds)
        kept = np.array([f.kept for f in first], dtype=np.int64).reshape(
            len(buckets), self.levels, self.thresholds.size
        )
        k = kept.sum(axis=0)
        kept_before = np.cumsum(kept, axis=0) - kept
        means = Means.of(first, n)
        wanted = wanted_positions(n, k)
        second = self._each(
            second_pass,
            buckets,
            before,
            n,
            following,
            self.thresholds,
            kept_before,
            k,
            means,
            wanted,
        )
        scales = Scales.of(second, means)
        third = self._each(third_pass, buckets, before, means, scales) if n else []
        return _Found(
            [
                self._kept_row(level, t, n, int(k[level, t]), second, wanted)
                for level in range(self.levels)
                for t in range(self.thresholds.size)
            ],
            [self._correlation(level, n, first, scales, third) for level in range(self.levels)],
        )

    def _kept_row(
        self, level: int, t: int, n: int, k: int, second: list[Second], wanted: Wanted
    ) -> dict[str, Any]:
        """Profile._compared's row of this measure for the people at risk ≤ threshold t."""
        values = {}
        for part in second:
            values.update(part.values[level][t])
        full = {}
        for part in second:
            full.update(part.full)
        median = median_of(n, lambda at: full[at])
        below, above, _ = quantile_positions(k)
        quantiles = interpolated(
            np.array([values[i] for i in below.tolist()]),
            np.array([values[i] for i in above.tolist()]),
            k,
        )
        row: dict[str, Any] = {"kind": "person", "measure": self.name}
        if n == 0 or k == 0:  # compare_subset: as compare_sorted, without a side
            return {
                **row,
                "ks": np.nan,
                "wasserstein": np.nan,
                "n_full": n,
                "n_kept": k,
                "median_full": median,
                **quantiles,
            }
        steps = [s for part in second if (s := part.steps[level][t]) is not None]
        total, cross = ExactSum(), []
        for j, step in enumerate(steps):
            total += step.inner
            if j + 1 < len(steps):  # from this bucket's last distinct value to the next's first
                cross.append(step.last_gap * (steps[j + 1].first_value - step.last_value))
        total += exact_sum(np.array(cross, dtype=float))
        return {
            **row,
            "ks": float(max(step.ks for step in steps)),
            "wasserstein": float(total),
            "n_full": int(n),
            "n_kept": k,
            "median_full": median,
            **quantiles,
        }

    def _correlation(
        self,
        level: int,
        n: int,
        first: list[First],
        scales: Scales,
        third: list[Third],
    ) -> dict[str, Any]:
        """risk_correlation's row of this measure at this level."""
        low_x = min((f.x_range[0] for f in first if f.x_range), default=np.nan)
        high_x = max((f.x_range[1] for f in first if f.x_range), default=np.nan)
        low_y = min((f.y_range[level][0] for f in first if f.x_range), default=np.nan)
        high_y = max((f.y_range[level][1] for f in first if f.x_range), default=np.nan)
        constant = n < 2 or high_x - low_x == 0 or high_y - low_y == 0
        pearson = spearman = np.nan
        if not constant:
            sums = [sum((part.sums[level][i] for part in third), ExactSum()) for i in range(6)]
            xy, xx, yy, rxy, rxx, ryy = (float(s) for s in sums)
            pearson, spearman = pearson_of(xy, xx, yy), pearson_of(rxy, rxx, ryy)
        return {"measure": self.name, "pearson": pearson, "spearman": spearman, "people": n}


def _splitters(samples: list[RangeSample], buckets: int) -> np.ndarray:
    """At most `buckets` − 1 distinct values cutting the ranges' samples (each sample
    weighing as many people as its range has values) into buckets of about equal size."""
    if buckets < 2:
        return np.zeros(0)
    values = np.concatenate([s.sample for s in samples] or [np.zeros(0)])
    if values.size == 0:
        return np.zeros(0)
    weights = np.concatenate(
        [np.full(s.sample.size, s.count / max(s.sample.size, 1)) for s in samples]
    )
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    targets = cumulative[-1] * np.arange(1, buckets) / buckets
    at = np.minimum(np.searchsorted(cumulative, targets), values.size - 1)
    return np.unique(values[order][at])
