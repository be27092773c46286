"""Where the ranges of user ids are cut (cluster_input.py, step 1): each file shows an
even sample of its user ids, as written, read quickly and not checked; the bounds cut
the sorted samples, each weighing its file's rows, into ranges of about equal rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from prudence_cli.io.dataset import is_parquet
from prudence_cli.io.remote import RemoteFile

# user ids a file shows of itself to place the ranges' bounds
GLIMPSED_IDS = 20_000


def glimpse(file: Path | RemoteFile, user: str, delimiter: str) -> tuple[int, pa.Array]:
    """A file's rows and an even sample of its user ids, as written, read quickly and
    not checked (the bounds of the ranges need no more); nothing when it cannot be read
    so (the careful read then says why). A Parquet file of an object store has its user
    column read in place; a CSV file of a store is glimpsed once fetched
    (cluster_scratch.glimpsed)."""
    if isinstance(file, RemoteFile):
        return _glimpsed_in_place(file, user)
    path = file
    try:
        if is_parquet(path):
            ids = pq.read_table(path, columns=[user]).column(user)
        else:
            options = pacsv.ConvertOptions(include_columns=[user], column_types={user: pa.string()})
            parse = pacsv.ParseOptions(delimiter=delimiter)
            ids = pacsv.read_csv(path, parse_options=parse, convert_options=options).column(user)
    except (OSError, pa.ArrowException):
        return 0, pa.array([], type=pa.string())
    return _sampled(ids)


def _sampled(ids: pa.ChunkedArray) -> tuple[int, pa.Array]:
    """The rows of a file's user column, and an even sample of its ids."""
    rows = len(ids)
    ids = pc.drop_null(pc.cast(ids.combine_chunks(), pa.string()))  # missing: not an id
    step = max(len(ids) // GLIMPSED_IDS, 1)
    return rows, ids.take(pa.array(np.arange(0, len(ids), step)))


def _glimpsed_in_place(file: RemoteFile, user: str) -> tuple[int, pa.Array]:
    """`glimpse` of a Parquet file of an object store: its user column read there."""
    try:
        fs, path = file.store.filesystem(file.url)
        with fs.open(path, "rb") as handle:
            return _sampled(pq.read_table(handle, columns=[user]).column(user))
    except Exception:  # noqa: BLE001 - the store's errors, or a bad file: said when read
        return 0, pa.array([], type=pa.string())


def cut_bounds(glimpses: list[tuple[int, pa.Array]], ranges: int) -> list[str]:
    """Ids that cut the sorted ids of every file into `ranges` ranges of about equal rows
    (each file's sample weighs its rows): a range holds the ids from one bound (included)
    to the next (excluded)."""
    samples = [(rows, ids) for rows, ids in glimpses if len(ids)]
    if ranges <= 1 or not samples:
        return []
    ids = pa.concat_arrays([ids for _, ids in samples])
    weight = np.concatenate([np.full(len(ids), rows / len(ids)) for rows, ids in samples])
    order = pc.sort_indices(ids).to_numpy()
    cumulative = np.cumsum(weight[order])
    at = np.searchsorted(cumulative, cumulative[-1] * np.arange(1, ranges) / ranges)
    cuts = ids.take(pa.array(order[np.minimum(at, len(order) - 1)])).to_pylist()
    return sorted(set(cuts))
