"""Writers of plain tables: CSV (gzip when the name ends in .gz), always atomic; and a
table's bytes as CSV or Parquet, for a folder written atomically as a whole."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pandas as pd

from prudence_cli.io.atomic import write_bytes_atomic
from prudence_cli.io.dataset import is_gzip


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    data = frame.to_csv(index=False, lineterminator="\n").encode("utf-8")
    if is_gzip(path):
        data = gzip.compress(data, compresslevel=9, mtime=0)
    write_bytes_atomic(path, data)


# the file formats a table can be written in, by their file name extension
TABLE_FORMATS = ("csv", "parquet")


def table_bytes(frame: pd.DataFrame, file_format: str) -> bytes:
    """The table as a CSV (UTF-8, a header line) or Parquet file (its column types kept:
    counts as integers, ids as text)."""
    if file_format == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        data: bytes = buffer.getvalue()
        return data
    if file_format != "csv":
        raise ValueError(f"unknown table format {file_format!r}; known: {', '.join(TABLE_FORMATS)}")
    text: str = frame.to_csv(index=False)
    return text.encode("utf-8")
