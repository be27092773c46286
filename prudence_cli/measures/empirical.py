"""The empirical risk of a released dataset of trajectories (Basu et al., A risk model for privacy
in trajectory data).

Given original trajectories D and a release D' of them (k-anonymised, generalised, ...),
an attacker knows a sub-trajectory t' of length h of some original trajectory. With
N_D(t') and N_D'(t') the number of trajectories holding t' as a subsequence in each,
Basu et al.'s case analysis (its section on the k-anonymity framework) gives

    Pr(re_id | t') = 0                            if N_D'(t') = 0
                   = 1 / max(N_D(t'), N_D'(t'))   otherwise,

i.e. 1/N_D'(t') for a k-harmful t' (N_D < k ≤ N_D') and 1/F when 0 < N_D' < F = N_D.
For each h = 1..max_h the distribution of Pr(re_id | t') over the attacks is reported,
the attacks being every distinct sub-trajectory of length h of D (the prefix-tree
enumeration of Basu et al.) or, with `samples`, that many sub-trajectories drawn at random
(a random trajectory of length ≥ h, then h random positions in order; seeded).

Cost (Basu et al., A risk model for privacy in trajectory data, "Risk versus cost"): Pr(t') =
Pr(re_id | t') / C(t') with C the cost of
knowing |t'| observations: `log` 1 + ln|t'|, `linear` α|t'|, or `exponential` e^(β|t'|).
The seed prints the third as e^(−β|t'|), which decreases with |t'| although the text calls
it super-linear; Prudence uses e^(+β|t'|).

Utility (equations 1-4): OD pairs are the consecutive (origin, destination) hops of the
trajectories; coverage = |OD(D) ∩ OD(D')| / |OD(D)|, precision = |OD(D) ∩ OD(D')| /
|OD(D')|; and, for a risk threshold p, the share of OD(D') that remains when every
released trajectory containing an attack with Pr(re_id | t') > p is taken out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from prudence_cli.arrays import distinct
from prudence_cli.config.evaluate import EvaluationSettings
from prudence_cli.engine import (
    Elements,
    containment_counts,
    distinct_subsequences,
    max_over_containing,
)
from prudence_cli.errors import BudgetError

STATEMENT_LEVELS = (1e-5, 1e-3, 1e-2, 0.1)  # probabilities the summary counts successes at


@dataclass
class Evaluation:
    attacks: pd.DataFrame  # h, knowledge (codes), in_original, in_released, probability,
    # normalized (by the cost)
    cdf: pd.DataFrame  # h, probability, share (of the attacks of that h at or below)
    cost_cdf: pd.DataFrame  # normalized, share (over every attack of every h)
    coverage_curve: pd.DataFrame  # threshold, coverage
    utility: dict[str, float]
    statements: list[str] = field(default_factory=list)
    sampled: bool = False


def cost_of(h: int, settings: EvaluationSettings) -> float:
    if settings.cost == "log":
        return 1.0 + math.log(h)
    if settings.cost == "linear":
        return settings.alpha * h
    return math.exp(settings.beta * h)


def probability(in_original: np.ndarray, in_released: np.ndarray) -> np.ndarray:
    """Pr(re_id | t') from the supports (see the module docstring)."""
    out = np.zeros(in_original.shape[0])
    found = in_released > 0
    out[found] = 1.0 / np.maximum(in_original[found], in_released[found])
    return out


def evaluate(
    original: Elements,
    released: Elements,
    settings: EvaluationSettings,
    progress: Callable[[int, int, str], None] | None = None,
) -> Evaluation:
    """The seed's attack simulation for h = 1..max_h (and the utility of the release);
    `progress` hears each h before its attacks are simulated."""
    longest = int(original.lengths.max(initial=0))
    rng = np.random.default_rng(settings.seed)
    parts = []
    risky_max = np.zeros(released.n_users)
    top = min(settings.max_h, longest)
    for h in range(1, top + 1):
        if progress is not None:
            progress(h - 1, top, f"attacks with h = {h}")
        if settings.samples is None:
            total = _sum_binomials(original.lengths, h)
            if total > settings.max_instances:
                raise BudgetError(
                    f"h = {h}: every sub-trajectory of the original is about {total:,} "
                    f"instances, more than the budget of {settings.max_instances:,}: set "
                    "samples (e.g. --samples 10000) to draw attacks at random, or a smaller "
                    "max_h"
                )
            keys, in_original = distinct_subsequences(original, h)
        else:
            keys = _draw(original, h, settings.samples, rng)
            in_original = containment_counts(original, keys)
        in_released = containment_counts(released, keys)
        prob = probability(in_original, in_released)
        risky_max = np.maximum(risky_max, max_over_containing(released, keys, prob))
        parts.append(
            pd.DataFrame(
                {
                    "h": h,
                    "knowledge": [" ".join(map(str, row)) for row in keys.tolist()],
                    "in_original": in_original,
                    "in_released": in_released,
                    "probability": prob,
                    "normalized": prob / cost_of(h, settings),
                }
            )
        )
    attacks = pd.concat(parts, ignore_index=True) if parts else _no_attacks()
    utility, curve = _utility(original, released, risky_max)
    return Evaluation(
        attacks=attacks,
        cdf=_cdf(attacks),
        cost_cdf=_cost_cdf(attacks),
        coverage_curve=curve,
        utility=utility,
        statements=statements(attacks, settings.cost),
        sampled=settings.samples is not None,
    )


def _utility(
    original: Elements, released: Elements, risky_max: np.ndarray
) -> tuple[dict[str, float], pd.DataFrame]:
    n = max(int(original.elements.max(initial=-1)), int(released.elements.max(initial=-1))) + 2
    a = _od_codes(original, n)[0]
    b_codes, b_owner = _od_codes(released, n)
    od_a = distinct(a)
    od_b = distinct(b_codes)
    common = np.intersect1d(od_a, od_b).shape[0]
    utility = {
        "od_original": float(od_a.shape[0]),
        "od_released": float(od_b.shape[0]),
        "od_common": float(common),
        "coverage": common / od_a.shape[0] if od_a.shape[0] else float("nan"),
        "precision": common / od_b.shape[0] if od_b.shape[0] else float("nan"),
    }
    # per released OD pair: the highest attack probability of a trajectory holding it
    pair_max = pd.Series(risky_max[b_owner]).groupby(b_codes).max()
    values = np.sort(pair_max.to_numpy())
    thresholds = np.unique(np.concatenate([[0.0, 1.0], values]))
    kept = np.searchsorted(values, thresholds, side="right")
    total = max(od_b.shape[0], 1)
    return utility, pd.DataFrame({"threshold": thresholds, "coverage": kept / total})


def _od_codes(lists: Elements, n: int) -> tuple[np.ndarray, np.ndarray]:
    owners = np.repeat(np.arange(lists.n_users), lists.lengths)
    same = owners[1:] == owners[:-1]
    codes = lists.elements[:-1].astype(np.int64) * n + lists.elements[1:]
    return codes[same], owners[1:][same]


def _draw(original: Elements, h: int, samples: int, rng: np.random.Generator) -> np.ndarray:
    eligible = np.flatnonzero(original.lengths >= h)
    chosen = rng.choice(eligible, size=samples)
    keys = np.empty((samples, h), dtype=np.int32)
    for i, t in enumerate(chosen.tolist()):
        a = original.offsets[t]
        positions = np.sort(rng.choice(int(original.lengths[t]), size=h, replace=False))
        keys[i] = original.elements[a + positions]
    return keys


def _cdf(attacks: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for h, group in attacks.groupby("h"):
        values = np.sort(group["probability"].to_numpy())
        points = np.unique(values)
        share = np.searchsorted(values, points, side="right") / values.shape[0]
        rows.append(pd.DataFrame({"h": h, "probability": points, "share": share}))
    return (
        pd.concat(rows, ignore_index=True)
        if rows
        else pd.DataFrame(columns=["h", "probability", "share"])
    )


def _cost_cdf(attacks: pd.DataFrame) -> pd.DataFrame:
    values = np.sort(attacks["normalized"].to_numpy())
    points = np.unique(values)
    share = np.searchsorted(values, points, side="right") / max(values.shape[0], 1)
    return pd.DataFrame({"normalized": points, "share": share})


def statements(attacks: pd.DataFrame, cost: str) -> list[str]:
    """The summary in words: per h, the share of attacks that fail, that succeed, and that
    succeed with a probability at most each of STATEMENT_LEVELS (successes only); then
    the 90th percentile of the cost-normalised probability over every attack."""
    out = []
    for h, group in attacks.groupby("h"):
        prob = group["probability"].to_numpy(dtype=float)
        success = prob > 0
        parts = [
            f"{np.mean(~success):.1%} fail (probability 0)",
            f"{np.mean(success):.1%} succeed",
            *(
                f"{np.mean(success & (prob <= p)):.1%} succeed with probability ≤ {p:g}"
                for p in STATEMENT_LEVELS
            ),
        ]
        out.append(
            f"h = {h}, {prob.shape[0]:,} attacks: "
            + "; ".join(parts)
            + f"; the most successful has probability {prob.max(initial=0):.3g}."
        )
    if len(attacks):
        q90 = float(np.quantile(attacks["normalized"], 0.9))
        out.append(
            f"With the {cost} cost model, 90% of all attacks have a "
            f"cost-normalised probability ≤ {q90:.3g}."
        )
    return out


def _sum_binomials(lengths: np.ndarray, h: int) -> int:
    values, counts = np.unique(lengths, return_counts=True)
    return sum(math.comb(int(v), h) * int(c) for v, c in zip(values, counts, strict=True))


def _no_attacks() -> pd.DataFrame:
    return pd.DataFrame(
        columns=["h", "knowledge", "in_original", "in_released", "probability", "normalized"]
    )
