"""`prudence report`: the catalog as an HTML report or PNG charts."""

from __future__ import annotations

from pathlib import Path

import click

from prudence_cli.cli.common import (
    ATTACK_OPTION,
    CATALOG_OPTION,
    QUIET_OPTION,
    WHERE_OPTION,
    LocalPath,
    check_share,
    handle_errors,
    one_value,
)
from prudence_cli.cli.progress import progress_bar


@click.command()
@CATALOG_OPTION
@click.option(
    "--out",
    type=LocalPath(path_type=Path),
    help="The HTML file (--format html; default report.html) or a folder of PNG files "
    "(--format png; default report-charts).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["html", "png"]), default="html", show_default=True
)
@click.option(
    "--max-risk",
    "--threshold",
    "max_risk",
    type=float,
    multiple=True,
    callback=one_value,
    help="Tolerated risk R of the Pareto chart (default: the config's policy.max_risk, else 0.3).",
)
@click.option(
    "--force", is_flag=True, help="Replace --out even if it is not an earlier Prudence report."
)
@ATTACK_OPTION
@WHERE_OPTION
@QUIET_OPTION
@handle_errors
def report(
    catalog_dir: Path | None,
    out: Path | None,
    fmt: str,
    max_risk: float | None,
    force: bool,
    attacks: tuple[str, ...],
    where: tuple[str, ...],
    quiet: bool,
) -> None:
    """Write the catalog as a self-contained HTML report that opens with the answer —
    can this data be shared under the policy, which dataview, what a release keeps, what
    it does not cover — then a map of where the risk lies, the Pareto front, i-RAC
    planes, RAC curves and releases, each with how to read it; or its charts as PNG
    files. The policy is the config's, each option given in place of its key. An
    existing --out is replaced only if it is an earlier report (or with --force)."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.catalog.query import catalog_policy, counted_levels
    from prudence_cli.io.atomic import check_writable
    from prudence_cli.io.outputs import check_output_file
    from prudence_cli.report.page import write_report

    if max_risk is not None:
        check_share("--max-risk", max_risk, zero=False)
    out = out or Path("report.html" if fmt == "html" else "report-charts")
    if fmt == "html":
        check_output_file(out, force, _is_report_page)
    else:
        check_writable(out)
    opened = open_catalog(find_catalog(catalog_dir))
    policy, source = catalog_policy(opened, max_risk, attacks, where, default_max_risk=0.3)
    attacks, where = policy.attacks, policy.where
    if opened.kind == "profiles":
        where = (*where, *(f"attack={a}" for a in attacks))
        levels = []
    else:
        levels = counted_levels(opened, attacks, where)
    with progress_bar(quiet) as progress:
        count = write_report(opened, out, fmt, policy, source, levels, where, progress)
    if not quiet:
        click.echo(f"Report with {count} charts written to {out}.", err=True)


def _is_report_page(path: Path) -> bool:
    """An HTML page `prudence report` wrote (report/page.py `render_page`)."""
    from prudence_cli.io.outputs import head

    return b"<title>Prudence report: " in head(path)
