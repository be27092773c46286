"""Reading and selecting the input on a Dask cluster: the assessing process never holds
the raw points, only what the selection keeps.

1. Each file of the input (io.dataset: one file, a folder or a glob of parts) is read by
   a worker, with the reader of a local run (the fast path, the careful one, errors
   naming the file and line, dropped rows counted), and stays there.
2. Each file sends back its user ids and their rows. The assessing process numbers the
   union of the ids in sorted order, as a local run numbers them, and cuts the codes into
   ranges of about equal rows: one per worker, or more when a range's selection would
   not fit a quarter of a worker's memory limit.
3. Each file is split by those ranges where it was read; the pieces of a range meet, in
   file order, on one worker, which selects them (period, trips, trip ends, area, active
   users — every point of a user is in the one range) and sends back only the rows
   kept, compacted (select.Chosen.compacted).
4. The assessing process joins the ranges in user order and finishes the selection as a
   local run does (users renumbered, the kept points projected, towers and segments
   numbered): the same Selection, bit for bit (the tests compare the catalogs).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from prudence_cli import columns as C
from prudence_cli.config import Config
from prudence_cli.errors import InputError
from prudence_cli.io.dataset import data_files
from prudence_cli.io.labels import united
from prudence_cli.io.points import RawPoints, read_file
from prudence_cli.io.specs import PointsSpec
from prudence_cli.io.tables import read_segments, read_towers
from prudence_cli.select import Chosen, Selection, _Rows, finish, select_rows

ReadProgress = Callable[[int, int], None]


def read_and_select(
    client: Any, config: Config, progress: ReadProgress | None = None
) -> tuple[Selection, dict[str, int]]:
    """The Selection of the config's input, read and selected on the workers of `client`
    (see the module docstring), and the invalid rows dropped, by reason."""
    from distributed import as_completed

    spec = config.input.spec()
    files = data_files(spec.path)
    towers = read_towers(spec.towers) if spec.towers is not None else None
    segments = read_segments(spec.segments) if spec.segments is not None else None
    (tables,) = client.scatter([(towers, segments)], broadcast=True, hash=False)
    alone = len(files) == 1
    read = [client.submit(_read, replace(spec, path=f), tables, alone, pure=False) for f in files]
    sizes = {future.key: f.stat().st_size for future, f in zip(read, files, strict=True)}
    total, done = sum(sizes.values()), 0
    ids = [client.submit(_ids, future, pure=False) for future in read]
    for future in as_completed(read):
        done += sizes[future.key]
        if progress is not None:
            progress(done, total)
    found = client.gather(ids)
    del ids
    rows_read = sum(f[2] for f in found)
    dropped: Counter[str] = Counter()
    for f in found:
        dropped.update(f[3])
    if rows_read == 0 or not any(len(f[0]) for f in found):
        raise InputError(spec.path, f"holds no data rows in any of its {len(files)} files")
    rows = sum(int(f[1].sum()) for f in found)
    everyone, codes, bounds = _numbered(found, _ranges(client, rows))
    pieces = [
        client.submit(_split, future, code, bounds, pure=False)
        for future, code in zip(read, codes, strict=True)
    ]
    del read
    chosen = []
    for k in range(len(bounds) - 1):
        parts = [client.submit(operator.getitem, piece, k, pure=False) for piece in pieces]
        first, count = int(bounds[k]), int(bounds[k + 1] - bounds[k])
        chosen.append(client.submit(_select, parts, first, count, config, pure=False))
    shares = client.gather(chosen)
    joined = _joined(shares, bounds, everyone, rows_read)
    return finish(joined, config, segments), dict(dropped)


# bytes a worker's selection of a range takes per row at its peak (the rows as read, the
# pieces, sorting and placing them); a range is sized to a quarter of a worker's limit
SELECT_BYTES_PER_ROW = 120


def _ranges(client: Any, rows: int) -> int:
    """How many ranges of users to select in: one per worker, more when a range would
    not fit a quarter of the smallest worker's memory limit (Dask's; none: no more)."""
    workers = client.scheduler_info()["workers"].values()
    limits = [w.get("memory_limit") or 0 for w in workers]
    ranges = max(len(limits), 1)
    if limits and min(limits) > 0:
        per_range = max(min(limits) // 4 // SELECT_BYTES_PER_ROW, 1)
        ranges = max(ranges, -(-rows // per_range))
    return ranges


def _read(spec: PointsSpec, tables: tuple[Any, Any], alone: bool) -> RawPoints:
    towers, segments = tables
    return read_file(spec, towers, segments, None, alone=alone)


def _ids(raw: RawPoints) -> tuple[pa.Array, np.ndarray, int, dict[str, int]]:
    """A file's user ids (sorted) and rows per id, its rows read and dropped."""
    users = raw.table[C.USER]
    if len(users) == 0:
        return pa.array([], type=pa.string()), np.zeros(0, np.int64), raw.rows_read, {}
    ids = users.array
    labels = pa.array(ids.categories, type=pa.string())
    rows = np.bincount(ids.codes, minlength=len(labels))
    return labels, rows, raw.rows_read, dict(raw.dropped)


def _numbered(
    found: list[tuple[pa.Array, np.ndarray, int, dict[str, int]]], ranges: int
) -> tuple[pa.Array, list[np.ndarray], np.ndarray]:
    """Every user id in sorted order (as a local run numbers them); each file's codes of
    its ids; and the bounds of `ranges` ranges of codes of about equal rows."""
    union = pc.unique(pa.concat_arrays([f[0] for f in found]))
    everyone = union.take(pc.sort_indices(union))
    rows = np.zeros(len(everyone), dtype=np.int64)
    codes = []
    for labels, counts, _, _ in found:
        code = pc.index_in(labels, value_set=everyone).to_numpy(zero_copy_only=False)
        code = code.astype(np.int64)
        rows[code] += counts
        codes.append(code)
    cumulative = np.cumsum(rows)
    cuts = np.searchsorted(cumulative, cumulative[-1] * np.arange(1, ranges) / ranges)
    bounds = np.unique(np.r_[0, np.minimum(cuts + 1, len(everyone)), len(everyone)])
    return everyone, codes, bounds


def _split(raw: RawPoints, codes: np.ndarray, bounds: np.ndarray) -> list[pd.DataFrame]:
    """A file's rows by range of user codes (in row order), users as their codes."""
    table = raw.table
    if len(table) == 0:
        return [table] * (len(bounds) - 1)
    user = codes[table[C.USER].array.codes]
    where = np.searchsorted(bounds, user, side="right") - 1
    order = np.argsort(where, kind="stable")
    ends = np.searchsorted(where[order], np.arange(1, len(bounds)))
    starts = np.r_[0, ends[:-1]]
    out = []
    for start, end in zip(starts, ends, strict=True):
        rows = order[start:end]
        piece = {C.USER: user[rows]}
        for name in table.columns:
            if name != C.USER:
                column = table[name]
                piece[name] = (
                    column.array.take(rows) if name == C.LOCATION else column.to_numpy()[rows]
                )
        out.append(pd.DataFrame(piece, copy=False))
    return out


def _select(parts: list[pd.DataFrame], first: int, count: int, config: Config) -> Chosen:
    """The selection of one range of users (codes first, first + 1, ...), compacted."""
    parts = [part for part in parts if len(part)] or parts[:1]
    columns = {}
    for name in parts[0].columns:
        if name == C.LOCATION:
            columns[name] = united([part[name].array for part in parts])
        elif name == C.USER:
            local = np.concatenate([part[name].to_numpy() for part in parts]) - first
            columns[name] = pd.Categorical.from_codes(
                local.astype(np.int32), categories=pd.RangeIndex(count)
            )
        else:
            columns[name] = np.concatenate([part[name].to_numpy() for part in parts])
    raw = RawPoints(table=pd.DataFrame(columns, copy=False))
    return select_rows(raw, config).compacted()


def _joined(shares: list[Chosen], bounds: np.ndarray, everyone: pa.Array, rows_read: int) -> Chosen:
    """The ranges' selections as the selection of the whole input, in user order."""
    trip_offsets = np.cumsum([0] + [share.trips for share in shares])
    user = np.concatenate(
        [share.rows.user.astype(np.int64) + bounds[k] for k, share in enumerate(shares)]
    )
    trip = np.concatenate([share.rows.trip + trip_offsets[k] for k, share in enumerate(shares)])
    time = np.concatenate([share.rows.time for share in shares])
    names = [name for name in shares[0].table.columns if name != C.USER]
    table = {}
    for name in names:
        if name == C.LOCATION:
            table[name] = united([share.table[name].array for share in shares])
        else:
            table[name] = np.concatenate([share.table[name].to_numpy() for share in shares])
    stats = {"rows_read": rows_read}
    for key in ("rows_valid", "rows_in_period", "points"):
        stats[key] = sum(share.stats[key] for share in shares)
    rows = _Rows(np.arange(len(user), dtype=np.int64), user, trip, time)
    return Chosen(
        rows,
        pd.DataFrame(table, copy=False),
        everyone.to_numpy(zero_copy_only=False),
        np.concatenate([share.present for share in shares]),
        stats,
        int(trip_offsets[-1]),
    )
