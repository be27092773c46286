"""An input named as a dataset: one file, a folder of files, or a glob pattern.

Exports of mobility data come split: a file per day, per region or per database shard,
often as a folder of Parquet parts. `input.path` may name

- a file, read as it is whatever its name;
- a folder: every `.csv`, `.csv.gz`, `.tsv`, `.tsv.gz` or `.parquet` file in it or in
  its subfolders (as Hive-partitioned exports lay them out: `day=2024-05-01/part-0.parquet`),
  leaving out hidden files and bookkeeping files whose name starts with `_` or `.`
  (`_SUCCESS`, `.part-0.crc`);
- a glob pattern (`exports/2024-05-*.csv.gz`, `parts/**/*.parquet`).

The files are read in the order of their paths, each as a file named alone would be
(its errors name it and its line), and make one input: a user id found in two files is
one person.
"""

from __future__ import annotations

import glob
from pathlib import Path

from prudence_cli.errors import InputError

DATA_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".parquet")
_PATTERN = frozenset("*?[")


def is_pattern(path: Path) -> bool:
    """Whether `path` is a glob pattern rather than the name of a file or folder."""
    return any(c in _PATTERN for c in str(path)) and not path.exists()


def data_files(path: Path) -> tuple[Path, ...]:
    """The files the input `path` names (see the module docstring), in path order;
    InputError when it names none."""
    if is_pattern(path):
        found = sorted(Path(p) for p in glob.glob(str(path), recursive=True))
        files = tuple(p for p in found if p.is_file() and not _bookkeeping(p.name))
        if not files:
            raise InputError(
                path, "matches no file; input.path names a file, a folder or a glob pattern"
            )
        return files
    if path.is_dir():
        files = tuple(
            p
            for p in sorted(path.rglob("*"))
            if p.is_file()
            and _is_data(p.name)
            and not any(_bookkeeping(part) for part in p.relative_to(path).parts)
        )
        if not files:
            raise InputError(
                path,
                "is a folder with no data file in it: input.path reads every "
                f"{', '.join(DATA_SUFFIXES)} file of a folder",
            )
        return files
    return (path,)


def _is_data(name: str) -> bool:
    return name.lower().endswith(DATA_SUFFIXES)


def _bookkeeping(name: str) -> bool:
    """Hidden files and the marker and checksum files that Spark, Hive and Hadoop write
    beside the data."""
    return name.startswith((".", "_"))
