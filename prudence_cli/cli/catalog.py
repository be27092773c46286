"""`prudence catalog …`: read a catalog written by `prudence assess`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from prudence_cli.cli.common import (
    ATTACK_OPTION,
    CATALOG_OPTION,
    FORMAT_OPTION,
    MAX_RISK_OPTION,
    PROFILES_HINT,
    QUIET_OPTION,
    WHERE_OPTION,
    LazyGroup,
    UserError,
    check_share,
    handle_errors,
    output,
)

if TYPE_CHECKING:
    from rich.table import Table

    from prudence_cli.catalog import Catalog
    from prudence_cli.catalog.rows import Rows


@click.group(cls=LazyGroup, lazy={"utility": "prudence_cli.cli.utility:utility"})
def catalog() -> None:
    """Read a catalog written by `prudence assess`."""


@catalog.command("show")
@CATALOG_OPTION
@WHERE_OPTION
@click.option(
    "--plane",
    metavar="DIM1,DIM2",
    help="Show the i-RAC_U and i-RAC_D planes over two dimensions instead.",
)
@click.option("--attack", help="With --plane: the attack whose planes to show.")
@FORMAT_OPTION
@handle_errors
def catalog_show(
    catalog_dir: Path | None,
    where: tuple[str, ...],
    plane: str | None,
    attack: str | None,
    fmt: str | None,
) -> None:
    """Print the i-RAC table: one row per dataview × attack × knowledge level; or, with
    --plane, the i-RAC planes of the paper as two-way tables. On a catalog of randomized
    profiles: utility and attack success per setting and attack level."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.catalog.query import irac_rows, numeric_columns, randomized_rows

    opened = open_catalog(find_catalog(catalog_dir))
    typed = numeric_columns(opened)
    if opened.kind == "profiles":
        if plane is not None:
            raise UserError("--plane is for risk catalogs; a profiles catalog has settings")
        rows = randomized_rows(opened, (*where, *([f"attack={attack}"] if attack else [])))
        output(rows, fmt, lambda: _table(opened, rows), typed)
    elif plane is not None:
        from prudence_cli.cli.render import plane_long, plane_tables
        from prudence_cli.explore.scores import plane as planes  # only here: it re-assesses views

        dims = tuple(d.strip() for d in plane.split(","))
        if len(dims) != 2:
            raise UserError(f"--plane {plane}: give two columns, e.g. --plane grid,frequency")
        u_plane, d_plane = planes(opened, (dims[0], dims[1]), where, attack)
        fixed = " ".join([*([f"attack={attack}"] if attack else []), *where])
        subtitle = f" ({fixed})" if fixed else ""
        output(
            plane_long(u_plane, d_plane, (dims[0], dims[1])),
            fmt,
            lambda: plane_tables(u_plane, d_plane, (dims[0], dims[1]), subtitle),
            typed,
        )
        return
    else:
        rows = irac_rows(opened, (*where, *([f"attack={attack}"] if attack else [])))
        output(rows, fmt, lambda: _table(opened, rows), typed)
    if rows.empty:
        click.echo("No row matches the filters.", err=True)


def _table(opened: Catalog, rows: Rows) -> Table:
    """The rich table of `catalog show` (rich is imported for a table only: CSV and JSON
    load none)."""
    from prudence_cli.cli.render import irac_table, randomized_table

    return (randomized_table if opened.kind == "profiles" else irac_table)(opened, rows)


@catalog.command("curve")
@CATALOG_OPTION
@click.option("--dataview", required=True, metavar="ID")
@click.option("--attack", help="The attack (needed when several were assessed).")
@WHERE_OPTION
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["chart", "csv", "json"]),
    help="Output format (default: chart on a terminal, csv otherwise).",
)
@handle_errors
def catalog_curve(
    catalog_dir: Path | None,
    dataview: str,
    attack: str | None,
    where: tuple[str, ...],
    fmt: str | None,
) -> None:
    """Draw the RAC_U and RAC_D curves of one dataview, attack and knowledge level."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.cli.pipes import to_csv, to_json
    from prudence_cli.cli.render import curve_chart
    from prudence_cli.explore.scores import curve

    opened = open_catalog(find_catalog(catalog_dir), "risks", PROFILES_HINT)
    frame, row = curve(opened, dataview, attack, where)
    fmt = fmt or ("chart" if sys.stdout.isatty() else "csv")
    if fmt == "chart":
        dims = " ".join(f"{d}={row[d]}" for d in opened.dimension_names)
        level = " ".join(f"{k}={row[k]}" for k in opened.knowledge_names if row[k] != "")
        click.echo(curve_chart(frame, f"{dataview} {dims} · {row['attack']} {level}"))
        click.echo(
            f"i-RAC_U = {row['i_rac_u']:.3f}, i-RAC_D = {row['i_rac_d']:.3f}: the "
            "areas under the curves."
        )
    elif fmt == "csv":
        click.echo(to_csv(frame), nl=False)
    else:
        click.echo(to_json(frame), nl=False)


@catalog.command("best")
@CATALOG_OPTION
@MAX_RISK_OPTION
@click.option(
    "--min-coverage",
    type=float,
    help="Mark dataviews whose release keeps less data than this (default: the policy's).",
)
@click.option(
    "--measure",
    type=click.Choice(["mean_risk", "unicity", "k_disclosure", "em", "kl"]),
    default="mean_risk",
    show_default=True,
    help="The disclosure axis of the Pareto front.",
)
@click.option(
    "--utility",
    default="released",
    show_default=True,
    metavar="released|kept|score|ks:MEASURE|wasserstein:MEASURE",
    help="The utility axis: the data a release at R keeps after suppression (what "
    "sanitize delivers), the data held at ≤ R before suppression, the catalog's "
    "utility scores, or how little the release at R moves a mobility measure "
    "(e.g. ks:radius_of_gyration; see prudence catalog utility).",
)
@click.option(
    "--ordinal",
    is_flag=True,
    help="Instead: whether the disclosure measures rank the dataviews alike.",
)
@ATTACK_OPTION
@WHERE_OPTION
@FORMAT_OPTION
@QUIET_OPTION
@handle_errors
def catalog_best(
    catalog_dir: Path | None,
    max_risk: float | None,
    min_coverage: float | None,
    measure: str,
    utility: str,
    ordinal: bool,
    attacks: tuple[str, ...],
    where: tuple[str, ...],
    fmt: str | None,
    quiet: bool,
) -> None:
    """Rank the dataviews by the data kept at risk ≤ R (or by utility score), with
    their Pareto front of (disclosure, utility); a person's risk is the max over the
    counted levels. --ordinal checks whether the measures rank them in the same order.

    On a catalog of randomized profiles: per mechanism, which ε keeps the statistic
    admissible while no counted attack succeeds on more than R of the sample."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.catalog.query import catalog_policy, counted_levels, numeric_columns
    from prudence_cli.cli.progress import progress_bar
    from prudence_cli.cli.render import best_table, ordinal_table
    from prudence_cli.explore.scores import DISCLOSURE, dataview_scores
    from prudence_cli.explore.scores import ordinal_agreement as agreement

    if max_risk is not None:
        check_share("--max-risk", max_risk, zero=False)
    if min_coverage is not None:
        check_share("--min-coverage", min_coverage, zero=True)
    opened = open_catalog(find_catalog(catalog_dir))
    policy, source = catalog_policy(opened, max_risk, attacks, where, min_coverage)
    assert policy.max_risk is not None
    max_risk, min_coverage = policy.max_risk, policy.min_coverage
    attacks, where = policy.attacks, policy.where
    if not quiet and (fmt == "table" or (fmt is None and sys.stdout.isatty())):
        click.echo(f"Policy ({source}): {policy.describe()}.", err=True)
    if opened.kind == "profiles":
        from prudence_cli.cli.render import epsilon_table
        from prudence_cli.explore.scores import epsilon_choice

        where = (*where, *(f"attack={a}" for a in attacks))
        choice = epsilon_choice(opened, max_risk, where)
        output(
            choice,
            fmt,
            lambda: epsilon_table(choice, opened.dimension_names, max_risk),
            numeric_columns(opened),
        )
        return
    levels = counted_levels(opened, attacks, where)
    with progress_bar(quiet) as progress:
        scores = dataview_scores(opened, levels, max_risk, where, measure, utility, progress)
    if ordinal:
        measures = ["mean_risk", *[m for m in DISCLOSURE if m in scores.table]]
        if len(measures) < 2:
            raise UserError("--ordinal needs disclosure measures (a unicity attack)")
        result = agreement(scores.table, measures)
        output(result, fmt, lambda: ordinal_table(result), [])
        return
    table = scores.table.assign(
        meets_min_coverage=(scores.table["released"] >= min_coverage) if min_coverage else True
    )
    output(
        table,
        fmt,
        lambda: best_table(scores, opened.dimension_names, min_coverage),
        numeric_columns(opened),
    )
    if not (table["users_released"] > 0).any():
        click.echo(
            f"No dataview keeps anyone after suppression to risk ≤ {max_risk:g} under the "
            f"{scores.levels} counted attack levels: prudence sanitize would release nothing. "
            "Try --method suppress-locations, fewer counted levels (--attack / --where) or "
            "coarser dataviews.",
            err=True,
        )
    elif not (table["released"] > 0).any():  # people kept, but none of the data
        kind = opened.record.coverage
        click.echo(
            f"No dataview keeps any of its {kind} after suppression to risk ≤ {max_risk:g} "
            f"under the {scores.levels} counted attack levels: the people kept hold none of "
            f"it, and prudence sanitize would release no {kind}. Try coarser dataviews or "
            "fewer counted levels (--attack / --where).",
            err=True,
        )


@catalog.command("risks")
@CATALOG_OPTION
@WHERE_OPTION
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True
)
@handle_errors
def catalog_risks(catalog_dir: Path | None, where: tuple[str, ...], fmt: str) -> None:
    """Print every user's risk: dataview, dimensions, attack, knowledge, user, risk."""
    import pandas as pd

    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.catalog.query import numeric_columns, risk_rows
    from prudence_cli.cli.pipes import to_csv, to_json

    opened = open_catalog(find_catalog(catalog_dir), "risks", PROFILES_HINT)
    frames = risk_rows(opened, where)
    if fmt == "json":
        typed = numeric_columns(opened)
        click.echo(to_json(pd.concat(list(frames), ignore_index=True), typed), nl=False)
        return
    first = True
    for frame in frames:
        click.echo(to_csv(frame, header=first), nl=False)
        first = False


@catalog.command("releases")
@CATALOG_OPTION
@FORMAT_OPTION
@QUIET_OPTION
@handle_errors
def catalog_releases(catalog_dir: Path | None, fmt: str | None, quiet: bool) -> None:
    """List the release ledger: what was released, to whom, when."""
    import pandas as pd

    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.cli.render import releases_table
    from prudence_cli.sanitize.ledger import read_ledger

    opened = open_catalog(find_catalog(catalog_dir))
    records = read_ledger(opened)
    columns = [
        "id",
        "recipient",
        "created",
        "dataview",
        "format",
        "dimensions",
        "threshold",
        "method",
        "epsilon",
        "users",
        "pseudonymized",
        "release",
        "state",
    ]
    frame = pd.DataFrame(
        [
            {**r, "dimensions": " ".join(f"{k}={v}" for k, v in r["dimensions"].items())}
            for r in records
        ],
        columns=columns,
    )
    output(frame, fmt, lambda: releases_table(frame), [])
    if not records and not quiet:
        click.echo("No release recorded in this catalog yet.", err=True)
