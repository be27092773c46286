"""What an output file may replace: a command writes over an earlier output of its own
kind, and over nothing else (the input data, the config, a folder) unless `--force`."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from pathlib import Path

from prudence_cli.errors import PrudenceError
from prudence_cli.io.atomic import check_writable, through_link
from prudence_cli.io.dataset import is_gzip


def check_output_file(path: Path, force: bool, ours: Callable[[Path], bool]) -> None:
    """Before any work: PrudenceError unless the file `path` can be written — not a
    folder, and, unless `force`, either new or a file `ours` recognises as an earlier
    output of this command; and its folder takes new files."""
    target = through_link(path)
    check_writable(path, folder=False)
    if target.exists() and not force and not ours(target):
        raise PrudenceError(
            f"{path} exists and is not a file this command wrote (it could be your data or "
            "your config); choose another name, or pass --force to replace it"
        )


def head(path: Path, size: int = 4096) -> bytes:
    """The first `size` bytes of `path`, decompressed when its name ends in .gz; empty
    when it cannot be read."""
    try:
        if is_gzip(path):
            with gzip.open(path, "rb") as handle:
                return handle.read(size)
        with open(path, "rb") as handle:
            return handle.read(size)
    except (OSError, EOFError, zlib.error):
        return b""
