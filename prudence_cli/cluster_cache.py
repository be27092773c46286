"""`input.cache: parquet` with the Dask engine: the selected points go into the cache and
come out of it range by range, and stay on the workers (prepare.py holds the format).

Storing: the workers kept every column of each range's points (cluster_select,
`finish_range(..., cached=True)`); each range's worker writes them as Parquet in memory
and sends those bytes here, where they are written as that range's part. Loading: each
part's file is read here as bytes, unparsed, and sent to a worker, which keeps what the
dataviews read of it (cluster_select.Placed) and its users' ids in the run's folder, as
a run that read the input would. Either way the assessing process holds a few parts'
bytes at a time, never the points; the workers need not see the cache's folder.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from prudence_cli import columns as C
from prudence_cli.arrays import distinct
from prudence_cli.cluster_input import Kept
from prudence_cli.cluster_scratch import Scratch, removed
from prudence_cli.cluster_select import (
    IdsRange,
    KeptIds,
    Told,
    columns_path,
    ids_path,
    placed_of,
    read_back,
)
from prudence_cli.cluster_tasks import pinned, windowed
from prudence_cli.config import Config
from prudence_cli.engine.connect import sent_to
from prudence_cli.select import Selection

# a part as the cache holds it: (its users, its points)
Part = tuple[int, int]


def stored_parts(client: Any, kept: Kept, write: Callable[[int, bytes, bytes], None]) -> list[Part]:
    """Each range `kept` on the workers with every column (`cached`), as Parquet bytes
    of its points and of its users' ids, given to `write(part, points, ids)` as they
    come (parts numbered in user order); each range's columns removed from its worker
    once sent. The parts' users and points, in order."""
    holding = [t for t in kept.told if t.points]

    def submit(i: int) -> Any:
        return pinned(client, holding[i].worker, _part_bytes, holding[i], i)

    needed = {t.worker for t in holding}
    for i, points, ids in windowed(client, range(len(holding)), submit, needed):
        write(i, points, ids)
    return [(t.users, t.points) for t in holding]


def _part_bytes(told: Told, i: int) -> tuple[int, bytes, bytes]:
    """On the range's worker: its columns kept for the cache, as Parquet (removed from
    the disk), and its users' ids."""
    path = columns_path(told)
    columns: dict[str, np.ndarray] = read_back(path)
    Path(path).unlink()
    points = _parquet(pa.table(columns))
    ids = _parquet(pa.table({"user": read_back(ids_path(told))}))
    return i, points, ids


def _parquet(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue())


def loaded(
    client: Any,
    config: Config,
    parts: list[Part],
    read: Callable[[int], tuple[bytes, bytes]],
    make: Callable[[Any], Selection],
) -> Selection:
    """The cached selection with its points on the workers (`selection.placed`, as a run
    that reads the input keeps them): part k, `read(k)` here as the bytes of its points
    and of its ids, goes to the k-th worker (in turn, or another if that one is busy),
    which keeps it in this run's folder. `make(user_ids)` gives the Selection of the
    cache but its points; every worker's part is removed if this fails."""
    from prudence_cli.cluster_views import points_on_workers  # it imports Dask's

    scratch = Scratch(uuid.uuid4().hex)
    workers = sorted(client.nthreads())

    def submit(k: int) -> Any:
        on = [workers[k % len(workers)]]  # preferred: another if that one is gone
        part = sent_to(client, read(k), on)  # to it, not in the graph
        return client.submit(
            _part_kept, part, k, config, scratch, pure=False, workers=on,
            allow_other_workers=True,
        )  # fmt: skip

    done = False
    try:
        told = sorted(windowed(client, range(len(parts)), submit, set()), key=lambda t: t.k)
        ranges, first = [], 0
        for t in told:
            ranges.append(IdsRange(t.worker, ids_path(t), first, first + t.users))
            first += t.users
        selection = make(KeptIds(client, tuple(ranges), first))
        if told:
            points_on_workers(selection, Kept(client, scratch, told))
        done = True
        return selection
    finally:
        if not done:
            removed(client, scratch)


def _part_kept(part: tuple[bytes, bytes], k: int, config: Config, scratch: Scratch) -> Told:
    """On a worker: part k of the cache (the Parquet bytes of its points and of its ids)
    kept in the run's folder, as `finish_range` keeps a range it finished."""
    from distributed import get_worker

    points, ids = part
    table = pq.read_table(pa.BufferReader(points))
    columns = {name: table[name].to_numpy() for name in table.column_names}
    labels = pq.read_table(pa.BufferReader(ids))["user"].combine_chunks()
    del table
    path = scratch.written(f"range-{k}.pickle.placed", placed_of(columns, config))
    told = Told(
        k,
        get_worker().address,
        path.removesuffix(".placed"),
        len(labels),
        len(columns[C.USER]),
        len(distinct(columns[C.TRIP])) if C.TRIP in columns else 0,
        {},
        None,
        None,
    )
    with open(ids_path(told), "wb") as file:
        pickle.dump(labels, file, protocol=pickle.HIGHEST_PROTOCOL)
    return told
