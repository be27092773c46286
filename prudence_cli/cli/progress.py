"""The progress of long commands on stderr: a rich bar on a terminal, and the messages
printed meanwhile (above the bar: a plain write would land inside it); elsewhere (a log
file, a CI job) a line a minute while a command runs. rich is imported only when a bar
may be shown: not with --quiet."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.console import Console

    from prudence_cli.assess import ProgressCallback


_live: list[Console] = []  # the console of the progress bar on screen, if one is

LOG_EVERY = 60.0  # seconds between the progress lines of a command whose stderr is a log


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
    (total 0: not known; unit "bytes": sizes are shown); None with --quiet. When stderr
    is not a terminal (a log file, a CI job), no bar but a line every LOG_EVERY seconds
    (`logged`). Messages meanwhile go through `message`."""
    if quiet:
        yield None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with _compiling_said():
        if not console.is_terminal:
            with logged() as log:
                yield log
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


@contextmanager
def logged() -> Iterator[ProgressCallback]:
    """The progress of a command whose stderr is not a terminal, as `progress_bar`'s
    callback: every LOG_EVERY seconds, a line with the time since it began,
    the step it is at and how far (`_Step`). A command done sooner writes none; a long one
    shows in its log that it goes on — also through a step of many minutes that reports
    nothing meanwhile (a level counted on a cluster), which some CI services would take
    for a job hung and stop."""
    step = _Step()
    stop = threading.Event()

    def write() -> None:
        while not stop.wait(LOG_EVERY):
            line = step.line()
            if line is not None:
                try:
                    message(line)
                except OSError:  # stderr closed (a pipe whose reader left): no more lines
                    return

    writer = threading.Thread(target=write, name="prudence-progress", daemon=True)
    writer.start()
    try:
        yield step
    finally:
        stop.set()
        writer.join()


class _Step:
    """The step a command is at, as its progress callback last said it."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.said: tuple[int, int, str, str] | None = None

    def __call__(self, done: int, total: int, message: str, unit: str = "") -> None:
        self.said = (done, total, message, unit)  # one assignment: read whole by `line`

    def line(self) -> str | None:
        """e.g. `[12m 05s] d1 grid=250m time=1h visit[h=2] (3/8)`; None before any step."""
        said = self.said
        if said is None:
            return None
        done, total, text, unit = said
        minutes, seconds = divmod(int(time.monotonic() - self.began), 60)
        count = ""
        if total and unit == "bytes":
            from rich import filesize

            count = f" ({filesize.decimal(done)}/{filesize.decimal(total)})"
        elif total:
            count = f" ({done:,}/{total:,})"
        return f"[{minutes}m {seconds:02d}s] {text}{count}"
