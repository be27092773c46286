"""The report's charts, drawn with matplotlib: i-RAC planes as heatmaps, RAC curves,
and the Pareto front of the dataviews. Each chart comes with a plain-language text."""

from __future__ import annotations

import io
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from prudence_cli.catalog import Catalog
from prudence_cli.catalog.query import irac_level_keys, irac_rows, randomized_rows
from prudence_cli.explore.scores import Scores, natural_order

matplotlib.rcParams.update({"svg.hashsalt": "prudence", "svg.fonttype": "none", "font.size": 9})


@dataclass(frozen=True)
class Chart:
    name: str  # file-safe id
    section: str  # map | pareto | planes | curves | epsilon
    title: str
    figure: Figure
    folded: bool = False  # an attack level that is not counted: shown below, folded

    def svg(self) -> bytes:
        return figure_bytes(self.figure, "svg")

    def png(self) -> bytes:
        return figure_bytes(self.figure, "png")


def plane_charts(
    catalog: Catalog, counted: Collection[str], where: Sequence[str] = ()
) -> Iterator[Chart]:
    """One chart per attack level (and value of any further dimension) of the rows kept
    by `where`: i-RAC_U and i-RAC_D over the first two data dimensions, or along the only
    one. Levels whose key is not in `counted` are folded."""
    irac = irac_rows(catalog, _on_dimensions(catalog, where)).to_frame()
    dims = catalog.dimension_names
    if not dims or irac.empty:
        return
    level_of = dict(zip(irac.index, irac_level_keys(catalog, irac), strict=True))
    level_columns = ["attack", *catalog.knowledge_names]
    extra = dims[2:]
    for keys, rows in irac.groupby(level_columns + extra, sort=False, dropna=False):
        values = dict(zip(level_columns + extra, keys, strict=True))
        label = " ".join(f"{k}={v}" for k, v in values.items() if k != "attack" and v != "")
        title = f"{values['attack']} {label}".strip()
        figure = Figure(figsize=(9, 3.2), layout="constrained")
        axes = figure.subplots(1, 2)
        for ax, measure, name in zip(
            axes, ("i_rac_u", "i_rac_d"), ("i-RAC_U", "i-RAC_D"), strict=True
        ):
            if len(dims) == 1:
                _bars(ax, rows, dims[0], measure, name)
            else:
                _heatmap(figure, ax, rows, dims[0], dims[1], measure, name)
        figure.suptitle(title)
        folded = level_of[rows.index[0]] not in counted
        yield Chart(f"plane-{_safe(title)}", "planes", title, figure, folded)


def curve_charts(
    catalog: Catalog,
    counted: Collection[str],
    where: Sequence[str] = (),
    dataviews: Collection[str] | None = None,
) -> Iterator[Chart]:
    """One chart per dataview (of `dataviews`, default all) and attack of the rows kept
    by `where`: RAC_U and RAC_D, one step line per counted level (the curves of the
    others: prudence catalog curve)."""
    irac = irac_rows(catalog, _on_dimensions(catalog, where)).to_frame()
    irac = irac[irac_level_keys(catalog, irac).isin(set(counted))]
    if dataviews is not None:
        irac = irac[irac["dataview"].isin(set(dataviews))]
    for (view_id, attack), rows in irac.groupby(["dataview", "attack"], sort=False):
        entry = catalog.dataview_entry(str(view_id))
        dims = entry.show()
        title = f"{view_id} ({dims}) · {attack}"
        figure = Figure(figsize=(9, 3.2), layout="constrained")
        axes = figure.subplots(1, 2, sharey=True)
        for _, row in rows.iterrows():
            curve = catalog.read_csv(row["curve"])
            label = " ".join(f"{k}={row[k]}" for k in catalog.knowledge_names if row[k] != "")
            if row.get("sampled", False):
                label = f"{label or attack} (sampled: RAC_U is an upper bound)"
            for ax, column in zip(axes, ("rac_u", "rac_d"), strict=True):
                ax.step(curve["risk"], curve[column], where="post", label=label or attack)
        for ax, name in zip(axes, ("RAC_U: share of people", "RAC_D: share of data"), strict=True):
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1.02)
            ax.set_xlabel("tolerated risk r")
            ax.set_title(f"{name} at risk ≤ r")
            ax.grid(alpha=0.3)
        axes[1].legend(fontsize=7, loc="lower right")
        figure.suptitle(title)
        yield Chart(f"curves-{view_id}-{_safe(str(attack))}", "curves", title, figure)


def pareto_chart(scores: Scores) -> Chart:
    """Mean risk against the data a release at R keeps, per dataview; the Pareto front
    joined."""
    table = scores.table
    x = scores.utility
    figure = Figure(figsize=(6.5, 4.2), layout="constrained")
    ax = figure.subplots()
    front = table[table["pareto"] == "front"].sort_values("mean_risk")
    dominated = table[table["pareto"] != "front"]
    ax.scatter(
        dominated[x], dominated["mean_risk"], color="#999999", label="dominated or none released"
    )
    ax.plot(front[x], front["mean_risk"], "o-", color="#0072B2", label="Pareto front")
    for _, row in front.iterrows():  # dominated points stay unlabelled: no overlaps
        ax.annotate(
            str(row["dataview"]),
            (row[x], row["mean_risk"]),
            textcoords="offset points",
            xytext=(4, 3),
            fontsize=7,
        )
    ax.set_xlabel(
        {
            "released": f"share of data a release at risk ≤ {scores.max_risk:g} keeps",
            "kept": f"share of data held by people at risk ≤ {scores.max_risk:g}",
            "score": "utility score",
        }[x]
    )
    ax.set_ylabel("mean risk in the dataview, before suppression")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right")
    title = f"Risk and data kept at R = {scores.max_risk:g}"
    ax.set_title(title)
    return Chart("pareto", "pareto", title, figure)


def epsilon_charts(
    catalog: Catalog, max_success: float, where: Sequence[str] = ()
) -> Iterator[Chart]:
    """Profiles catalogs (Olivier and Quertier, randomized sanitization mechanisms, Figures 4-14):
    per dataview, mechanism and
    neighbourhood, attack success against ε with the admissible ε shaded, the statistic's
    relative error on a second axis, and the tolerated success R."""
    rows = randomized_rows(catalog, where).to_frame()
    dims = catalog.dimension_names
    knowledge = [k for k in catalog.knowledge_names if k in rows]
    options = catalog.record.randomize
    max_error = float(options.max_error) if options is not None else 0.1
    group = ["dataview", *dims, "mechanism", "neighbourhood"]
    for keys, members in rows.groupby(group, sort=False):
        values = dict(zip(group, keys, strict=True))
        title = (
            f"{values['dataview']} ({' '.join(f'{d}={values[d]}' for d in dims)}) · "
            f"{values['mechanism']}, χ = {values['neighbourhood']}"
        )
        levels = members.groupby(["attack", *knowledge], sort=False)
        figure = Figure(figsize=(8, 4.2 + 0.12 * levels.ngroups), layout="constrained")
        ax = figure.subplots()
        ax.set_prop_cycle(color=[matplotlib.colormaps["tab20"](k) for k in range(20)])
        settings = members.drop_duplicates("epsilon").sort_values("epsilon")
        eps = settings["epsilon"].to_numpy(dtype=float)
        ok = settings["admissible"].to_numpy(dtype=bool)
        for k in range(eps.shape[0]):
            if ok[k]:
                low = np.sqrt(eps[k - 1] * eps[k]) if k > 0 else eps[k]
                high = np.sqrt(eps[k] * eps[k + 1]) if k + 1 < eps.shape[0] else eps[k]
                ax.axvspan(low, high, color="#d9f0d3", zorder=0)
        for _, level in levels:
            level = level.sort_values("epsilon")
            first = level.iloc[0]
            label = " ".join(
                [str(first["attack"]), *(f"{k}={first[k]}" for k in knowledge if first[k] != "")]
            )
            ax.plot(level["epsilon"], level["success_rate"], "o-", markersize=3, label=label)
        ax.axhline(max_success, color="#b2182b", linestyle=":", label=f"R = {max_success:g}")
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("ε (privacy parameter)")
        ax.set_ylabel("attack success rate")
        ax.grid(alpha=0.3)
        error = ax.twinx()
        error.plot(eps, settings["relative_error"], "k--", label="statistic's relative error")
        error.axhline(max_error, color="#555555", linewidth=0.8)
        error.set_ylabel("relative error of the statistic (dashed)")
        error.set_yscale("log")
        figure.legend(fontsize=7, loc="outside lower center", ncols=2)
        ax.set_title(f"{title}\nshaded: admissible ε (relative error ≤ {max_error:g})")
        name = f"epsilon-{values['dataview']}-{values['mechanism']}-{values['neighbourhood']}"
        yield Chart(_safe(name), "epsilon", title, figure)


def _heatmap(
    figure: Figure,
    ax: Axes,
    rows: pd.DataFrame,
    row_dim: str,
    col_dim: str,
    measure: str,
    name: str,
) -> None:
    table = rows.pivot_table(index=row_dim, columns=col_dim, values=measure, aggfunc="first")
    table = table.reindex(index=natural_order(rows[row_dim]), columns=natural_order(rows[col_dim]))
    image = ax.imshow(table.to_numpy(dtype=float), cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(table.columns)), [str(c) for c in table.columns])
    ax.set_yticks(range(len(table.index)), [str(i) for i in table.index])
    ax.set_xlabel(col_dim)
    ax.set_ylabel(row_dim)
    ax.set_title(name)
    for (i, j), value in np.ndenumerate(table.to_numpy(dtype=float)):
        if not np.isnan(value):
            colour = "white" if value < 0.55 else "black"  # readable on viridis
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color=colour)
    figure.colorbar(image, ax=ax, shrink=0.8)


def _bars(ax: Axes, rows: pd.DataFrame, dim: str, measure: str, name: str) -> None:
    order = natural_order(rows[dim])
    values = rows.set_index(dim)[measure].reindex(order)
    ax.bar([str(v) for v in order], values.to_numpy(dtype=float), color="#4575b4")
    ax.set_ylim(0, 1)
    ax.set_xlabel(dim)
    ax.set_title(name)


def figure_bytes(figure: Figure, fmt: str) -> bytes:
    """The figure as svg or png bytes, without dates (the same chart, the same bytes)."""
    buffer = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    figure.savefig(buffer, format=fmt, dpi=110, metadata=metadata)
    return buffer.getvalue()


def _on_dimensions(catalog: Catalog, where: Sequence[str]) -> list[str]:
    """The filters of `where` on dataviews and their dimensions: the knowledge filters
    chose the counted levels, and the other levels are drawn folded."""
    keys = {"dataview", *catalog.dimension_names}
    return [w for w in where if w.partition("=")[0].strip() in keys]


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "=.-" else "_" for ch in text).strip("_")
