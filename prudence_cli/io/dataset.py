"""An input named as a dataset: one file, a folder of files, or a glob pattern.

Exports of mobility data come split: a file per day, per region or per database shard,
often as a folder of Parquet parts. `input.path` may name

- a file, read as it is whatever its name;
- a folder: every `.csv`, `.csv.gz`, `.tsv`, `.tsv.gz` or `.parquet` file in it or in
  its subfolders (as Hive-partitioned exports lay them out: `day=2024-05-01/part-0.parquet`;
  linked folders are followed, each once), leaving out hidden files and folders and the
  bookkeeping whose name starts with `_` or `.` (`_SUCCESS`, `_temporary/`, `.part-0.crc`);
- a glob pattern (`exports/2024-05-*.csv.gz`, `parts/**/*.parquet`): the files it
  matches, leaving out the same hidden and bookkeeping files and folders below the
  pattern's fixed part, unless the pattern itself names one (`_staging/*.csv`).

The files are read in the order of their paths, each as a file named alone would be
(its errors name it and its line), and make one input: a user id found in two files is
one person.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from prudence_cli.errors import InputError

DATA_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".parquet")
_PATTERN = frozenset("*?[")


def is_gzip(path: Path | str) -> bool:
    """Whether the file is gzipped by its name (`.gz`, `.GZ` alike)."""
    return str(path).lower().endswith(".gz")


def is_parquet(path: Path | str) -> bool:
    """Whether the file is Parquet by its name (`.parquet`, `.PARQUET` alike)."""
    return str(path).lower().endswith(".parquet")


def is_pattern(path: Path) -> bool:
    """Whether `path` is a glob pattern rather than the name of a file or folder."""
    return any(c in _PATTERN for c in str(path)) and not path.exists()


def data_files(path: Path) -> tuple[Path, ...]:
    """The files the input `path` names (see the module docstring), in path order;
    InputError when it names none."""
    if is_pattern(path):
        root = _fixed_part(path)
        named = any(bookkeeping(part) for part in path.relative_to(root).parts)
        found = sorted(Path(p) for p in glob.glob(str(path), recursive=True))
        files = tuple(
            p
            for p in found
            if p.is_file()
            and (named or not any(bookkeeping(part) for part in p.relative_to(root).parts))
        )
        if not files:
            raise InputError(
                path, "matches no file; input.path names a file, a folder or a glob pattern"
            )
        return files
    if path.is_dir():
        files = tuple(p for p in _walked(path) if _is_data(p.name))
        if not files:
            raise InputError(
                path,
                "is a folder with no data file in it: input.path reads every "
                f"{', '.join(DATA_SUFFIXES)} file of a folder",
            )
        return files
    return (path,)


def _fixed_part(pattern: Path) -> Path:
    """The folders of a glob pattern before its first wildcard."""
    parts = pattern.parts
    fixed = next(k for k, part in enumerate(parts) if any(c in _PATTERN for c in part))
    return Path(*parts[:fixed]) if fixed else Path(".")


def _walked(folder: Path) -> list[Path]:
    """The files under `folder`, in path order, without hidden or bookkeeping files and
    folders; linked folders are followed, a folder reached twice (a loop) read once."""
    seen: set[str] = set()
    files: list[Path] = []
    for top, folders, names in os.walk(folder, followlinks=True):
        real = os.path.realpath(top)
        if real in seen:
            folders[:] = []
            continue
        seen.add(real)
        folders[:] = [f for f in folders if not bookkeeping(f)]
        files.extend(Path(top) / n for n in names if not bookkeeping(n))
    return sorted(p for p in files if p.is_file())


def _is_data(name: str) -> bool:
    return name.lower().endswith(DATA_SUFFIXES)


def bookkeeping(name: str) -> bool:
    """Hidden files and the marker and checksum files that Spark, Hive and Hadoop write
    beside the data."""
    return name.startswith((".", "_"))
