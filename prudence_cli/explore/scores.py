"""Exploring a catalog: i-RAC planes, RAC curves, dataview scores with their Pareto
front, and policy checks (Pratesi et al., PRUDEnce, sections 3.4 and 4; the thesis on disclosure
analysis of mobile-phone data chapter 5).

Everything here reads an open catalog and returns plain tables; rendering is elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli.catalog import Catalog
from prudence_cli.catalog.query import (
    Levels,
    dataview_entries,
    irac_level_keys,
    irac_rows,
    max_risk_over,
    randomized_rows,
    sampled_level_keys,
)
from prudence_cli.config.mobility import TRAJECTORY_ONLY, TRIPS_NEEDED
from prudence_cli.config.policy import ReleasePolicy
from prudence_cli.errors import PrudenceError
from prudence_cli.measures.rac import summarize_view
from prudence_cli.sanitize.forecast import (
    Suppressed,
    forecast,
)


def plane(
    catalog: Catalog, dims: tuple[str, str], where: Sequence[str] = (), attack: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The i-RAC_U and i-RAC_D planes over two dimensions (rows: dims[0], columns:
    dims[1]), every other dimension and knowledge value fixed by `where` / `attack`."""
    columns = ["dataview", *catalog.dimension_names, "attack", *catalog.knowledge_names]
    for dim in dims:
        if dim not in columns or dim in ("dataview", "attack"):
            raise PrudenceError(
                f"--plane {','.join(dims)}: {dim!r} is not a dimension or knowledge column "
                f"(known: {', '.join(c for c in columns if c not in ('dataview', 'attack'))})"
            )
    rows = irac_rows(catalog, where).to_frame()
    if attack is not None:
        rows = rows[rows["attack"] == attack]
    if rows.empty:
        raise PrudenceError("no catalog row matches --attack / --where")
    free = [c for c in columns if c not in dims and c != "dataview" and rows[c].nunique() > 1]
    if free:
        hints = "; ".join(f"{c} ({', '.join(sorted(map(str, rows[c].unique())))})" for c in free)
        raise PrudenceError(
            f"the plane needs one value of every other column: fix {hints} with "
            "--where KEY=VALUE (or --attack)"
        )
    order = {d: natural_order(rows[d]) for d in dims}
    out = []
    for measure in ("i_rac_u", "i_rac_d"):
        table = rows.pivot_table(index=dims[0], columns=dims[1], values=measure, aggfunc="first")
        out.append(table.reindex(index=order[dims[0]], columns=order[dims[1]]))
    return out[0], out[1]


def curve(
    catalog: Catalog, dataview: str, attack: str | None = None, where: Sequence[str] = ()
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The RAC_U / RAC_D step curve of one catalog row, and that row."""
    catalog.dataview_entry(dataview)
    rows = irac_rows(catalog, [*where, f"dataview={dataview}"]).to_frame()
    if attack is not None:
        rows = rows[rows["attack"] == attack]
    if len(rows) != 1:
        keys = ["attack", *catalog.knowledge_names]
        options = sorted(
            {" ".join(f"{k}={r[k]}" for k in keys if r[k] != "") for _, r in rows.iterrows()}
        )
        raise PrudenceError(
            f"{len(rows)} rows of {dataview} match; pick one with --attack / --where: "
            + ("; ".join(options) if options else "none left")
        )
    row = rows.iloc[0].to_dict()
    return catalog.read_csv(row["curve"]), row


@dataclass(frozen=True)
class Scores:
    """Per dataview, under each person's maximum risk over the counted levels."""

    table: pd.DataFrame  # dataview, dimensions..., users_in_view, mean_risk, i_rac_u,
    # i_rac_d, users_at_or_below, kept (share of data at ≤ R before suppression),
    # users_released, released (share a release at R keeps, after the suppression
    # fixpoint), passes, lower_bound (a counted level was sampled: its risks are lower
    # bounds), pareto (front|dominated)
    max_risk: float
    levels: int
    measure: str = "mean_risk"
    utility: str = "released"


UTILITIES = ("released", "kept", "score")
DISTORTIONS = ("ks", "wasserstein")  # --utility ks:MEASURE: lower is better


def _distortion(utility: str) -> tuple[str, str] | None:
    """(statistic, measure) of a distortion utility `ks:radius_of_gyration`, else None."""
    from prudence_cli.config.mobility import LOCATION_MEASURES, PERSON_MEASURES

    if ":" not in utility:
        return None
    statistic, measure = utility.split(":", 1)
    known = (*PERSON_MEASURES, *LOCATION_MEASURES)
    if statistic not in DISTORTIONS or measure not in known:
        raise PrudenceError(
            f"--utility {utility}: a distortion is STATISTIC:MEASURE with STATISTIC one of "
            f"{', '.join(DISTORTIONS)} and MEASURE one of {', '.join(known)}"
        )
    return statistic, measure


def _release_distortion(
    catalog: Catalog, statistic: str, measure: str
) -> Callable[[Suppressed], dict[str, float]]:
    """The distortion of `measure` between a dataview and its release (NaN when the
    dataview's format does not allow the measure)."""
    from prudence_cli.measures.mobility import release_distortion

    crs = catalog.record.selection.crs
    column = f"{statistic}:{measure}"

    def distortion(result: Suppressed) -> dict[str, float]:
        found = release_distortion(
            result.before, result.outcome.view, crs, catalog.trips, [measure]
        )
        value = found[0][statistic] if found else None
        return {column: np.nan if value is None else value}

    return distortion


def dataview_scores(
    catalog: Catalog,
    levels: Levels,
    max_risk: float,
    where: Sequence[str] = (),
    measure: str = "mean_risk",
    utility: str = "released",
    progress: Callable[[int, int, str], None] | None = None,
) -> Scores:
    """Risk and quality of every dataview (kept by the dimension filters of `where`) at
    the tolerated risk R, ranked by the share of data a release at R keeps, and their
    Pareto front over (`measure`, `utility`): a dataview is dominated when another is at
    least as good on both and better on one (the unicity thesis, chapter 5).

    What a release keeps is computed by the code `sanitize` runs: suppression to the
    fixpoint at R under the counted levels (removing risky people can make others unique).
    `kept` is the share held by people at ≤ R before suppression, an upper bound of it.

    `measure` is the mean risk (per person, max over the counted levels) or a level-wide
    disclosure measure of the catalog (unicity, k_disclosure, em, kl: the max over the
    counted levels); `utility` is the share released (default), the share kept before
    suppression or, with a catalog utility table, the expert `score` of the profile.
    """
    distortion = _distortion(utility)
    if utility not in UTILITIES and distortion is None:
        raise PrudenceError(
            f"--utility {utility}: known: {', '.join(UTILITIES)}, or ks:MEASURE, "
            "wasserstein:MEASURE (a mobility measure's distortion by the release)"
        )
    coverage_kind = catalog.record.coverage
    counted = {level.key for _, level in levels}
    rows = []
    sampled: dict[str, bool] = {}  # a counted level was sampled: risks are lower bounds
    for entry in dataview_entries(catalog, where):
        dims = entry.dimensions
        risks = catalog.risks(entry.id)
        risk = max_risk_over(risks, levels, entry.id)
        view = catalog.view(entry.id, risks)[0]
        summary = summarize_view(view, risk, coverage_kind)
        rows.append(
            {
                "dataview": entry.id,
                **dims,
                "users_in_view": summary.users_in_view,
                "mean_risk": summary.mean_risk,
                "i_rac_u": summary.i_rac_u,
                "i_rac_d": summary.i_rac_d,
                "users_at_or_below": int(np.count_nonzero((risk <= max_risk) & view.in_view)),
                "kept": view.share_of(risk <= max_risk, coverage_kind),
            }
        )
        sampled[entry.id] = bool(sampled_level_keys(catalog, entry.id) & counted)
    table = pd.DataFrame(rows)
    extra = _release_distortion(catalog, *distortion) if distortion is not None else None
    released = forecast(catalog, levels, max_risk, where, progress=progress, measure=extra)
    table = table.merge(released.drop(columns="max_risk_after"), on="dataview", how="left")
    table["lower_bound"] = table["dataview"].map(sampled)
    table = _with_profile_measures(catalog, table, levels)
    if utility == "score":
        scores = utility_scores(catalog)
        keys = [d for d in catalog.dimension_names]
        table = table.merge(scores, on=keys, how="left")
        if table["score"].isna().any():
            missing = table.loc[table["score"].isna(), "dataview"].tolist()
            raise PrudenceError(f"no utility score for {', '.join(missing)} in utility.csv")
    if distortion is not None and table[utility].isna().all():
        raise PrudenceError(
            f"--utility {utility}: nothing to measure: "
            + (
                f"no dataview keeps anyone after suppression to risk ≤ {max_risk:g}"
                if not (table["users_released"] > 0).any()
                else f"{distortion[1]} {TRIPS_NEEDED}"
                if distortion[1] in TRAJECTORY_ONLY
                else f"{distortion[1]} needs places, which these dataviews' format has not"
            )
        )
    for column, name in ((measure, "--measure"), (utility, "--utility")):
        if column not in table or table[column].isna().all():
            raise PrudenceError(f"{name} {column}: not available in this catalog")
    # a dataview whose release keeps nobody is no choice at R, whatever its score
    releasable = (table["users_released"] > 0).to_numpy()
    # a distortion is better lower: the Pareto front takes its opposite as the utility
    useful = -table[utility] if distortion is not None else table[utility]
    dominated = _dominated(table[measure], useful.fillna(-np.inf), releasable)
    table["pareto"] = np.where(
        ~releasable, "nobody released", np.where(dominated, "dominated", "front")
    )
    table["releasable"] = releasable

    if distortion is not None:  # the least distorting first, then the most released
        table = table.sort_values(
            ["releasable", utility, "released"],
            ascending=[False, True, False],
            kind="stable",
            na_position="last",
        )
    else:
        order = {"score": ["score", "released"], "kept": ["kept", "i_rac_d"]}.get(
            utility, ["released", "users_released", "kept"]
        )
        # among dataviews that keep as much, the less risky first: it dominates the others
        table = table.sort_values(
            ["releasable", *order, "mean_risk"],
            ascending=[False] * (1 + len(order)) + [True],
            kind="stable",
        )
    table = table.drop(columns="releasable")
    return Scores(table.reset_index(drop=True), max_risk, len(levels), measure, utility)


DISCLOSURE = ("unicity", "k_disclosure", "em", "kl")


def utility_scores(catalog: Catalog) -> pd.DataFrame:
    path = catalog.path / "utility.csv"
    if not path.is_file():
        raise PrudenceError(
            f"{catalog.path}: no utility scores; declare utility.scores in the config "
            "and assess again"
        )
    return catalog.read_csv("utility.csv", dtype={d: str for d in catalog.dimension_names})


def _with_profile_measures(catalog: Catalog, table: pd.DataFrame, levels: Levels) -> pd.DataFrame:
    """Add the catalog's level-wide disclosure measures per dataview (max over levels)."""
    irac = catalog.irac
    present = [m for m in DISCLOSURE if m in irac]
    if not present:
        return table
    keys = {level.key for _, level in levels}
    rows = irac[irac_level_keys(catalog).isin(keys)]
    worst = rows.groupby("dataview")[present].max()
    return table.merge(worst, left_on="dataview", right_index=True, how="left")


def ordinal_agreement(table: pd.DataFrame, measures: Sequence[str]) -> pd.DataFrame:
    """Whether two measures rank the profiles in the same order (the thesis on disclosure analysis
    of mobile-phone data, Lemma 4.1):
    Kendall's tau over the profiles, and `same_order` when no pair of profiles is ranked
    in opposite directions."""
    rows = []
    for i, a in enumerate(measures):
        for b in measures[i + 1 :]:
            x = table[a].to_numpy(dtype=float)
            y = table[b].to_numpy(dtype=float)
            dx = np.sign(x[:, None] - x[None, :])
            dy = np.sign(y[:, None] - y[None, :])
            upper = np.triu(np.ones_like(dx, dtype=bool), k=1)
            concordant = int(np.sum((dx * dy > 0) & upper))
            discordant = int(np.sum((dx * dy < 0) & upper))
            pairs = concordant + discordant
            rows.append(
                {
                    "measure": a,
                    "versus": b,
                    "kendall_tau": (concordant - discordant) / pairs if pairs else 1.0,
                    "same_order": discordant == 0,
                }
            )
    return pd.DataFrame(rows, columns=["measure", "versus", "kendall_tau", "same_order"])


Policy = ReleasePolicy


def _dominated(risk: pd.Series, kept: pd.Series, among: np.ndarray) -> np.ndarray:
    """Per dataview: whether one of `among` is at least as good on both axes and better
    on one."""
    r = risk.to_numpy()
    k = kept.to_numpy()
    better_or_equal = (r[None, :] <= r[:, None]) & (k[None, :] >= k[:, None])
    strictly = (r[None, :] < r[:, None]) | (k[None, :] > k[:, None])
    return (better_or_equal & strictly & among[None, :]).any(axis=1)


def natural_order(values: pd.Series) -> list[str]:
    """Labels in numeric order when they start with a number (250m < 1000m), else text."""

    def key(text: str) -> tuple[float, str]:
        digits = ""
        for ch in text:
            if ch.isdigit() or ch == ".":
                digits += ch
            else:
                break
        return (float(digits) if digits else float("inf"), text)

    return sorted(values.astype(str).unique(), key=key)


def epsilon_choice(catalog: Catalog, max_success: float, where: Sequence[str] = ()) -> pd.DataFrame:
    """Per randomized setting of a profiles catalog (Olivier and Quertier, randomized sanitization
    mechanisms): the statistician's
    relative error and whether it is admissible, the worst success rate over the counted
    attack levels (filtered by `where`) and which level reached it, and whether the
    setting is `safe` (worst success ≤ max_success). `choice` marks, per dataview,
    mechanism and neighbourhood, the largest admissible and safe ε: the most useful
    setting that the attacks do not break."""
    rows = randomized_rows(catalog, where).to_frame()
    if rows.empty:
        raise PrudenceError("no randomized setting matches --where")
    dims = catalog.dimension_names
    keys = ["dataview", *dims, "mechanism", "neighbourhood", "epsilon"]
    knowledge = [k for k in catalog.knowledge_names if k in rows]
    rows = rows.assign(
        level=rows["attack"]
        + "["
        + rows[knowledge].apply(lambda r: ",".join(f"{k}={v}" for k, v in r.items() if v), axis=1)
        + "]",
        rate=rows["success_rate"].fillna(0.0),
    )
    worst = rows.loc[rows.groupby(keys, sort=False)["rate"].idxmax()]
    table = worst[
        [*keys, "p", "users", "statistic", "relative_error", "admissible", "rate", "level"]
    ].rename(columns={"rate": "worst_success", "level": "worst_attack"})
    table["safe"] = table["worst_success"] <= max_success
    table["choice"] = False
    usable = table[table["admissible"] & table["safe"]]
    group = ["dataview", *dims, "mechanism", "neighbourhood"]
    for _, candidates in usable.groupby(group, sort=False):
        table.loc[candidates["epsilon"].idxmax(), "choice"] = True
    return table.sort_values([*group, "epsilon"]).reset_index(drop=True)
