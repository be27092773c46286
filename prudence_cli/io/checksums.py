"""sha256 of input and catalog files, computed once per file version in a run."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    """sha256 hex digest of a file (computed once per file version in a run)."""
    stat = Path(path).stat()
    return _sha256(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
