"""What every command shares: domain errors as exit codes, the progress bar, the
catalog options and the table/CSV/JSON output switch."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from prudence_cli.errors import PrudenceError

F = TypeVar("F", bound=Callable[..., Any])
INTERRUPTED = 130


class UserError(click.ClickException):
    """A domain error shown as `Error: message`, exit code 2."""

    exit_code = 2


def handle_errors(func: F) -> F:
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


CATALOG_OPTION = click.option(
    "--catalog",
    "catalog_dir",
    type=click.Path(path_type=Path),
    help="Catalog folder (default: ./catalog, or the only catalog inside it).",
)
WHERE_OPTION = click.option(
    "--where",
    "where",
    multiple=True,
    metavar="KEY=VALUE",
    help="Keep rows whose dimension or knowledge KEY equals VALUE (repeatable).",
)


FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    help="Output format (default: table on a terminal, csv otherwise).",
)
ATTACK_OPTION = click.option(
    "--attack",
    "attacks",
    multiple=True,
    metavar="NAME",
    help="Only this assessed attack (repeatable; default: every one).",
)


def output(frame: Any, fmt: str | None, table: Callable[[], Any], typed: list[str]) -> None:
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


# what to do with a catalog of randomized profiles where per-person risks are needed
PROFILES_HINT = (
    "a catalog of randomized profiles has success rates per setting, not per-person risks: "
    "use prudence catalog show / best / report, or sanitize --method randomize"
)


def check_share(name: str, value: float, zero: bool) -> None:
    if not (0 <= value <= 1) or (not zero and value == 0):
        raise UserError(f"{name} {value:g} must be in {'[0, 1]' if zero else '(0, 1]'}")


@contextmanager
def progress_bar(quiet: bool) -> Iterator[Callable[[int, int, str], None] | None]:
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
