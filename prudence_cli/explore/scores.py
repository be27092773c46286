"""Exploring a catalog: i-RAC planes, RAC curves, dataview scores with their Pareto
front, and policy checks (seed 000 sections 3.4 and 4; seed 003 chapter 5).

Everything here reads an open catalog and returns plain tables; rendering is elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli.attacks.base import Attack, KnowledgeLevel
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.catalog import Catalog, DataviewEntry
from prudence_cli.errors import CatalogError, PrudenceError
from prudence_cli.explore.query import irac_rows, parse_where, randomized_rows
from prudence_cli.measures.rac import measure_view

Levels = Sequence[tuple[Attack, KnowledgeLevel]]


def counted_levels(
    catalog: Catalog, attacks: Sequence[str] = (), where: Sequence[str] = ()
) -> list[tuple[Attack, KnowledgeLevel]]:
    """The assessed attack levels kept by `attacks` (names) and `where` (knowledge and
    attack filters); all of them by default."""
    filters = parse_where(catalog, where)
    known = {a.attack for a in catalog.record.attacks}
    for name in attacks:
        if name not in known:
            raise PrudenceError(
                f"--attack {name}: not assessed in this catalog (assessed: "
                f"{', '.join(sorted(known))})"
            )
    levels = []
    for entry in catalog.record.attacks:
        if attacks and entry.attack not in attacks:
            continue
        if "attack" in filters and entry.attack not in filters["attack"]:
            continue
        for values in entry.levels:
            if any(k in filters and str(v) not in filters[k] for k, v in values.values):
                continue
            level = KnowledgeLevel(entry.attack, values.values)
            levels.append((ATTACKS[entry.attack], level))
    if not levels:
        raise PrudenceError("no assessed attack level is left by --attack / --where")
    return levels


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
    rows = irac_rows(catalog, where)
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
    rows = irac_rows(catalog, [*where, f"dataview={dataview}"])
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
    return pd.read_csv(catalog.path / row["curve"]), row


@dataclass(frozen=True)
class Scores:
    """Per dataview, under each person's maximum risk over the counted levels."""

    table: pd.DataFrame  # dataview, dimensions..., users_in_view, mean_risk, i_rac_u,
    # i_rac_d, users_at_or_below, kept (share of data at ≤ R), pareto (front|dominated)
    max_risk: float
    levels: int
    measure: str = "mean_risk"
    utility: str = "kept"


def dataview_scores(
    catalog: Catalog,
    levels: Levels,
    max_risk: float,
    where: Sequence[str] = (),
    measure: str = "mean_risk",
    utility: str = "kept",
) -> Scores:
    """Risk and quality of every dataview (kept by the dimension filters of `where`) at
    the tolerated risk R, ranked by the share of data kept, and their Pareto front over
    (`measure`, `utility`): a dataview is dominated when another is at least as good on
    both and better on one (seed 003, chapter 5).

    `measure` is the mean risk (per person, max over the counted levels) or a level-wide
    disclosure measure of the catalog (unicity, k_disclosure, em, kl: the max over the
    counted levels); `utility` is the share of data kept at R or, with a catalog
    utility table, the expert `score` of the profile.
    """
    coverage_kind = catalog.record.coverage
    rows = []
    for entry in _views(catalog, parse_where(catalog, where)):
        dims = entry.dimensions
        risk = max_risk_over(catalog.risks(entry.id), levels, entry.id)
        view = catalog.view(entry.id)[0]
        _, summary = measure_view(view, risk, coverage_kind)
        rows.append(
            {
                "dataview": entry.id,
                **dims,
                "users_in_view": summary.users_in_view,
                "mean_risk": summary.mean_risk,
                "i_rac_u": summary.i_rac_u,
                "i_rac_d": summary.i_rac_d,
                "users_at_or_below": int(
                    np.count_nonzero((risk <= max_risk) & (np.diff(view.offsets) > 0))
                ),
                "kept": _kept(view, risk, max_risk, coverage_kind),
            }
        )
    table = pd.DataFrame(rows)
    table = _with_profile_measures(catalog, table, levels)
    if utility == "score":
        scores = utility_scores(catalog)
        keys = [d for d in catalog.dimension_names]
        table = table.merge(scores, on=keys, how="left")
        if table["score"].isna().any():
            missing = table.loc[table["score"].isna(), "dataview"].tolist()
            raise PrudenceError(f"no utility score for {', '.join(missing)} in utility.csv")
    for column, name in (
        (measure, "--measure"),
        ("score" if utility == "score" else "kept", "--utility"),
    ):
        if column not in table or table[column].isna().all():
            raise PrudenceError(f"{name} {column}: not available in this catalog")
    value = table["score"] if utility == "score" else table["kept"]
    table["pareto"] = np.where(_dominated(table[measure], value), "dominated", "front")

    order = ["score", "kept"] if utility == "score" else ["kept", "i_rac_d"]
    table = table.sort_values(order, ascending=False, kind="stable")
    return Scores(table.reset_index(drop=True), max_risk, len(levels), measure, utility)


DISCLOSURE = ("unicity", "k_disclosure", "em", "kl")


def utility_scores(catalog: Catalog) -> pd.DataFrame:
    path = catalog.path / "utility.csv"
    if not path.is_file():
        raise PrudenceError(
            f"{catalog.path}: no utility scores; declare utility.scores in the config "
            "and assess again"
        )
    return pd.read_csv(path, dtype={d: str for d in catalog.dimension_names})


def _with_profile_measures(catalog: Catalog, table: pd.DataFrame, levels: Levels) -> pd.DataFrame:
    """Add the catalog's level-wide disclosure measures per dataview (max over levels)."""
    irac = catalog.irac
    present = [m for m in DISCLOSURE if m in irac]
    if not present:
        return table
    keys = {level.key for _, level in levels}
    names = catalog.knowledge_names
    level_key = (
        irac["attack"]
        + "["
        + irac[names].apply(
            lambda row: ",".join(f"{k}={v}" for k, v in row.items() if v != ""), axis=1
        )
        + "]"
    )
    rows = irac[level_key.isin(keys)]
    worst = rows.groupby("dataview")[present].max()
    return table.merge(worst, left_on="dataview", right_index=True, how="left")


def ordinal_agreement(table: pd.DataFrame, measures: Sequence[str]) -> pd.DataFrame:
    """Whether two measures rank the profiles in the same order (seed 003, Lemma 4.1):
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


def max_risk_over(risks: pd.DataFrame, levels: Levels, where: str) -> np.ndarray:
    """Per user: the maximum of the risk columns of `levels`."""
    missing = [level.key for _, level in levels if level.key not in risks]
    if missing:
        raise CatalogError(f"{where}: the per-user risks lack {', '.join(missing)}")
    return np.max([risks[level.key].to_numpy() for _, level in levels], axis=0)


def _views(catalog: Catalog, filters: dict[str, set[str]]) -> list[DataviewEntry]:
    """The catalog's dataview entries kept by the dimension / dataview filters."""
    kept = []
    for entry in catalog.dataviews:
        if any(k in filters and str(v) not in filters[k] for k, v in entry.dimensions.items()):
            continue
        if "dataview" in filters and entry.id not in filters["dataview"]:
            continue
        kept.append(entry)
    if not kept:
        raise PrudenceError("no dataview of the catalog matches --where")
    return kept


@dataclass(frozen=True)
class Policy:
    max_risk: float
    min_irac_u: float | None = None
    min_coverage: float | None = None


def check(
    catalog: Catalog, policy: Policy, levels: Levels, where: Sequence[str] = ()
) -> pd.DataFrame:
    """One row per (dataview, attack level) with the measures the policy looks at and
    the reasons it fails, if any (an empty `failures` column means it holds).

    Without `min_coverage`, every person must be at or below `max_risk`. With it, people
    above may exist (they would be suppressed at release) but those at or below must
    hold at least that share of the data. `min_irac_u` adds a floor on i-RAC_U.
    """
    coverage_kind = catalog.record.coverage
    out = []
    for entry in _views(catalog, parse_where(catalog, where)):
        dims = entry.dimensions
        risks = catalog.risks(entry.id)
        view = catalog.view(entry.id)[0]
        for attack, level in levels:
            risk = max_risk_over(risks, [(attack, level)], entry.id)
            _, summary = measure_view(view, risk, coverage_kind)
            kept = _kept(view, risk, policy.max_risk, coverage_kind)
            failures = []
            if policy.min_coverage is None and risk.max(initial=0) > policy.max_risk:
                above = int(np.count_nonzero(risk > policy.max_risk))
                failures.append(
                    f"{above} people above risk {policy.max_risk:g} (highest {risk.max():.3g})"
                )
            if policy.min_coverage is not None and kept < policy.min_coverage:
                failures.append(
                    f"people at risk ≤ {policy.max_risk:g} hold {kept:.1%} of the "
                    f"{coverage_kind}, below {policy.min_coverage:.1%}"
                )
            if policy.min_irac_u is not None and summary.i_rac_u < policy.min_irac_u:
                failures.append(f"i-RAC_U {summary.i_rac_u:.3f} below {policy.min_irac_u:g}")
            out.append(
                {
                    "dataview": entry.id,
                    **dims,
                    "attack": attack.name,
                    **{k: str(v) for k, v in level.values},
                    "max_risk": float(risk.max(initial=0)),
                    "i_rac_u": summary.i_rac_u,
                    "kept": kept,
                    "failures": "; ".join(failures),
                }
            )
    if not out:
        raise PrudenceError("no catalog row matches --attack / --where")
    return pd.DataFrame(out)


def _kept(view: Any, risk: np.ndarray, max_risk: float, kind: str) -> float:
    """Share of the view's data held by the people at risk ≤ max_risk."""
    total = view.data_of(np.ones(view.n_users, dtype=bool), kind)
    return float(view.data_of(risk <= max_risk, kind) / total) if total else 0.0


def _dominated(risk: pd.Series, kept: pd.Series) -> np.ndarray:
    r = risk.to_numpy()
    k = kept.to_numpy()
    better_or_equal = (r[None, :] <= r[:, None]) & (k[None, :] >= k[:, None])
    strictly = (r[None, :] < r[:, None]) | (k[None, :] > k[:, None])
    return (better_or_equal & strictly).any(axis=1)


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
    """Per randomized setting of a profiles catalog (seed 004): the statistician's
    relative error and whether it is admissible, the worst success rate over the counted
    attack levels (filtered by `where`) and which level reached it, and whether the
    setting is `safe` (worst success ≤ max_success). `choice` marks, per dataview,
    mechanism and neighbourhood, the largest admissible and safe ε: the most useful
    setting that the attacks do not break."""
    rows = randomized_rows(catalog, where)
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
