"""The fast path of reading a gps or cdr CSV: Arrow's multi-threaded CSV reader, typed
columns and checks on whole columns, for files in which nothing is unusual.

`read_plain` returns the table `io.points.read_points` would build, or None as soon as it
meets anything the careful path must see: a row it cannot parse or with a wrong number
of fields, a blank line, a byte that is not UTF-8, a header it reads otherwise, an empty
user, a time of another shape than `io.plain_times` parses, a coordinate that is not a
number in range, a tower not in the table, a damaged .gz. The caller then reads the file
again from its start with the careful path, whose messages name the file, line and
reason (and whose progress starts again from zero).

Quoted fields are read as pandas' C parser reads them (a doubled quote is a quote). A
quoted line break inside one of Arrow's blocks is read so too; one that falls across
blocks (which are split at line breaks) stops Arrow's reader and sends the file back.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from prudence_cli import columns as C
from prudence_cli.io.labels import arrow_categorical, packed_categorical, packed_ids
from prudence_cli.io.plain_times import plain_times
from prudence_cli.io.specs import PointsSpec

BLOCK_BYTES = 16 << 20  # bytes of CSV per batch: each is parsed on its own thread


class _Unusual(Exception):
    """Something in the file that only the careful path reads as it must."""


def read_plain(
    spec: PointsSpec,
    header: list[str],
    needed: dict[str, str],
    towers: pd.DataFrame | None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[pd.DataFrame, int] | None:
    """(table, rows read) of a gps or cdr CSV in which every row is valid, as the careful
    path reads it; None when the file holds anything unusual (see the module docstring).
    `progress` hears the bytes read (of the compressed file, for a .gz) after each batch."""
    if len(spec.delimiter) != 1 or spec.delimiter in '"\r\n' or len(set(header)) < len(header):
        return None
    try:
        return _read(spec, header, needed, towers, progress)
    except Exception:  # noqa: BLE001 - whatever stops the fast path, the careful one reads
        return None


def _read(
    spec: PointsSpec,
    header: list[str],
    needed: dict[str, str],
    towers: pd.DataFrame | None,
    progress: Callable[[int, int], None] | None,
) -> tuple[pd.DataFrame, int]:
    numbers = {needed["lat"], needed["lon"]} if towers is None else set()
    types = {name: pa.float64() if name in numbers else pa.string() for name in header}
    raw = pa.OSFile(str(spec.path))
    size = raw.size()
    stream = pa.CompressedInputStream(raw, "gzip") if spec.path.suffix == ".gz" else raw
    users: _Growing | list[pa.Array] | None = None  # packed into numbers, or as read
    times, lats, lons = _Growing(np.int64), _Growing(np.float64), _Growing(np.float64)
    places: list[pa.Array] = []
    with stream:
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(use_threads=True, block_size=BLOCK_BYTES),
            parse_options=pacsv.ParseOptions(
                delimiter=spec.delimiter,
                quote_char='"',
                double_quote=True,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=False,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=types,
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=True,
            ),
        )
        if reader.schema.names != header:
            raise _Unusual("the header reads otherwise")
        for batch in reader:
            expected = max(size * len(batch) // BLOCK_BYTES, len(batch))  # rows in the file
            ids = batch.column(needed["user"])
            keys = packed_ids(ids) if not isinstance(users, list) else None
            if users is None:
                users = _Growing(np.uint64) if keys is not None else []
            if isinstance(users, list):
                users.append(ids)
            elif keys is None:
                raise _Unusual("long user ids after short ones")
            else:
                users.append(keys, expected)
            time = plain_times(batch.column(needed["time"]), spec.timezone, spec.time_format)
            if time is None:
                raise _Unusual("a time of another shape")
            times.append(time.view(np.int64), expected)
            if towers is None:
                lats.append(_coordinate(batch.column(needed["lat"]), 90), expected)
                lons.append(_coordinate(batch.column(needed["lon"]), 180), expected)
            else:
                places.append(batch.column(needed["tower"]))
            if progress is not None:
                progress(min(raw.tell(), size), size)
    # the batches are gone: hand the memory Arrow's pool kept for reuse back to the system
    pa.default_memory_pool().release_unused()
    if users is None:
        raise _Unusual("no rows")
    columns = {C.USER: _users(users), C.TIME: times.values()}
    if towers is None:
        columns[C.LAT], columns[C.LON] = lats.values(), lons.values()
    else:
        columns.update(_located(places, towers))
    return pd.DataFrame(columns, copy=False), times.size


class _Growing:
    """A column filled batch by batch in one array, sized to the expected rows (doubled
    when they are more): no pile of small arrays that the C allocator cannot give back
    while the batches' temporaries come and go between them."""

    def __init__(self, dtype: type) -> None:
        self.array: np.ndarray = np.empty(0, dtype=dtype)
        self.size = 0

    def append(self, values: np.ndarray, expected: int) -> None:
        end = self.size + len(values)
        if end > len(self.array):
            grown = np.empty(max(expected, end, 2 * len(self.array)), dtype=self.array.dtype)
            grown[: self.size] = self.array[: self.size]
            self.array = grown
        self.array[self.size : end] = values
        self.size = end

    def values(self) -> np.ndarray:
        """The rows appended (untouched spare rows are never resident memory)."""
        return self.array[: self.size]


def _coordinate(values: pa.Array, limit: float) -> np.ndarray:
    numbers: np.ndarray = values.to_numpy()
    if not (np.abs(numbers) <= limit).all():  # NaN is not within
        raise _Unusual("a coordinate out of range")
    return numbers


def _users(ids: _Growing | list[pa.Array]) -> pd.Categorical:
    """The user column as the careful path's Categorical; an empty user (or of spaces
    only, as `io.points` tells them) sends the file back."""
    if isinstance(ids, _Growing):
        categorical, distinct = packed_categorical(ids.values())
        maybe = np.flatnonzero(_may_be_blank(distinct))
        labels = np.asarray(categorical.categories[maybe], dtype=object)
        if len(maybe) and _blank(pa.array(labels, type=pa.string())).any():
            raise _Unusual("an empty user")
        return categorical
    encoded = pa.chunked_array(ids, type=pa.string()).combine_chunks().dictionary_encode()
    del ids[:]
    if _blank(encoded.dictionary).any():
        raise _Unusual("an empty user")
    return arrow_categorical(encoded.indices.to_numpy(), encoded.dictionary)


def _may_be_blank(keys: np.ndarray) -> np.ndarray:
    """Packed ids that are empty or begin with a byte that may start a space (an ASCII
    space or control character, or any non-ASCII character): only these can be blank."""
    first = keys >> np.uint64(56)
    blank: np.ndarray = (first <= 32) | (first >= 127)
    return blank


def _located(chunks: list[pa.Array], towers: pd.DataFrame) -> dict[str, object]:
    """lat, lon and location of each cdr row, from its tower as the careful path finds it
    (surrounding spaces ignored)."""
    encoded = pa.chunked_array(chunks, type=pa.string()).combine_chunks().dictionary_encode()
    del chunks[:]
    labels = encoded.dictionary
    text = pd.Series(labels.to_numpy(zero_copy_only=False), dtype=str)
    found = pd.Index(towers[C.TOWER]).get_indexer(text.str.strip())
    if (found < 0).any():
        raise _Unusual("a tower not in the table")
    position = found[encoded.indices.to_numpy()]
    used, code = np.unique(position, return_inverse=True)
    names = towers[C.TOWER].to_numpy(dtype=object)[used]
    order = np.argsort(names, kind="stable")
    rank = np.empty(len(used), dtype=np.int32)
    rank[order] = np.arange(len(used), dtype=np.int32)
    return {
        C.LAT: towers[C.LAT].to_numpy()[position],
        C.LON: towers[C.LON].to_numpy()[position],
        C.LOCATION: pd.Categorical.from_codes(rank[code], categories=names[order]),
    }


def _blank(labels: pa.Array) -> np.ndarray:
    """Ids that are empty or spaces only, by the same test as the careful path's."""
    text = pd.Series(labels.to_numpy(zero_copy_only=False), dtype=str)
    blank: np.ndarray = text.str.strip().eq("").to_numpy(dtype=bool)
    return blank
