"""What a run keeps on the Dask workers' disks (cluster_input.py): a folder of the run
in each worker's local directory for the pieces of the input and the ranges' points,
removed at the end of the run, failed or not; and the CSV files of an object store
fetched there to place the ranges, then read by the worker that fetched them — each
file fetched once."""

from __future__ import annotations

import contextlib
import gc
import pickle
import shutil
from collections.abc import Iterator
from concurrent.futures import CancelledError
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from prudence_cli.cluster_ranges import glimpse
from prudence_cli.heap import give_back
from prudence_cli.io.remote import RemoteFile, StoreError, fetch


@dataclass(frozen=True)
class Scratch:
    """Where the workers keep this run's pieces: a folder of the run in each worker's
    local directory (Dask's, on its own disk), removed at the end of the run, failed or
    not, and by Dask with the worker's directory when a worker stops."""

    run: str

    def folder(self, worker: Any = None) -> Path:
        """This run's folder on `worker` (default: the worker running the task)."""
        if worker is None:
            from distributed import get_worker

            worker = get_worker()
        return Path(worker.local_directory) / f"prudence-{self.run}"

    def written(self, name: str, value: Any) -> str:
        """`value` pickled to `name` in this run's folder on the worker running the task
        (made when needed), read back only on that worker, in this run. CancelledError
        when the run has ended (`remove`): a task still running then — Dask does not stop
        one — leaves nothing behind, even when the folder is removed while it writes."""
        from distributed import get_worker

        worker = get_worker()
        if self.ended(worker):
            raise CancelledError(f"the run {self.run} has ended")
        folder = self.folder(worker)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        with path.open("wb") as file:
            pickle.dump(value, file, protocol=pickle.HIGHEST_PROTOCOL)
        if self.ended(worker):  # removed meanwhile: what was just written goes too
            shutil.rmtree(folder, ignore_errors=True)
            raise CancelledError(f"the run {self.run} has ended")
        return str(path)

    def remove(self, dask_worker: Any) -> None:
        """Run by `client.run` on each worker (which passes the worker by that name):
        the run marked as ended there, its folder removed, and the memory freed given
        back (`given_back`)."""
        ended = getattr(dask_worker, ENDED, None)
        if ended is None:
            ended = set()
            setattr(dask_worker, ENDED, ended)
        ended.add(self.run)
        shutil.rmtree(self.folder(dask_worker), ignore_errors=True)
        given_back()

    def ended(self, worker: Any) -> bool:
        return self.run in getattr(worker, ENDED, ())


# the attribute of a Dask worker that holds the runs ended there (32 characters each)
ENDED = "prudence_ended_runs"


def given_back() -> None:
    """The memory a worker's reading and selecting freed, given back to the system:
    Arrow's pool and malloc keep it otherwise, and Dask counts it against the worker's
    limit while the levels' shards arrive."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    give_back()


def removed(client: Any, scratch: Scratch) -> None:
    """The run's pieces removed from every worker's disk. Never raises: on a cluster that
    failed, the run's own error is what the user must see (and Dask removes a worker's
    directory, pieces included, when the worker stops)."""
    with contextlib.suppress(Exception):  # see above
        client.run(scratch.remove, on_error="ignore")


@dataclass(frozen=True)
class Copy:
    """A file of an object store fetched into the run's folder of `worker`: read there
    (pinned), then removed."""

    worker: str
    path: str
    url: str
    sha256: str
    size: int


def glimpsed(
    file: Path | RemoteFile, user: str, delimiter: str, scratch: Scratch
) -> tuple[int, pa.Array, Copy | None]:
    """`glimpse` of an input file (cluster_ranges), and where it was fetched: a CSV file
    of an object store is fetched whole into the run's folder on this worker and kept
    there for its reading (a `Copy`; none when it cannot be fetched: its reading fetches
    it again and says why); any other file is glimpsed where it is (None)."""
    if not isinstance(file, RemoteFile) or file.is_parquet:
        return (*glimpse(file, user, delimiter), None)
    from distributed import get_worker

    worker = get_worker()
    folder = scratch.folder(worker)
    if scratch.ended(worker):
        raise CancelledError(f"the run {scratch.run} has ended")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        copy = fetch(file, folder)
    except Exception:  # noqa: BLE001 - said when the file is read
        return 0, pa.array([], type=pa.string()), None
    if scratch.ended(worker):  # removed meanwhile: the copy goes too
        shutil.rmtree(folder, ignore_errors=True)
        raise CancelledError(f"the run {scratch.run} has ended")
    rows, ids = glimpse(copy.path, user, delimiter)
    return rows, ids, Copy(worker.address, str(copy.path), file.url, copy.sha256, copy.size)


@contextlib.contextmanager
def on_worker() -> Iterator[None]:
    """What the store refused a worker, said of that worker: its environment, not the
    assessing process's, must hold the store's package and credentials."""
    from distributed import get_worker

    try:
        yield
    except StoreError as exc:
        where = f" (on the Dask worker {get_worker().address}: each worker needs them)"
        raise StoreError(exc.file, exc.reason + where, exc.line) from None
