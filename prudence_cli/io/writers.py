"""Writers of plain tables: CSV (gzip when the name ends in .gz), always atomic."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd

from prudence_cli.io.atomic import write_bytes_atomic


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    data = frame.to_csv(index=False, lineterminator="\n").encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=9, mtime=0)
    write_bytes_atomic(path, data)
