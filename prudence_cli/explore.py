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
from prudence_cli.catalog import Catalog
from prudence_cli.errors import CatalogError, PrudenceError
from prudence_cli.measures.rac import measure_view
from prudence_cli.query import irac_rows, parse_where

Levels = Sequence[tuple[Attack, KnowledgeLevel]]


def counted_levels(
    catalog: Catalog, attacks: Sequence[str] = (), where: Sequence[str] = ()
) -> list[tuple[Attack, KnowledgeLevel]]:
    """The assessed attack levels kept by `attacks` (names) and `where` (knowledge and
    attack filters); all of them by default."""
    filters = parse_where(catalog, where)
    known = {a["attack"] for a in catalog.manifest["attacks"]}
    for name in attacks:
        if name not in known:
            raise PrudenceError(
                f"--attack {name}: not assessed in this catalog (assessed: "
                f"{', '.join(sorted(known))})"
            )
    levels = []
    for entry in catalog.manifest["attacks"]:
        if attacks and entry["attack"] not in attacks:
            continue
        if "attack" in filters and entry["attack"] not in filters["attack"]:
            continue
        for values in entry["levels"]:
            if any(k in filters and str(v) not in filters[k] for k, v in values.items()):
                continue
            level = KnowledgeLevel(entry["attack"], tuple(values.items()))
            levels.append((ATTACKS[entry["attack"]], level))
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


def dataview_scores(
    catalog: Catalog, levels: Levels, max_risk: float, where: Sequence[str] = ()
) -> Scores:
    """Risk and quality of every dataview (kept by the dimension filters of `where`) at
    the tolerated risk R, ranked by the share of data kept, and their Pareto front over
    (mean risk, data kept): a dataview is dominated when another is at least as good on
    both and better on one (seed 003, chapter 5)."""
    coverage_kind = catalog.manifest["coverage"]
    rows = []
    for entry in _views(catalog, parse_where(catalog, where)):
        dims = entry["dimensions"]
        risk = max_risk_over(catalog.risks(entry["id"]), levels, entry["id"])
        view = catalog.view(entry["id"])[0]
        _, summary = measure_view(view, risk, coverage_kind)
        rows.append(
            {
                "dataview": entry["id"],
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
    table["pareto"] = np.where(_dominated(table["mean_risk"], table["kept"]), "dominated", "front")
    table = table.sort_values(["kept", "i_rac_d"], ascending=False, kind="stable")
    return Scores(table.reset_index(drop=True), max_risk, len(levels))


def max_risk_over(risks: pd.DataFrame, levels: Levels, where: str) -> np.ndarray:
    """Per user: the maximum of the risk columns of `levels`."""
    missing = [level.key for _, level in levels if level.key not in risks]
    if missing:
        raise CatalogError(f"{where}: the per-user risks lack {', '.join(missing)}")
    return np.max([risks[level.key].to_numpy() for _, level in levels], axis=0)


def _views(catalog: Catalog, filters: dict[str, set[str]]) -> list[dict[str, Any]]:
    """The catalog's dataview entries kept by the dimension / dataview filters."""
    kept = []
    for entry in catalog.dataviews:
        if any(k in filters and str(v) not in filters[k] for k, v in entry["dimensions"].items()):
            continue
        if "dataview" in filters and entry["id"] not in filters["dataview"]:
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
    coverage_kind = catalog.manifest["coverage"]
    out = []
    for entry in _views(catalog, parse_where(catalog, where)):
        dims = entry["dimensions"]
        risks = catalog.risks(entry["id"])
        view = catalog.view(entry["id"])[0]
        for attack, level in levels:
            risk = max_risk_over(risks, [(attack, level)], entry["id"])
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
                    "dataview": entry["id"],
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
