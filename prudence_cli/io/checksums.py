"""sha256 of input and catalog files.

`sha256_file` computes each file version once per run (keyed on path, size and
modification time), for inputs read several times. `sha256_fresh` reads the file every
time: for checking a file against a recorded hash, where an edit within the same clock
tick as an earlier read must not go unseen.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    """sha256 hex digest of a file (computed once per file version in a run)."""
    stat = Path(path).stat()
    return _sha256(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


def sha256_fresh(path: Path) -> str:
    """sha256 hex digest of a file as it is now on disk (never cached)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=256)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    return sha256_fresh(Path(path))
