"""Readers of the raw inputs: GPS and CDR CSVs, tower tables, GeoJSON areas.

Rows are parsed in chunks with pandas' C parser and vectorised checks. An invalid row
stops the run naming the file, line and reason, or, with `on_invalid: drop`, is dropped
and counted by reason. Line numbers count the header as line 1; a quoted field that holds
a line break shifts the numbers of the rows after it.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import shapely
from shapely.geometry import shape

from prudence_cli import columns as C
from prudence_cli.config import InputConfig, SegmentsConfig, TowersConfig
from prudence_cli.errors import InputError

CHUNK_ROWS = 1_000_000
_BAD_LINE = re.compile(r"line (\d+)")
_EPOCH = re.compile(r"^-?\d+(?:\.\d+)?$")
_OFFSET = re.compile(r"(?:Z|[+-]\d\d(?::?\d\d)?)$")


@dataclass
class RawPoints:
    """Points as read: one row per valid input row, users as strings."""

    table: pd.DataFrame  # user (str), time (int64 UTC ns), lat, lon (float64)
    # [, location (str label: tower or segment)] [, trip (str), leave (int64 UTC ns)]
    rows_read: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    segments: pd.DataFrame | None = None  # segment (str), geometry (lon/lat LineString)


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


def input_columns(config: InputConfig) -> dict[str, str]:
    c = config.columns
    if config.format == "cdr":
        return {"user": c.user, "time": c.time, "tower": c.tower}
    if config.format == "segments":
        return {
            "user": c.user,
            "trip": c.trip,
            "segment": c.segment,
            "enter": c.enter,
            "leave": c.leave,
        }
    return {"user": c.user, "time": c.time, "lat": c.lat, "lon": c.lon}


def read_points(config: InputConfig) -> RawPoints:
    """Read a gps or cdr input into RawPoints (cdr rows take their tower's position)."""
    needed = input_columns(config)
    header = read_header(config.path, config.delimiter)
    check_columns(config.path, header, needed, "input.columns")
    towers = read_towers(config.towers) if config.towers is not None else None
    segments = read_segments(config.segments) if config.segments is not None else None
    result = RawPoints(table=pd.DataFrame(), segments=segments)
    parts = []
    users, places = _Labels(), _Labels()
    read = _parquet_chunks if config.is_parquet else _chunks
    for first_line, chunk in read(config.path, config, list(needed.values()), result):
        chunk = chunk.rename(columns={v: k for k, v in needed.items()})
        if towers is not None:
            part = _parse_cdr_chunk(chunk, first_line, config, towers, result)
        elif segments is not None:
            part = _parse_segments_chunk(chunk, first_line, config, segments, result)
        else:
            part = _parse_gps_chunk(chunk, first_line, config, result)
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
    if result.rows_read == 0:
        raise InputError(config.path, "holds a header but no data rows")
    return result


def read_towers(config: TowersConfig) -> pd.DataFrame:
    """The tower table: tower (str, unique), lat, lon."""
    needed = {"tower": config.tower, "lat": config.lat, "lon": config.lon}
    header = read_header(config.path)
    check_columns(config.path, header, needed, "input.towers.columns")
    frame = _read_csv(config.path, ",", chunk=None)
    assert isinstance(frame, pd.DataFrame)
    frame = frame[list(needed.values())].rename(columns={v: k for k, v in needed.items()})
    if frame.empty:
        raise InputError(config.path, "holds a header but no towers")
    lat, lon, checks = _coordinates(frame)
    tower = frame["tower"].str.strip()
    checks.append(_Check(tower.eq("").to_numpy(dtype=bool), "empty tower id"))
    checks.append(
        _Check(tower.duplicated().to_numpy(dtype=bool), "tower id listed twice", frame["tower"])
    )
    _raise_first_failure(config.path, checks, first_line=2)
    return pd.DataFrame({C.TOWER: tower.to_numpy(dtype=object), C.LAT: lat, C.LON: lon})


def read_segments(config: SegmentsConfig) -> pd.DataFrame:
    """The segments table: segment (str, unique), geometry (LineString in lon/lat) and the
    lat / lon of its midpoint. Geometry from a WKT column, else from the two ends."""
    header = read_header(config.path)
    if config.wkt in header:
        needed = {"segment": config.segment, "wkt": config.wkt}
    else:
        needed = {
            "segment": config.segment,
            "start_lat": config.start_lat,
            "start_lon": config.start_lon,
            "end_lat": config.end_lat,
            "end_lon": config.end_lon,
        }
    check_columns(config.path, header, needed, "input.segments.columns")
    frame = _read_csv(config.path, ",", chunk=None)
    assert isinstance(frame, pd.DataFrame)
    frame = frame[list(needed.values())].rename(columns={v: k for k, v in needed.items()})
    if frame.empty:
        raise InputError(config.path, "holds a header but no segments")
    segment = frame["segment"].str.strip()
    checks = [
        _Check(segment.eq("").to_numpy(dtype=bool), "empty segment id"),
        _Check(
            segment.duplicated().to_numpy(dtype=bool), "segment id listed twice", frame["segment"]
        ),
    ]
    if "wkt" in frame:
        geometry = shapely.from_wkt(frame["wkt"].to_numpy(dtype=object), on_invalid="ignore")
        kinds = shapely.get_type_id(geometry)
        checks.append(_Check(kinds != 1, "wkt is not a LineString in lon/lat", frame["wkt"]))
    else:
        ends = {
            k: pd.to_numeric(frame[k].str.strip(), errors="coerce").to_numpy(dtype=float)
            for k in ("start_lat", "start_lon", "end_lat", "end_lon")
        }
        bad = np.zeros(len(frame), dtype=bool)
        for key, value in ends.items():
            limit = 90 if key.endswith("lat") else 180
            bad |= ~(np.abs(value) <= limit)
        checks.append(_Check(bad, "segment ends are not coordinates in degrees"))
        coords = np.stack(
            [
                np.column_stack([ends["start_lon"], ends["start_lat"]]),
                np.column_stack([ends["end_lon"], ends["end_lat"]]),
            ],
            axis=1,
        )
        geometry = shapely.linestrings(np.nan_to_num(coords))
    _raise_first_failure(config.path, checks, first_line=2)
    middle = shapely.line_interpolate_point(geometry, 0.5, normalized=True)
    return pd.DataFrame(
        {
            "segment": segment.to_numpy(dtype=object),
            "geometry": geometry,
            C.LAT: shapely.get_y(middle),
            C.LON: shapely.get_x(middle),
        }
    )


def _read_json(path: Path, kind: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path, f"is not a {kind} file: {exc}") from None


def read_area_geojson(path: Path) -> shapely.Geometry:
    """The union of the Polygon/MultiPolygon geometries of a GeoJSON file (lon/lat)."""
    data = _read_json(path, "GeoJSON")
    if not isinstance(data, dict):
        raise InputError(path, "is not a GeoJSON object")
    if data.get("type") == "FeatureCollection":
        geometries = [f.get("geometry") for f in data.get("features", [])]
    elif data.get("type") == "Feature":
        geometries = [data.get("geometry")]
    else:
        geometries = [data]
    shapes = []
    for g in geometries:
        try:
            geom = shape(g)
        except (AttributeError, KeyError, TypeError, ValueError, shapely.errors.GEOSException):
            raise InputError(path, "holds a geometry that is not valid GeoJSON") from None
        if geom.geom_type not in ("Polygon", "MultiPolygon"):
            raise InputError(path, f"holds a {geom.geom_type}; the area must be polygons")
        shapes.append(geom)
    if not shapes:
        raise InputError(path, "holds no polygon")
    return shapely.union_all(shapes)


def _parse_gps_chunk(
    chunk: pd.DataFrame, first_line: int, config: InputConfig, result: RawPoints
) -> pd.DataFrame:
    user, time, checks = _user_and_time(chunk, config)
    lat, lon, coordinate_checks = _coordinates(chunk)
    keep = _screen(config, chunk, checks + coordinate_checks, first_line, result.dropped)
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
    config: InputConfig,
    towers: pd.DataFrame,
    result: RawPoints,
) -> pd.DataFrame:
    user, time, checks = _user_and_time(chunk, config)
    position = pd.Index(towers[C.TOWER]).get_indexer(chunk["tower"].str.strip())
    table = config.towers.path.name if config.towers else "the towers table"
    checks.append(_Check(position < 0, f"tower not in {table}", chunk["tower"]))
    keep = _screen(config, chunk, checks, first_line, result.dropped)
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
    config: InputConfig,
    segments: pd.DataFrame,
    result: RawPoints,
) -> pd.DataFrame:
    user = chunk["user"].str.strip()
    trip = chunk["trip"].str.strip()
    enter = parse_times(chunk["enter"], config.timezone, config.time_format)
    leave = parse_times(chunk["leave"], config.timezone, config.time_format)
    position = pd.Index(segments["segment"]).get_indexer(chunk["segment"].str.strip())
    table = config.segments.path.name if config.segments else "the segments table"
    backwards = ~np.isnat(enter) & ~np.isnat(leave) & (leave < enter)
    checks = [
        _Check(user.eq("").to_numpy(dtype=bool), "empty user"),
        _Check(trip.eq("").to_numpy(dtype=bool), "empty trip"),
        _Check(np.isnat(enter), "time entered is not ISO-8601 or epoch seconds", chunk["enter"]),
        _Check(np.isnat(leave), "time left is not ISO-8601 or epoch seconds", chunk["leave"]),
        _Check(backwards, "time left is before time entered", chunk["leave"]),
        _Check(position < 0, f"segment not in {table}", chunk["segment"]),
    ]
    keep = _screen(config, chunk, checks, first_line, result.dropped)
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


@dataclass
class _Check:
    """Rows failing one validity rule, with the raw values to quote in an error."""

    bad: np.ndarray
    reason: str
    values: pd.Series | None = None


def _user_and_time(
    chunk: pd.DataFrame, config: InputConfig
) -> tuple[np.ndarray, np.ndarray, list[_Check]]:
    user = chunk["user"].str.strip()
    time = parse_times(chunk["time"], config.timezone, config.time_format)
    checks = [
        _Check(user.eq("").to_numpy(dtype=bool), "empty user"),
        _Check(np.isnat(time), "time is not ISO-8601 or epoch seconds", chunk["time"]),
    ]
    return user.to_numpy(dtype=object), time, checks


def _screen(
    config: InputConfig,
    chunk: pd.DataFrame,
    checks: list[_Check],
    first_line: int,
    dropped: Counter[str],
) -> np.ndarray:
    """Rows that pass every check. In stop mode the first failing row raises InputError;
    in drop mode each failing row is counted once, under the first rule it breaks.
    Blank lines are skipped silently."""
    blank = chunk.eq("").all(axis=1).to_numpy(dtype=bool)
    for check in checks:
        check.bad = check.bad & ~blank
    bad_any = blank.copy()
    for check in checks:
        if config.on_invalid == "drop":
            dropped[check.reason] += int((check.bad & ~bad_any).sum())
        bad_any |= check.bad
    if config.on_invalid == "stop":
        _raise_first_failure(
            config.path,
            checks,
            first_line,
            hint="; fix the row, or set input.on_invalid: drop to skip invalid rows",
        )
    dropped += Counter()  # drop zero counts
    return ~bad_any


def _raise_first_failure(path: Path, checks: list[_Check], first_line: int, hint: str = "") -> None:
    """InputError for the first row (in file order) that fails a check, if any."""
    bad_any = np.logical_or.reduce([c.bad for c in checks])
    if not bad_any.any():
        return
    row = int(np.flatnonzero(bad_any)[0])
    check = next(c for c in checks if c.bad[row])
    shown = f" (got {check.values.iloc[row]!r})" if check.values is not None else ""
    raise InputError(path, f"{check.reason}{shown}{hint}", line=first_line + row)


def parse_times(values: pd.Series, timezone: str, time_format: str = "auto") -> np.ndarray:
    """UTC datetime64[ns] per value; NaT where unparsable.

    Epoch seconds (integer or decimal) and ISO-8601 with or without an offset are
    accepted per value. Naive times are local to `timezone`: an ambiguous local time
    (the repeated hour when clocks go back) is read as its first occurrence, a
    non-existent one (the skipped hour) is shifted forward.
    """
    if pd.api.types.is_datetime64_any_dtype(values):  # typed (Parquet): no text to parse
        stamps = pd.DatetimeIndex(values)
        if stamps.tz is None:
            stamps = stamps.tz_localize(
                timezone,
                ambiguous=np.ones(len(stamps), dtype=bool),
                nonexistent="shift_forward",
            )
        return _as_utc_ns(stamps)
    if pd.api.types.is_numeric_dtype(values) and time_format != "iso":  # epoch seconds
        seconds = values.to_numpy(dtype=float)
        out = np.full(seconds.shape, np.datetime64("NaT"), dtype="datetime64[ns]")
        within = np.abs(seconds) < 1e11  # NaN is not within
        out[within] = np.round(seconds[within] * 1e9).astype("int64").view("datetime64[ns]")
        return out
    text = values.astype(str).str.strip()
    out = np.full(len(text), np.datetime64("NaT"), dtype="datetime64[ns]")
    is_epoch = text.str.match(_EPOCH.pattern).to_numpy(dtype=bool)
    if time_format == "iso":
        is_epoch[:] = False
    if time_format != "epoch" and (~is_epoch).any():
        iso = text[~is_epoch]
        has_offset = iso.str.contains(_OFFSET.pattern, regex=True).to_numpy(dtype=bool)
        iso_index = np.flatnonzero(~is_epoch)
        if has_offset.any():
            aware = pd.to_datetime(iso[has_offset], format="ISO8601", errors="coerce", utc=True)
            out[iso_index[has_offset]] = _as_utc_ns(aware)
        if (~has_offset).any():
            naive = pd.to_datetime(iso[~has_offset], format="ISO8601", errors="coerce")
            local = pd.DatetimeIndex(naive).tz_localize(
                timezone,
                ambiguous=np.ones(len(naive), dtype=bool),
                nonexistent="shift_forward",
            )
            out[iso_index[~has_offset]] = _as_utc_ns(local)
    if time_format != "iso" and is_epoch.any():
        seconds = pd.to_numeric(text[is_epoch], errors="coerce").to_numpy(dtype=float)
        within = np.abs(seconds) < 1e11  # epoch seconds, not milliseconds
        ns = np.full(seconds.shape, np.datetime64("NaT"), dtype="datetime64[ns]")
        ns[within] = (np.round(seconds[within] * 1e9)).astype("int64").view("datetime64[ns]")
        out[is_epoch] = ns
    return out


def _as_utc_ns(times: pd.Series | pd.DatetimeIndex) -> np.ndarray:
    index = pd.DatetimeIndex(times)
    return index.tz_convert("UTC").tz_localize(None).as_unit("ns").to_numpy()


def _number(column: pd.Series) -> np.ndarray:
    """Floats from a typed or text column; NaN where the text is not a number."""
    if pd.api.types.is_numeric_dtype(column):
        return column.to_numpy(dtype=float)
    try:  # Arrow parses a column of valid numbers several times faster than pandas
        text = pc.utf8_trim_whitespace(pa.array(column, type=pa.string()))
        return pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # some value is not a number
        return pd.to_numeric(column.str.strip(), errors="coerce").to_numpy(dtype=float)


def _coordinates(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, list[_Check]]:
    lat = _number(frame["lat"])
    lon = _number(frame["lon"])
    checks = [
        _Check(~(np.abs(lat) <= 90), "lat is not a number within ±90", frame["lat"]),
        _Check(~(np.abs(lon) <= 180), "lon is not a number within ±180", frame["lon"]),
    ]
    return lat, lon, checks


def _chunks(
    path: Path, config: InputConfig, usecols: list[str], result: RawPoints
) -> Iterator[tuple[int, pd.DataFrame]]:
    """(line number of the chunk's first row, chunk) over the file.

    Every column is parsed (not only `usecols`) so that a row with a wrong number of
    fields — often a stray delimiter that shifts the columns — is caught.
    """
    reader = _read_csv(
        path, config.delimiter, chunk=CHUNK_ROWS, drop_bad=config.on_invalid == "drop"
    )
    assert not isinstance(reader, pd.DataFrame)
    line = 2
    with reader:
        while True:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", pd.errors.ParserWarning)
                    chunk = next(reader)
            except StopIteration:
                return
            except pd.errors.ParserError as exc:
                raise _parser_error(path, exc) from None
            except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
                raise InputError(path, f"is not a UTF-8 CSV file ({exc})") from None
            skipped = sum(str(w.message).count("Skipping line") for w in caught)
            if skipped:
                result.dropped["wrong number of fields"] += skipped
            result.rows_read += len(chunk) + skipped
            yield line, chunk[usecols]
            line += len(chunk) + skipped


def _parquet_chunks(
    path: Path, config: InputConfig, usecols: list[str], result: RawPoints
) -> Iterator[tuple[int, pd.DataFrame]]:
    """(row number of the chunk's first row, counted from 1; chunk) of a Parquet input,
    validated exactly like a CSV's: typed timestamps (naive ones in input.timezone) and
    numbers (epoch seconds for a numeric time) are taken as they are, other columns as
    text, nulls as empty values."""
    c = config.columns
    typed = {c.time, c.lat, c.lon, c.enter, c.leave}  # ids (user, tower, ...) are text
    try:
        handle = pq.ParquetFile(path)
        batches = handle.iter_batches(batch_size=CHUNK_ROWS, columns=usecols)
        row = 1
        for batch in batches:
            text = pd.DataFrame({c: _column(batch.column(c), c in typed) for c in usecols})
            result.rows_read += len(text)
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


class _Labels:
    """Original ids (users, towers, segments) as int32 codes, numbered as they come;
    `categorical` renumbers them in sorted order, as a pandas Categorical."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def codes(self, values: np.ndarray) -> np.ndarray:
        local, uniques = pd.factorize(values)
        mapping = np.empty(len(uniques), dtype=np.int32)
        for k, label in enumerate(uniques.tolist()):
            mapping[k] = self.index.setdefault(label, len(self.index))
        return mapping[local]

    def categorical(self, codes: np.ndarray) -> pd.Categorical:
        labels = np.array(list(self.index), dtype=object)
        order = np.argsort(labels, kind="stable")
        rank = np.empty(len(labels), dtype=np.int32)
        rank[order] = np.arange(len(labels), dtype=np.int32)
        return pd.Categorical.from_codes(rank[codes], categories=labels[order])


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
        raise _parser_error(path, exc) from None
    except pd.errors.EmptyDataError:
        raise InputError(path, "is empty") from None
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise InputError(path, f"is not a UTF-8 CSV file ({exc})") from None


def _parser_error(path: Path, exc: Exception) -> InputError:
    match = _BAD_LINE.search(str(exc))
    line = int(match.group(1)) if match else None
    reason = str(exc).split("C error: ")[-1].strip()
    return InputError(
        path,
        f"malformed CSV row: {reason}; fix the row, or set input.on_invalid: drop",
        line=line,
    )


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8", newline="")  # noqa: SIM115 - returned to caller


def _empty_points() -> pd.DataFrame:
    return pd.DataFrame(
        {
            C.USER: pd.Series([], dtype=object),
            C.TIME: pd.Series([], dtype=np.int64),
            C.LAT: pd.Series([], dtype=float),
            C.LON: pd.Series([], dtype=float),
        }
    )


def check_inputs(config: InputConfig, area_path: Path | None = None) -> list[str]:
    """Check the input files' headers (and a GeoJSON area) without reading the data.

    Returns one line per checked file; raises InputError on the first problem.
    """
    lines = []
    needed = input_columns(config)
    header = read_header(config.path, config.delimiter)
    check_columns(config.path, header, needed, "input.columns")
    lines.append(f"{config.path}: columns {', '.join(needed.values())} present")
    if config.towers is not None:
        towers = config.towers
        tower_columns = {"tower": towers.tower, "lat": towers.lat, "lon": towers.lon}
        check_columns(towers.path, read_header(towers.path), tower_columns, "input.towers.columns")
        lines.append(f"{towers.path}: columns {', '.join(tower_columns.values())} present")
    if config.segments is not None:
        header = read_header(config.segments.path)
        segs = config.segments
        wanted = (
            {"segment": segs.segment, "wkt": segs.wkt}
            if segs.wkt in header
            else {
                "segment": segs.segment,
                "start_lat": segs.start_lat,
                "start_lon": segs.start_lon,
                "end_lat": segs.end_lat,
                "end_lon": segs.end_lon,
            }
        )
        check_columns(segs.path, header, wanted, "input.segments.columns")
        lines.append(f"{segs.path}: columns {', '.join(wanted.values())} present")
    if area_path is not None:
        read_area_geojson(area_path)
        lines.append(f"{area_path}: polygon area readable")
    return lines


def read_trajectories(
    path: Path, trajectory: str, location: str, time: str | None, order: str | None
) -> pd.DataFrame:
    """A table of trajectories (one row per point): trajectory (str), element (str: the
    location, with its time label when a time column is given), in order."""
    needed = {"trajectory": trajectory, "location": location}
    if time:
        needed["time"] = time
    if order:
        needed["order"] = order
    header = read_header(path)
    check_columns(path, header, needed, "evaluate.columns")
    frame = _read_csv(path, ",", chunk=None)
    assert isinstance(frame, pd.DataFrame)
    frame = frame[list(needed.values())].rename(columns={v: k for k, v in needed.items()})
    if frame.empty:
        raise InputError(path, "holds a header but no points")
    checks = [
        _Check(frame["trajectory"].str.strip().eq("").to_numpy(dtype=bool), "empty trajectory"),
        _Check(frame["location"].str.strip().eq("").to_numpy(dtype=bool), "empty location"),
    ]
    if order:
        position = pd.to_numeric(frame["order"], errors="coerce")
        checks.append(_Check(position.isna().to_numpy(), "order is not a number", frame["order"]))
    _raise_first_failure(path, checks, first_line=2)
    element = frame["location"].str.strip()
    if time:
        element = element + "@" + frame["time"].str.strip()
    codes = pd.factorize(frame["trajectory"].str.strip())[0]
    within = pd.to_numeric(frame["order"]).to_numpy() if order else np.arange(len(frame))
    rows = np.lexsort((within, codes))
    out = pd.DataFrame(
        {
            "trajectory": frame["trajectory"].str.strip().to_numpy(dtype=object)[rows],
            "element": element.to_numpy(dtype=object)[rows],
            "location": frame["location"].str.strip().to_numpy(dtype=object)[rows],
        }
    )
    if time:
        out["time"] = frame["time"].str.strip().to_numpy(dtype=object)[rows]
    return out


def read_region_layer(path: Path) -> pd.DataFrame:
    """The polygons of a GeoJSON layer (lon/lat) with a label each: the feature's
    `name`, `id` or `NAME` property, else its position in the file."""
    data = _read_json(path, "GeoJSON")
    features = data.get("features", []) if isinstance(data, dict) else []
    labels, shapes = [], []
    for i, feature in enumerate(features):
        try:
            geom = shape(feature.get("geometry"))
        except (AttributeError, KeyError, TypeError, ValueError, shapely.errors.GEOSException):
            raise InputError(path, f"feature {i} holds no valid geometry") from None
        if geom.geom_type not in ("Polygon", "MultiPolygon"):
            raise InputError(path, f"feature {i} is a {geom.geom_type}; regions are polygons")
        props = feature.get("properties") or {}
        labels.append(str(props.get("name", props.get("id", props.get("NAME", i)))))
        shapes.append(geom)
    if not shapes:
        raise InputError(path, "holds no polygon feature (a FeatureCollection is expected)")
    if len(set(labels)) != len(labels):
        raise InputError(path, "two regions have the same name")
    return pd.DataFrame({"label": labels, "geometry": shapes})


def read_utility_scores(path: Path, dimensions: list[str]) -> pd.DataFrame:
    """Utility scores per generalization profile: one column per data dimension (values
    as written in a config, e.g. 1h, district) and `score` (a number)."""
    header = read_header(path)
    check_columns(path, header, {d: d for d in [*dimensions, "score"]}, "utility.scores")
    frame = _read_csv(path, ",", chunk=None)
    assert isinstance(frame, pd.DataFrame)
    score = pd.to_numeric(frame["score"].str.strip(), errors="coerce")
    _raise_first_failure(
        path,
        [_Check(score.isna().to_numpy(), "score is not a number", frame["score"])],
        first_line=2,
    )
    out = frame[dimensions].apply(lambda c: c.str.strip())
    out["score"] = score.to_numpy()
    return out
