"""Points inputs: gps and cdr CSVs (or Parquet) and map-matched segments, read in chunks.

A gps or cdr CSV is first read by the fast path (`io.fast_points`: Arrow's multi-threaded
reader), which gives up on the first thing out of the ordinary; the file is then read
again from its start by the careful path, which gives the same table for a file both can
read, and names what is wrong in one that is not.

The careful path parses rows in chunks with pandas' C parser and vectorised checks. An invalid row
stops the run naming the file, line and reason, or, with `on_invalid: drop`, is dropped
and counted by reason. Line numbers count the header as line 1; a quoted field that holds
a line break shifts the numbers of the rows after it.

User and trip ids are kept exactly as written: `A17`, ` A17` and `A17 ` are three
people (an id of spaces only is an empty user). Tower and segment ids are looked up in
their tables with surrounding spaces ignored; those tables refuse two ids that differ
only by them.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from prudence_cli import columns as C
from prudence_cli.errors import InputError
from prudence_cli.io.dataset import data_files
from prudence_cli.io.fast_points import read_plain
from prudence_cli.io.labels import Labels, united
from prudence_cli.io.remote import fetched, listed
from prudence_cli.io.specs import PointsSpec
from prudence_cli.io.tables import read_segments, read_towers
from prudence_cli.io.text import (
    check_columns,
    read_csv_chunks,
    read_header,
    reading,
)
from prudence_cli.io.values import Check, coordinates, parse_times, raise_first_failure

CHUNK_ROWS = 1_000_000
# hears the bytes of the input read so far and its size, after each chunk
ReadProgress = Callable[[int, int], None]


@dataclass
class RawPoints:
    """Points as read: one row per valid input row, users as strings."""

    table: pd.DataFrame  # user (str), time (int64 UTC ns), lat, lon (float64)
    # [, location (str label: tower or segment)] [, trip (str), leave (int64 UTC ns)]
    rows_read: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    segments: pd.DataFrame | None = None  # segment (str), geometry (lon/lat LineString)
    fetched: dict[str, tuple[str, int]] = field(default_factory=dict)  # URL: sha256, bytes


def input_columns(spec: PointsSpec) -> dict[str, str]:
    c = spec.columns
    if spec.format == "cdr":
        return {"user": c.user, "time": c.time, "tower": c.tower}
    if spec.format == "segments":
        return {
            "user": c.user,
            "trip": c.trip,
            "segment": c.segment,
            "enter": c.enter,
            "leave": c.leave,
        }
    return {"user": c.user, "time": c.time, "lat": c.lat, "lon": c.lon}


def read_points(spec: PointsSpec, progress: ReadProgress | None = None) -> RawPoints:
    """Read a gps, cdr or segments input into RawPoints (cdr rows take their tower's
    position); `progress` hears how far into the input the reading is. An input of
    several files (a folder or a glob pattern, io.dataset) is read file by file, and
    the files' points make one table; an input in an object store is fetched file by
    file (io/remote.py)."""
    towers = read_towers(spec.towers) if spec.towers is not None else None
    segments = read_segments(spec.segments) if spec.segments is not None else None
    if spec.store is not None:
        return _read_fetched(spec, towers, segments, progress)
    files = data_files(spec.path)
    if files == (spec.path,):
        return read_file(spec, towers, segments, progress)
    sizes = [f.stat().st_size for f in files]
    total, before = sum(sizes), 0
    parts = []
    for file, size in zip(files, sizes, strict=True):
        heard = _shifted(progress, before, total)
        parts.append(read_file(replace(spec, path=file), towers, segments, heard, alone=False))
        before += size
        if heard is not None:
            heard(size, size)
    return _joined(spec, parts)


def _read_fetched(
    spec: PointsSpec,
    towers: pd.DataFrame | None,
    segments: pd.DataFrame | None,
    progress: ReadProgress | None,
) -> RawPoints:
    """`read_points` of an input in an object store: each file fetched into a temporary
    folder, read there, and removed; `progress` hears the bytes fetched."""
    assert spec.store is not None
    files = listed(spec.store)
    total, before = sum(f.size for f in files), 0
    parts, sums = [], {}
    with tempfile.TemporaryDirectory(prefix="prudence-fetch-") as folder:
        for file in files:
            with fetched(file, Path(folder), _shifted(progress, before, total)) as copy:
                local = replace(spec, path=copy.path, store=None)
                parts.append(read_file(local, towers, segments, None, alone=len(files) == 1))
            sums[file.url] = (copy.sha256, copy.size)
            before += file.size
    raw = _joined(spec, parts)
    raw.fetched = sums
    return raw


def _shifted(progress: ReadProgress | None, before: int, total: int) -> ReadProgress | None:
    """`progress` told of one file's bytes as bytes of the whole input (`before` of its
    `total` bytes came before the file)."""
    if progress is None:
        return None
    told = progress

    def heard(done: int, _size: int) -> None:
        told(before + done, total)

    return heard


def _joined(spec: PointsSpec, parts: list[RawPoints]) -> RawPoints:
    """The points of an input's files as one (`merged`); InputError when no file holds
    a row."""
    if sum(part.rows_read for part in parts) == 0:
        raise InputError(spec.shown, f"holds no data rows in any of its {len(parts)} files")
    return merged(parts) if len(parts) > 1 else parts[0]


def merged(parts: list[RawPoints]) -> RawPoints:
    """The points of several files as one input: tables one after the other, the ids
    of every file numbered as one (a user found in two files is one person)."""
    result = RawPoints(table=pd.DataFrame(), segments=parts[0].segments)
    for part in parts:
        result.rows_read += part.rows_read
        result.dropped += part.dropped
    parts = [part for part in parts if len(part.table)] or parts[:1]
    names = list(parts[0].table.columns)
    labelled = [name for name in (C.USER, C.LOCATION) if name in names]
    ids = {name: united([part.table.pop(name) for part in parts]) for name in labelled}
    table = _concat_columns([part.table for part in parts])
    for name, values in ids.items():
        table[name] = values
    result.table = table[names]
    return result


def read_file(
    spec: PointsSpec,
    towers: pd.DataFrame | None,
    segments: pd.DataFrame | None,
    progress: ReadProgress | None,
    alone: bool = True,
) -> RawPoints:
    """`read_points` of one file, its towers and segments tables read already; one of
    several (not `alone`) may hold no row, or be empty (no header either: some exporters
    write an empty partition so). `progress` hears the bytes of the file read."""
    if not alone and spec.path.is_file() and spec.path.stat().st_size == 0:
        return RawPoints(table=_empty_points(), segments=segments)
    needed = input_columns(spec)
    header = read_header(spec.path, spec.delimiter)
    check_columns(spec.path, header, needed, "input.columns")
    result = RawPoints(table=pd.DataFrame(), segments=segments)
    if not spec.is_parquet and segments is None:
        plain = read_plain(spec, header, needed, towers, progress)
        if plain is not None:
            result.table, result.rows_read = plain
            return result
    parts = []
    users, places = Labels(), Labels()
    read = _parquet_chunks if spec.is_parquet else _chunks
    with reading(spec.path):  # a damaged .gz is reported as such, not as a bad row
        for first_line, chunk in read(spec.path, spec, list(needed.values()), result, progress):
            chunk = chunk.rename(columns={v: k for k, v in needed.items()})
            if towers is not None:
                part = _parse_cdr_chunk(chunk, first_line, spec, towers, result)
            elif segments is not None:
                part = _parse_segments_chunk(chunk, first_line, spec, segments, result)
            else:
                part = _parse_gps_chunk(chunk, first_line, spec, result)
            # compact: ids become int32 codes as they come; the strings are kept once
            part[C.USER] = users.codes(part[C.USER].to_numpy())
            if C.LOCATION in part:
                part[C.LOCATION] = places.codes(part[C.LOCATION].to_numpy())
            parts.append(part)
    if parts:
        result.table = _concat_columns(parts)
        result.table[C.USER] = users.categorical(result.table[C.USER].to_numpy())
        if C.LOCATION in result.table:
            result.table[C.LOCATION] = places.categorical(result.table[C.LOCATION].to_numpy())
    else:
        result.table = _empty_points()
    if result.rows_read == 0 and alone:
        raise InputError(spec.path, "holds a header but no data rows")
    return result


def _parse_gps_chunk(
    chunk: pd.DataFrame, first_line: int, spec: PointsSpec, result: RawPoints
) -> pd.DataFrame:
    user, time, checks = _user_and_time(chunk, spec)
    lat, lon, coordinate_checks = coordinates(chunk)
    keep = _screen(spec, chunk, checks + coordinate_checks, first_line, result.dropped)
    return pd.DataFrame(
        {
            C.USER: user[keep],
            C.TIME: time[keep].view(np.int64),
            C.LAT: lat[keep],
            C.LON: lon[keep],
        }
    )


def _parse_cdr_chunk(
    chunk: pd.DataFrame,
    first_line: int,
    spec: PointsSpec,
    towers: pd.DataFrame,
    result: RawPoints,
) -> pd.DataFrame:
    user, time, checks = _user_and_time(chunk, spec)
    position = pd.Index(towers[C.TOWER]).get_indexer(chunk["tower"].str.strip())
    table = spec.towers.path.name if spec.towers else "the towers table"
    checks.append(Check(position < 0, f"tower not in {table}", chunk["tower"]))
    keep = _screen(spec, chunk, checks, first_line, result.dropped)
    rows = position[keep]
    return pd.DataFrame(
        {
            C.USER: user[keep],
            C.TIME: time[keep].view(np.int64),
            C.LAT: towers[C.LAT].to_numpy()[rows],
            C.LON: towers[C.LON].to_numpy()[rows],
            C.LOCATION: towers[C.TOWER].to_numpy()[rows],
        }
    )


def _parse_segments_chunk(
    chunk: pd.DataFrame,
    first_line: int,
    spec: PointsSpec,
    segments: pd.DataFrame,
    result: RawPoints,
) -> pd.DataFrame:
    user, trip = chunk["user"], chunk["trip"]  # exactly as written
    enter = parse_times(chunk["enter"], spec.timezone, spec.time_format)
    leave = parse_times(chunk["leave"], spec.timezone, spec.time_format)
    position = pd.Index(segments["segment"]).get_indexer(chunk["segment"].str.strip())
    table = spec.segments.path.name if spec.segments else "the segments table"
    backwards = ~np.isnat(enter) & ~np.isnat(leave) & (leave < enter)
    checks = [
        Check(_blank(user), "empty user"),
        Check(_blank(trip), "empty trip"),
        Check(np.isnat(enter), "time entered is not ISO-8601 or epoch seconds", chunk["enter"]),
        Check(np.isnat(leave), "time left is not ISO-8601 or epoch seconds", chunk["leave"]),
        Check(backwards, "time left is before time entered", chunk["leave"]),
        Check(position < 0, f"segment not in {table}", chunk["segment"]),
    ]
    keep = _screen(spec, chunk, checks, first_line, result.dropped)
    rows = position[keep]
    return pd.DataFrame(
        {
            C.USER: user.to_numpy(dtype=object)[keep],
            C.TIME: enter[keep].view(np.int64),
            C.LAT: segments[C.LAT].to_numpy()[rows],
            C.LON: segments[C.LON].to_numpy()[rows],
            C.LOCATION: segments["segment"].to_numpy()[rows],
            C.TRIP: trip.to_numpy(dtype=object)[keep],
            C.LEAVE: leave[keep].view(np.int64),
        }
    )


def _user_and_time(
    chunk: pd.DataFrame, spec: PointsSpec
) -> tuple[np.ndarray, np.ndarray, list[Check]]:
    user = chunk["user"]  # exactly as written
    time = parse_times(chunk["time"], spec.timezone, spec.time_format)
    checks = [
        Check(_blank(user), "empty user"),
        Check(np.isnat(time), "time is not ISO-8601 or epoch seconds", chunk["time"]),
    ]
    return user.to_numpy(dtype=object), time, checks


def _blank(ids: pd.Series) -> np.ndarray:
    """Ids that are empty or spaces only."""
    blank: np.ndarray = ids.str.strip().eq("").to_numpy(dtype=bool)
    return blank


def _screen(
    spec: PointsSpec,
    chunk: pd.DataFrame,
    checks: list[Check],
    first_line: int,
    dropped: Counter[str],
) -> np.ndarray:
    """Rows that pass every check. In stop mode the first failing row raises InputError;
    in drop mode each failing row is counted once, under the first rule it breaks.
    Blank lines are skipped silently."""
    blank = chunk.eq("").all(axis=1).to_numpy(dtype=bool)
    for check in checks:
        check.bad = check.bad & ~blank
    bad_any: np.ndarray = blank.copy()
    for check in checks:
        if spec.on_invalid == "drop":
            dropped[check.reason] += int((check.bad & ~bad_any).sum())
        bad_any |= check.bad
    if spec.on_invalid == "stop":
        raise_first_failure(
            spec.path,
            checks,
            first_line,
            hint="; fix the row, or set input.on_invalid: drop to skip invalid rows",
        )
    dropped += Counter()  # drop zero counts
    return ~bad_any


def _chunks(
    path: Path,
    spec: PointsSpec,
    usecols: list[str],
    result: RawPoints,
    progress: ReadProgress | None,
) -> Iterator[tuple[int, pd.DataFrame]]:
    """(line number of the chunk's first row, chunk) over the file; `progress` hears the
    bytes read (of the compressed file, for a .gz) after each chunk.

    Every column is parsed (not only `usecols`) so that a row with a wrong number of
    fields — often a stray delimiter that shifts the columns — is caught.
    """
    line = 2
    # read errors are turned into InputErrors by the caller's `reading`
    with (
        open(path, "rb") as raw,
        read_csv_chunks(path, spec.delimiter, CHUNK_ROWS, spec.on_invalid == "drop", raw) as reader,
    ):
        size = os.fstat(raw.fileno()).st_size
        while True:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", pd.errors.ParserWarning)
                    chunk = next(reader)
            except StopIteration:
                return
            skipped = sum(str(w.message).count("Skipping line") for w in caught)
            if skipped:
                result.dropped["wrong number of fields"] += skipped
            result.rows_read += len(chunk) + skipped
            if progress is not None:
                progress(min(raw.tell(), size), size)
            yield line, chunk[usecols]
            line += len(chunk) + skipped


def _parquet_chunks(
    path: Path,
    spec: PointsSpec,
    usecols: list[str],
    result: RawPoints,
    progress: ReadProgress | None,
) -> Iterator[tuple[int, pd.DataFrame]]:
    """(row number of the chunk's first row, counted from 1; chunk) of a Parquet input,
    validated exactly like a CSV's: typed timestamps (naive ones in input.timezone) and
    numbers (epoch seconds for a numeric time) are taken as they are, other columns as
    text, nulls as empty values. `progress` hears the share of the rows read, in bytes
    of the file."""
    c = spec.columns
    typed = {c.time, c.lat, c.lon, c.enter, c.leave}  # ids (user, tower, ...) are text
    try:
        handle = pq.ParquetFile(path)
        batches = handle.iter_batches(batch_size=CHUNK_ROWS, columns=usecols)
        row = 1
        for batch in batches:
            text = pd.DataFrame({c: _column(batch.column(c), c in typed) for c in usecols})
            result.rows_read += len(text)
            if progress is not None:
                rows = max(handle.metadata.num_rows, 1)
                size = path.stat().st_size
                progress(size * min(row + len(text) - 1, rows) // rows, size)
            yield row, text
            row += len(text)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(path, f"is not a readable Parquet file: {exc}") from None


def _column(array: pa.Array, typed: bool) -> pd.Series:
    """Typed times and coordinates stay as they are (the parsers take them so); anything
    else, ids included, becomes text as Arrow writes it (7, not 7.0), nulls empty."""
    kind = array.type
    if typed and (
        pa.types.is_timestamp(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind)
    ):
        return array.to_pandas()
    text = pc.cast(array, pa.string()) if not pa.types.is_string(kind) else array
    return pc.fill_null(text, "").to_pandas().astype(object)


def _concat_columns(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The chunks as one table, joined a column at a time and each chunk's column freed
    once copied: the peak is the table plus one column, not twice the table."""
    columns = {}
    for name in list(parts[0].columns):
        columns[name] = np.concatenate([part[name].to_numpy() for part in parts])
        for part in parts:
            del part[name]
    return pd.DataFrame(columns, copy=False)


def _empty_points() -> pd.DataFrame:
    return pd.DataFrame(
        {
            C.USER: pd.Series([], dtype=object),
            C.TIME: pd.Series([], dtype=np.int64),
            C.LAT: pd.Series([], dtype=float),
            C.LON: pd.Series([], dtype=float),
        }
    )
