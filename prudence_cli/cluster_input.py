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
   (`_version`): the file's table never outlives the task, its pieces wait on the
   worker's disk (`Scratch`), not in its memory.
3. A few ranges at a time (`in_flight`), the pieces of a range are loaded from disk by
   the workers that wrote them and meet, in file order, on one worker (range k on the
   k-th worker, round the workers, whatever the number of files), which numbers the
   range's ids in sorted order and selects them (period, trips, trip ends, area, active
   users: every point of a user is in the one range), keeping the selection on its disk
   (cluster_select.select_range). So a worker's memory holds the pieces of the ranges
   being selected, not of the whole input.
4. From what the ranges tell, the assessing process chooses the projection and numbers
   users, towers or segments and trips across the ranges (in id order: every user has
   the code a local run gives it); each range is projected on its worker and its points
   written into the Selection's arrays as they come (cluster_select): the same
   Selection, bit for bit (the tests compare the catalogs).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from prudence_cli import columns as C
from prudence_cli.cluster_ranges import cut_bounds
from prudence_cli.cluster_scratch import (
    Copy,
    Scratch,
    given_back,
    glimpsed,
    on_worker,
    removed,
)
from prudence_cli.cluster_select import (
    Assembly,
    Told,
    finish_range,
    numbering,
    read_back,
    select_range,
)
from prudence_cli.cluster_tasks import WATCH_SECONDS, pinned, still_there, windowed
from prudence_cli.config import Config
from prudence_cli.errors import InputError
from prudence_cli.io.checksums import remember, sha256_fresh
from prudence_cli.io.dataset import data_files
from prudence_cli.io.points import ReadProgress, read_file
from prudence_cli.io.remote import RemoteFile, fetched, listed, named
from prudence_cli.io.specs import PointsSpec
from prudence_cli.io.tables import read_segments, read_towers
from prudence_cli.select import Selection


def read_and_select(
    client: Any,
    config: Config,
    progress: ReadProgress | None = None,
    keep: bool = False,
    cached: bool = False,
) -> tuple[Selection, dict[str, int], Kept | None, dict[str, tuple[str, int]]]:
    """The Selection of the config's input, read and selected on the workers of `client`
    (see the module docstring), and the invalid rows dropped, by reason. When `keep`,
    the selected points stay on the workers (the Selection's table is empty) and what
    finds them there is returned, to be closed once used; else None (`cached`: every
    column of them is kept there too, for the cache: cluster_cache.py). Last, the sha256
    and size of each file fetched from an object store, by URL (io/remote.py)."""
    spec = config.input.spec()
    files: tuple[Path | RemoteFile, ...] = (
        listed(spec.store) if spec.store is not None else data_files(spec.path)
    )
    towers = read_towers(spec.towers) if spec.towers is not None else None
    segments = read_segments(spec.segments) if spec.segments is not None else None
    (tables,) = client.scatter([(towers, segments)], broadcast=True, hash=False)
    user = spec.columns.user
    alone = len(files) == 1
    # the cache is found by the inputs' contents, so with one they are hashed here already
    hashed = config.input.cache != "parquet"
    scratch = Scratch(uuid.uuid4().hex)
    kept: Kept | None = None
    fetched: dict[str, tuple[str, int]] = {}
    glimpsing: list[Any] = []
    split: list[Any] = []
    try:
        glimpsing = [
            client.submit(glimpsed, f, user, spec.delimiter, scratch, pure=False) for f in files
        ]
        glimpses = client.gather(glimpsing)
        samples = [(rows, ids) for rows, ids, _ in glimpses]
        copies = [copy for _, _, copy in glimpses]
        bounds = cut_bounds(samples, _ranges(client, sum(rows for rows, _ in samples)))

        def read(file: Path | RemoteFile, copy: Copy | None) -> Any:
            arguments = (spec, copy or file, tables, alone, bounds, hashed, scratch)
            if copy is None:
                return client.submit(_read_split, *arguments, pure=False)
            return pinned(client, copy.worker, _read_split, *arguments)  # where it lies

        split = [read(f, copy) for f, copy in zip(files, copies, strict=True)]
        holders = {copy.worker for copy in copies if copy is not None}
        _heard(client, split, [_size(f) for f in files], progress, holders)
        for future in split:  # the first file's error in file order, as a local run says
            if future.status == "error":
                future.result()
        found: list[_Split] = client.gather(split)
        rows_read = sum(s.rows_read for s in found)
        dropped: Counter[str] = Counter()
        for file, s in zip(files, found, strict=True):
            dropped.update(s.dropped)
            if s.version is None:
                continue
            size, modified, digest = s.version  # the catalog records the sha256 taken
            if isinstance(file, RemoteFile):
                fetched[file.url] = (digest, size)
            else:
                remember((str(file.resolve()), size, modified), digest)
        if rows_read == 0:
            raise InputError(spec.shown, f"holds no data rows in any of its {len(files)} files")
        ranges = len(bounds) + 1
        selection, told = _selected(
            client, found, ranges, config, scratch, rows_read, segments, keep, cached
        )
        kept = Kept(client, scratch, told) if keep else None
        if kept is not None:  # the files stay, the memory goes
            with contextlib.suppress(Exception):  # as `removed`: never the run's error
                client.run(given_back, on_error="ignore")
    finally:
        for future in glimpsing:  # read already, or failed (see below)
            future.release()
        if kept is None:  # failed, or nothing is kept
            # files not read yet will not be; one being read leaves nothing: its pieces
            # are refused once the run has ended (Scratch.written)
            client.cancel([future for future in split if not future.done()])
            # a failure's traceback holds this frame, and Dask keeps the error (with it)
            # while its future is held: the run's futures are let go of here, or the
            # client would keep them all
            for future in (*split, tables):
                future.release()
            removed(client, scratch)
    return selection, dict(dropped), kept, fetched


@dataclass(frozen=True)
class Kept:
    """The selected points kept on the workers: each range's, in the run's folder of
    the worker that selected it (cluster_select.Placed)."""

    client: Any
    scratch: Scratch
    told: list[Told]

    def close(self) -> None:
        """The points removed from the workers' disks (see `removed`)."""
        removed(self.client, self.scratch)


def _selected(
    client: Any,
    split: list[_Split],
    ranges: int,
    config: Config,
    scratch: Scratch,
    rows_read: int,
    segments: pd.DataFrame | None,
    keep: bool,
    cached: bool,
) -> tuple[Selection, list[Told]]:
    """Each range selected where its pieces meet, then finished where it was selected
    (cluster_select), into the Selection (its points left there when `keep`); and what
    the ranges told."""

    # range k is selected on worker k (round the workers), where it stays: Dask would
    # place it where most of its pieces are, which for an input of one file, or of
    # fewer files than workers, is the few workers that read them, every range there
    workers = sorted(client.nthreads())

    def select(k: int) -> Any:
        parts = [pinned(client, s.worker, _load, s.pieces[k]) for s in split if s.pieces[k]]
        on = [workers[k % len(workers)]]  # preferred: another if that one is gone
        return client.submit(
            select_range,
            parts,
            config,
            k,
            scratch,
            pure=False,
            workers=on,
            allow_other_workers=True,
        )

    holders = {s.worker for s in split}
    told: list[Told] = sorted(windowed(client, range(ranges), select, holders), key=lambda t: t.k)
    assembly = Assembly(told, config, client if keep else None)
    if assembly.points == 0:
        return assembly.selection(None, rows_read, segments), told
    numbers, assembly.locations = numbering(told, config)

    def finish(k: int) -> Any:
        done = told[k], numbers[k], config, keep, cached
        return pinned(client, told[k].worker, finish_range, *done)

    for done in windowed(client, [t.k for t in told if t.points], finish, _holders(told)):
        assembly.add(done)
    return assembly.selection(numbers[0].projection, rows_read, segments), told


def _holders(told: list[Told]) -> set[str]:
    """The workers holding ranges' selections."""
    return {t.worker for t in told if t.path}


@dataclass(frozen=True)
class _Split:
    """A file read and cut on a worker: the paths of its pieces there (None: no row in
    that range), its rows read and dropped, its version (see `_version`)."""

    worker: str
    pieces: list[str | None]
    rows_read: int
    dropped: dict[str, int]
    version: tuple[int, int, str] | None


def _heard(
    client: Any,
    futures: list[Any],
    sizes: list[int],
    progress: ReadProgress | None,
    needed: set[str],
) -> None:
    """Wait for the files' tasks, telling `progress` the bytes of the files done so far;
    CancelledError when one of the `needed` workers (holding a fetched copy that a task
    pinned there reads) is gone."""
    total, told = sum(sizes), -1
    watched = time.monotonic()
    while True:
        if needed and time.monotonic() - watched > WATCH_SECONDS:
            still_there(client, needed)
            watched = time.monotonic()
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


def _ranges(client: Any, rows: int) -> int:
    """How many ranges of users to select in: one per worker, more when a range would
    not fit an eighth of the smallest worker's memory limit (Dask's; none: no more; of
    the workers scheduler_info describes, which some versions cap at five)."""
    from prudence_cli.engine.connect import smallest_limit

    limit = smallest_limit(client)
    ranges = max(len(client.nthreads()), 1)
    if limit > 0:
        per_range = max(limit // SELECT_SHARE // SELECT_BYTES_PER_ROW, 1)
        ranges = max(ranges, -(-rows // per_range))
    return ranges


def _read_split(
    spec: PointsSpec,
    file: Path | RemoteFile | Copy,
    tables: tuple[Any, Any],
    alone: bool,
    bounds: list[str],
    hashed: bool,
    scratch: Scratch,
) -> _Split:
    """A file of the input `spec` read (as a local run reads it) and its rows cut by the
    ranges of `bounds`, in row order, each piece written to this worker's `scratch`; its
    rows read and dropped; when `hashed`, its size, modification time and sha256, hashed
    while it is read (see `_version`). A file in an object store is fetched into a
    temporary folder of the worker's directory first (its modification time then 0),
    unless its glimpse fetched it here already (a `Copy`), and removed once read. The
    file's table lives only in here."""
    from distributed import get_worker

    towers, segments = tables
    if isinstance(file, Copy):  # fetched here for its glimpse
        local = Path(file.path)
        try:
            with named(local, file.url):
                here = replace(spec, path=local, store=None)
                raw = read_file(here, towers, segments, None, alone=alone)
        finally:
            local.unlink(missing_ok=True)
        version: tuple[int, int, str] | None = (file.size, 0, file.sha256)
    elif isinstance(file, RemoteFile):
        # fetched beside the run's folder, not in it: removed whatever becomes of the run
        with (
            on_worker(),
            tempfile.TemporaryDirectory(
                prefix="prudence-", dir=get_worker().local_directory
            ) as folder,
            fetched(file, Path(folder)) as got,
        ):
            here = replace(spec, path=got.path, store=None)
            raw = read_file(here, towers, segments, None, alone=alone)
        version = (got.size, 0, got.sha256)
    else:
        with ThreadPoolExecutor(1) as pool:
            hashing = pool.submit(_version, file) if hashed else None
            raw = read_file(replace(spec, path=file), towers, segments, None, alone=alone)
            version = hashing.result() if hashing is not None else None
    paths = [
        scratch.written(f"{uuid.uuid4().hex}.pickle", piece) if len(piece) else None
        for piece in _cut(raw.table, bounds)
    ]
    rows_read, dropped = raw.rows_read, dict(raw.dropped)
    del raw
    pa.default_memory_pool().release_unused()  # Arrow's reader keeps freed blocks else
    return _Split(get_worker().address, paths, rows_read, dropped, version)


def _cut(table: pd.DataFrame, bounds: list[str]) -> Iterator[pd.DataFrame]:
    """The table's rows in each range of `bounds`, in row order, the user column holding
    the range's own ids only (ids of other ranges must not be numbered there)."""
    if len(table) == 0:
        yield from [table] * (len(bounds) + 1)
        return
    ids = table[C.USER].array
    labels = np.asarray(ids.categories, dtype=object)  # sorted
    cut = np.searchsorted(labels, np.asarray(bounds, dtype=object))  # first label of each
    range_of = np.searchsorted(np.asarray(bounds, dtype=object), labels, side="right")
    where = range_of[ids.codes]
    order = np.argsort(where, kind="stable")
    ends = np.searchsorted(where[order], np.arange(1, len(bounds) + 2))
    firsts = np.r_[0, cut]
    lasts = np.r_[cut, len(labels)]
    for k, (start, end) in enumerate(zip(np.r_[0, ends[:-1]], ends, strict=True)):
        rows = order[start:end]
        own = pd.Categorical.from_codes(
            ids.codes[rows] - firsts[k], categories=ids.categories[firsts[k] : lasts[k]]
        )
        piece = {n: own if n == C.USER else table[n].array.take(rows) for n in table.columns}
        yield pd.DataFrame(piece, copy=False)


def _load(path: str) -> pd.DataFrame:
    """A piece written by `_read_split` on this worker, its file removed once read."""
    piece: pd.DataFrame = read_back(path)
    os.unlink(path)
    return piece


def _size(file: Path | RemoteFile) -> int:
    return file.size if isinstance(file, RemoteFile) else file.stat().st_size


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
