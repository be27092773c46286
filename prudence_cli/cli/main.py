"""The `prudence` command line: parse, call one library function, render.

Exit codes: 0 ok, 1 a check or policy failed, 2 bad usage, config, input or catalog.
Data goes to stdout, messages and progress to stderr.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from prudence_cli import __version__
from prudence_cli.errors import PrudenceError

F = TypeVar("F", bound=Callable[..., Any])
INTERRUPTED = 130


class UserError(click.ClickException):
    """A domain error shown as `Error: message`, exit code 2."""

    exit_code = 2


def _errors(func: F) -> F:
    """Turn domain errors into exit code 2 and Ctrl-C into 130, with a one-line message."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except PrudenceError as exc:
            raise UserError(str(exc)) from None
        except KeyboardInterrupt:
            click.echo("Interrupted: nothing was written.", err=True)
            sys.exit(INTERRUPTED)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="prudence")
def main() -> None:
    """Prudence: how likely is each person in a mobility dataset to be re-identified,
    and how much data is left when the risky ones are taken out (PRUDEnce)."""


@main.command()
@click.argument("config_file", metavar="CONFIG", type=click.Path(path_type=Path))
@click.option(
    "--out", type=click.Path(path_type=Path), help="Catalog folder (default: the config's output)."
)
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    help="Threads for the local engine (0: every core); workers of a Dask LocalCluster.",
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
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@_errors
def assess(
    config_file: Path,
    out: Path | None,
    jobs: int | None,
    backend: str | None,
    scheduler: str | None,
    quiet: bool,
) -> None:
    """Assess every dataview × attack × knowledge level of CONFIG and write the catalog."""
    from prudence_cli.assess import assess as run
    from prudence_cli.config import load_config

    config = load_config(config_file)
    with _progress(quiet) as progress:
        result = run(config, out, jobs, progress, backend, scheduler)
    manifest = result.manifest
    if not quiet:
        dropped = sum(manifest["invalid_rows"]["dropped"].values())
        note = f", {dropped:,} invalid rows dropped" if dropped else ""
        views = max(len(manifest["dataviews"]), 1)
        work = (
            f"{len(manifest['randomize']['settings'])} randomized settings × "
            f"{sum(len(a['levels']) for a in manifest['attacks'])} attack levels"
            if "randomize" in manifest
            else f"{len(result.irac) // views} attack levels"
        )
        click.echo(
            f"Catalog written to {result.output}: {len(manifest['dataviews'])} dataviews × "
            f"{work}, "
            f"{manifest['selection']['users']:,} users{note}, "
            f"{manifest['timings_seconds']['total']:.1f} s.",
            err=True,
        )


@main.command()
@click.argument("config_file", metavar="CONFIG", type=click.Path(path_type=Path))
@_errors
def validate(config_file: Path) -> None:
    """Check CONFIG and its input files' headers without running anything."""
    from prudence_cli.config import load_config
    from prudence_cli.dataviews.build import count_dataviews
    from prudence_cli.io.readers import check_inputs

    config = load_config(config_file)
    area = config.select.area
    for line in check_inputs(config.input, area.path if area is not None else None):
        click.echo(line, err=True)
    levels = sum(len(a.levels) for a in config.attacks)
    click.echo(
        f"{config_file}: valid — {count_dataviews(config.dataview)} dataviews × {levels} "
        f"attack levels, output {config.output}",
        err=True,
    )


@main.group()
def catalog() -> None:
    """Read a catalog written by `prudence assess`."""


_CATALOG_OPTION = click.option(
    "--catalog",
    "catalog_dir",
    type=click.Path(path_type=Path),
    help="Catalog folder (default: ./catalog, or the only catalog inside it).",
)
_WHERE_OPTION = click.option(
    "--where",
    "where",
    multiple=True,
    metavar="KEY=VALUE",
    help="Keep rows whose dimension or knowledge KEY equals VALUE (repeatable).",
)


_FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    help="Output format (default: table on a terminal, csv otherwise).",
)
_ATTACK_OPTION = click.option(
    "--attack",
    "attacks",
    multiple=True,
    metavar="NAME",
    help="Only this assessed attack (repeatable; default: every one).",
)


def _output(frame: Any, fmt: str | None, table: Callable[[], Any], typed: list[str]) -> None:
    """A table on a terminal (or --format table), else CSV or JSON on stdout."""
    from prudence_cli.cli.render import print_table, to_csv, to_json

    fmt = fmt or ("table" if sys.stdout.isatty() else "csv")
    if fmt == "table":
        rendered = table()
        for item in rendered if isinstance(rendered, list) else [rendered]:
            print_table(item)
    elif fmt == "csv":
        click.echo(to_csv(frame), nl=False)
    else:
        click.echo(to_json(frame, typed), nl=False)


@catalog.command("show")
@_CATALOG_OPTION
@_WHERE_OPTION
@click.option(
    "--plane",
    metavar="DIM1,DIM2",
    help="Show the i-RAC_U and i-RAC_D planes over two dimensions instead.",
)
@click.option("--attack", help="With --plane: the attack whose planes to show.")
@_FORMAT_OPTION
@_errors
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
    from prudence_cli.cli.render import irac_table, plane_long, plane_tables, randomized_table
    from prudence_cli.explore import plane as planes
    from prudence_cli.explore.query import irac_rows, numeric_columns, randomized_rows

    opened = open_catalog(find_catalog(catalog_dir))
    typed = numeric_columns(opened)
    if opened.is_profiles and plane is not None:
        raise UserError("--plane is for risk catalogs; a profiles catalog has settings")
    if plane is not None:
        dims = tuple(d.strip() for d in plane.split(","))
        if len(dims) != 2:
            raise UserError(f"--plane {plane}: give two columns, e.g. --plane grid,frequency")
        u_plane, d_plane = planes(opened, (dims[0], dims[1]), where, attack)
        fixed = " ".join([*([f"attack={attack}"] if attack else []), *where])
        subtitle = f" ({fixed})" if fixed else ""
        _output(
            plane_long(u_plane, d_plane, (dims[0], dims[1])),
            fmt,
            lambda: plane_tables(u_plane, d_plane, (dims[0], dims[1]), subtitle),
            typed,
        )
        return
    if attack is not None:
        where = (*where, f"attack={attack}")
    if opened.is_profiles:
        rows = randomized_rows(opened, where)
        _output(rows, fmt, lambda: randomized_table(opened, rows), typed)
    else:
        rows = irac_rows(opened, where)
        _output(rows, fmt, lambda: irac_table(opened, rows), typed)
    if rows.empty:
        click.echo("No row matches the filters.", err=True)


@catalog.command("curve")
@_CATALOG_OPTION
@click.option("--dataview", required=True, metavar="ID")
@click.option("--attack", help="The attack (needed when several were assessed).")
@_WHERE_OPTION
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["chart", "csv", "json"]),
    help="Output format (default: chart on a terminal, csv otherwise).",
)
@_errors
def catalog_curve(
    catalog_dir: Path | None,
    dataview: str,
    attack: str | None,
    where: tuple[str, ...],
    fmt: str | None,
) -> None:
    """Draw the RAC_U and RAC_D curves of one dataview, attack and knowledge level."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.cli.render import curve_chart, to_csv, to_json
    from prudence_cli.explore import curve

    opened = open_catalog(find_catalog(catalog_dir))
    _needs_risks(opened)
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
@_CATALOG_OPTION
@click.option("--max-risk", type=float, required=True, help="Tolerated risk R in (0, 1].")
@click.option("--min-coverage", type=float, help="Mark dataviews keeping less data than this.")
@click.option(
    "--measure",
    type=click.Choice(["mean_risk", "unicity", "k_disclosure", "em", "kl"]),
    default="mean_risk",
    show_default=True,
    help="The disclosure axis of the Pareto front.",
)
@click.option(
    "--utility",
    type=click.Choice(["kept", "score"]),
    default="kept",
    show_default=True,
    help="The utility axis: data kept at R, or the catalog's utility scores.",
)
@click.option(
    "--ordinal",
    is_flag=True,
    help="Instead: whether the disclosure measures rank the dataviews alike.",
)
@_ATTACK_OPTION
@_WHERE_OPTION
@_FORMAT_OPTION
@_errors
def catalog_best(
    catalog_dir: Path | None,
    max_risk: float,
    min_coverage: float | None,
    measure: str,
    utility: str,
    ordinal: bool,
    attacks: tuple[str, ...],
    where: tuple[str, ...],
    fmt: str | None,
) -> None:
    """Rank the dataviews by the data kept at risk ≤ R (or by utility score), with
    their Pareto front of (disclosure, utility); a person's risk is the max over the
    counted levels. --ordinal checks whether the measures rank them in the same order.

    On a catalog of randomized profiles: per mechanism, which ε keeps the statistic
    admissible while no counted attack succeeds on more than R of the sample."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.cli.render import best_table, ordinal_table
    from prudence_cli.explore import DISCLOSURE, counted_levels, dataview_scores
    from prudence_cli.explore import ordinal_agreement as agreement

    _check_share("--max-risk", max_risk, zero=False)
    if min_coverage is not None:
        _check_share("--min-coverage", min_coverage, zero=True)
    opened = open_catalog(find_catalog(catalog_dir))
    if opened.is_profiles:
        from prudence_cli.cli.render import epsilon_table
        from prudence_cli.explore import epsilon_choice

        where = (*where, *(f"attack={a}" for a in attacks))
        choice = epsilon_choice(opened, max_risk, where)
        _output(
            choice,
            fmt,
            lambda: epsilon_table(choice, opened.dimension_names, max_risk),
            opened.dimension_names,
        )
        return
    levels = counted_levels(opened, attacks, where)
    scores = dataview_scores(opened, levels, max_risk, where, measure, utility)
    if ordinal:
        measures = ["mean_risk", *[m for m in DISCLOSURE if m in scores.table]]
        if len(measures) < 2:
            raise UserError("--ordinal needs disclosure measures (a unicity attack)")
        result = agreement(scores.table, measures)
        _output(result, fmt, lambda: ordinal_table(result), [])
        return
    table = scores.table.assign(
        meets_min_coverage=(scores.table["kept"] >= min_coverage) if min_coverage else True
    )
    _output(
        table,
        fmt,
        lambda: best_table(scores, opened.dimension_names, min_coverage),
        opened.dimension_names,
    )


@catalog.command("risks")
@_CATALOG_OPTION
@_WHERE_OPTION
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True
)
@_errors
def catalog_risks(catalog_dir: Path | None, where: tuple[str, ...], fmt: str) -> None:
    """Print every user's risk: dataview, dimensions, attack, knowledge, user, risk."""
    import pandas as pd

    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.cli.render import to_csv, to_json
    from prudence_cli.explore.query import numeric_columns, risk_rows

    opened = open_catalog(find_catalog(catalog_dir))
    _needs_risks(opened)
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
@_CATALOG_OPTION
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    help="Output format (default: table on a terminal, csv otherwise).",
)
@_errors
def catalog_releases(catalog_dir: Path | None, fmt: str | None) -> None:
    """List the release ledger: what was released, to whom, when."""
    import pandas as pd

    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.cli.render import print_table, releases_table, to_csv, to_json
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
        "users",
        "pseudonymized",
        "release",
    ]
    frame = pd.DataFrame(
        [
            {**r, "dimensions": " ".join(f"{k}={v}" for k, v in r["dimensions"].items())}
            for r in records
        ],
        columns=columns,
    )
    fmt = fmt or ("table" if sys.stdout.isatty() else "csv")
    if fmt == "table":
        print_table(releases_table(frame))
    elif fmt == "csv":
        click.echo(to_csv(frame), nl=False)
    else:
        click.echo(to_json(frame), nl=False)
    if not records:
        click.echo("No release recorded in this catalog yet.", err=True)


@main.command()
@_CATALOG_OPTION
@click.option("--max-risk", type=float, required=True, help="Tolerated risk R in (0, 1].")
@click.option("--min-irac-u", type=float, help="Fail a level whose i-RAC_U is below this.")
@click.option(
    "--min-coverage",
    type=float,
    help="Allow people above R, but those at or below must hold this share of the data "
    "(else everyone must be at or below R).",
)
@_ATTACK_OPTION
@_WHERE_OPTION
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@_errors
def check(
    catalog_dir: Path | None,
    max_risk: float,
    min_irac_u: float | None,
    min_coverage: float | None,
    attacks: tuple[str, ...],
    where: tuple[str, ...],
    fmt: str,
) -> None:
    """Check a catalog against a risk policy, for CI: exit 0 when every dataview and
    attack level holds it, 1 with the list of those that fail."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.cli.render import to_json
    from prudence_cli.explore import Policy, counted_levels
    from prudence_cli.explore import check as run_check

    _check_share("--max-risk", max_risk, zero=False)
    for name, value in (("--min-irac-u", min_irac_u), ("--min-coverage", min_coverage)):
        if value is not None:
            _check_share(name, value, zero=True)
    opened = open_catalog(find_catalog(catalog_dir))
    _needs_risks(opened)
    levels = counted_levels(opened, attacks, where)
    result = run_check(opened, Policy(max_risk, min_irac_u, min_coverage), levels, where)
    failing = result[result["failures"] != ""]
    if fmt == "json":
        payload = {
            "policy": {
                "max_risk": max_risk,
                "min_irac_u": min_irac_u,
                "min_coverage": min_coverage,
            },
            "checked": len(result),
            "failed": len(failing),
            "ok": bool(failing.empty),
            "failures": json.loads(to_json(failing, opened.dimension_names)),
        }
        click.echo(json.dumps(payload, indent=2))
    else:
        for _, row in failing.iterrows():
            dims = " ".join(f"{d}={row[d]}" for d in opened.dimension_names)
            level = ",".join(
                f"{k}={row[k]}" for k in opened.knowledge_names if isinstance(row.get(k), str)
            )
            click.echo(f"FAIL {row['dataview']} {dims} {row['attack']}[{level}]: {row['failures']}")
        click.echo(
            f"{len(result) - len(failing)} of {len(result)} dataview × attack levels hold the "
            "policy.",
            err=True,
        )
    if not failing.empty:
        sys.exit(1)


@main.command()
@_CATALOG_OPTION
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
@_ATTACK_OPTION
@_WHERE_OPTION
@_errors
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
    from prudence_cli.explore import counted_levels
    from prudence_cli.report.page import write_html, write_png

    _check_share("--max-risk", max_risk, zero=False)
    opened = open_catalog(find_catalog(catalog_dir))
    if opened.is_profiles:
        where = (*where, *(f"attack={a}" for a in attacks))
        levels = []
    else:
        levels = counted_levels(opened, attacks, where)
    count = (write_html if fmt == "html" else write_png)(opened, out, max_risk, levels, where)
    click.echo(f"Report with {count} charts written to {out}.", err=True)


@main.command()
@click.option(
    "--original",
    type=click.Path(path_type=Path),
    required=True,
    help="The original trajectories (CSV: trajectory, location[, time, order]).",
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
    type=click.Path(path_type=Path),
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
@_errors
def evaluate(
    original: Path,
    released: Path,
    config_file: Path | None,
    out: Path,
    max_h: int | None,
    samples: int | None,
    seed: int | None,
    cost: str | None,
) -> None:
    """The empirical risk of a released set of trajectories against the original: the
    distribution of the probability of re-identification per attacker knowledge, its
    cost-normalised version, and the utility of the release (seed 001)."""
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
    result = run_evaluation(original, released, columns, replace(settings, **changes), out)
    for line in result.statements:
        click.echo(line, err=True)
    u = result.utility
    click.echo(
        f"OD coverage {u['coverage']:.3f}, precision {u['precision']:.3f}. Results in {out}.",
        err=True,
    )


def _needs_risks(opened: Any) -> None:
    """Per-person risks exist only in catalogs of risk attacks, not of randomized profiles."""
    if opened.is_profiles:
        raise UserError(
            f"{opened.path} is a catalog of randomized profiles: it has success rates per "
            "setting, not per-person risks; use prudence catalog show / best / report"
        )


def _check_share(name: str, value: float, zero: bool) -> None:
    if not (0 <= value <= 1) or (not zero and value == 0):
        raise UserError(f"{name} {value:g} must be in {'[0, 1]' if zero else '(0, 1]'}")


@main.command()
@click.option(
    "--threshold",
    type=float,
    help="Tolerated risk R in (0, 1]: every released person ends at or below it "
    "(the suppression methods).",
)
@_CATALOG_OPTION
@click.option(
    "--dataview",
    "dataview",
    metavar="ID",
    help="Dataview to release (default: the largest i-RAC_D that can meet R).",
)
@click.option(
    "--attack",
    "attacks",
    multiple=True,
    metavar="NAME",
    help="Count only this assessed attack (repeatable; default: every one).",
)
@_WHERE_OPTION
@click.option(
    "--method",
    type=click.Choice(["suppress-users", "suppress-locations", "randomize"]),
    default="suppress-users",
    show_default=True,
    help="Remove risky people or locations, or (profiles catalogs) add d_χ-private noise.",
)
@click.option("--epsilon", type=float, help="randomize: the privacy parameter ε > 0.")
@click.option(
    "--neighbourhood",
    metavar="N|all",
    default="all",
    show_default=True,
    help="randomize: noise on every location, or on N(b_i, N): the visited ones and the N "
    "of highest affinity.",
)
@click.option(
    "--mechanism",
    type=click.Choice(["randomized_response", "laplace", "geometric"]),
    help="randomize: default randomized_response on boolean profiles, laplace on counts.",
)
@click.option("--seed", type=click.IntRange(min=0), help="randomize: default the catalog's seed.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("release"),
    show_default=True,
    help="Release folder (replaced atomically).",
)
@click.option(
    "--recipient",
    help="Who receives it; earlier releases to them are assessed together with this one.",
)
@click.option(
    "--pseudonymize",
    is_flag=True,
    help="Replace user ids by fresh seeded pseudonyms (mapping kept in the catalog).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress messages.")
@_errors
def sanitize(
    threshold: float | None,
    catalog_dir: Path | None,
    dataview: str | None,
    attacks: tuple[str, ...],
    where: tuple[str, ...],
    method: str,
    epsilon: float | None,
    neighbourhood: str,
    mechanism: str | None,
    seed: int | None,
    out: Path,
    recipient: str | None,
    pseudonymize: bool,
    quiet: bool,
) -> None:
    """Release a dataview with every person at risk above R suppressed, re-assessed to a
    fixpoint; writes the release folder and records it in the catalog's ledger.

    With --method randomize (a catalog of profiles dataviews): release every profile with
    d_χ-private noise of parameter --epsilon, with a report of its utility and of the
    catalog's attacks on it.

    Exit code 0: the release meets the threshold; 1: it cannot (nobody would be left)."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.sanitize.release import SanitizeRequest, run_sanitize

    opened = open_catalog(find_catalog(catalog_dir))
    if method == "randomize":
        suppression = {
            "--attack": bool(attacks),
            "--where": bool(where),
            "--recipient": recipient is not None,
            "--pseudonymize": pseudonymize,
        }
        for name, given in suppression.items():
            if given:
                raise UserError(f"{name} is for the suppression methods, not randomize")
        _randomize(opened, epsilon, neighbourhood, mechanism, dataview, seed, out, threshold)
        return
    randomizing = {"--epsilon": epsilon, "--mechanism": mechanism, "--seed": seed}
    for name, value in randomizing.items():
        if value is not None:
            raise UserError(f"{name} is for --method randomize")
    if threshold is None:
        raise UserError("--threshold R is needed: the tolerated risk in (0, 1]")
    request = SanitizeRequest(threshold, dataview, attacks, where, method, recipient, pseudonymize)

    def step(s: Any) -> None:
        if not quiet:
            click.echo(
                f"pass {s.iteration}: {s.users_above:,} above {threshold:g} "
                f"(highest {s.max_risk:.3g}); removed {s.users_removed:,} people, "
                f"{s.rows_removed:,} rows",
                err=True,
            )

    def announce(choice: str) -> None:
        if not quiet:
            click.echo(f"Dataview {choice}.", err=True)

    result = run_sanitize(opened, request, out, step, announce)
    report = result.report
    if not report:
        click.echo(f"Cannot release: {result.choice}; nothing was written.", err=True)
        sys.exit(1)
    users, data = report["users"], report["data"]
    if not result.met:
        click.echo(
            f"Cannot release: at threshold {threshold:g} nobody of "
            f"{report['dataview']['id']} would be left; nothing was written.",
            err=True,
        )
        sys.exit(1)
    click.echo(
        f"Release {report['release']} written to {result.folder}: {users['released']:,} of "
        f"{users['in_view']:,} people, {data['released']:,.0f} of {data['before']:,.0f} "
        f"{data['coverage']}, highest risk {report['max_risk_after']:.3g} ≤ {threshold:g} "
        f"after {len(report['iterations'])} suppression passes.",
        err=True,
    )


def _randomize(
    opened: Any,
    epsilon: float | None,
    neighbourhood: str,
    mechanism: str | None,
    dataview: str | None,
    seed: int | None,
    out: Path,
    threshold: float | None,
) -> None:
    from prudence_cli.randomized.release import RandomizeRequest, run_randomize

    if epsilon is None:
        raise UserError("--method randomize needs --epsilon E (the privacy parameter, > 0)")
    if threshold is not None:
        raise UserError("--threshold is for the suppression methods, not randomize")
    hood: int | None = None
    if neighbourhood != "all":
        if not neighbourhood.isdigit():
            raise UserError(f"--neighbourhood {neighbourhood}: give a whole number or all")
        hood = int(neighbourhood)
    request = RandomizeRequest(epsilon, hood, mechanism, dataview, seed)
    report = run_randomize(opened, request, out)
    util = report["utility"]
    rates = [r["success_rate"] for r in report["attacks"]["results"]]
    worst = max((r for r in rates if r == r), default=float("nan"))
    click.echo(
        f"Release written to {out}: {report['profiles']['released']:,} "
        f"{report['dataview']['profile']} profiles, {report['mechanism']['name']} "
        f"ε={epsilon:g} on χ={report['mechanism']['chi']}; {util['statistic']} relative "
        f"error {util['relative_error']:.3f} ("
        f"{'admissible' if util['admissible'] else 'NOT admissible'}); worst attack success "
        f"{worst:.3f} over {len(rates)} attack levels (see report.md).",
        err=True,
    )


@main.command()
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
    type=click.Path(path_type=Path),
    required=True,
    help="CSV file to write (.gz to compress).",
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
@_errors
def sample(
    kind: str | None,
    fmt: str | None,
    users: int,
    days: int,
    seed: int,
    start: dt.datetime,
    out: Path,
    towers: Path | None,
    segments: Path | None,
    null_model: bool,
    like: Path | None,
    config_file: Path | None,
) -> None:
    """Write seeded synthetic GPS fixes, call records or map-matched trips over Pisa
    (how the shipped sample data was made), or, with --null-model, random trajectories
    like those of --like (seed 001's null model)."""
    from prudence_cli.io.writers import write_csv
    from prudence_cli.sample import generate_cdr, generate_gps
    from prudence_cli.sample_network import generate_segments

    if null_model:
        from prudence_cli.config.evaluate import TrajectoryColumns, load_evaluate_config
        from prudence_cli.evaluation import null_model as imitate
        from prudence_cli.io.readers import read_trajectories

        if like is None:
            raise click.UsageError("--null-model needs --like FILE, the trajectories to imitate")
        columns = load_evaluate_config(config_file)[0] if config_file else TrajectoryColumns()
        table = read_trajectories(
            like, columns.trajectory, columns.location, columns.time, columns.order
        )
        write_csv(imitate(table, columns, seed), out)
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
    extra: Path | None = None
    if kind == "gps":
        write_csv(generate_gps(users, days, seed, start.date()), out)
    elif kind == "cdr":
        if towers is None:
            raise click.UsageError("a cdr sample needs --towers FILE for the tower table")
        events, table = generate_cdr(users, days, seed, start.date())
        write_csv(events, out)
        write_csv(table, towers)
        extra = towers
    else:
        if segments is None:
            raise click.UsageError("a segments sample needs --segments FILE for the streets")
        trips, streets = generate_segments(users, days, seed, start.date())
        write_csv(trips, out)
        write_csv(streets, segments)
        extra = segments
    click.echo(f"Wrote {out}" + (f" and {extra}" if extra else ""), err=True)


@contextmanager
def _progress(quiet: bool) -> Iterator[Callable[[int, int, str], None] | None]:
    if quiet:
        yield None
        return
    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("starting", total=None)

        def update(done: int, total: int, message: str) -> None:
            bar.update(task, completed=done, total=total or None, description=message)

        yield update
