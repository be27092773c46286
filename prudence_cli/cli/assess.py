"""`prudence assess` and `prudence validate`: run a config, or only check it."""

from __future__ import annotations

from pathlib import Path

import click

from prudence_cli import heap
from prudence_cli.cli.common import (
    QUIET_OPTION,
    SUMMARY_FORMAT_OPTION,
    LocalPath,
    echo_json,
    handle_errors,
)
from prudence_cli.cli.progress import progress_bar


@click.command()
@click.argument("config_file", metavar="CONFIG", type=click.Path(path_type=Path))
@click.option(
    "--out", type=LocalPath(path_type=Path), help="Catalog folder (default: the config's output)."
)
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    help="Threads for the local engine (0: every core); workers of a Dask LocalCluster "
    "(not used with --scheduler: the scheduler's workers run the work).",
)
@click.option(
    "--engine",
    "backend",
    type=click.Choice(["local", "dask"]),
    help="Where partitions run (default: the config's engine.backend, else local).",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="With --engine dask: a running scheduler, e.g. tcp://host:8786 (default: a "
    "LocalCluster of --jobs workers).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace the catalog of another config at the output folder (its ledger is discarded).",
)
@QUIET_OPTION
@handle_errors
def assess(
    config_file: Path,
    out: Path | None,
    jobs: int | None,
    backend: str | None,
    scheduler: str | None,
    force: bool,
    quiet: bool,
) -> None:
    """Assess every dataview × attack × knowledge level of CONFIG and write the catalog.
    An earlier catalog of the same config is replaced and keeps its ledger; the catalog
    of another config is refused unless --force."""
    from prudence_cli.config import load_config

    config = load_config(config_file)
    on_workers = (backend or config.engine.backend) == "dask"  # they read the input there
    if on_workers and jobs is not None and (scheduler or config.engine.scheduler):
        click.echo(
            f"Warning: --jobs {jobs} is not used with a scheduler: its workers run the work "
            "(--jobs sizes a LocalCluster).",
            err=True,
        )
    if not on_workers and heap.worth_it(config.input.files):  # heap.py
        heap.retain_freed_memory()
    from prudence_cli.assess import assess as run

    with progress_bar(quiet) as progress:
        result = run(config, out, jobs, progress, backend, scheduler, force)
    for warning in result.warnings:
        click.echo(warning, err=True)
    manifest = result.record
    if not quiet:
        dropped = sum(manifest.invalid_rows.dropped.values())
        note = f", {dropped:,} invalid rows dropped" if dropped else ""
        views = max(len(manifest.dataviews), 1)
        work = (
            f"{len(manifest.randomize.settings)} randomized settings × "
            f"{sum(len(a.levels) for a in manifest.attacks)} attack levels"
            if manifest.randomize is not None
            else f"{len(result.irac) // views} attack levels"
        )
        click.echo(
            f"Catalog written to {result.output}: {len(manifest.dataviews)} dataviews × "
            f"{work}, "
            f"{manifest.selection.users:,} users{note}, "
            f"{manifest.total_seconds:.1f} s.",
            err=True,
        )


@click.command()
@click.argument("config_file", metavar="CONFIG", type=click.Path(path_type=Path))
@SUMMARY_FORMAT_OPTION
@QUIET_OPTION
@handle_errors
def validate(config_file: Path, fmt: str | None, quiet: bool) -> None:
    """Check CONFIG and its input files' headers without running anything. Exit 0 when
    it is valid, 2 with what to fix."""
    from prudence_cli.config import load_config
    from prudence_cli.dataviews.build import count_dataviews
    from prudence_cli.io.readers import check_inputs

    config = load_config(config_file)
    area = config.select.area
    checked = check_inputs(
        config.input,
        area.path if area is not None else None,
        layers=[path for _, path in config.dataview.layers],
        scores=config.utility_scores,
        dimensions=config.dataview.dimension_names,
    )
    views = count_dataviews(config.dataview)
    levels = sum(len(a.levels) for a in config.attacks)
    if fmt == "json":
        echo_json(
            {
                "config": str(config_file),
                "valid": True,
                "name": config.name,
                "files": [c.to_json() for c in checked],
                "dataviews": views,
                "attack_levels": levels,
                "output": str(config.output),
            }
        )
    if quiet:
        return
    for line in checked:
        click.echo(str(line), err=True)
    if fmt != "json":
        click.echo(
            f"{config_file}: valid — {views} dataviews × {levels} attack levels, output "
            f"{config.output}",
            err=True,
        )
