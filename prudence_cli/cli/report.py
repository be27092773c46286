"""`prudence report`: the catalog as an HTML report or PNG charts."""

from __future__ import annotations

from pathlib import Path

import click

from prudence_cli.cli.common import (
    ATTACK_OPTION,
    CATALOG_OPTION,
    WHERE_OPTION,
    check_share,
    handle_errors,
)


@click.command()
@CATALOG_OPTION
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="The HTML file (--format html) or a folder of PNG files (--format png).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["html", "png"]), default="html", show_default=True
)
@click.option(
    "--max-risk",
    type=float,
    default=0.3,
    show_default=True,
    help="Tolerated risk R of the Pareto chart.",
)
@ATTACK_OPTION
@WHERE_OPTION
@handle_errors
def report(
    catalog_dir: Path | None,
    out: Path,
    fmt: str,
    max_risk: float,
    attacks: tuple[str, ...],
    where: tuple[str, ...],
) -> None:
    """Write the catalog as a self-contained HTML report (planes, RAC curves, Pareto
    front, releases, and how to read each chart), or its charts as PNG files.
    --attack / --where choose the attack levels counted in the Pareto chart."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.catalog.query import counted_levels
    from prudence_cli.report.page import write_html, write_png

    check_share("--max-risk", max_risk, zero=False)
    opened = open_catalog(find_catalog(catalog_dir))
    if opened.kind == "profiles":
        where = (*where, *(f"attack={a}" for a in attacks))
        levels = []
    else:
        levels = counted_levels(opened, attacks, where)
    count = (write_html if fmt == "html" else write_png)(opened, out, max_risk, levels, where)
    click.echo(f"Report with {count} charts written to {out}.", err=True)
