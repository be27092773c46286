"""Atomic writes: a reader never sees a half-written file or folder.

Files are written to a temporary name in the same folder and renamed into place.
Folders (catalogs, releases) are built under a hidden temporary name and swapped in
at the end; on any error, or Ctrl-C, the temporary folder is removed and an existing
folder is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from prudence_cli.errors import PrudenceError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_folder(target: Path, is_replaceable: Callable[[Path], bool]) -> Iterator[Path]:
    """Yield a temporary folder that replaces `target` when the block succeeds.

    An existing `target` is replaced only if it is empty or `is_replaceable(target)`
    (e.g. it is an earlier catalog); otherwise PrudenceError, before any work.
    """
    target = Path(target)
    if target.exists() and not (
        target.is_dir() and (not any(target.iterdir()) or is_replaceable(target))
    ):
        raise PrudenceError(
            f"{target} exists and is not a folder this command wrote; "
            "choose another output folder or remove it"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, old / "previous")
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
