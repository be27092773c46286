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

Arrow parses each block on a thread of its own while the batch before it is converted
here (`_ReadAhead`): its streaming reader parses only when asked for the next batch.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from types import TracebackType

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from prudence_cli import columns as C
from prudence_cli.io.dataset import is_gzip
from prudence_cli.io.labels import arrow_categorical, packed_categorical, packed_ids
from prudence_cli.io.plain_times import plain_times
from prudence_cli.io.specs import PointsSpec

# bytes of CSV per batch; Arrow's I/O thread reads up to 32 blocks ahead of its parser
BLOCK_BYTES = 4 << 20


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
    stream = pa.CompressedInputStream(raw, "gzip") if is_gzip(spec.path) else raw
    columns = _Columns(spec, needed, towers is not None)
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
        with _ReadAhead(reader, lambda: min(raw.tell(), size)) as batches:
            for batch, done in batches:
                columns.add(batch, max(size * len(batch) // BLOCK_BYTES, len(batch)))
                if progress is not None:
                    progress(done, size)
    # the batches are gone: hand the memory Arrow's pool kept for reuse back to the system
    pa.default_memory_pool().release_unused()
    return columns.table(towers), columns.times.size


class _Columns:
    """The table's columns, filled batch by batch: users packed into numbers (or kept as
    read when some id is long), UTC times, coordinates or towers."""

    def __init__(self, spec: PointsSpec, needed: dict[str, str], cdr: bool) -> None:
        self.spec, self.needed, self.cdr = spec, needed, cdr
        self.users: _Growing | list[pa.Array] | None = None
        self.times = _Growing(np.int64)
        self.lats, self.lons = _Growing(np.float64), _Growing(np.float64)
        self.places: list[pa.Array] = []

    def add(self, batch: pa.RecordBatch, expected: int) -> None:
        """Append a batch, `expected` the rows the file is thought to hold."""
        ids = batch.column(self.needed["user"])
        keys = packed_ids(ids) if not isinstance(self.users, list) else None
        if self.users is None:
            self.users = _Growing(np.uint64) if keys is not None else []
        if isinstance(self.users, list):
            self.users.append(ids)
        elif keys is None:
            raise _Unusual("long user ids after short ones")
        else:
            self.users.append(keys, expected)
        spec = self.spec
        time = plain_times(batch.column(self.needed["time"]), spec.timezone, spec.time_format)
        if time is None:
            raise _Unusual("a time of another shape")
        self.times.append(time.view(np.int64), expected)
        if self.cdr:
            self.places.append(batch.column(self.needed["tower"]))
        else:
            self.lats.append(_coordinate(batch.column(self.needed["lat"]), 90), expected)
            self.lons.append(_coordinate(batch.column(self.needed["lon"]), 180), expected)

    def table(self, towers: pd.DataFrame | None) -> pd.DataFrame:
        if self.users is None:
            raise _Unusual("no rows")
        columns = {C.USER: _users(self.users), C.TIME: self.times.values()}
        if towers is None:
            columns[C.LAT], columns[C.LON] = self.lats.values(), self.lons.values()
        else:
            columns.update(_located(self.places, towers))
        return pd.DataFrame(columns, copy=False)


_Item = tuple[pa.RecordBatch, int] | BaseException | None


class _ReadAhead:
    """The reader's batches, each with the bytes of the file read once it was parsed, the
    next one parsed on a thread of its own while the caller uses the one before: Arrow's
    streaming reader parses a block only when asked for the next batch, so without it the
    caller's work and Arrow's would take turns on one core.

    Leaving the `with` block (at the end, on an error, or early) stops the thread and
    waits for it, so that the file is not closed under it."""

    def __init__(self, reader: pacsv.CSVStreamingReader, position: Callable[[], int]) -> None:
        self._reader, self._position = reader, position
        # a batch and the bytes read, then None at the end (or what stopped the reader)
        self._ready: queue.Queue[_Item] = queue.Queue(maxsize=1)  # one batch waits
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="csv-read-ahead", daemon=True)

    def __enter__(self) -> Iterator[tuple[pa.RecordBatch, int]]:
        self._thread.start()
        return self._batches()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        while self._thread.is_alive():  # make room for a batch it may be handing over
            with contextlib.suppress(queue.Empty):
                self._ready.get(timeout=0.01)
        self._thread.join()

    def _read(self) -> None:
        try:
            for batch in self._reader:
                self._ready.put((batch, self._position()))
                if self._stop.is_set():
                    return
            self._ready.put(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
            self._ready.put(exc)

    def _batches(self) -> Iterator[tuple[pa.RecordBatch, int]]:
        while True:
            item = self._ready.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item


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
