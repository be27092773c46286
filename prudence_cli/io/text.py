"""Opening text inputs: CSV headers (plain, .gz or a Parquet schema), whole or chunked
CSV reads with every value as text, JSON documents, and the InputErrors they raise.

Text is UTF-8, with or without a byte-order mark. A damaged .gz file is named as such,
whichever way the damage shows: an error of the decompressor, a failed checksum at the
end, or rows garbled before it (`reading` checks the compressed stream on any error).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pandas.io.common import infer_compression

from prudence_cli.errors import InputError, shown
from prudence_cli.io.dataset import is_gzip, is_parquet

_BAD_LINE = re.compile(r"line (\d+)")
_HEADER_LIMIT = 1 << 20  # characters of a header line
_GZIP_MAGIC = b"\x1f\x8b"


class DamagedFile(InputError):
    """A .gz input whose compressed stream is cut short or corrupt."""


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Turn what reading `path` raises into an InputError naming it. For a .gz file any
    error is first checked against the compressed stream: a damaged one garbles rows
    before its checksum fails, and the damage, not the row, is what to report."""
    try:
        yield
    except DamagedFile:
        raise
    except InputError:
        _raise_if_damaged(path)
        raise
    except pd.errors.ParserError as exc:
        _raise_if_damaged(path)
        raise parser_error(path, exc) from None
    except pd.errors.EmptyDataError:
        raise InputError(path, "is empty") from None
    except UnicodeDecodeError as exc:
        _raise_if_damaged(path)
        raise InputError(
            path, f"is not a UTF-8 CSV file ({exc.reason}); save it as UTF-8"
        ) from None
    except (EOFError, zlib.error, OSError) as exc:  # gzip.BadGzipFile is an OSError
        _raise_if_damaged(path)
        raise InputError(path, f"cannot be read: {exc}") from None
    except SystemError:  # how pandas' C reader has been seen to pass on a zlib error
        _raise_if_damaged(path)
        raise


def gzip_damage(path: Path) -> str | None:
    """What is wrong with a .gz file's compressed stream (None: nothing, or not .gz).
    Reads the whole file: for error paths, and for checking a file on purpose."""
    if not is_gzip(path):
        return None
    try:
        with open(path, "rb") as raw:
            if raw.read(2) != _GZIP_MAGIC:
                return "it is not gzip-compressed, though its name ends in .gz"
        with gzip.open(path, "rb") as handle:
            while handle.read(1 << 20):
                pass
    except EOFError:
        return "it ends before its compressed data does: the file was cut short"
    except (zlib.error, gzip.BadGzipFile) as exc:
        return f"its compressed data is corrupt: {exc}"
    except OSError:
        return None  # unreadable for another reason, reported by the caller
    return None


def check_gzip(path: Path) -> None:
    """DamagedFile if `path` is a .gz file whose compressed stream is cut short or
    corrupt (reads it through once, without parsing it)."""
    _raise_if_damaged(path)


def _raise_if_damaged(path: Path) -> None:
    damage = gzip_damage(path)
    if damage is not None:
        raise DamagedFile(
            path,
            f"is a damaged gzip file ({damage}); compress the CSV again from the "
            "original, or give the uncompressed CSV",
        ) from None


def read_header(path: Path, delimiter: str = ",") -> list[str]:
    """The column names of a CSV file (plain or .gz) or a Parquet file; InputError if it
    is neither."""
    if not path.exists():
        raise InputError(path, "no such file")
    if is_parquet(path):
        try:
            return list(pq.read_schema(path).names)
        except (OSError, pa.ArrowException) as exc:
            raise InputError(path, f"is not a Parquet file: {exc}") from None
    with reading(path), _open_text(path) as handle:
        first = handle.readline(_HEADER_LIMIT)
    if len(first) >= _HEADER_LIMIT:
        raise InputError(path, "has a first line of over a million characters: not a CSV header")
    if not first.strip():
        raise InputError(path, "is empty: expected a header line with the column names")
    if "\x00" in first:
        raise InputError(path, "is not a CSV file (it holds binary data)")
    return next(csv.reader([first], delimiter=delimiter))


def check_columns(path: Path | str, header: list[str], needed: dict[str, str], key: str) -> None:
    """InputError naming a missing or repeated column and the config key that maps it.
    Column names are quoted when spaces or invisible characters would hide them."""
    for field_name, column in needed.items():
        if column not in header:
            found = ", ".join(_name(c) for c in header[:12]) + (" ..." if len(header) > 12 else "")
            raise InputError(
                path,
                f"no column {shown(column)} for the {field_name} (columns found: {found}); "
                f"name the right one with {key}.{field_name}",
            )
        positions = [str(i + 1) for i, c in enumerate(header) if c == column]
        if len(positions) > 1:
            raise InputError(
                path,
                f"has {len(positions)} columns named {shown(column)} (columns "
                f"{', '.join(positions)}), so the {field_name} is ambiguous: rename or "
                f"remove all but one, or name another column with {key}.{field_name}",
                line=None if is_parquet(path) else 1,
            )


def read_csv(path: Path, delimiter: str = ",") -> pd.DataFrame:
    """The whole CSV file, every value as text (empty, never NaN)."""
    frame = _read_csv(path, delimiter, chunk=None)
    assert isinstance(frame, pd.DataFrame)
    return frame


def read_text_table(path: Path) -> pd.DataFrame:
    """The whole CSV (plain or .gz) or Parquet file, every value as text (empty, never
    NaN): a trajectory table as a release or a catalog holds it."""
    if not is_parquet(path):
        return read_csv(path)
    try:
        frame = pq.read_table(path).to_pandas()
    except (OSError, pa.ArrowException) as exc:
        raise InputError(path, f"is not a readable Parquet file: {exc}") from None
    return frame.astype(str).where(frame.notna(), "")


def read_csv_chunks(
    path: Path, delimiter: str, rows: int, drop_bad: bool, handle: BinaryIO | None = None
) -> pd.io.parsers.TextFileReader:
    """A pandas TextFileReader over chunks of `rows` rows, every value as text; rows with
    a wrong number of fields raise a ParserError, or with `drop_bad` are skipped with a
    ParserWarning. With `handle`, the file `path` opened in binary mode is read through
    it (decompressed as its name says), so that its position tells how far reading is."""
    reader = _read_csv(path, delimiter, chunk=rows, drop_bad=drop_bad, handle=handle)
    assert not isinstance(reader, pd.DataFrame)
    return reader


def _read_csv(
    path: Path,
    delimiter: str,
    chunk: int | None,
    drop_bad: bool = False,
    handle: BinaryIO | None = None,
) -> pd.DataFrame | pd.io.parsers.TextFileReader:
    with reading(path):
        return pd.read_csv(
            path if handle is None else handle,
            compression=infer_compression(str(path), "infer"),
            sep=delimiter,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skip_blank_lines=False,
            chunksize=chunk,
            on_bad_lines="warn" if drop_bad else "error",
            encoding="utf-8-sig",
        )


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
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path, f"is not a {kind} file: {exc}") from None


def _open_text(path: Path) -> io.TextIOBase:
    if is_gzip(path):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 - returned to caller


def _name(column: str) -> str:
    """A column name as written, quoted when it has surrounding spaces or invisible
    characters."""
    if column and column == column.strip() and column.isprintable() and len(column) <= 60:
        return column
    return shown(column)
