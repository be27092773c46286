"""`prudence sample`: seeded synthetic data, or a null model of real trajectories."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from prudence_cli.cli.common import QUIET_OPTION, LocalPath, handle_errors
from prudence_cli.cli.progress import progress_bar


@click.command()
@click.argument("kind", required=False, type=click.Choice(["gps", "cdr", "segments"]))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["gps", "cdr", "segments"]),
    help="The kind of data, instead of the KIND argument.",
)
@click.option("--users", type=click.IntRange(min=1), default=400, show_default=True)
@click.option("--days", type=click.IntRange(min=1), default=21, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option(
    "--start",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    default="2011-06-01",
    show_default=True,
    help="First day (local time, Europe/Rome).",
)
@click.option(
    "--out",
    type=LocalPath(path_type=Path),
    required=True,
    help="CSV file to write (.gz to compress).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace existing files (a sample's columns are those of real data: an existing "
    "file is never taken for an earlier sample).",
)
@click.option(
    "--towers", type=click.Path(path_type=Path), help="cdr only: where to write the tower table."
)
@click.option(
    "--segments",
    type=click.Path(path_type=Path),
    help="segments only: where to write the street segments table.",
)
@click.option(
    "--null-model",
    is_flag=True,
    help="Random trajectories like --like: same lengths, uniform locations.",
)
@click.option(
    "--like", type=click.Path(path_type=Path), help="--null-model: the trajectories to imitate."
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    help="--null-model: a YAML with an `evaluate` section naming the columns.",
)
@QUIET_OPTION
@handle_errors
def sample(
    kind: str | None,
    fmt: str | None,
    users: int,
    days: int,
    seed: int,
    start: dt.datetime,
    out: Path,
    force: bool,
    towers: Path | None,
    segments: Path | None,
    null_model: bool,
    like: Path | None,
    config_file: Path | None,
    quiet: bool,
) -> None:
    """Write seeded synthetic GPS fixes, call records or map-matched trips over Pisa
    (how the shipped sample data was made), or, with --null-model, random trajectories
    like those of --like (Basu et al., A risk model for privacy in trajectory data's null model).
    An existing file is replaced only with --force: a sample has the columns of real data,
    so an earlier sample cannot be told from the user's own files."""
    from prudence_cli.io.outputs import check_output_file
    from prudence_cli.io.writers import write_csv
    from prudence_cli.sample import generate_cdr, generate_gps
    from prudence_cli.sample_network import generate_segments

    if null_model:
        from prudence_cli.config.evaluate import TrajectoryColumns, load_evaluate_config
        from prudence_cli.evaluation import null_model as imitate
        from prudence_cli.io.readers import read_trajectories

        if like is None:
            raise click.UsageError("--null-model needs --like FILE, the trajectories to imitate")
        check_output_file(out, force, lambda path: False)
        columns = load_evaluate_config(config_file)[0] if config_file else TrajectoryColumns()
        table = read_trajectories(
            like, columns.trajectory, columns.location, columns.time, columns.order
        )
        write_csv(imitate(table, columns, seed), out)
        if not quiet:
            click.echo(
                f"Wrote {out}: {table['trajectory'].nunique():,} random trajectories like {like}",
                err=True,
            )
        return
    if like is not None or config_file is not None:
        raise click.UsageError("--like and --config go with --null-model")
    if kind and fmt and kind != fmt:
        raise click.UsageError(f"KIND {kind} and --format {fmt} disagree")
    kind = kind or fmt
    if kind is None:
        raise click.UsageError("say which data: gps, cdr or segments (or --format)")
    if towers is not None and kind != "cdr":
        raise click.UsageError("--towers is for cdr samples only")
    if segments is not None and kind != "segments":
        raise click.UsageError("--segments is for segments samples only")
    if kind == "cdr" and towers is None:
        raise click.UsageError("a cdr sample needs --towers FILE for the tower table")
    if kind == "segments" and segments is None:
        raise click.UsageError("a segments sample needs --segments FILE for the streets")
    for path in (out, towers, segments):
        if path is not None:
            check_output_file(path, force, lambda path: False)
    extra: Path | None = None
    with progress_bar(quiet) as progress:
        if kind == "gps":
            write_csv(generate_gps(users, days, seed, start.date(), progress), out)
        elif kind == "cdr":
            assert towers is not None
            events, table = generate_cdr(users, days, seed, start.date(), progress)
            write_csv(events, out)
            write_csv(table, towers)
            extra = towers
        else:
            assert segments is not None
            trips, streets = generate_segments(users, days, seed, start.date(), progress)
            write_csv(trips, out)
            write_csv(streets, segments)
            extra = segments
    if not quiet:
        click.echo(f"Wrote {out}" + (f" and {extra}" if extra else ""), err=True)
