"""Times of the plainest shapes, parsed from their bytes: the fast path of
`prudence_cli.io.values.parse_times`, for a column in which every value is

- an ISO-8601 date and time to the second, `YYYY-MM-DDThh:mm:ss` (or with a space for
  the `T`), naive, or ending in `Z` or an offset `±hh:mm`; or
- whole epoch seconds, `-?[0-9]+`.

Anything else — surrounding spaces, fractions of a second, a date alone, a mix of ISO and
epoch values, an impossible date — returns None: `parse_times` reads such columns, and
reports their invalid values. Where the shapes are accepted the result is the one
`parse_times` gives: naive times are localized with the same pandas call (ambiguous:
first occurrence; non-existent: shifted forward), epoch seconds go through the same
floating-point rounding.

The commonest column, naive times all 19 bytes long, is parsed by Arrow's cast to
`timestamp[s]`: at that length it accepts exactly `YYYY-MM-DD[T ]hh:mm:ss` with a real
date and time (the other shapes of that length carry a zone offset, which it refuses for
a naive type). When such a column spans fewer seconds than it has values (rows in time
order, or many people at once), each second of the span is localized once and looked up.
Other columns are parsed with numpy, byte column by byte column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

NAIVE, ZULU, OFFSET = 19, 20, 25  # lengths of the accepted ISO shapes
_SHAPES = (NAIVE, ZULU, OFFSET)
_DIGITS = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18])
_SEPARATORS = np.array([4, 7, 13, 16])
_SEPARATOR_BYTES = np.frombuffer(b"--::", dtype=np.uint8)
_YEARS = (1800, 2200)  # well inside the nanosecond range of both parsers
_SECONDS = (  # the first and last second of those years, since the epoch
    int(np.datetime64("1800-01-01T00:00:00", "s").astype(np.int64)),
    int(np.datetime64("2200-12-31T23:59:59", "s").astype(np.int64)),
)
_MAX_EPOCH_DIGITS = 18  # leading zeros allowed; the value must fit in int64 to be cast
_MAX_EPOCH = 9e9  # seconds whose nanoseconds fit in int64 (years 1685 to 2255)
_SLICE = 1 << 20  # rows parsed at a time: the byte matrices stay small
_NS = 1_000_000_000


def plain_times(strings: pa.Array, timezone: str, time_format: str) -> np.ndarray | None:
    """UTC datetime64[ns] of a string column whose every value has one of the plain shapes
    (ISO shapes unless `time_format` is epoch, epoch seconds unless it is iso); None when
    some value has another shape or an impossible date."""
    if strings.null_count or not pa.types.is_string(strings.type) or len(strings) == 0:
        return None
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32)
    offsets = offsets[strings.offset : strings.offset + len(strings) + 1]
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)
    lengths = np.diff(offsets)
    if time_format != "iso" and _all_epoch(data, offsets, lengths):
        return _epoch(strings)
    if time_format == "epoch":
        return None
    if lengths.min() == lengths.max() == NAIVE:
        return _naive(strings, timezone)
    return _iso(data, offsets, lengths, timezone)


def _all_epoch(data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> bool:
    """Every value is -?[0-9]+ with at most 18 digits."""
    if lengths.min() < 1 or lengths.max() > _MAX_EPOCH_DIGITS + 1:
        return False
    head = data[offsets[0] + 1 : offsets[1]]  # a quick look at the first value
    if len(head) and (head - 48).max() > 9:
        return False
    body = data[offsets[0] : offsets[-1]]
    starts = offsets[:-1] - offsets[0]
    digit = (body - 48) < 10  # uint8: bytes below '0' wrap around
    minus = body[starts] == ord("-")
    if (~digit).sum() != minus.sum():  # the only other byte allowed is a leading minus
        return False
    if minus.any() and (lengths[minus] < 2).any():
        return False
    return bool(digit[starts[~minus]].all()) and (lengths[~minus] <= _MAX_EPOCH_DIGITS).all()


def _epoch(strings: pa.Array) -> np.ndarray | None:
    seconds = np.asarray(strings.cast(pa.int64())).astype(float)
    if not (np.abs(seconds) < _MAX_EPOCH).all():
        return None
    ns: np.ndarray = np.round(seconds * 1e9).astype("int64").view("datetime64[ns]")
    return ns


def _naive(strings: pa.Array, timezone: str) -> np.ndarray | None:
    """UTC nanoseconds of naive times of 19 bytes each, parsed by Arrow; None when one is
    not a date and time to the second (the numpy parser refuses those too) or its year is
    out of range."""
    try:
        stamps = strings.cast(pa.timestamp("s"))
    except pa.ArrowInvalid:
        return None
    seconds: np.ndarray = stamps.to_numpy().view(np.int64)
    lowest, highest = int(seconds.min()), int(seconds.max())
    if lowest < _SECONDS[0] or highest > _SECONDS[1]:
        return None
    if highest - lowest < len(seconds) // 2:  # fewer seconds in the span than values
        span = np.arange(lowest, highest + 1, dtype=np.int64) * _NS
        utc: np.ndarray = _localized(span, timezone)[seconds - lowest]
        return utc
    return _localized(seconds * _NS, timezone)


def _iso(
    data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, timezone: str
) -> np.ndarray | None:
    """UTC nanoseconds of ISO values of the three accepted lengths; None otherwise."""
    shortest, longest = int(lengths.min()), int(lengths.max())
    if shortest == longest and shortest in _SHAPES:
        groups: list[tuple[int, np.ndarray | None]] = [(shortest, None)]
    elif np.isin(lengths, _SHAPES).all():
        groups = [(length, np.flatnonzero(lengths == length)) for length in _SHAPES]
    else:
        return None
    out = np.empty(len(lengths), dtype=np.int64)
    for length, rows in groups:
        count = len(lengths) if rows is None else len(rows)
        for first in range(0, count, _SLICE):
            target: slice | np.ndarray
            if rows is None:  # one length: the bytes are a matrix already
                target = slice(first, min(first + _SLICE, count))
                start = offsets[first]
                block = data[start : start + (target.stop - first) * length].reshape(-1, length)
            else:
                target = rows[first : first + _SLICE]
                block = data[offsets[target][:, None] + np.arange(length)]
            seconds = _seconds(block)
            if seconds is None:
                return None
            out[target] = seconds
    return _to_utc(out * _NS, lengths == NAIVE, timezone)


def _seconds(block: np.ndarray) -> np.ndarray | None:
    """Seconds since the epoch of each row of bytes (wall clock minus any offset)."""
    digits = block[:, _DIGITS] - 48
    if (digits > 9).any():  # uint8: bytes below '0' wrap around
        return None
    if not (
        (block[:, _SEPARATORS] == _SEPARATOR_BYTES).all()
        and ((block[:, 10] == ord("T")) | (block[:, 10] == ord(" "))).all()
    ):
        return None
    pairs = digits[:, 0::2].astype(np.int32) * 10 + digits[:, 1::2]  # YY YY MM DD hh mm ss
    del digits
    year = pairs[:, 0] * 100 + pairs[:, 1]
    month, day, hour, minute, second = (pairs[:, k] for k in range(2, 7))
    if not (
        ((year >= _YEARS[0]) & (year <= _YEARS[1])).all()
        and ((month >= 1) & (month <= 12)).all()
        and ((day >= 1) & (day <= _days_in_month(year, month))).all()
        and (hour <= 23).all()
        and (minute <= 59).all()
        and (second <= 59).all()
    ):
        return None
    wall: np.ndarray = _days_from_civil(year, month, day).astype(np.int64) * 86_400
    wall += hour * 3600 + minute * 60 + second
    length = block.shape[1]
    if length == ZULU:
        return wall if (block[:, 19] == ord("Z")).all() else None
    if length == OFFSET:
        offset = _offset_seconds(block)
        return None if offset is None else wall - offset
    return wall


def _offset_seconds(block: np.ndarray) -> np.ndarray | None:
    """The `±hh:mm` offsets of rows of 25 bytes, in seconds east of UTC."""
    sign = block[:, 19]
    digits = block[:, [20, 21, 23, 24]] - 48
    if not (np.isin(sign, (ord("+"), ord("-"))).all() and (block[:, 22] == ord(":")).all()):
        return None
    if (digits > 9).any():
        return None
    d = digits.astype(np.int64)
    hours, minutes = d[:, 0] * 10 + d[:, 1], d[:, 2] * 10 + d[:, 3]
    if (hours > 14).any() or (minutes > 59).any():
        return None
    east: np.ndarray = np.where(sign == ord("-"), -1, 1) * (hours * 3600 + minutes * 60)
    return east


def _days_in_month(year: np.ndarray, month: np.ndarray) -> np.ndarray:
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    days: np.ndarray = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[month]
    days += (month == 2) & leap
    return days


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's algorithm)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days: np.ndarray = era * 146_097 + doe - 719_468
    return days


def _to_utc(ns: np.ndarray, naive: np.ndarray, timezone: str) -> np.ndarray:
    """Naive wall-clock nanoseconds localized as `parse_times` does; others are UTC."""
    out = ns.view("datetime64[ns]")
    if naive.any():
        out[naive] = _localized(ns[naive], timezone)
    return out


def _localized(ns: np.ndarray, timezone: str) -> np.ndarray:
    """UTC datetime64[ns] of wall-clock nanoseconds in `timezone`, localized as
    `parse_times` localizes naive times, value by value."""
    local = pd.DatetimeIndex(ns.view("datetime64[ns]")).tz_localize(
        timezone, ambiguous=np.ones(len(ns), dtype=bool), nonexistent="shift_forward"
    )
    utc: np.ndarray = local.tz_convert("UTC").tz_localize(None).as_unit("ns").to_numpy()
    return utc
