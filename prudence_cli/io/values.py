"""Column values, parsed and checked a column at a time: numbers, coordinates, times; and
the validity rules that name the first failing row of a file in an InputError."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from prudence_cli.errors import InputError, shown

_EPOCH = re.compile(r"^-?\d+(?:\.\d+)?$")
# an offset ends a time of day (after T or a space): the "-01" that ends a date is its day
_OFFSET = re.compile(r"[T ]\S*(?:Z|[+-]\d\d(?::?\d\d)?)$")


@dataclass
class Check:
    """Rows failing one validity rule, with the raw values to quote in an error."""

    bad: np.ndarray
    reason: str
    values: pd.Series | None = None


def raise_first_failure(path: Path, checks: list[Check], first_line: int, hint: str = "") -> None:
    """InputError for the first row (in file order) that fails a check, if any."""
    bad_any = np.logical_or.reduce([c.bad for c in checks])
    if not bad_any.any():
        return
    row = int(np.flatnonzero(bad_any)[0])
    check = next(c for c in checks if c.bad[row])
    got = f" (got {shown(check.values.iloc[row])})" if check.values is not None else ""
    raise InputError(path, f"{check.reason}{got}{hint}", line=first_line + row)


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
    is_epoch = np.array(text.str.match(_EPOCH.pattern), dtype=bool)  # writable
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
    """UTC datetime64[ns]; NaT for a time that nanoseconds cannot hold (before 1677 or
    after 2262, e.g. a year 0000 that pandas parses at a coarser unit): no mobility data
    is from then, and the caller reports NaT as a bad time, with its line."""
    utc = pd.DatetimeIndex(times).tz_convert("UTC").tz_localize(None)
    if utc.unit != "ns":
        within = (utc >= pd.Timestamp.min) & (utc <= pd.Timestamp.max)
        utc = utc.where(within)
    values: np.ndarray = utc.as_unit("ns").to_numpy()
    return values


def number(column: pd.Series) -> np.ndarray:
    """Floats from a typed or text column; NaN where the text is not a number."""
    values: np.ndarray
    if pd.api.types.is_numeric_dtype(column):
        values = column.to_numpy(dtype=float)
        return values
    try:  # Arrow parses a column of valid numbers several times faster than pandas
        text = pc.utf8_trim_whitespace(pa.array(column, type=pa.string()))
        values = pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # some value is not a number
        values = pd.to_numeric(column.str.strip(), errors="coerce").to_numpy(dtype=float)
    return values


def coordinates(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, list[Check]]:
    """lat and lon of a frame with `lat` and `lon` columns, and the checks they pass."""
    lat = number(frame["lat"])
    lon = number(frame["lon"])
    checks = [
        Check(~(np.abs(lat) <= 90), "lat is not a number within ±90", frame["lat"]),
        Check(~(np.abs(lon) <= 180), "lon is not a number within ±180", frame["lon"]),
    ]
    return lat, lon, checks
