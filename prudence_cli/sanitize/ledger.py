"""The release ledger (Pratesi et al., PRUDEnce, section 6): what each recipient has already
received.

The ledger lives in the catalog, under `ledger/`: `ledger.json` lists the releases, and
`ledger/<release id>/` keeps a copy of each released dataview with the original user ids
(and the pseudonym mapping, when ids were replaced). When a new dataview is released to
a recipient who already holds others, the attacks are run on the union of the new view
and the earlier ones: an attacker's knowledge may mix elements of every view, and a
candidate must match in each view the elements that come from it.

Integrity: the ledger grows after `catalog.json` is written, so the catalog's checksums
leave it out (catalog/folder.py). Instead each record lists the sha256 of the files of its
copy, computed from the bytes written, and `released_views` checks a copy against its
record before assessing a new release with it: the hashes stay current after every
release, and a copy changed since is an error naming it. `ledger.json` itself, the list of
records, is the one file that changes, and is read as it is.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli.catalog import Catalog
from prudence_cli.dataviews.base import Dataview
from prudence_cli.dataviews.registry import format_class
from prudence_cli.dataviews.restore import parse_dimensions, view_from_table
from prudence_cli.errors import CatalogError, PrudenceError
from prudence_cli.io.atomic import write_bytes_atomic, write_text_atomic
from prudence_cli.io.checksums import sha256_fresh

LEDGER = "ledger"
LEDGER_FILE = "ledger.json"
DATAVIEW = "dataview.csv.gz"  # the released rows, with the original user ids
LOCATIONS = "locations.csv"
MAPPING = "mapping.csv"  # user -> pseudonym, when ids were replaced


def read_ledger(catalog: Catalog) -> list[dict[str, Any]]:
    path = catalog.path / LEDGER / LEDGER_FILE
    if not path.is_file():
        return []
    try:
        return list(json.loads(path.read_text(encoding="utf-8"))["releases"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CatalogError(f"{path}: unreadable release ledger: {exc}") from None


def next_release_id(catalog: Catalog) -> str:
    """r001, r002, ...: one more than the highest id recorded."""
    numbers = [int(r["id"][1:]) for r in read_ledger(catalog) if str(r.get("id", ""))[1:].isdigit()]
    return f"r{max(numbers, default=0) + 1:03d}"


def released_views(catalog: Catalog, recipient: str, user_ids: np.ndarray) -> list[Dataview]:
    """The dataviews already released to `recipient`. Their universe is the catalog's U
    followed by the people they hold who are not in U (an earlier assessment may have
    selected others): those stay candidates for an attacker."""
    loaded = []
    for record in read_ledger(catalog):
        if record.get("recipient") != recipient:
            continue
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
    must never forget what was released."""
    source = old_catalog / LEDGER
    if source.is_dir():
        shutil.copytree(source, new_folder / LEDGER)


def record_release(
    catalog: Catalog,
    record: dict[str, Any],
    table: pd.DataFrame,
    locations: pd.DataFrame,
    mapping: pd.DataFrame | None,
) -> None:
    """Keep a copy of the release in the ledger, then append its record (written last)
    with the sha256 of each file of the copy."""
    earlier = read_ledger(catalog)
    if any(r.get("id") == record["id"] for r in earlier):
        raise CatalogError(f"{catalog.path / LEDGER}: release {record['id']} is already recorded")
    folder = catalog.path / LEDGER / record["id"]
    if folder.exists():  # left by a release that was withdrawn (`forget_release`)
        shutil.rmtree(folder)
    contents = {DATAVIEW: _gzip_csv(table), LOCATIONS: locations.to_csv(index=False).encode()}
    if mapping is not None:
        contents[MAPPING] = mapping.to_csv(index=False).encode()
    for name, data in contents.items():
        write_bytes_atomic(folder / name, data)
    files = {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()}
    releases = [*earlier, {**record, "files": files}]
    write_text_atomic(
        catalog.path / LEDGER / LEDGER_FILE,
        json.dumps({"releases": releases}, indent=2, default=str) + "\n",
    )


def forget_release(catalog: Catalog, release_id: str) -> None:
    """Undo `record_release` when the release itself could not be written."""
    releases = [r for r in read_ledger(catalog) if r["id"] != release_id]
    write_text_atomic(
        catalog.path / LEDGER / LEDGER_FILE,
        json.dumps({"releases": releases}, indent=2, default=str) + "\n",
    )


def join_views(view: Dataview, earlier: list[Dataview]) -> Dataview:
    """One view holding the rows of `view` and of every earlier release, each view's
    locations kept apart, each row keeping the frequency threshold (and share) of the
    view it comes from (see the format's `concat`). Same format and universe required."""
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


def _gzip_csv(table: pd.DataFrame) -> bytes:
    return gzip.compress(table.to_csv(index=False).encode("utf-8"), compresslevel=6, mtime=0)
