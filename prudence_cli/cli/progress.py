"""The progress bar of long commands: rich on stderr, on a terminal only, and the
messages printed meanwhile (above the bar: a plain write would land inside it). rich is
imported only when a bar may be shown: not with --quiet."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.console import Console

    from prudence_cli.assess import ProgressCallback


_live: list[Console] = []  # the console of the progress bar on screen, if one is


def message(text: str) -> None:
    """A line on stderr; above the progress bar while one is on screen (a plain write
    would land inside it)."""
    if _live:
        _live[-1].print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)
    else:
        click.echo(text, err=True)


@contextmanager
def progress_bar(quiet: bool) -> Iterator[ProgressCallback | None]:
    """A rich progress bar on stderr, as a callback `(done, total, message, unit="")`
    (total 0: not known; unit "bytes": sizes are shown); None with --quiet or when stderr
    is not a terminal (a log file or CI gets no bar, and the library skips the updates).
    Messages meanwhile go through `message`."""
    if quiet:
        yield None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with _compiling_said():
        if not console.is_terminal:
            yield None
            return
        from prudence_cli.cli.bar import bar

        with bar(console, _live) as update:
            yield update


@contextmanager
def _compiling_said() -> Iterator[None]:
    """Say so when the counting kernels are compiled, once per machine (a pause of
    seconds to a minute that no progress bar would explain)."""
    from prudence_cli.engine import jit

    jit.on_compile(
        lambda: message(
            "Compiling the counting kernels for this machine; numba caches them for the "
            "next runs (python -m prudence_cli.warm compiles them all ahead)."
        )
    )
    try:
        yield
    finally:
        jit.on_compile(None)
