"""RAC_U, RAC_D and their i-RAC indexes as exact integrals (Pratesi et al., PRUDEnce, Definitions
3-4).

RAC(r) is a right-continuous step function of r, so its integral over [0, 1] is exact:
∫₀¹ 1[Risk(u) ≤ r] dr = 1 − Risk(u), hence i-RAC_U = 1 − mean risk over U, and
i-RAC_D = Σ c(u)·(1 − Risk(u)) / c(U, D) for an additive coverage c.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from prudence_cli.measures.per_risk import CHUNK, PerRisk, Pieces, of_vector, per_risk, vector_of

if TYPE_CHECKING:  # the curves are tables; the summaries (`prudence check`) need no pandas
    import pandas as pd


@dataclass(frozen=True)
class RacSummary:
    """One row of the i-RAC table."""

    users: int
    users_in_view: int
    i_rac_u: float
    i_rac_d: float
    mean_risk: float
    share_at_risk_1: float


def summarize(risk: np.ndarray, coverage: np.ndarray, total: float | None = None) -> RacSummary:
    """The i-RAC row of one (dataview, attack, level).

    risk: per user of U (0 for users absent from the view); coverage: c({u}, D) per user;
    total: c(U, D) — by default the sum of `coverage`; pass the original dataview's total
    to measure a sanitized view against it (Pratesi et al., PRUDEnce, end of section 3.3).
    """
    return summary_of(risk, of_vector(coverage), total)


def summary_of(risk: np.ndarray, pieces: Pieces, total: float | None = None) -> RacSummary:
    """`summarize` of a coverage in pieces (measures/per_risk.py): of its sums per distinct
    risk where they are exact, else of its vector."""
    table = per_risk(risk, pieces)
    if table is not None:
        return summarize_per_risk(risk, table, total)
    return _summarized(risk, vector_of(pieces, risk.shape[0]), total)


def summarize_per_risk(risk: np.ndarray, table: PerRisk, total: float | None = None) -> RacSummary:
    """`summarize` of coverage summed per distinct risk (measures/per_risk.py): i-RAC_D's
    numerator is the per-risk sums weighted by 1 − risk, each sum exact."""
    denominator = table.total if total is None else float(total)
    return _summary(risk, table.in_view, table.weighted(), denominator)


def _summarized(risk: np.ndarray, coverage: np.ndarray, total: float | None) -> RacSummary:
    """`summarize` of coverage with fractions: a dot product over the people."""
    denominator = float(coverage.sum()) if total is None else float(total)
    in_view = int(np.count_nonzero(coverage > 0))
    return _summary(risk, in_view, float(np.dot(coverage, 1.0 - risk)), denominator)


def _summary(risk: np.ndarray, in_view: int, weighted: float, denominator: float) -> RacSummary:
    n = risk.shape[0]
    mean_risk = float(risk.mean()) if n else 0.0
    return RacSummary(
        users=n,
        users_in_view=in_view,
        i_rac_u=1.0 - mean_risk if n else float("nan"),
        i_rac_d=weighted / denominator if denominator else float("nan"),
        mean_risk=mean_risk,
        share_at_risk_1=float(np.count_nonzero(risk >= 1.0)) / n if n else float("nan"),
    )


def rac_curve(
    risk: np.ndarray, coverage: np.ndarray, total: float | None = None, chunk: int = CHUNK
) -> pd.DataFrame:
    """The RAC_U and RAC_D step functions: one row per distinct risk value, plus 0 and 1.

    Each row gives the curves' value from its risk up to the next row's risk.
    """
    return measured(risk, of_vector(coverage), total, chunk)[0]


def measured(
    risk: np.ndarray, pieces: Pieces, total: float | None = None, chunk: int = CHUNK
) -> tuple[pd.DataFrame, RacSummary]:
    """`rac_curve` and `summarize` of a coverage in pieces (measures/per_risk.py), summed
    once: per distinct risk where its sums are exact, else as a vector."""
    table = per_risk(risk, pieces, chunk)
    if table is not None:
        curve = curve_per_risk(risk.shape[0], table, total)
        return curve, summarize_per_risk(risk, table, total)
    coverage = vector_of(pieces, risk.shape[0])
    return _ordered_curve(risk, coverage, total, chunk), _summarized(risk, coverage, total)


def curve_per_risk(n: int, table: PerRisk, total: float | None = None) -> pd.DataFrame:
    """`rac_curve` of coverage summed per distinct risk (measures/per_risk.py), of `n`
    people: the running sums of its exact sums are those in order of risk, to the bit."""
    denominator = table.total if total is None else float(total)
    ends, cumulative = np.cumsum(table.people), np.cumsum(table.sums)
    return _curve(n, table.distinct, ends, cumulative, denominator)


def _ordered_curve(
    risk: np.ndarray, coverage: np.ndarray, total: float | None, chunk: int
) -> pd.DataFrame:
    """`rac_curve` of coverage with fractions: summed in the people's order of risk."""
    denominator = float(coverage.sum()) if total is None else float(total)
    distinct, ends, cumulative = _in_risk_order(risk, coverage, chunk)
    return _curve(risk.shape[0], distinct, ends, cumulative, denominator)


def _curve(
    n: int, distinct: np.ndarray, ends: np.ndarray, cumulative: np.ndarray, denominator: float
) -> pd.DataFrame:
    """The curves at 0, 1 and each of the `distinct` risks (increasing), from the people
    at or below each (`ends`) and their coverage (`cumulative`)."""
    import pandas as pd

    points = np.unique(np.concatenate([[0.0, 1.0], distinct]))
    runs = np.searchsorted(distinct, points, side="right")  # the runs at or below each
    reached = np.concatenate([[0], ends])[runs]  # (no run: nobody, no data)
    data = np.concatenate([[0.0], cumulative])[runs]
    return pd.DataFrame(
        {
            "risk": points,
            "rac_u": reached / max(n, 1),
            "rac_d": data / denominator if denominator else np.nan,
        }
    )


def integrate(curve: pd.DataFrame, column: str) -> float:
    """∫₀¹ of a step curve from `rac_curve` (used to cross-check the closed forms)."""
    r = curve["risk"].to_numpy()
    v = curve[column].to_numpy()
    return float(np.sum(v[:-1] * np.diff(r)))


def rac_by_thresholds(
    risk: np.ndarray, data_at: Callable[[np.ndarray], np.ndarray], total: float
) -> pd.DataFrame:
    """RAC curves when the data measure is not a sum over people (e.g. segments inside
    clusters, recomputed without the unsafe people): `data_at(points)` is, at each r of
    `points`, the data the people at risk ≤ r produce together; evaluated at every
    distinct risk value."""
    import pandas as pd

    points = np.unique(np.concatenate([[0.0, 1.0], risk]))
    n = max(risk.shape[0], 1)
    rac_u = np.searchsorted(np.sort(risk), points, side="right") / n
    rac_d = data_at(points) / total if total else np.full(points.shape[0], np.nan)
    return pd.DataFrame({"risk": points, "rac_u": rac_u, "rac_d": rac_d})


def summarize_curve(risk: np.ndarray, curve: pd.DataFrame, users_in_view: int) -> RacSummary:
    """The i-RAC row from a curve of `rac_by_thresholds` (i-RAC_D as its exact integral)."""
    n = risk.shape[0]
    mean_risk = float(risk.mean()) if n else 0.0
    return RacSummary(
        users=n,
        users_in_view=users_in_view,
        i_rac_u=1.0 - mean_risk if n else float("nan"),
        i_rac_d=integrate(curve, "rac_d"),
        mean_risk=mean_risk,
        share_at_risk_1=float(np.count_nonzero(risk >= 1.0)) / n if n else float("nan"),
    )


def _in_risk_order(
    risk: np.ndarray, coverage: np.ndarray, chunk: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct risks in increasing order, and for each the people at or below it and
    their coverage summed one person at a time in order of risk (stably) — the floats of
    one cumsum of them all, which sums of fractions need. The people in that order
    `chunk` at a time, the running sum carried from chunk to chunk."""
    order = np.argsort(risk, kind="stable")
    n = risk.shape[0]
    values, ends, sums = [], [], []
    running = 0.0
    for a in range(0, n, chunk):
        at = order[a : a + chunk]
        ordered = risk[at]
        cumulative = np.cumsum(np.r_[running, coverage[at]])[1:]
        last = np.empty(ordered.shape[0], dtype=bool)  # a run of one risk ends here
        np.not_equal(ordered[1:], ordered[:-1], out=last[:-1])
        last[-1] = a + chunk >= n or bool(risk[order[a + chunk]] != ordered[-1])
        values.append(ordered[last])
        ends.append(a + 1 + np.flatnonzero(last))
        sums.append(cumulative[last])
        running = float(cumulative[-1])
    del order
    return (
        np.concatenate([np.zeros(0), *values]),
        np.concatenate([np.zeros(0, dtype=np.int64), *ends]),
        np.concatenate([np.zeros(0), *sums]),
    )


def measure_view(
    view: Any, risk: np.ndarray, kind: str, total: float | None = None
) -> tuple[pd.DataFrame, RacSummary]:
    """RAC curve and i-RAC row of a dataview for per-user risks; `total` is c(U, D) of
    the original dataview when measuring a sanitized one (Pratesi et al., PRUDEnce, end of 3.3).
    An additive view's coverage is read piece by piece and summed per distinct risk where
    its sums are exact (measures/per_risk.py). A view whose data is not a sum over people
    tells it at every threshold at once (`data_at`: a clusters view)."""
    if view.additive:
        return measured(risk, view.coverage_pieces(kind), total)
    denominator = view.data_of(np.ones(view.n_users, dtype=bool), kind) if total is None else total
    curve = rac_by_thresholds(risk, lambda points: view.data_at(risk, points, kind), denominator)
    return curve, summarize_curve(risk, curve, view.users_in_view)


def summarize_view(
    view: Any, risk: np.ndarray, kind: str, total: float | None = None
) -> RacSummary:
    """The i-RAC row of `measure_view` alone: on an additive view, without making the
    curve (a table per level, which `check` and `catalog best` do not show)."""
    if view.additive:
        return summary_of(risk, view.coverage_pieces(kind), total)
    return measure_view(view, risk, kind, total)[1]
