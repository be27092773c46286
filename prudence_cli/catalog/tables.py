"""The catalog's per-dataview tables as files: the dataview, its locations and the
per-person risks.

Catalogs of format version 2 store them as Parquet with typed columns: ids and labels as
text, counts as 64-bit integers, risks and coordinates as float64, compressed with zstd
(fast to write, and to read back). The same table always gives the same bytes (no time
stamp or pandas metadata is written), so the sha256 that catalog.json records for each
file depends on the data alone. Catalogs of format version 1 stored them as CSV (gzip,
`.csv.gz`; the locations as plain `.csv`): they are read by the extension catalog.json
records, so an older catalog stays readable. Arrow and pandas are imported by the
functions that read and write these files, not with this module: the catalog's other
files are read without them.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

PARQUET = ".parquet"
CSV_GZ = ".csv.gz"  # catalogs of format version 1
_COMPRESSION = "zstd"
# rows per row group (pyarrow's default, fixed here): a table written in parts is cut
# where a whole one is, and gives the same bytes (`write_parts`)
ROW_GROUP = 1 << 20
_LOCATIONS = {PARQUET: ".locations.parquet", CSV_GZ: ".locations.csv"}


class TableFileError(ValueError):
    """A catalog table file that cannot be read as its extension says."""


def write_table(frame: pd.DataFrame, path: Path, text: Sequence[str]) -> None:
    """Write `frame` to the Parquet file `path`, the columns `text` as text (a missing
    value as "", as a CSV would hold it), every other column by its type."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {name: _column(frame[name], name in text) for name in frame.columns}
    with _named(path):
        pq.write_table(pa.table(columns), path, compression=_COMPRESSION, row_group_size=ROW_GROUP)


def write_parts(frames: Iterable[pd.DataFrame], path: Path, text: Sequence[str]) -> None:
    """`write_table` of the `frames` one after the other (at least one), the same bytes
    as of their concatenation, holding a row group and a frame at a time, not the whole
    table: each row group is cut where a whole table's is."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer: pq.ParquetWriter | None = None
    carry: pa.Table | None = None
    written = 0
    with _named(path):
        try:
            for frame in frames:
                table = pa.table({name: _column(frame[name], name in text) for name in frame})
                if carry is not None:
                    table = pa.concat_tables([carry, table.cast(carry.schema)]).combine_chunks()
                if writer is None:
                    writer = pq.ParquetWriter(path, table.schema, compression=_COMPRESSION)
                whole = table.num_rows // ROW_GROUP * ROW_GROUP
                if whole:
                    writer.write_table(table.slice(0, whole), row_group_size=ROW_GROUP)
                    written += whole
                carry = table.slice(whole)
            if writer is None or carry is None:
                raise ValueError("a table is written from one part at least")
            if carry.num_rows or not written:  # as write_table ends
                writer.write_table(carry, row_group_size=ROW_GROUP)
        finally:
            if writer is not None:
                writer.close()


@contextlib.contextmanager
def _named(path: Path) -> Iterator[None]:
    """Arrow's errors name no file: named, as open() would."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def read_table(path: Path, text: Sequence[str]) -> pd.DataFrame:
    """The table of the catalog file `path`, by its extension: Parquet, or the CSV of a
    catalog of format version 1 (the columns `text` as text, "" never missing)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if path.name.endswith(PARQUET):
            if path.is_dir():  # written in parts by the workers
                return _read_parts(path).to_pandas()
            # the file alone: pq.read_table would load Arrow's dataset layer for it
            with pq.ParquetFile(path) as parquet:
                return parquet.read().to_pandas()
        return pd.read_csv(path, dtype={name: str for name in text}, keep_default_na=False)
    except (OSError, EOFError, ValueError, UnicodeDecodeError, zlib.error) as exc:
        raise TableFileError(str(exc)) from None
    except pa.ArrowException as exc:  # damaged Parquet not caught above
        raise TableFileError(str(exc)) from None


def read_arrow(path: Path) -> pa.Table | None:
    """The Parquet catalog file `path` as an Arrow table, without pandas; None for the
    CSV of a catalog of format version 1 (`read_table` reads those)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.name.endswith(PARQUET):
        return None
    try:
        if path.is_dir():  # written in parts by the workers
            return _read_parts(path)
        with pq.ParquetFile(path) as parquet:
            return parquet.read()
    except (OSError, EOFError, ValueError) as exc:
        raise TableFileError(str(exc)) from None
    except pa.ArrowException as exc:
        raise TableFileError(str(exc)) from None


# the name of the k-th part of a table written in parts by the workers
PART = "part-{:05d}.parquet"


def parts_of(path: Path) -> list[Path]:
    """The parts of the table written as the folder `path`, in order."""
    return sorted(path.glob(PART.replace("{:05d}", "*")))


def _read_parts(path: Path) -> pa.Table:
    """The table of a folder of parts: the parts one after the other."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for part in parts_of(path):
        with pq.ParquetFile(part) as parquet:
            tables.append(parquet.read())
    if not tables:
        raise TableFileError(f"{path}: a folder of table parts holds no part")
    return pa.concat_tables(tables)


def locations_name(dataview_name: str) -> str:
    """The locations file that goes with the dataview file `dataview_name` (as catalog.json
    names it): `dataviews/d1.parquet` → `dataviews/d1.locations.parquet`, and in a
    catalog of format version 1 `dataviews/d1.csv.gz` → `dataviews/d1.locations.csv`."""
    for suffix, locations in _LOCATIONS.items():
        if dataview_name.endswith(suffix):
            return dataview_name[: -len(suffix)] + locations
    raise TableFileError(f"{dataview_name}: not a dataview file name (.parquet or .csv.gz)")


def _column(values: pd.Series, as_text: bool) -> pa.Array:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = values.dtype.kind
    if not as_text and kind == "b":
        return pa.array(values.to_numpy(dtype=bool), type=pa.bool_())
    if not as_text and kind in "iu":
        return pa.array(values.to_numpy(dtype=np.int64), type=pa.int64())
    if not as_text and kind == "f":
        return pa.array(values.to_numpy(dtype=np.float64), type=pa.float64())
    try:  # text already (arrow-backed strings are taken without a copy)
        array = pa.array(values, type=pa.string(), from_pandas=True)
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # numbers, as a CSV would write them
        text = values.astype(object).where(values.notna(), "").astype(str)
        array = pa.array(text, type=pa.string(), from_pandas=True)
    return pc.fill_null(array, "") if array.null_count else array
