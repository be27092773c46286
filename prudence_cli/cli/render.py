"""Rendering of results for the terminal (rich); for pipelines (CSV, JSON) see `pipes`.

pandas is imported by the few functions that need it: the i-RAC table of `catalog show`
is rendered from plain catalog rows, without it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from prudence_cli.catalog import Catalog
from prudence_cli.catalog.rows import Rows
from prudence_cli.cli.pipes import typed_values
from prudence_cli.config.mobility import KEPT_KS
from prudence_cli.units import as_given
from prudence_cli.units import percent as as_percent

if TYPE_CHECKING:
    import pandas as pd

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
MEASURES = {
    "i_rac_u": "i-RAC\nU",
    "i_rac_d": "i-RAC\nD",
    "mean_risk": "mean\nrisk",
    "share_at_risk_1": "at\nrisk 1",
}


DISCLOSURE_LABELS = {
    "unicity": "unicity",
    "k_disclosure": "k-disc-\nlosure",
    "em": "EM",
    "kl": "KL",
}


def house_table(**options: Any) -> Table:
    """A compact, left-aligned table: the house style of every table printed here."""
    return Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        title_justify="left",
        caption_justify="left",
        **options,
    )


def irac_table(catalog: Catalog, rows: Rows) -> Table:
    """The i-RAC table: one line per (dataview, attack, level); the best i-RAC_D of each
    attack level in bold."""
    dims = catalog.dimension_names
    knowledge = catalog.knowledge_names
    manifest = catalog.record
    attacks = sorted(set(rows.column("attack")))
    # one attack: named in the title rather than repeated on every line
    labels = ["dataview", *dims, *(["attack"] if len(attacks) > 1 else []), *knowledge]
    only = f", attack = {attacks[0]}" if len(attacks) == 1 else ""
    table = house_table(
        title=f"{manifest.name}: {manifest.selection.users:,} users, "
        f"coverage = {manifest.coverage}{only}",
        caption="i-RAC U/D: area under RAC_U/RAC_D (1 = nobody at risk, all data kept).\n"
        "Bold: the best i-RAC_D for that attack and knowledge level.",
    )
    for column in labels:
        table.add_column(column, justify="left", no_wrap=True)
    table.add_column("users\nin view", justify="right", no_wrap=True)
    for label in MEASURES.values():
        table.add_column(label, justify="right", no_wrap=True)
    # the level-wide disclosure measures, where the catalog has them (unicity attacks)
    extra = [m for m in DISCLOSURE_LABELS if m in rows and not all(map(_nan, rows.column(m)))]
    for m in extra:
        table.add_column(DISCLOSURE_LABELS[m], justify="right", no_wrap=True)
    bounds = "sampled" in rows and any(rows.column("sampled"))
    if bounds:
        table.add_column("risks", no_wrap=True)
        table.caption = f"{table.caption}\n{LOWER_BOUND_NOTE}"
    level_columns = ["attack", *knowledge]
    best: dict[tuple[Any, ...], float] = {}  # per attack level, its highest i-RAC_D
    for row in rows.records:
        level, value = tuple(row[c] for c in level_columns), row["i_rac_d"]
        if not _nan(value) and value > best.get(level, -math.inf):
            best[level] = value
    for row in rows.records:
        level = tuple(row[c] for c in level_columns)
        style = "bold" if row["i_rac_d"] == best.get(level) else None
        table.add_row(
            *[str(row[c]) for c in labels],
            f"{int(row['users_in_view']):,}",
            *[_number(row[m], percent=m == "share_at_risk_1") for m in MEASURES],
            *[_significant(row[m]) for m in extra],
            *([_bound(row["sampled"])] if bounds else []),
            style=style,
        )
    return table


LOWER_BOUND_NOTE = (
    "risks = lower bound: assessed on sampled knowledge instances; the exact attacker "
    "singles out at least as many people, so the true risks can only be higher."
)


def _bound(sampled: bool) -> str:
    return "lower bound" if sampled else "exact"


def print_table(table: Table) -> None:
    """Print `table` whole: narrower than its content, rich would cut numbers down to
    `0.…`; a table wider than the terminal is printed at its own width instead (the
    terminal wraps its lines), so no value is ever shortened. The tables do not expand,
    so on a console wide enough for any of them each is laid out at its own width, as
    on the terminal when it fits there (and without measuring it once more first)."""
    Console(width=max(Console().width, _WIDEST)).print(table)


_WIDEST = 4096  # characters: wider than any table printed here


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _number(value: float, percent: bool = False) -> str:
    if _nan(value):
        return "—"
    return as_percent(value) if percent else f"{value:.3f}"


def _significant(value: float) -> str:
    """Three significant digits: disclosure measures can be small."""
    if _nan(value):
        return "—"
    return f"{value:.3g}"


def releases_table(frame: pd.DataFrame) -> Table:
    import pandas as pd

    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        title="Release ledger",
        title_justify="left",
    )
    for column in ("id", "recipient", "created (UTC)", "dataview", "R / ε", "method", "people"):
        table.add_column(column, no_wrap=True, min_width=len(column))
    for _, row in frame.iterrows():
        table.add_row(
            str(row["id"]),
            str(row["recipient"] or "—"),
            str(row["created"])[:16].replace("T", " "),
            str(row["dataview"]),
            f"{row['threshold']:g}" if pd.notna(row["threshold"]) else f"ε={row['epsilon']:g}",
            str(row["method"]),
            f"{int(row['users']):,}",
        )
    return table


def _heat(value: float) -> str:
    """Background colour of a plane cell: red (0) through yellow to green (1)."""
    if isinstance(value, float) and math.isnan(value):
        return ""
    v = min(max(float(value), 0.0), 1.0)
    red = int(220 if v < 0.5 else 220 - (v - 0.5) * 2 * 170)
    green = int(60 + v * 2 * 140 if v < 0.5 else 200)
    return f"black on rgb({red},{green},70)"


def plane_tables(
    u_plane: pd.DataFrame, d_plane: pd.DataFrame, dims: tuple[str, str], subtitle: str
) -> list[Table]:
    """The two i-RAC planes as colour-graded two-way tables."""
    tables = []
    for name, frame in (("i-RAC_U", u_plane), ("i-RAC_D", d_plane)):
        table = Table(
            box=box.SIMPLE_HEAD,
            title=f"{name}: {dims[0]} × {dims[1]}{subtitle}",
            title_justify="left",
        )
        table.add_column(f"{dims[0]} \\ {dims[1]}", no_wrap=True)
        for column in frame.columns:
            table.add_column(str(column), justify="center", no_wrap=True)
        for index, row in frame.iterrows():
            table.add_row(str(index), *[Text(_number(v), style=_heat(v)) for v in row.tolist()])
        tables.append(table)
    return tables


def plane_long(u_plane: pd.DataFrame, d_plane: pd.DataFrame, dims: tuple[str, str]) -> pd.DataFrame:
    import pandas as pd

    u = u_plane.stack().rename("i_rac_u")
    d = d_plane.stack().rename("i_rac_d")
    frame = pd.concat([u, d], axis=1).reset_index()
    frame.columns = [dims[0], dims[1], "i_rac_u", "i_rac_d"]
    return frame


def curve_chart(curve: pd.DataFrame, title: str, width: int = 72, height: int = 18) -> str:
    """RAC_U and RAC_D as a text chart (step functions, risk on x)."""
    import plotext as plt

    risk = curve["risk"].to_numpy()
    plt.clear_figure()
    plt.plotsize(width, height)
    plt.theme("clear")
    for column, marker in (("rac_u", "braille"), ("rac_d", "dot")):
        xs, ys = _steps(risk, curve[column].to_numpy())
        plt.plot(xs, ys, label=column.upper(), marker=marker)
    plt.xlim(0, 1)
    plt.ylim(0, 1)
    plt.xlabel("risk r (share of people / of data at risk ≤ r)")
    plt.title(title)
    return _ANSI.sub("", plt.build())


def best_table(scores: Any, dims: list[str], min_coverage: float | None) -> Table:
    frame = scores.table
    axis = {
        "mean_risk": "mean risk",
        "unicity": "unicity",
        "k_disclosure": "k-disclosure",
        "em": "EM",
        "kl": "KL",
    }[scores.measure]
    value = {
        "score": "utility score",
        "kept": "data held at ≤ R before suppression",
        "released": "data a release keeps",
    }.get(scores.utility, f"the least {scores.utility} (dataview → release)")
    levels = f"{scores.levels} attack level" + ("" if scores.levels == 1 else "s")
    distortion = (
        " ks: the Kolmogorov–Smirnov statistic between the measure on the dataview and on "
        f"the release (0 the same distribution, 1 disjoint; at most {KEPT_KS:g}: kept); "
        "wasserstein: "
        "the area between the two distributions, in the measure's unit."
        if ":" in scores.utility
        else ""
    )
    table = house_table(
        title=f"Dataviews by {value} at risk ≤ {scores.max_risk:g} (max over {levels})",
        caption="released: what `prudence sanitize` keeps after suppressing to the fixpoint "
        "(removing risky people can make others unique); before: the share held by people "
        f"at ≤ R before suppression, an upper bound. Pareto front of ({axis}, {value}): no "
        "other dataview is at least as good on both and better on one."
        + distortion
        + (f" Dim: a release keeps less than {as_given(min_coverage)}." if min_coverage else ""),
    )
    extra = [m for m in ("unicity", "k_disclosure", "em", "kl", "score") if m in frame]
    extra += [scores.utility] if ":" in scores.utility else []
    for column in ["dataview", *dims]:
        table.add_column(column, no_wrap=True)
    heads = (
        "released",
        "people\nreleased",
        "before",
        "people\n≤ R",
        "mean\nrisk",
        "i-RAC\nU",
        "i-RAC\nD",
    )
    bounds = "lower_bound" in frame and bool(frame["lower_bound"].any())
    for column in (*heads, *extra, *(["risks"] if bounds else []), "Pareto"):
        table.add_column(column.replace(":", "\n"), justify="right", no_wrap=True)
    if bounds:
        table.caption = f"{table.caption}\n{LOWER_BOUND_NOTE}"
    for _, row in frame.iterrows():
        low = min_coverage is not None and row["released"] < min_coverage
        style = "dim" if low else ("bold" if row["pareto"] == "front" else None)
        table.add_row(
            *[str(row[c]) for c in ["dataview", *dims]],
            as_percent(row["released"]),
            f"{int(row['users_released']):,}",
            as_percent(row["kept"]),
            f"{int(row['users_at_or_below']):,}",
            f"{row['mean_risk']:.3f}",
            f"{row['i_rac_u']:.3f}",
            f"{row['i_rac_d']:.3f}",
            *[_number(row[m]) for m in extra],
            *([_bound(row["lower_bound"])] if bounds else []),
            str(row["pareto"]),
            style=style,
        )
    return table


def ordinal_table(frame: pd.DataFrame) -> Table:
    table = Table(
        box=box.SIMPLE_HEAD,
        title="Ordinal equivalence of the disclosure measures",
        title_justify="left",
        caption_justify="left",
        caption="same order: no two dataviews are ranked in opposite directions "
        "(the thesis on disclosure analysis of mobile-phone data, Lemma 4.1); Kendall's tau over "
        "every pair of dataviews.",
    )
    for column in ("measure", "versus", "Kendall's tau", "same order"):
        table.add_column(column, no_wrap=True)
    for _, row in frame.iterrows():
        table.add_row(
            str(row["measure"]),
            str(row["versus"]),
            f"{row['kendall_tau']:.3f}",
            "yes" if row["same_order"] else "no",
        )
    return table


def _steps(x: Any, y: Any) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for i in range(len(x)):
        end = float(x[i + 1]) if i + 1 < len(x) else 1.0
        xs += [float(x[i]), end]
        ys += [float(y[i]), float(y[i])]
    return xs, ys


def randomized_table(catalog: Catalog, rows: Rows) -> Table:
    """A profiles catalog: utility and attack success per randomized setting and level."""
    manifest = catalog.record
    options = manifest.randomize
    knowledge = [k for k in catalog.knowledge_names if k in rows and any(rows.column(k))]
    table = house_table(
        title=f"{manifest.name}: randomized profiles, attacks on a sample of "
        f"{options.users if options else '?'} users (seed {manifest.seed})",
        caption="error: the statistic's mean error over locations ÷ its mean (f1 visitors, "
        f"f2 mean visits); admissible when ≤ {options.max_error if options else '?'}.\n"
        "success: share of the sample the attack succeeds on (Olivier and Quertier, randomized "
        "sanitization mechanisms, section V).",
    )
    labels = ["dataview", *catalog.dimension_names, "mechanism", "ε", "χ", "attack", *knowledge]
    for column in labels:
        table.add_column(column, no_wrap=True)
    for column in ("error", "admissible", "success"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in rows.records:
        table.add_row(
            *[str(row[c]) for c in ["dataview", *catalog.dimension_names, "mechanism"]],
            f"{row['epsilon']:g}",
            str(row["neighbourhood"]),
            str(row["attack"]),
            *[str(row[k]) for k in knowledge],
            _number(row["relative_error"]),
            "yes" if row["admissible"] else "no",
            _number(row["success_rate"]),
            style=None if row["admissible"] else "dim",
        )
    return table


def epsilon_table(frame: pd.DataFrame, dims: list[str], max_success: float) -> Table:
    """`catalog best` for profiles: per setting, utility, worst attack and the choice."""
    import pandas as pd

    table = house_table(
        title=f"Which ε? Settings whose worst attack success is ≤ {max_success:g}",
        caption="admissible: the statistic's error is small enough; safe: no counted attack "
        f"succeeds on more than {max_success:g} of the sample.\nBold: the chosen ε, the "
        "largest that is both (most utility); none in a group means no ε is both there.",
    )
    for column in ["dataview", *dims, "mechanism", "χ", "ε", "p"]:
        table.add_column(column, no_wrap=True)
    for column in ("error", "admissible", "worst\nsuccess", "worst attack", "safe"):
        table.add_column(column, justify="right", no_wrap=True)
    for _, row in frame.iterrows():
        table.add_row(
            *[str(row[c]) for c in ["dataview", *dims, "mechanism", "neighbourhood"]],
            f"{row['epsilon']:g}",
            "" if pd.isna(row["p"]) else f"{row['p']:.4g}",
            _number(row["relative_error"]),
            "yes" if row["admissible"] else "no",
            _number(row["worst_success"]),
            str(row["worst_attack"]),
            "yes" if row["safe"] else "no",
            style="bold" if row["choice"] else None,
        )
    return table


def release_summary(result: Any, why: str | None = None) -> dict[str, Any]:
    """`sanitize --format json`: what was released (or why nothing was), in the types of
    the other commands' JSON (dimension values that are numbers as numbers)."""
    report = result.report
    if report is None or not result.met:
        return {
            "met": False,
            "release": None,
            "folder": None,
            "dataview": None if report is None else report.dataview.id,
            "reason": why,
        }
    data = report.data
    share = data.released / data.before if data.before else 0.0
    return {
        "met": True,
        "release": report.release,
        "folder": str(result.folder),
        "recipient": report.recipient,
        "dataview": {
            "id": report.dataview.id,
            "format": report.dataview.format,
            "dimensions": typed_values(report.dataview.dimensions),
        },
        "choice": result.choice,
        "threshold": report.threshold,
        "method": report.method,
        "people": report.users.to_json(),
        "data": data.to_json() | {"share_released": share},
        "max_risk": report.max_risk_after,
        "lower_bound": report.sampled,
        "passes": len(report.iterations),
        "levels_counted": list(report.levels_counted),
        "not_covered": [level.to_json() for level in report.not_covered],
        "notes": list(report.notes),
        "combined_with": list(report.combined_with),
        "files": dict(report.files or {}),
    }


def randomized_summary(report: Any, folder: Any, typed: Sequence[str]) -> dict[str, Any]:
    """`sanitize --method randomize --format json`: the setting released, its utility and
    the success of the catalog's attacks on it (knowledge values in `typed` as numbers,
    as `to_json` writes them)."""
    rates = [r.success_rate for r in report.attacks if r.success_rate == r.success_rate]
    return {
        "met": True,
        "folder": str(folder),
        "dataview": report.dataview_id,
        "profile": report.profile,
        "mechanism": report.mechanism.to_json(),
        "profiles": report.profiles.to_json(),
        "utility": report.utility.to_json(),
        "worst_success": max(rates, default=None),
        "attacks": [
            {"attack": r.attack, **typed_values(dict(r.knowledge), typed), **r.measures}
            for r in report.attacks
        ],
    }
