"""`prudence evaluate`: the empirical risk of a released set of trajectories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from prudence_cli.cli.common import (
    QUIET_OPTION,
    SUMMARY_FORMAT_OPTION,
    LocalPath,
    echo_json,
    handle_errors,
)
from prudence_cli.cli.progress import progress_bar


@click.command()
@click.option(
    "--original",
    type=click.Path(path_type=Path),
    required=True,
    help="The original trajectories (CSV or Parquet: trajectory, location[, time, order]).",
)
@click.option(
    "--released",
    type=click.Path(path_type=Path),
    required=True,
    help="The released version of them, same columns.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    help="A YAML with an `evaluate` section (columns, max_h, samples, seed, cost).",
)
@click.option(
    "--out",
    type=LocalPath(path_type=Path),
    default=Path("evaluation"),
    show_default=True,
    help="Output folder (replaced atomically).",
)
@click.option("--max-h", type=click.IntRange(min=1), help="Longest attacker knowledge.")
@click.option(
    "--samples",
    type=click.IntRange(min=1),
    help="Attacks drawn at random per h (default: every distinct sub-trajectory).",
)
@click.option("--seed", type=click.IntRange(min=0), help="Seed of the drawn attacks.")
@click.option(
    "--cost",
    type=click.Choice(["log", "linear", "exponential"]),
    help="Cost model of the attacker's knowledge.",
)
@SUMMARY_FORMAT_OPTION
@QUIET_OPTION
@handle_errors
def evaluate(
    original: Path,
    released: Path,
    config_file: Path | None,
    out: Path,
    max_h: int | None,
    samples: int | None,
    seed: int | None,
    cost: str | None,
    fmt: str | None,
    quiet: bool,
) -> None:
    """The empirical risk of a released set of trajectories against the original: the
    distribution of the probability of re-identification per attacker knowledge, its
    cost-normalised version, and the utility of the release (Basu et al., A risk model for
    privacy in trajectory data)."""
    from dataclasses import replace

    from prudence_cli.config.evaluate import (
        EvaluationSettings,
        TrajectoryColumns,
        load_evaluate_config,
    )
    from prudence_cli.evaluation import run_evaluation

    columns, settings = (
        load_evaluate_config(config_file)
        if config_file
        else (TrajectoryColumns(), EvaluationSettings())
    )
    changes: dict[str, Any] = {
        k: v
        for k, v in (("max_h", max_h), ("samples", samples), ("seed", seed), ("cost", cost))
        if v is not None
    }
    with progress_bar(quiet) as progress:
        result, summary = run_evaluation(
            original, released, columns, replace(settings, **changes), out, progress
        )
    if fmt == "json":
        echo_json({"folder": str(out), **summary})
        return
    if quiet:
        return
    for line in result.statements:
        click.echo(line, err=True)
    u = result.utility
    click.echo(
        f"OD coverage {u['coverage']:.3f}, precision {u['precision']:.3f}. Results in {out}.",
        err=True,
    )
