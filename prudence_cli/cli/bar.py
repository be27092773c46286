"""The rich progress bar itself (see `progress`, which imports this module only when
a bar is shown)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich import filesize
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

if TYPE_CHECKING:
    from prudence_cli.assess import ProgressCallback


class _Count(ProgressColumn):
    """`done/total` of a step with a known total: counts, or sizes when reading bytes."""

    def render(self, task: Task) -> Text:
        if task.total is None:
            return Text("")
        if task.fields.get("unit") == "bytes":
            done, total = filesize.decimal(int(task.completed)), filesize.decimal(int(task.total))
            return Text(f"{done}/{total}")
        return Text(f"{int(task.completed):,}/{int(task.total):,}")


@contextmanager
def bar(console: Console, live: list[Console]) -> Iterator[ProgressCallback]:
    """A transient bar on `console`, as the callback of `progress_bar`; `console` is
    in `live` while the bar is on screen."""
    columns = (
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        _Count(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as shown:
        task = shown.add_task("starting", total=None)

        def update(done: int, total: int, message: str, unit: str = "") -> None:
            shown.update(task, completed=done, total=total or None, description=message, unit=unit)

        live.append(console)
        try:
            yield update
        finally:
            live.remove(console)
