"""The release ledger (Pratesi et al., PRUDEnce, section 6): what each recipient has already
received.

The ledger lives in the catalog, under `ledger/`: `ledger.json` lists the releases, and
`ledger/<release id>/` keeps a copy of each released dataview with the original user ids
(and the pseudonym mapping, when ids were replaced). When a new dataview is released to
a recipient who already holds others, the attacks are run on the union of the new view
and the earlier ones: an attacker's knowledge may mix elements of every view, and a
candidate must match in each view the elements that come from it. Randomized releases
are recorded too (mechanism, ε, the sha256 of the released files); they keep no copy.

Integrity: the ledger grows after `catalog.json` is written, so the catalog's checksums
leave it out (catalog/folder.py). Instead each record lists the sha256 of the files of its
copy (`files`), computed from the bytes written, and `released_views` checks a copy
against its record before assessing a new release with it: a copy changed since is an
error naming it. Each record also lists the sha256 of the files of the release folder
itself (`released_files`). `ledger.json`, the list of records, is replaced atomically, so
a reader never sees half of it and needs no lock.

One writer at a time: a release takes the ledger's lock (`ledger/.lock`, a `filelock`
lock that the system releases when its process dies, however it dies) before it numbers
the release, and keeps it until the release is recorded. Two runs on one catalog never
get the same id, and a release is never recorded for a recipient who was given another
release after this one was assessed: `sanitize` then assesses it again, with that one.
The long computation runs before, without the lock.

Kills. The recipient can get a release from the moment its finished folder is renamed
into place, so the record is written around that moment, in two steps:
1. every file of the release is written in its hidden staging folder; then the ledger's
   copy, and the record, `pending`, with the staging folder's path and the sha256 of the
   release's files;
2. the staging folder is renamed to the release folder, and the record marked `complete`.
A run killed before its record is written leaves none (and no release). A pending record
found by the next run that takes the lock is one whose writer died (a live writer holds
the lock); that run, or the next listing, settles it by what is on disk:
- the release folder holds this release (its `report.json` has the recorded sha256): the
  kill came after the rename; the record is marked complete;
- the staging folder is still there: the rename never happened; the record, its copy and
  the staging folder are removed;
- neither (the folder may have been renamed into place, then moved or replaced; or the
  staging folder was cleaned away, see `io.atomic.recover`): the record is kept as
  complete, noting that the release was not found.
The record is written before the folder can appear, and kept when in doubt, because the
ledger must never under-state what a recipient holds: a release it forgets is left out
when the next release to them is assessed, which could then single people out; one it
over-states only makes that assessment more cautious. A pending record is counted as held
until it is settled. A run interrupted by an exception settles its own record at once
(complete if its folder is in place, else removed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli.catalog import Catalog
from prudence_cli.dataviews.base import Dataview
from prudence_cli.dataviews.registry import format_class
from prudence_cli.dataviews.restore import parse_dimensions, view_from_table
from prudence_cli.errors import CatalogError, PrudenceError
from prudence_cli.io.atomic import atomic_folder, write_bytes_atomic, write_text_atomic
from prudence_cli.io.checksums import sha256_file, sha256_fresh

LEDGER = "ledger"
LEDGER_FILE = "ledger.json"
LOCK = ".lock"
LOCK_WAIT = 600.0  # seconds a release waits for another run's release to be recorded
DATAVIEW = "dataview.csv.gz"  # the released rows, with the original user ids
LOCATIONS = "locations.csv"
MAPPING = "mapping.csv"  # user -> pseudonym, when ids were replaced
REPORT = "report.json"  # the release folder's file that identifies it
PENDING, COMPLETE = "pending", "complete"  # a record's `state` (none: complete)


@dataclass(frozen=True)
class Copy:
    """What the ledger keeps of a release: its rows with the original ids, its locations,
    and the pseudonym mapping (ids replaced)."""

    table: pd.DataFrame
    locations: pd.DataFrame
    mapping: pd.DataFrame | None = None


def read_ledger(catalog: Catalog) -> list[dict[str, Any]]:
    """The records, oldest first. Pending records of runs that died are settled first
    when the ledger can be locked at once; those of a run at work are listed as they are."""
    records = _load(catalog.path)
    if any(r.get("state") == PENDING for r in records):
        # not when a writer is at work (its records are listed as they are), or read-only
        with contextlib.suppress(LedgerBusy, OSError), _locked(catalog.path, wait=0):
            records = _settle_dead(catalog.path)
    return records


def next_release_id(catalog: Catalog) -> str:
    """r001, r002, ...: one more than the highest id recorded. Final only under the lock
    (`Ledger.next_id`)."""
    return _next_id(_load(catalog.path))


class LedgerBusy(CatalogError):
    """Another run holds the ledger's lock."""


class Ledger:
    """The ledger of a catalog while this process holds its lock (`open_ledger`)."""

    def __init__(self, catalog: Catalog, records: list[dict[str, Any]]) -> None:
        self.catalog = catalog
        self.records = records

    def next_id(self) -> str:
        return _next_id(self.records)

    def held_by(self, recipient: str | None) -> set[str]:
        """The ids of the releases recorded for `recipient`, pending ones included."""
        if recipient is None:
            return set()
        return {str(r["id"]) for r in self.records if r.get("recipient") == recipient}

    @contextlib.contextmanager
    def release(
        self,
        out: Path,
        is_replaceable: Callable[[Path], bool],
        record: dict[str, Any],
        copy: Copy | None,
    ) -> Iterator[Path]:
        """Yield the staging folder of the release `record` describes; when the block has
        written it, record the release as pending, put the folder in place at `out`
        (atomically, see `atomic_folder`) and mark the record complete."""
        root = self.catalog.path
        release_id = str(record["id"])
        if any(r.get("id") == release_id for r in self.records):
            raise CatalogError(f"{root / LEDGER}: release {release_id} is already recorded")
        try:
            with atomic_folder(out, is_replaceable) as staging:
                yield staging
                files = _write_copy(root, release_id, copy)
                released = {
                    p.name: sha256_file(p) for p in sorted(staging.iterdir()) if p.is_file()
                }
                pending = {
                    **record,
                    "release": os.path.abspath(out),
                    "files": files,
                    "released_files": released,
                    "state": PENDING,
                    "staging": str(staging.resolve()),
                }
                self.records = [*self.records, pending]
                _save(root, self.records)
        except BaseException:
            self.records = _settle(root, _load(root), release_id, died=False)
            raise
        self.records = [_completed(r) if r.get("id") == release_id else r for r in self.records]
        _save(root, self.records)


@contextlib.contextmanager
def open_ledger(catalog: Catalog, wait: float = LOCK_WAIT) -> Iterator[Ledger]:
    """Hold the ledger's lock; the records, with those of runs that died settled."""
    with _locked(catalog.path, wait):
        yield Ledger(catalog, _settle_dead(catalog.path))


def released_views(catalog: Catalog, recipient: str, user_ids: np.ndarray) -> list[Dataview]:
    """The dataviews already released to `recipient`, pending ones included. Their
    universe is the catalog's U followed by the people they hold who are not in U (an
    earlier assessment may have selected others): those stay candidates for an attacker."""
    loaded = []
    for record in read_ledger(catalog):
        if record.get("recipient") != recipient:
            continue
        if record.get("method") == "randomize":
            raise PrudenceError(
                f"the recipient already holds release {record['id']}, randomized profiles; "
                "Prudence cannot assess another release together with it: release to "
                "another recipient"
            )
        table = _read_copy(
            catalog, record, DATAVIEW, dtype={"user": str, "location": str}, keep_default_na=False
        )
        locations = _read_copy(
            catalog, record, LOCATIONS, dtype={"label": str}, keep_default_na=False
        )
        loaded.append((record, table, locations))
    extra = sorted({u for _, table, _ in loaded for u in table["user"]} - set(user_ids.tolist()))
    universe = np.concatenate([user_ids, np.array(extra, dtype=object)])
    views = []
    for record, table, locations in loaded:
        dims = parse_dimensions(record["format"], record["dimensions"])
        views.append(
            view_from_table(record["id"], record["format"], dims, universe, table, locations)
        )
    return views


def carry_over(old_catalog: Path, new_folder: Path) -> None:
    """Copy the ledger of a catalog being replaced into its replacement: re-assessing
    must never forget what was released. The old ledger is locked while it is copied."""
    source = old_catalog / LEDGER
    if not source.is_dir():
        return
    with _locked(old_catalog, LOCK_WAIT):
        _settle_dead(old_catalog)
        shutil.copytree(
            source, new_folder / LEDGER, ignore=shutil.ignore_patterns(LOCK, ".*.tmp", ".*.tmp-*")
        )


def join_views(view: Dataview, earlier: list[Dataview]) -> Dataview:
    """One view holding the rows of `view` and of every earlier release, each view's
    locations kept apart, each row keeping the frequency threshold (and share) of the
    view it comes from (see the format's `concat`). Same format and universe required:
    see `widen`."""
    if not earlier:
        return view
    for other in earlier:
        if other.format != view.format:
            raise PrudenceError(
                f"the recipient already holds release {other.id}, a {other.format} dataview; "
                f"Prudence assesses releases of one format together, not a {view.format} one "
                "with it: release a dataview of that format, or release to another recipient"
            )
    return format_class(view.format).concat([view, *earlier])


def widen(view: Dataview, earlier: list[Dataview]) -> Dataview:
    """`view` over the universe of the releases `earlier` (its U followed by the people
    only they hold, who have no rows in it), so that the view and its join count the same
    people."""
    n_users = max((v.n_users for v in earlier), default=view.n_users)
    return view if n_users == view.n_users else _with_universe(view, n_users)


def narrow(view: Dataview, n_users: int) -> Dataview:
    """A widened view back on its first `n_users` people (the others have no rows)."""
    return view if n_users == view.n_users else _with_universe(view, n_users)


def _with_universe(view: Dataview, n_users: int) -> Dataview:
    if view.user.size and int(view.user.max()) >= n_users:
        raise ValueError(f"dataview {view.id} has people beyond the first {n_users:,}")
    return dataclasses.replace(view, n_users=n_users)


# --- records on disk ----------------------------------------------------------------------


def _load(root: Path) -> list[dict[str, Any]]:
    path = root / LEDGER / LEDGER_FILE
    if not path.is_file():
        return []
    try:
        return list(json.loads(path.read_text(encoding="utf-8"))["releases"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CatalogError(f"{path}: unreadable release ledger: {exc}") from None


def _save(root: Path, records: list[dict[str, Any]]) -> None:
    write_text_atomic(
        root / LEDGER / LEDGER_FILE,
        json.dumps({"releases": records}, indent=2, default=str) + "\n",
    )


def _next_id(records: list[dict[str, Any]]) -> str:
    numbers = [int(r["id"][1:]) for r in records if str(r.get("id", ""))[1:].isdigit()]
    return f"r{max(numbers, default=0) + 1:03d}"


@contextlib.contextmanager
def _locked(root: Path, wait: float) -> Iterator[None]:
    """Hold the ledger's lock; LedgerBusy after `wait` seconds."""
    from filelock import FileLock, Timeout  # only a release takes the lock

    (root / LEDGER).mkdir(exist_ok=True)
    lock = FileLock(root / LEDGER / LOCK, timeout=wait)
    try:
        lock.acquire()
    except Timeout:
        raise LedgerBusy(
            f"{root / LEDGER / LOCK}: another prudence run has held the release ledger for "
            f"{wait:g} s; try again when it has finished"
        ) from None
    try:
        yield
    finally:
        lock.release()


def _write_copy(root: Path, release_id: str, copy: Copy | None) -> dict[str, str]:
    """Write the ledger's copy of a release; the sha256 of each of its files."""
    folder = root / LEDGER / release_id
    if folder.exists():  # left by a run that died before recording it
        shutil.rmtree(folder)
    if copy is None:
        return {}
    contents = {DATAVIEW: _gzip_csv(copy.table), LOCATIONS: _csv(copy.locations)}
    if copy.mapping is not None:
        contents[MAPPING] = _csv(copy.mapping)
    for name, data in contents.items():
        write_bytes_atomic(folder / name, data)
    return {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()}


def _settle_dead(root: Path) -> list[dict[str, Any]]:
    """Under the lock: settle every pending record (its writer died); the records."""
    records = _load(root)
    for record in [r for r in records if r.get("state") == PENDING]:
        records = _settle(root, records, str(record["id"]), died=True)
    return records


def _settle(
    root: Path, records: list[dict[str, Any]], release_id: str, died: bool
) -> list[dict[str, Any]]:
    """Mark a pending record complete or remove it, by what is on disk (see the module);
    saves and returns the records. A record that is not pending is left as it is."""
    record = next((r for r in records if r.get("id") == release_id), None)
    if record is None or record.get("state") != PENDING:
        return records
    staging = Path(record["staging"]) if record.get("staging") else None
    settled = _completed(record)
    if _holds(Path(record["release"]), record):
        if died:
            settled["recovered"] = "found in place after the run that wrote it was interrupted"
    elif not died or (staging is not None and staging.exists()):
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(root / LEDGER / release_id, ignore_errors=True)
        kept = [r for r in records if r is not record]
        _save(root, kept)
        return kept
    else:
        settled["recovered"] = (
            "not found after the run that wrote it was interrupted; kept, since it may "
            "have been released and moved since"
        )
    changed = [settled if r is record else r for r in records]
    _save(root, changed)
    return changed


def _completed(record: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in record.items() if k != "staging"}, "state": COMPLETE}


def _holds(folder: Path, record: dict[str, Any]) -> bool:
    """Whether `folder` is the release `record` describes (its report.json's sha256)."""
    recorded = (record.get("released_files") or {}).get(REPORT)
    try:
        return recorded is not None and sha256_fresh(folder / REPORT) == recorded
    except OSError:
        return False


def _read_copy(catalog: Catalog, record: dict[str, Any], name: str, **options: Any) -> pd.DataFrame:
    """A file of a release's copy in the ledger, once found to be as its record says."""
    path = catalog.path / LEDGER / str(record["id"]) / name
    ledger = catalog.path / LEDGER / LEDGER_FILE
    recorded = (record.get("files") or {}).get(name)
    if not isinstance(recorded, str):
        raise CatalogError(
            f"{ledger}: release {record['id']} records no sha256 of its {name} (a ledger "
            "written before Prudence checked them), so its copy cannot be checked"
        )
    if not path.is_file():
        raise CatalogError(
            f"{path}: missing; the ledger's copy of release {record['id']} is incomplete"
        )
    if sha256_fresh(path) != recorded:
        raise CatalogError(
            f"{path}: changed or damaged since release {record['id']} was recorded (its "
            f"sha256 is not the one {ledger} records), so what that recipient holds is "
            "unknown; restore the file from a backup of the catalog"
        )
    try:
        return pd.read_csv(path, **options)
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: unreadable ({exc})") from None


def _csv(table: pd.DataFrame) -> bytes:
    return table.to_csv(index=False).encode("utf-8")


def _gzip_csv(table: pd.DataFrame) -> bytes:
    return gzip.compress(_csv(table), compresslevel=6, mtime=0)
