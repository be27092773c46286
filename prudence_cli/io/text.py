"""Opening text inputs: CSV headers (plain, .gz or a Parquet schema), whole or chunked
CSV reads with every value as text, JSON documents, and the InputErrors they raise."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from prudence_cli.errors import InputError

_BAD_LINE = re.compile(r"line (\d+)")


def read_header(path: Path, delimiter: str = ",") -> list[str]:
    """The column names of a CSV file (plain or .gz) or a Parquet file; InputError if it
    is neither."""
    if not path.exists():
        raise InputError(path, "no such file")
    if path.suffix == ".parquet":
        try:
            return list(pq.read_schema(path).names)
        except (OSError, pa.ArrowException) as exc:
            raise InputError(path, f"is not a Parquet file: {exc}") from None
    try:
        with _open_text(path) as handle:
            first = handle.readline()
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise InputError(path, f"is not a UTF-8 CSV file ({exc.__class__.__name__})") from None
    except OSError as exc:
        raise InputError(path, f"cannot be read: {exc}") from None
    if not first.strip():
        raise InputError(path, "is empty: expected a header line with the column names")
    if "\x00" in first:
        raise InputError(path, "is not a CSV file (it holds binary data)")
    return next(csv.reader([first], delimiter=delimiter))


def check_columns(path: Path, header: list[str], needed: dict[str, str], key: str) -> None:
    """InputError naming the missing column and the config key that maps it."""
    for field_name, column in needed.items():
        if column not in header:
            found = ", ".join(header[:12]) + (" ..." if len(header) > 12 else "")
            raise InputError(
                path,
                f"no column {column!r} for the {field_name} (columns found: {found}); "
                f"name the right one with {key}.{field_name}",
            )


def read_csv(path: Path, delimiter: str = ",") -> pd.DataFrame:
    """The whole CSV file, every value as text (empty, never NaN)."""
    frame = _read_csv(path, delimiter, chunk=None)
    assert isinstance(frame, pd.DataFrame)
    return frame


def read_csv_chunks(
    path: Path, delimiter: str, rows: int, drop_bad: bool
) -> pd.io.parsers.TextFileReader:
    """A pandas TextFileReader over chunks of `rows` rows, every value as text; rows with
    a wrong number of fields raise a ParserError, or with `drop_bad` are skipped with a
    ParserWarning."""
    reader = _read_csv(path, delimiter, chunk=rows, drop_bad=drop_bad)
    assert not isinstance(reader, pd.DataFrame)
    return reader


def _read_csv(
    path: Path, delimiter: str, chunk: int | None, drop_bad: bool = False
) -> pd.DataFrame | pd.io.parsers.TextFileReader:
    try:
        return pd.read_csv(
            path,
            sep=delimiter,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skip_blank_lines=False,
            chunksize=chunk,
            on_bad_lines="warn" if drop_bad else "error",
            encoding="utf-8",
        )
    except pd.errors.ParserError as exc:
        raise parser_error(path, exc) from None
    except pd.errors.EmptyDataError:
        raise InputError(path, "is empty") from None
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise InputError(path, f"is not a UTF-8 CSV file ({exc})") from None


def parser_error(path: Path, exc: Exception) -> InputError:
    """The InputError for a row pandas' C parser rejects, with its line when known."""
    match = _BAD_LINE.search(str(exc))
    line = int(match.group(1)) if match else None
    reason = str(exc).split("C error: ")[-1].strip()
    return InputError(
        path,
        f"malformed CSV row: {reason}; fix the row, or set input.on_invalid: drop",
        line=line,
    )


def read_json(path: Path, kind: str) -> Any:
    """The parsed JSON document of a `kind` file (e.g. GeoJSON)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path, f"is not a {kind} file: {exc}") from None


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8", newline="")  # noqa: SIM115 - returned to caller
