"""The report's analyst section: what the recommended release still tells someone who
studies mobility with it — the measures of Pellungrini et al., Analyzing Privacy Risk in
Human Mobility Data (section 2) on the dataview and on its release, their distributions
before and after (the paper's Figures 3–6) and their correlation with risk (its Table 1)."""

from __future__ import annotations

import html
import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from prudence_cli.measures.mobility import THRESHOLDS, Profile, visits_of
from prudence_cli.report.charts import Chart
from prudence_cli.sanitize.forecast import Suppressed
from prudence_cli.sanitize.report import shown_number

LABELS = {
    "radius_of_gyration": "radius of gyration (m)",
    "mobility_entropy": "mobility entropy",
    "max_distance": "longest trip (m)",
    "sum_distances": "distance travelled (m)",
    "visits": "visits per person",
    "locations": "places per person",
    "location_entropy": "location entropy",
    "location_density": "people whose top place it is",
    "flow": "trips in or out",
}


def mobility_parts(
    crs: str | None,
    chosen: Suppressed,
    trips: bool,
    thresholds: Sequence[float] = THRESHOLDS,
    measures: Sequence[str] | None = None,
) -> tuple[list[Chart], str] | None:
    """The charts (the dataview against its release; the dataview's D_t, the people at
    risk ≤ t, for each threshold t) and the HTML tables for the release of `chosen`;
    None when its format has no places (or the catalog no projection)."""
    before = visits_of(chosen.before, crs, trips) if crs else None
    after = visits_of(chosen.outcome.view, crs, trips) if crs else None
    if before is None or after is None:
        return None
    profile = Profile(before, measures)
    people, places = profile.measures_of(after)
    full = {**_series(profile.people), **_series(profile.places)}
    view = chosen.before.id
    title = f"What a release of {view} keeps of each measure"
    release = _figure(
        [("dataview", full), ("release", {**_series(people), **_series(places)})], title
    )
    risk = chosen.outcome.initial_risk
    family = [("everyone (D_1)", full)] + [
        (f"D_{_share(t)}", profile.values_at(risk <= t)) for t in thresholds if t < 1
    ]
    by_risk = f"Each measure on the people of {view} at risk ≤ t (D_t)"
    charts = [
        Chart("mobility", "mobility", title, release),
        Chart("mobility-thresholds", "mobility", by_risk, _figure(family, by_risk, full)),
    ]
    correlation = profile.correlation(risk)
    return charts, _tables(profile.compare(people, places), correlation)


def _series(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    return {n: frame[n].to_numpy(dtype=float) for n in frame.columns if n != "location"}


def _share(t: float) -> str:
    """A threshold as the paper writes it: 1, 0.5, 0.33, 0.25."""
    return f"{t:.2f}".rstrip("0").rstrip(".")


_STYLES = ("-", "--", "-.", ":")


def _figure(
    lines: list[tuple[str, dict[str, np.ndarray]]],
    title: str,
    scale: dict[str, np.ndarray] | None = None,
) -> Figure:
    """One panel per measure: its distribution on each of `lines` (label, values per
    measure), the bars cut at the 99th percentile of `scale` (default: the first line)."""
    first = scale if scale is not None else lines[0][1]
    names = [m for m in LABELS if m in first]
    columns = min(len(names), 4)
    rows = -(-len(names) // columns)
    figure = Figure(figsize=(2.4 * columns, 2.1 * rows), layout="constrained")
    axes = np.atleast_1d(figure.subplots(rows, columns)).ravel()
    for ax, name in zip(axes, names, strict=False):
        reference = first[name][~np.isnan(first[name])]
        top = float(np.quantile(reference, 0.99)) if reference.size else 1.0
        whole = reference.size > 0 and bool(np.all(reference == np.round(reference)))
        bins = (  # counts: one bar per whole number when they are few
            np.arange(-0.5, top + 1.5)
            if whole and top <= 40
            else np.linspace(0.0, max(top, 1e-9), 25)
        )
        for (label, measured), style in zip(lines, itertools.cycle(_STYLES), strict=False):
            values = measured.get(name, np.zeros(0))
            values = values[~np.isnan(values)]
            if values.size:
                ax.hist(
                    np.clip(values, 0, top),
                    bins=bins,
                    density=True,
                    histtype="step",
                    linestyle=style,
                    linewidth=1.4,
                    label=label,
                )
        ax.set_title(LABELS[name], fontsize=9)
        ax.tick_params(labelsize=8)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0 / np.diff(bins)[0], decimals=0))
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    for ax in axes[::columns]:
        ax.set_ylabel("share per bar", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()  # one legend, under the panels
    figure.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8)
    figure.suptitle(title)
    return figure


def _tables(compared: pd.DataFrame, correlation: pd.DataFrame) -> str:
    head = (
        "<tr><th>measure</th><th>of</th><th>KS</th><th>Wasserstein</th>"
        "<th>median: dataview → release</th><th>counted: dataview → release</th></tr>"
    )
    rows = []
    for _, row in compared.iterrows():
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(c))}</td>"
                for c in (
                    LABELS.get(row["measure"], row["measure"]),
                    "people" if row["kind"] == "person" else "places",
                    _fixed(row["ks"]),
                    shown_number(row["wasserstein"]),
                    f"{shown_number(row['median_full'])} → {shown_number(row['q50'])}",
                    f"{int(row['n_full']):,} → {int(row['n_kept']):,}",
                )
            )
            + "</tr>"
        )
    correlated = "".join(
        f"<tr><td>{html.escape(LABELS.get(r['measure'], r['measure']))}</td>"
        f"<td>{_fixed(r['pearson'])}</td><td>{_fixed(r['spearman'])}</td>"
        f"<td>{int(r['people']):,}</td></tr>"
        for _, r in correlation.iterrows()
    )
    return (
        '<table class="mobility"><thead>'
        + head
        + "</thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + "<p>Correlation of each person's measure with their risk (the highest over the "
        "counted levels, before the release):</p>"
        + '<table class="mobility"><thead><tr><th>measure</th><th>Pearson</th>'
        "<th>Spearman</th><th>people</th></tr></thead><tbody>" + correlated + "</tbody></table>"
    )


def _fixed(value: float) -> str:
    """Statistics between 0 and 1 (or −1 and 1), with the same three decimals."""
    return "—" if value is None or np.isnan(value) else f"{value:.3f}"
