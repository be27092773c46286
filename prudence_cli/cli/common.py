"""What every command shares: errors as exit codes, the catalog options and the
table/CSV/JSON output switch (the progress bar: `progress`). Light to import: rich and
pandas are loaded by what needs them, so a command that prints CSV or JSON loads neither.

Exit codes, one meaning each: 0 done; 1 a policy is not met (the commands say when);
2 bad input, usage or environment — a domain error, or an OSError (a path that cannot
be read or written, a full disk), with a message naming the path; 3 an internal error,
a one-line message and the traceback in a log file; 128 + N when stopped by signal N
(130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), after the same clean-up. A closed stdout
(`prudence catalog risks | head -1`) ends quietly with 0, as `cat` does."""

from __future__ import annotations

import datetime as dt
import errno
import functools
import importlib
import json
import os
import platform
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from prudence_cli import __version__
from prudence_cli.errors import PrudenceError

F = TypeVar("F", bound=Callable[..., Any])
INTERRUPTED = 130
INTERNAL = 3
# signals that stop a run the way Ctrl-C does: temporary files removed, nothing half-written
STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class LazyGroup(click.Group):
    """A command group that imports a command's module when the command is run or
    listed: `prudence check` imports neither the assessment nor the report commands.
    `lazy` maps each command's name to where it is, as "module:attribute"."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, _, name = self.lazy[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), name), cmd_name)
        return self.commands.get(cmd_name)


class UserError(click.ClickException):
    """A domain error shown as `Error: message`, exit code 2."""

    exit_code = 2


class InternalError(click.ClickException):
    """A bug: `Error: message` naming the command and the log of its traceback, exit 3."""

    exit_code = INTERNAL


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread so that a run cleans up as on Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def handle_errors(func: F) -> F:
    """Turn errors into the exit codes of the module docstring, each with a one-line
    message on stderr; SIGTERM and SIGHUP stop the command as Ctrl-C does."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with _signals_stop():
                return func(*args, **kwargs)
        except PrudenceError as exc:
            raise UserError(str(exc)) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # the reader of stdout is gone: `| head`
                _silence_stdout()
                sys.exit(0)
            raise UserError(os_error_message(exc, kwargs.get("out"))) from None
        except Stopped as exc:
            name = signal.Signals(exc.signum).name
            click.echo(f"Stopped by {name}: nothing was written.", err=True)
            sys.exit(128 + exc.signum)
        except KeyboardInterrupt:
            click.echo("Interrupted: nothing was written.", err=True)
            sys.exit(INTERRUPTED)
        except MemoryError as exc:  # the machine, not the tool: say what helps
            raise UserError(_out_of_memory(exc)) from None
        except Exception as exc:
            raise InternalError(_internal_message(exc, kwargs.get("out"))) from None

    return wrapper  # type: ignore[return-value]


def _out_of_memory(exc: MemoryError) -> str:
    detail = f" ({_one_line(exc)})" if str(exc) else ""
    return (
        f"{_command_name()} ran out of memory{detail}; nothing was written. Run it where "
        "there is more memory, or with less at once: engine.memory sizes the counting to "
        "it, a Parquet copy of the input (or input.cache: parquet) reads in less, and "
        "--engine dask spreads the reading and the counting over machines (docs/scaling.md)"
    )


@contextmanager
def _signals_stop() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `Stopped` in the main thread while the block runs; a
    second one during the clean-up is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        for number in STOPPING:
            signal.signal(number, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {number: signal.signal(number, stop) for number in STOPPING}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


_OS_ADVICE = {
    errno.ENOSPC: "no space left on the device; free some space, or write to another disk",
    errno.EDQUOT: "disk quota exceeded; free some space, or write to another disk",
    errno.EACCES: "permission denied; choose a path you may use, or change its permissions",
    errno.EPERM: "operation not permitted; choose a path you may use, or change its permissions",
    errno.EROFS: "read-only file system; choose a path on a writable disk",
    errno.ENOENT: "no such file or folder; check the path",
    errno.EISDIR: "a folder where a file is expected; give a file name",
    errno.ENOTDIR: "a file where a folder is expected; check the path",
}


def os_error_message(exc: OSError, out: Any = None) -> str:
    """One line naming the path (the command's --out when the error names none) and
    what to do."""
    from prudence_cli.io.atomic import shown_path

    path = exc.filename if exc.filename is not None else out
    advice = _OS_ADVICE.get(exc.errno or 0, exc.strerror or str(exc) or type(exc).__name__)
    return f"{shown_path(path)}: {advice}" if path is not None else advice


def _command_name() -> str:
    context = click.get_current_context(silent=True)
    words = context.command_path.split()[1:] if context is not None else []
    return " ".join(["prudence", *words])


def _internal_message(exc: Exception, out: Any) -> str:
    """Write the traceback to a log file beside the output (else in $TMPDIR); the one
    line that says so."""
    command = _command_name()
    text = (
        f"{command} ({__version__}, Python {platform.python_version()}, "
        f"{dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')})\n"
        f"arguments: {sys.argv[1:]}\n\n" + "".join(traceback.format_exception(exc))
    )
    log = None
    folders = [Path(out).parent] if isinstance(out, Path) else []
    for folder in [*folders, Path(tempfile.gettempdir())]:
        try:
            fd, name = tempfile.mkstemp(prefix="prudence-error-", suffix=".log", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            log = name
            break
        except OSError:
            continue
    where = (
        f"the traceback is in {log}: please report it with that file"
        if log
        else "no log could be written: please report it"
    )
    return f"internal error in {command}: {type(exc).__name__}: {_one_line(exc)} — a bug; {where}"


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:199] + "…"


class LocalPath(click.Path):
    """A path on this machine: what the commands write goes there, never to an object
    store (a URL is refused, not taken for a folder named `s3:`)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from prudence_cli.io.remote import is_url

        if isinstance(value, str) and is_url(value):
            self.fail(
                f"{value!r} is a URL: outputs are written to a local path (copy them to the "
                "store afterwards)",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


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


def one_value(ctx: click.Context, param: click.Parameter, values: tuple[float, ...]) -> Any:
    """A repeatable option's single value: `--threshold 0.3 --max-risk 0.9` (synonyms) is
    an error, not a silent choice of the last."""
    if len(set(values)) > 1:
        given = ", ".join(f"{v:g}" for v in values)
        raise click.BadParameter(f"given with different values ({given}): give one")
    return values[0] if values else None


MAX_RISK_OPTION = click.option(
    "--max-risk",
    "--threshold",
    "max_risk",
    type=float,
    multiple=True,
    callback=one_value,
    help="Tolerated risk R in (0, 1] (default: the config's policy.max_risk).",
)
FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    help="Output format (default: table on a terminal, csv otherwise).",
)
QUIET_OPTION = click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="Only warnings and errors on stderr: no progress (bar or log lines), no messages.",
)
# commands that write files print a summary of what they did: words on stderr, or JSON
SUMMARY_FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["json"]),
    help="json: the summary as JSON on stdout (default: in words on stderr).",
)


class FormatChoice(click.Choice):
    """A --format choice that also takes an older word for one of its choices, unlisted
    (`check --format text`, now `table`)."""

    def __init__(self, choices: list[str], aliases: dict[str, str]) -> None:
        super().__init__(choices)
        self.aliases = aliases

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert(self.aliases.get(value, value), param, ctx)


class Risk(click.ParamType):
    """A risk written as a number or a fraction (`1/3`: risks are 1/k, and 0.33 is not
    1/3)."""

    name = "risk"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            return value
        top, slash, bottom = str(value).partition("/")
        try:
            return int(top) / int(bottom) if slash else float(value)
        except (ValueError, ZeroDivisionError):
            self.fail(f"{value!r} is not a number or a fraction like 1/3", param, ctx)


def echo_json(payload: Any) -> None:
    """A JSON document on stdout (a number that is not one, NaN, as null)."""
    click.echo(json.dumps(_finite(payload), indent=2, default=str, allow_nan=False))


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if hasattr(value, "item"):  # a numpy number
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


ATTACK_OPTION = click.option(
    "--attack",
    "attacks",
    multiple=True,
    metavar="NAME",
    help="Only this assessed attack (repeatable; default: every one).",
)


def output(frame: Any, fmt: str | None, table: Callable[[], Any], typed: list[str]) -> None:
    """A table on a terminal (or --format table), else CSV or JSON on stdout. `frame`
    is a DataFrame or catalog `Rows`; `table` builds the rich table(s), called only for
    a table."""
    from prudence_cli.cli.pipes import to_csv, to_json

    fmt = fmt or ("table" if sys.stdout.isatty() else "csv")
    if fmt == "table":
        from prudence_cli.cli.render import print_table

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
