"""`prudence catalog utility`: what a release at each risk threshold still tells an
analyst — the mobility measures of Pellungrini et al. on the people at risk ≤ t against
the whole dataview, and their correlation with risk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from prudence_cli.cli.common import (
    ATTACK_OPTION,
    CATALOG_OPTION,
    PROFILES_HINT,
    QUIET_OPTION,
    WHERE_OPTION,
    Risk,
    UserError,
    check_share,
    handle_errors,
    output,
)
from prudence_cli.cli.progress import progress_bar


@click.command("utility")
@CATALOG_OPTION
@ATTACK_OPTION
@WHERE_OPTION
@click.option(
    "--threshold",
    "thresholds",
    type=Risk(),
    multiple=True,
    metavar="T",
    help="A risk threshold t, a number or a fraction such as 1/3: compare the people at "
    "risk ≤ t with everyone (repeatable; default: the config's utility.thresholds, else "
    "1, 1/2, 1/3, 1/4: the paper's D_1, D_0.5, D_0.33, D_0.25).",
)
@click.option(
    "--measure",
    "measures",
    multiple=True,
    metavar="NAME",
    help="Only this mobility measure (repeatable; default: the config's utility.measures, "
    "else every one the format allows).",
)
@click.option(
    "--show",
    type=click.Choice(["distortion", "correlation"]),
    default="distortion",
    show_default=True,
    help="distortion: each measure's distribution at each threshold against the whole "
    "dataview; correlation: each person's measure against their risk.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    help="Output format (default: table on a terminal, csv otherwise).",
)
@QUIET_OPTION
@handle_errors
def utility(
    catalog_dir: Path | None,
    attacks: tuple[str, ...],
    where: tuple[str, ...],
    thresholds: tuple[float, ...],
    measures: tuple[str, ...],
    show: str,
    fmt: str | None,
    quiet: bool,
) -> None:
    """What a release still tells an analyst (Pellungrini et al., Analyzing Privacy Risk
    in Human Mobility Data, sections 2 and 5): per dataview and counted attack level, the
    radius of gyration, entropies, trips, visits and places on the people at risk ≤ t
    against the whole dataview (Kolmogorov–Smirnov statistic, 1-Wasserstein distance,
    quantiles), or their Pearson and Spearman correlation with risk. The counted levels
    are the policy's, as for catalog best. D_t is taken before suppression, as the paper
    does; a release at t (sanitize) also removes those whom removal makes unique, and
    can keep far fewer people: catalog best --utility ks:MEASURE gives what it keeps."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.catalog.query import catalog_policy, counted_levels, numeric_columns
    from prudence_cli.config.mobility import LOCATION_MEASURES, PERSON_MEASURES, THRESHOLDS
    from prudence_cli.explore.mobility import catalog_mobility

    for t in thresholds:
        check_share("--threshold", t, zero=False)
    if thresholds and show == "correlation":
        raise UserError("--threshold is for --show distortion: a correlation is over every person")
    known = (*PERSON_MEASURES, *LOCATION_MEASURES)
    for name in measures:
        if name not in known:
            raise UserError(f"--measure {name}: known: {', '.join(known)}")
    if show == "correlation" and measures and not set(measures) & set(PERSON_MEASURES):
        raise UserError(
            "--show correlation needs a per-person measure (risk is per person): one of "
            + ", ".join(PERSON_MEASURES)
        )
    opened = open_catalog(find_catalog(catalog_dir), "risks", PROFILES_HINT)
    stored = opened.record.mobility  # what assess measured, as the config chose
    policy, _ = catalog_policy(opened, None, attacks, where, default_max_risk=1.0)
    levels = counted_levels(opened, policy.attacks, policy.where)
    with progress_bar(quiet) as progress:
        found = catalog_mobility(
            opened,
            levels,
            policy.where,
            thresholds or (stored.thresholds if stored else THRESHOLDS),
            measures or (stored.measures if stored else None),
            progress,
        )
    if found.skipped and not quiet:
        click.echo(
            f"No mobility measures for {', '.join(found.skipped)}: their format holds no "
            "places (bins, profiles, clusters).",
            err=True,
        )
    frame = found.distortion if show == "distortion" else found.correlation
    if frame.empty:
        raise UserError(
            "nothing to measure: "
            + (
                f"{', '.join(measures)}: trip measures, which only trajectory dataviews "
                "of stays have (call records, or GPS points with select.points: trip_ends)"
                if measures
                else "no dataview of these has places"
            )
        )
    typed = numeric_columns(opened)
    output(frame, fmt, lambda: _table(frame, show, opened.dimension_names), typed)


def _table(frame: Any, show: str, dims: list[str]) -> Any:
    """One line per dataview, level and measure: the KS statistic per threshold and who
    is left at the lowest one, or the two correlations. One level: named in the title."""
    from rich.markup import escape

    from prudence_cli.cli.render import house_table

    levels = list(dict.fromkeys(frame["level"]))
    keys = ["dataview", *dims, *(["level"] if len(levels) > 1 else []), "measure"]
    what = "by risk threshold" if show == "distortion" else "and risk"
    table = house_table(
        title=escape(f"Mobility measures {what}" + (f", {levels[0]}" if len(levels) == 1 else "")),
        caption=(
            "KS at t: Kolmogorov–Smirnov statistic between the measure on the people at "
            "risk ≤ t (and the places as they visit them) and on everyone: 0 the same "
            "distribution, 1 disjoint; —: nobody (or no place) left at t. left: people (or "
            "places) at the lowest t, of all. D_t is before suppression: a release at t can "
            "keep fewer (catalog best --utility ks:MEASURE). --format csv|json adds the "
            "Wasserstein distances and quantiles."
            if show == "distortion"
            else "Pearson and Spearman correlation of each person's measure with their risk "
            "(the paper's Table 1): from −1 to 1, 0 none; —: everyone has the same risk, or "
            "the same value of the measure, so there is no correlation to tell."
        ),
    )
    for column in keys:
        table.add_column(column, no_wrap=True)
    if show == "correlation":
        for column in ("Pearson", "Spearman", "people"):
            table.add_column(column, justify="right", no_wrap=True)
        for _, row in frame.iterrows():
            table.add_row(
                *[escape(str(row[k])) for k in keys],
                _g(row["pearson"]),
                _g(row["spearman"]),
                f"{int(row['people']):,}",
            )
        return table
    thresholds = sorted(set(frame["threshold"]), reverse=True)
    for t in thresholds:
        table.add_column(f"KS at\n{t:.3g}", justify="right", no_wrap=True)
    table.add_column("left", justify="right", no_wrap=True)
    for key, rows in frame.groupby(keys, sort=False):
        by_t = rows.set_index("threshold")
        last = by_t.loc[thresholds[-1]]
        left = f"{int(last['n_kept']):,}/{int(last['n_full']):,}"
        table.add_row(
            *[escape(str(k)) for k in key], *[_g(by_t.loc[t, "ks"]) for t in thresholds], left
        )
    return table


def _g(value: float) -> str:
    return "—" if value != value else f"{value:.3f}"
