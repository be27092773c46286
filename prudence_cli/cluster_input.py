"""Reading and selecting the input on a Dask cluster: the assessing process never holds
the raw points, only what the selection keeps.

1. Each file of the input (io.dataset: one file, a folder or a glob of parts) shows a
   worker its rows and an even sample of its user ids, read quickly and unchecked; from
   those the assessing process places the bounds of ranges of ids of about equal rows:
   one range per worker, or more when a range's selection would not fit an eighth of a
   worker's memory limit.
2. Each file is read by a worker with the reader of a local run (the fast path, the
   careful one, errors naming the file and line, dropped rows counted) and cut by those
   ranges in the same task, hashed meanwhile for the catalog's record of its inputs
   (`_version`): the file's table never outlives the task, its pieces wait (Dask spills
   them to disk when memory runs short).
3. The pieces of a range meet, in file order, on one worker, which numbers the range's
   ids in sorted order and selects them (period, trips, trip ends, area, active users:
   every point of a user is in the one range), and sends back only the rows kept,
   compacted (select.Chosen.compacted), with the ids.
4. The assessing process joins the ranges in id order (so every user has the code a
   local run gives it) and finishes the selection as a local run does (users renumbered,
   the kept points projected, towers and segments numbered): the same Selection, bit for
   bit (the tests compare the catalogs).
"""

from __future__ import annotations

import operator
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from prudence_cli import columns as C
from prudence_cli.config import Config
from prudence_cli.errors import InputError
from prudence_cli.io.checksums import remember, sha256_fresh
from prudence_cli.io.dataset import data_files
from prudence_cli.io.labels import united
from prudence_cli.io.points import RawPoints, ReadProgress, read_file
from prudence_cli.io.specs import PointsSpec
from prudence_cli.io.tables import read_segments, read_towers
from prudence_cli.select import Chosen, Selection, _Rows, finish, select_rows


def read_and_select(
    client: Any, config: Config, progress: ReadProgress | None = None
) -> tuple[Selection, dict[str, int]]:
    """The Selection of the config's input, read and selected on the workers of `client`
    (see the module docstring), and the invalid rows dropped, by reason."""
    spec = config.input.spec()
    files = data_files(spec.path)
    towers = read_towers(spec.towers) if spec.towers is not None else None
    segments = read_segments(spec.segments) if spec.segments is not None else None
    (tables,) = client.scatter([(towers, segments)], broadcast=True, hash=False)
    user = spec.columns.user
    glimpses = client.gather(
        [client.submit(_glimpse, f, user, spec.delimiter, pure=False) for f in files]
    )
    bounds = _bounds(glimpses, _ranges(client, sum(rows for rows, _ in glimpses)))
    alone = len(files) == 1
    # the cache is found by the inputs' contents, so with one they are hashed here already
    hashed = config.input.cache != "parquet"
    split = [
        client.submit(_read_split, replace(spec, path=f), tables, alone, bounds, hashed, pure=False)
        for f in files
    ]
    counts = [client.submit(operator.itemgetter(1, 2, 3), s, pure=False) for s in split]
    _heard(split, [f.stat().st_size for f in files], progress)
    found = client.gather(counts)
    rows_read = sum(rows for rows, _, _ in found)
    dropped: Counter[str] = Counter()
    for file, (_, reasons, version) in zip(files, found, strict=True):
        dropped.update(reasons)
        if version is not None:  # the catalog records the sha256 the worker took
            size, modified, digest = version
            remember((str(file.resolve()), size, modified), digest)
    if rows_read == 0:
        raise InputError(spec.path, f"holds no data rows in any of its {len(files)} files")
    chosen = []
    for k in range(len(bounds) + 1):
        parts = [client.submit(_piece, s, k, pure=False) for s in split]
        chosen.append(client.submit(_select, parts, config, pure=False))
    del split
    shares = client.gather(chosen)
    return finish(_joined(shares, rows_read), config, segments), dict(dropped)


def _heard(futures: list[Any], sizes: list[int], progress: ReadProgress | None) -> None:
    """Wait for the files' tasks, telling `progress` the bytes of the files done so far."""
    total, told = sum(sizes), -1
    while True:
        done = sum(size for future, size in zip(futures, sizes, strict=True) if future.done())
        if done != told and progress is not None:
            progress(done, total)
        told = done
        if done == total and all(future.done() for future in futures):
            return
        time.sleep(0.05)


# bytes a worker's selection of a range takes per row at its peak (the rows as read, the
# pieces, sorting and placing them); a range is sized to an eighth of a worker's limit,
# the rest being for the pieces that wait (measured: a quarter made 3 GB workers pass
# 95 % of their limit on 10M people)
SELECT_BYTES_PER_ROW = 160
SELECT_SHARE = 8
# user ids a file shows of itself to place the ranges' bounds
GLIMPSED_IDS = 20_000


def _ranges(client: Any, rows: int) -> int:
    """How many ranges of users to select in: one per worker, more when a range would
    not fit an eighth of the smallest worker's memory limit (Dask's; none: no more)."""
    workers = client.scheduler_info()["workers"].values()
    limits = [w.get("memory_limit") or 0 for w in workers]
    ranges = max(len(limits), 1)
    if limits and min(limits) > 0:
        per_range = max(min(limits) // SELECT_SHARE // SELECT_BYTES_PER_ROW, 1)
        ranges = max(ranges, -(-rows // per_range))
    return ranges


def _glimpse(path: Path, user: str, delimiter: str) -> tuple[int, pa.Array]:
    """A file's rows and an even sample of its user ids, as written, read quickly and
    not checked (the bounds of the ranges need no more); nothing when it cannot be read
    so (the careful read then says why)."""
    try:
        if path.suffix == ".parquet":
            ids = pq.read_table(path, columns=[user]).column(user)
        else:
            options = pacsv.ConvertOptions(include_columns=[user], column_types={user: pa.string()})
            parse = pacsv.ParseOptions(delimiter=delimiter)
            ids = pacsv.read_csv(path, parse_options=parse, convert_options=options).column(user)
    except (OSError, pa.ArrowException):
        return 0, pa.array([], type=pa.string())
    ids = pc.cast(ids.combine_chunks(), pa.string())
    step = max(len(ids) // GLIMPSED_IDS, 1)
    return len(ids), ids.take(pa.array(np.arange(0, len(ids), step)))


def _bounds(glimpses: list[tuple[int, pa.Array]], ranges: int) -> list[str]:
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


def _read_split(
    spec: PointsSpec, tables: tuple[Any, Any], alone: bool, bounds: list[str], hashed: bool
) -> tuple[list[pd.DataFrame], int, dict[str, int], tuple[int, int, str] | None]:
    """A file read (as a local run reads it) and its rows cut by the ranges of `bounds`,
    in row order; its rows read and dropped; when `hashed`, its size, modification time
    and sha256, hashed while it is read (see `_version`). The file's table lives only in
    here."""
    towers, segments = tables
    with ThreadPoolExecutor(1) as pool:
        hashing = pool.submit(_version, spec.path) if hashed else None
        raw = read_file(spec, towers, segments, None, alone=alone)
        version = hashing.result() if hashing is not None else None
    table = raw.table
    if len(table) == 0:
        return [table] * (len(bounds) + 1), raw.rows_read, dict(raw.dropped), version
    ids = table[C.USER].array
    labels = np.asarray(ids.categories, dtype=object)  # sorted
    cut = np.searchsorted(labels, np.asarray(bounds, dtype=object))  # first label of each
    range_of = np.searchsorted(np.asarray(bounds, dtype=object), labels, side="right")
    where = range_of[ids.codes]
    order = np.argsort(where, kind="stable")
    ends = np.searchsorted(where[order], np.arange(1, len(bounds) + 2))
    firsts = np.r_[0, cut]
    lasts = np.r_[cut, len(labels)]
    pieces = []
    for k, (start, end) in enumerate(zip(np.r_[0, ends[:-1]], ends, strict=True)):
        rows = order[start:end]
        # the range's own ids only: ids of other ranges must not be numbered there
        own = pd.Categorical.from_codes(
            ids.codes[rows] - firsts[k], categories=ids.categories[firsts[k] : lasts[k]]
        )
        piece = {n: own if n == C.USER else table[n].array.take(rows) for n in table.columns}
        pieces.append(pd.DataFrame(piece, copy=False))
    return pieces, raw.rows_read, dict(raw.dropped), version


def _version(path: Path) -> tuple[int, int, str] | None:
    """The file's size, modification time and sha256, read afresh (a worker outlives the
    runs: no digest of an earlier run is reused); None when the file changed while it
    was hashed, for the assessing process to hash it."""
    before = path.stat()
    digest = sha256_fresh(path)
    after = path.stat()
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
        return None
    return before.st_size, before.st_mtime_ns, digest


def _piece(split: tuple[list[pd.DataFrame], int, Any, Any], k: int) -> pd.DataFrame:
    return split[0][k]


def _select(parts: list[pd.DataFrame], config: Config) -> tuple[Chosen, pa.Array]:
    """The selection of one range of users, compacted; and their ids, sorted (its user
    codes number them)."""
    parts = [part for part in parts if len(part)]
    if not parts:
        return _nothing(), pa.array([], type=pa.string())
    columns = {}
    for name in parts[0].columns:
        if name in (C.USER, C.LOCATION):
            columns[name] = united([part[name] for part in parts])
        else:
            columns[name] = np.concatenate([part[name].to_numpy() for part in parts])
    raw = RawPoints(table=pd.DataFrame(columns, copy=False))
    labels = pa.array(columns[C.USER].categories, type=pa.string())
    return select_rows(raw, config).compacted(), labels


def _nothing() -> Chosen:
    empty = np.zeros(0, dtype=np.int64)
    return Chosen(
        _Rows(empty, empty, empty, empty), pd.DataFrame(), np.zeros(0), empty.astype(bool), {}, 0
    )


def _joined(shares: list[tuple[Chosen, pa.Array]], rows_read: int) -> Chosen:
    """The ranges' selections as the selection of the whole input, in user order (the
    ranges hold consecutive ids)."""
    shares = [(chosen, labels) for chosen, labels in shares if len(labels)]
    if not shares:  # no valid row: the local run's empty selection
        empty = np.zeros(0, dtype=np.int64)
        stats = {"rows_read": rows_read, "rows_valid": 0, "rows_in_period": 0, "points": 0}
        nobody = np.zeros(0, dtype=object)
        return Chosen(
            _Rows(empty, empty, empty, empty), pd.DataFrame(), nobody, empty > 0, stats, 0
        )
    first = np.cumsum([0] + [len(labels) for _, labels in shares])
    trip_offsets = np.cumsum([0] + [chosen.trips for chosen, _ in shares])
    user = np.concatenate(
        [chosen.rows.user.astype(np.int64) + first[k] for k, (chosen, _) in enumerate(shares)]
    )
    trip = np.concatenate(
        [chosen.rows.trip + trip_offsets[k] for k, (chosen, _) in enumerate(shares)]
    )
    time = np.concatenate([chosen.rows.time for chosen, _ in shares])
    names = [name for name in shares[0][0].table.columns if name != C.USER]
    table = {}
    for name in names:
        if name == C.LOCATION:
            table[name] = united([chosen.table[name] for chosen, _ in shares])
        else:
            table[name] = np.concatenate([chosen.table[name].to_numpy() for chosen, _ in shares])
    stats = {"rows_read": rows_read}
    for key in ("rows_valid", "rows_in_period", "points"):
        stats[key] = sum(chosen.stats[key] for chosen, _ in shares)
    everyone = pa.concat_arrays([labels for _, labels in shares])
    rows = _Rows(np.arange(len(user), dtype=np.int64), user, trip, time)
    return Chosen(
        rows,
        pd.DataFrame(table, copy=False),
        everyone.to_numpy(zero_copy_only=False),
        np.concatenate([chosen.present for chosen, _ in shares]),
        stats,
        int(trip_offsets[-1]),
    )
