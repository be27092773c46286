"""Vectors written to disk as they are made and mapped back read-only: what a run holds
of them in its own memory is the pages it reads, which the system can take back.

The risks of a dataview's levels (assess._assess_risks) are kept so: each is 8 bytes a
person, and a view has a vector for each attack level until its risks table is written.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

import numpy as np


class Spilled(Mapping[str, np.ndarray]):
    """Named vectors kept as `.npy` files in `folder` (made here, removed by `close`),
    each read back as a read-only memory map. A write that fails naming no file (a full
    disk) is said of `shown` (the catalog the folder is in)."""

    def __init__(self, folder: Path, shown: Path | None = None) -> None:
        folder.mkdir()
        self.folder = folder
        self.shown = folder if shown is None else shown  # named by an error that names none
        self._paths: dict[str, Path] = {}
        self._written = 0

    def add(self, key: str, values: np.ndarray) -> np.ndarray:
        """Keep `values` as `key` (replacing any kept so); returns them as mapped."""
        path = self.folder / f"{self._written}.npy"
        self._written += 1
        try:
            np.save(path, np.ascontiguousarray(values), allow_pickle=False)
        except OSError as exc:
            if exc.filename is not None:
                raise
            # a write stopped part-way (a full disk) names no file: the disk is `shown`'s
            raise OSError(exc.errno, exc.strerror, str(self.shown)) from exc
        self._paths[key] = path
        return self[key]

    def __getitem__(self, key: str) -> np.ndarray:
        values: np.ndarray = np.load(self._paths[key], mmap_mode="r", allow_pickle=False)
        return values

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def close(self) -> None:
        """The files removed (a vector mapped from them stays readable where the system
        keeps a removed file while it is mapped, as POSIX systems do)."""
        self._paths.clear()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Spilled:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
