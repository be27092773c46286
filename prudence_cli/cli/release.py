"""`prudence check` and `prudence sanitize`: hold a catalog to a risk policy, and
release a dataview that meets it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from prudence_cli.cli.common import (
    ATTACK_OPTION,
    CATALOG_OPTION,
    MAX_RISK_OPTION,
    PROFILES_HINT,
    QUIET_OPTION,
    SUMMARY_FORMAT_OPTION,
    WHERE_OPTION,
    FormatChoice,
    LocalPath,
    UserError,
    check_share,
    echo_json,
    handle_errors,
    one_value,
)
from prudence_cli.units import as_given, percent


@click.command()
@CATALOG_OPTION
@MAX_RISK_OPTION
@click.option("--min-irac-u", type=float, help="Fail a level whose i-RAC_U is below this.")
@click.option(
    "--min-coverage",
    type=float,
    help="Allow people above R, but a release at R (suppressed to the fixpoint) must keep "
    "this share of the data (else everyone must be at or below R).",
)
@ATTACK_OPTION
@WHERE_OPTION
@click.option(
    "--format",
    "fmt",
    type=FormatChoice(["table", "json"], {"text": "table"}),
    default="table",
    show_default=True,
    help="table: a FAIL line per failing level on stdout, the verdict on stderr; json: "
    "the verdict, the failures and the levels not covered on stdout.",
)
@QUIET_OPTION
@handle_errors
def check(
    catalog_dir: Path | None,
    max_risk: float | None,
    min_irac_u: float | None,
    min_coverage: float | None,
    attacks: tuple[str, ...],
    where: tuple[str, ...],
    fmt: str,
    quiet: bool,
) -> None:
    """Check a catalog against a release policy, for CI: exit 0 when every dataview and
    counted attack level holds it, 1 with the list of those that fail. The policy is the
    config's `policy:`, each option given in place of its key."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.catalog.query import assessed_levels, catalog_policy, numeric_columns
    from prudence_cli.catalog.rows import Rows
    from prudence_cli.cli.pipes import to_json
    from prudence_cli.sanitize.check import CheckRows
    from prudence_cli.sanitize.check import check as run_check

    for name, value in (("--min-irac-u", min_irac_u), ("--min-coverage", min_coverage)):
        if value is not None:
            check_share(name, value, zero=True)
    if max_risk is not None:
        check_share("--max-risk", max_risk, zero=False)
    opened = open_catalog(find_catalog(catalog_dir), "risks", PROFILES_HINT)
    policy, source = catalog_policy(opened, max_risk, attacks, where, min_coverage, min_irac_u)
    assert policy.max_risk is not None
    max_risk = policy.max_risk
    if not quiet:
        click.echo(f"Policy ({source}): {policy.describe()}.", err=True)
    levels = assessed_levels(opened, policy.attacks, policy.where)
    result = run_check(opened, policy, levels, policy.where)
    checked = result.counted
    failing = checked.failing
    warnings = result.warned
    sampled = any(row["sampled"] for row in checked.records)
    typed = numeric_columns(opened)
    if fmt == "json":

        def rows(found: CheckRows) -> list[dict[str, Any]]:
            records: list[dict[str, Any]] = json.loads(
                to_json(Rows(found.columns, {}, found.records), typed)
            )
            return records

        payload = {
            "policy": policy.to_json() | {"source": source},
            "checked": len(checked),
            "failed": len(failing),
            "ok": not failing.records,
            "lower_bound": sampled,
            "failures": rows(failing),
            "not_covered": rows(warnings),
        }
        echo_json(payload)
    else:
        for row in failing.records:
            click.echo(f"FAIL {_row_name(opened, row)}: {row['failures']}")
    by_level: dict[str, list[dict[str, Any]]] = {}
    for row in warnings.records:
        by_level.setdefault(_level_name(opened, row), []).append(row)
    for level, group in by_level.items():
        views = ", ".join(row["dataview"] for row in group)
        highest = max(row["max_risk_released"] for row in group)
        click.echo(
            f"Warning: {level} (not counted) puts people the policy releases above "
            f"{max_risk:g} in {_count(len(group), 'dataview')} ({views}; highest "
            f"{highest:.3g}): not covered by this policy.",
            err=True,
        )
    if fmt != "json" and not quiet:
        click.echo(
            f"{len(checked) - len(failing)} of {len(checked)} dataview × counted attack levels "
            "hold the policy"
            + (" (risks of sampled levels are lower bounds)" if sampled else "")
            + (
                f"; {_count(len(by_level), 'assessed level')} "
                f"not counted put someone above {max_risk:g}: the policy does not cover them."
                if len(warnings)
                else "."
            ),
            err=True,
        )
    if failing.records:
        sys.exit(1)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _row_name(opened: Any, row: dict[str, Any]) -> str:
    dims = " ".join(f"{d}={row[d]}" for d in opened.dimension_names)
    return f"{row['dataview']} {dims} {_level_name(opened, row)}"


def _level_name(opened: Any, row: dict[str, Any]) -> str:
    level = ",".join(f"{k}={row[k]}" for k in opened.knowledge_names if isinstance(row.get(k), str))
    return f"{row['attack']}[{level}]"


@click.command()
@click.option(
    "--threshold",
    "--max-risk",
    "threshold",
    type=float,
    multiple=True,
    callback=one_value,
    help="Tolerated risk R in (0, 1]: every released person ends at or below it "
    "(the suppression methods; default: the config's policy.max_risk).",
)
@CATALOG_OPTION
@click.option(
    "--dataview",
    "dataview",
    metavar="ID",
    help="Dataview to release (default: the one whose release keeps the most data, as "
    "ranked by catalog best).",
)
@click.option(
    "--attack",
    "attacks",
    multiple=True,
    metavar="NAME",
    help="Count only this assessed attack (repeatable; default: the config's policy, "
    "else every one).",
)
@WHERE_OPTION
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
    type=LocalPath(path_type=Path),
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
@click.option(
    "--as",
    "file_format",
    type=click.Choice(["csv", "parquet"]),
    help="File format of the released tables, dataview and locations (default: csv). "
    "--format is what the command prints.",
)
@SUMMARY_FORMAT_OPTION
@QUIET_OPTION
@handle_errors
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
    file_format: str | None,
    fmt: str | None,
    quiet: bool,
) -> None:
    """Release a dataview with every person at risk above R suppressed, re-assessed to a
    fixpoint; writes the release folder (the dataview and its locations as CSV or
    Parquet, a GeoJSON of the places released, the certificate) and records it in the
    catalog's ledger.

    With --method randomize (a catalog of profiles dataviews): release every profile with
    d_χ-private noise of parameter --epsilon, with a report of its utility and of the
    catalog's attacks on it.

    Exit code 0: the release meets the threshold; 1: it cannot (nobody would be left)."""
    from prudence_cli.catalog import find_catalog, open_catalog
    from prudence_cli.catalog.query import catalog_policy
    from prudence_cli.cli.progress import progress_bar
    from prudence_cli.cli.render import release_summary
    from prudence_cli.config.mobility import KEPT_KS
    from prudence_cli.io.atomic import check_writable
    from prudence_cli.sanitize.release import SanitizeRequest, run_sanitize
    from prudence_cli.sanitize.report import kept_and_moved

    opened = open_catalog(find_catalog(catalog_dir))
    check_writable(out)  # before computing: a release that cannot be written is no release
    if method == "randomize":
        suppression = {
            "--attack": bool(attacks),
            "--where": bool(where),
            "--pseudonymize": pseudonymize,
            "--as": file_format is not None,
        }
        for name, given in suppression.items():
            if given:
                raise UserError(f"{name} is for the suppression methods, not randomize")
        _randomize(
            opened,
            epsilon,
            neighbourhood,
            mechanism,
            dataview,
            seed,
            out,
            threshold,
            recipient,
            fmt,
            quiet,
        )
        return
    randomizing = {"--epsilon": epsilon, "--mechanism": mechanism, "--seed": seed}
    for name, value in randomizing.items():
        if value is not None:
            raise UserError(f"{name} is for --method randomize")
    if threshold is not None:
        check_share("--threshold", threshold, zero=False)
    policy, source = catalog_policy(opened, threshold, attacks, where)
    assert policy.max_risk is not None
    threshold = policy.max_risk
    say = _say(quiet)
    say(f"Policy ({source}): {policy.describe()}.")
    request = SanitizeRequest(
        threshold,
        dataview,
        policy.attacks,
        policy.where,
        method,
        recipient,
        pseudonymize,
        policy.min_coverage,
        file_format or "csv",
    )
    with progress_bar(quiet) as bar:

        def step(s: Any) -> None:
            say(
                f"pass {s.iteration}: {s.users_above:,} above {threshold:g} "
                f"(highest {s.max_risk:.3g}); removed {s.users_removed:,} people, "
                f"{s.rows_removed:,} rows"
            )
            if bar is not None:
                bar(0, 0, f"suppression pass {s.iteration + 1}")

        def announce(choice: str) -> None:
            say(f"Dataview {choice}.")
            if bar is not None:
                bar(0, 0, "suppressing to the fixpoint")

        result = run_sanitize(opened, request, out, step, announce, bar)
    report = result.report
    if report is None or not result.met:
        why = _why_not(result, policy.min_coverage, threshold)
        if fmt == "json":
            echo_json(release_summary(result, why))
        click.echo(f"Cannot release: {why}; nothing was written.", err=True)
        sys.exit(1)
    users, data = report.users, report.data
    bound = " (a lower bound: some levels were sampled)" if report.sampled else ""
    if fmt == "json":
        echo_json(release_summary(result))
    else:
        say(
            f"Release {report.release} written to {result.folder}: {users.released:,} of "
            f"{users.in_view:,} people, {data.released:,.0f} of {data.before:,.0f} "
            f"{data.coverage}, highest risk {report.max_risk_after:.3g}{bound} ≤ {threshold:g} "
            f"under {_count(len(report.levels_counted), 'counted attack level')}, after "
            f"{_count(len(report.iterations), 'suppression pass', 'suppression passes')}."
        )
        kept, moved = kept_and_moved(report)
        if kept or moved:
            say(
                "What it still tells an analyst (Kolmogorov–Smirnov between the dataview and "
                f"the release; kept: at most {KEPT_KS:g}): "
                + "; ".join(
                    f"{word} {', '.join(names)}"
                    for word, names in (("kept", kept), ("moved", moved))
                    if names
                )
                + "."
            )
    for level in report.not_covered:
        click.echo(
            f"Warning: not covered by this release: {level.level} (not counted) puts "
            f"{'at least ' if level.sampled else ''}{level.users_above:,} released people "
            f"above {threshold:g} (highest {level.max_risk:.3g}"
            f"{', sampled: a lower bound' if level.sampled else ''}); the release is safe "
            "only against the counted levels.",
            err=True,
        )
    for note in report.notes:
        click.echo(f"Note: {note}", err=True)


def _say(quiet: bool) -> Callable[[str], None]:
    """A message on stderr, unless --quiet."""
    from prudence_cli.cli.progress import message

    def say(text: str) -> None:
        if not quiet:
            message(text)

    return say


def _why_not(result: Any, min_coverage: float | None, threshold: float) -> str:
    """Why a suppression release was not written, in words."""
    report = result.report
    if report is None:
        return str(result.choice)
    users, data = report.users, report.data
    if (
        min_coverage is not None
        and users.released > 0
        and data.before
        and report.max_risk_after <= threshold
    ):
        return (
            f"a release of {report.dataview.id} at threshold {threshold:g} would keep "
            f"{percent(data.released / data.before)} of the {data.coverage}, below the policy's "
            f"min_coverage {as_given(min_coverage)}"
        )
    return f"at threshold {threshold:g} nobody of {report.dataview.id} would be left"


def _randomize(
    opened: Any,
    epsilon: float | None,
    neighbourhood: str,
    mechanism: str | None,
    dataview: str | None,
    seed: int | None,
    out: Path,
    threshold: float | None,
    recipient: str | None,
    fmt: str | None,
    quiet: bool,
) -> None:
    from prudence_cli.catalog.query import numeric_columns
    from prudence_cli.cli.render import randomized_summary
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
    request = RandomizeRequest(epsilon, hood, mechanism, dataview, seed, recipient)
    report = run_randomize(opened, request, out)
    if fmt == "json":
        echo_json(randomized_summary(report, out, numeric_columns(opened)))
        return
    util = report.utility
    rates = [r.success_rate for r in report.attacks]
    worst = max((r for r in rates if r == r), default=float("nan"))
    _say(quiet)(
        f"Release written to {out}: {report.profiles.released:,} "
        f"{report.profile} profiles, {report.mechanism.name} "
        f"ε={epsilon:g} on χ={report.mechanism.chi}; {util.statistic} relative "
        f"error {util.relative_error:.3f} ("
        f"{'admissible' if util.admissible else 'NOT admissible'}); worst attack success "
        f"{worst:.3f} over {len(rates)} attack levels (see report.md)."
    )
