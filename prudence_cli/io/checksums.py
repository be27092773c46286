"""sha256 of input and catalog files.

`sha256_file` computes each file version once per run (keyed on path, size and
modification time), for inputs read several times; `sha256_ahead` starts that in a
background thread, so that hashing a large input overlaps with the work that reads it
(hashlib and file reads release the GIL); `remember` records a digest computed in
another process (a Dask worker that read the file), so the file is not read here again.
`sha256_fresh` reads the file every time: for checking a file against a recorded hash,
where an edit within the same clock tick as an earlier read must not go unseen.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from pathlib import Path

_lock = threading.Lock()
_digests: dict[tuple[str, int, int], Future[str]] = {}  # one per file version


def sha256_file(path: Path) -> str:
    """sha256 hex digest of a file (computed once per file version in a run: a second
    caller waits for the first)."""
    key = file_version(path)
    with _lock:
        future = _digests.get(key)
        mine = future is None
        if future is None:
            future = _digests[key] = Future()
    if mine:
        try:
            future.set_result(sha256_fresh(Path(key[0])))
        except BaseException as exc:
            with _lock:
                del _digests[key]
            future.set_exception(exc)
            raise
    return future.result()


def file_version(path: Path) -> tuple[str, int, int]:
    """A file version as `sha256_file` keys it: resolved path, size, modification time."""
    stat = Path(path).stat()
    return str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns


def remember(version: tuple[str, int, int], digest: str) -> None:
    """Take `digest` as the sha256 of the file `version` (see `file_version`), hashed by
    another process that read it: a later `sha256_file` of that version returns it. A
    file that has changed since, or that this process sees otherwise, has another
    version and is hashed here."""
    done: Future[str] = Future()
    done.set_result(digest)
    with _lock:
        _digests.setdefault(version, done)


def sha256_ahead(paths: Iterable[Path]) -> None:
    """Hash `paths` with `sha256_file` in a background thread (a daemon: it never holds
    up an exit); an error is left for the caller who asks for the digest."""

    def run() -> None:
        for path in paths:
            try:
                sha256_file(path)
            except Exception:  # noqa: BLE001 - raised again to whoever asks
                continue

    threading.Thread(target=run, name="sha256-ahead", daemon=True).start()


def sha256_fresh(path: Path) -> str:
    """sha256 hex digest of a file as it is now on disk (never cached)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
