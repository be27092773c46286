"""The prepared points of an assessment: read and selected, or taken from the cache.

With `input.cache: parquet` the selection (points in the projected CRS with compact
codes, the user ids, the locations and the selection counts) is written as Parquet files
into `<cache_dir>/<key>/`, the key being the sha256 of the input files' checksums and of
the config's `input`, `select` and `crs` as written. A second assessment of the same data
with the same selection reads those files instead of parsing the input again. A cache
folder is written atomically; one that is incomplete or of another version is ignored.

The points and the ids are in parts of whole users (`points/part-NNNNN.parquet`, and
`users/` alike, in user order): with the Dask engine each part is a range of users that
a worker keeps, and the points go from the workers into the cache, and back, without
the assessing process ever holding them all (cluster_cache.py). Either engine reads a
cache that either wrote.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from prudence_cli import __version__
from prudence_cli import columns as C
from prudence_cli.config import Config
from prudence_cli.io.atomic import atomic_folder
from prudence_cli.io.checksums import sha256_file
from prudence_cli.io.points import ReadProgress, read_points
from prudence_cli.projections import Projection
from prudence_cli.select import Selection, _empty, select

CACHE_FORMAT = "prudence-prepared-points"
# 2: the projection's rule and scale error; 3: ids exactly as written; 4: in parts
CACHE_VERSION = 4
META = "meta.json"
PART_POINTS = 1 << 22  # the points of a part written by a local run, at most (whole users)


@dataclass(frozen=True)
class Prepared:
    selection: Selection
    dropped: dict[str, int]  # invalid rows dropped, by reason
    cache: dict[str, Any]  # what the catalog records about the cache (empty: none)
    fetched: dict[str, tuple[str, int]] = field(default_factory=dict)  # URL: sha256, bytes


def prepare(config: Config, progress: ReadProgress | None = None, client: Any = None) -> Prepared:
    """Read and select the config's input, through the cache when it asks for one.
    `progress` hears the bytes of the input read so far and its size. With a Dask
    `client`, the workers read and select the input (cluster_input.py); for presence
    and probability dataviews the selected points then stay on the workers
    (`selection.points` is empty, `selection.placed` counts the dataviews' pairs there):
    close `selection.placed` once the dataviews are built, or the workers keep the
    run's files until the Selection is collected."""
    if config.input.cache != "parquet":
        selection, dropped, fetched = _read_and_select(config, progress, client)
        return Prepared(selection, dropped, {}, fetched)
    key = cache_key(config)  # (an input in an object store takes no cache: config/parse.py)
    folder = (config.input.cache_dir or config.file.parent / ".prudence-cache") / key
    found = _load(folder, config, client)
    if found is not None:
        return Prepared(found[0], found[1], {"key": key, "folder": str(folder), "used": True})
    selection, dropped, _ = _read_and_select(config, progress, client, cached=True)
    try:
        _store(folder, selection, dropped, key)
    except BaseException:
        if selection.placed is not None:  # its points go from the workers' disks
            selection.placed.close()
        raise
    return Prepared(selection, dropped, {"key": key, "folder": str(folder), "used": False})


def _read_and_select(
    config: Config, progress: ReadProgress | None, client: Any, cached: bool = False
) -> tuple[Selection, dict[str, int], dict[str, tuple[str, int]]]:
    if client is not None:
        from prudence_cli.cluster_views import read_on_workers

        # the points stay on the workers (with every column when the cache stores them)
        return read_on_workers(client, config, progress, keep=True, cached=cached)
    raw = read_points(config.input.spec(), progress)
    return select(raw, config), dict(raw.dropped), raw.fetched


def cache_key(config: Config) -> str:
    """sha256 over the inputs' contents and the config parts that shape the points."""
    raw_input = {k: v for k, v in dict(config.raw.get("input", {})).items() if "cache" not in k}
    described = {
        "format": CACHE_VERSION,
        "files": [sha256_file(p) for p in config.point_files],
        "input": raw_input,
        "select": config.raw.get("select", {}),
        "crs": config.crs,
    }
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def is_cache(folder: Path) -> bool:
    return _meta(folder) is not None


def _meta(folder: Path) -> dict[str, Any] | None:
    """The cache folder's meta.json, or None when it is not a complete cache."""
    try:
        meta = json.loads((Path(folder) / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == CACHE_FORMAT else None


def _store(folder: Path, selection: Selection, dropped: dict[str, int], key: str) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    with atomic_folder(folder, is_cache) as tmp:
        (tmp / POINTS).mkdir()
        (tmp / USERS).mkdir()

        def write(k: int, points: bytes, ids: bytes) -> None:
            (tmp / POINTS / _part(k)).write_bytes(points)
            (tmp / USERS / _part(k)).write_bytes(ids)

        if selection.placed is not None:  # kept on the workers, every column (cached)
            from prudence_cli.cluster_cache import stored_parts

            parts = stored_parts(selection.placed.kept.client, selection.placed.kept, write)
        else:
            parts = _local_parts(tmp, selection)
        if selection.locations is not None:
            selection.locations.to_parquet(tmp / "locations.parquet", index=False)
        if selection.geometry is not None:  # exact projected lines, as well-known binary
            import shapely

            pd.DataFrame({"wkb": shapely.to_wkb(selection.geometry)}).to_parquet(
                tmp / "geometry.parquet", index=False
            )
        meta = {
            "format": CACHE_FORMAT,
            "version": CACHE_VERSION,
            "key": key,
            "tool_version": __version__,
            "crs": selection.crs,
            "projection": _projection_json(selection.projection),
            "stats": selection.stats,
            "dropped": dropped,
            "parts": [{"users": users, "points": points} for users, points in parts],
        }
        (tmp / META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


# the folders of the parts' points and of their users' ids
POINTS, USERS = "points", "users"


def _part(k: int) -> str:
    return f"part-{k:05d}.parquet"


def _local_parts(tmp: Path, selection: Selection) -> list[tuple[int, int]]:
    """The selection's points and ids written in parts of whole users, each of at most
    PART_POINTS points (but a user's own): their users and points, in order."""
    points, ids = selection.points, selection.ids
    user = points[C.USER].to_numpy()
    parts: list[tuple[int, int]] = []
    first = 0
    while first < len(ids):
        start = int(np.searchsorted(user, first))
        end = start + PART_POINTS
        last = len(ids) if end >= len(user) else max(int(user[end]), first + 1)
        stop = int(np.searchsorted(user, last))
        points.iloc[start:stop].to_parquet(tmp / POINTS / _part(len(parts)), index=False)
        chosen = pd.DataFrame({"user": ids[first:last].astype(str)})
        chosen.to_parquet(tmp / USERS / _part(len(parts)), index=False)
        parts.append((last - first, stop - start))
        first = last
    return parts


def _load(
    folder: Path, config: Config, client: Any = None
) -> tuple[Selection, dict[str, int]] | None:
    """The cached selection (with a Dask `client`, its points on the workers where the
    dataviews are built there: cluster_views.views_on_workers); None when there is none,
    of another version, or a damaged one (the input is then read again and the cache
    rewritten)."""
    meta = _meta(folder)
    if meta is None or meta.get("version") != CACHE_VERSION:
        return None
    try:
        return _read_cache(folder, meta, config, client)
    except (OSError, pa.ArrowException, KeyError, ValueError, TypeError):
        return None


def _read_cache(
    folder: Path, meta: dict[str, Any], config: Config, client: Any
) -> tuple[Selection, dict[str, int]]:
    locations = geometry = None
    if (folder / "locations.parquet").is_file():
        locations = pd.read_parquet(folder / "locations.parquet")
    if (folder / "geometry.parquet").is_file():
        import shapely

        wkb = pd.read_parquet(folder / "geometry.parquet")["wkb"].to_numpy(dtype=object)
        geometry = shapely.from_wkb(wkb)
    stats = {k: int(v) for k, v in meta["stats"].items()}
    dropped = Counter({k: int(v) for k, v in meta["dropped"].items()})
    projection = _projection_from(meta["crs"], meta.get("projection"))
    parts = [(int(p["users"]), int(p["points"])) for p in meta["parts"]]
    names = [_part(k) for k in range(len(parts))]

    def made(points: pd.DataFrame, user_ids: Any) -> Selection:
        return Selection(points, user_ids, meta["crs"], locations, geometry, stats, projection)

    if client is not None:
        from prudence_cli.cluster_views import views_on_workers

        if views_on_workers(config):  # the points go to the workers, part by part
            from prudence_cli.cluster_cache import loaded

            def read(k: int) -> tuple[bytes, bytes]:
                points, ids = (folder / part / names[k] for part in (POINTS, USERS))
                return points.read_bytes(), ids.read_bytes()

            selection = loaded(client, config, parts, read, lambda ids: made(_empty(), ids))
            return selection, dict(dropped)
    tables = [pq.read_table(folder / POINTS / name) for name in names]
    points = pa.concat_tables(tables).to_pandas() if tables else _empty()
    del tables
    ids = [pd.read_parquet(folder / USERS / name)["user"] for name in names]
    user_ids = pd.concat(ids, ignore_index=True) if ids else pd.Series([], dtype=object)
    return made(points, user_ids.to_numpy(dtype=object)), dict(dropped)


def _projection_json(projection: Projection | None) -> dict[str, Any] | None:
    if projection is None:
        return None
    return {
        "rule": projection.rule,
        "scale_error": projection.scale_error,
        "worst": list(projection.worst),
    }


def _projection_from(crs: str, data: dict[str, Any] | None) -> Projection | None:
    if data is None:
        return None
    lon, lat = data["worst"]
    return Projection(crs, data["rule"], float(data["scale_error"]), (float(lon), float(lat)))
