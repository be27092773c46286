"""The config's `input:` (DESIGN.md section 7): the points file, folder, pattern or
object-store URL, its format and columns, the towers or segments table, and how its
rows are parsed, checked and cached."""

from __future__ import annotations

import zoneinfo
from pathlib import Path
from typing import Any

from prudence_cli.config.reader import Reader
from prudence_cli.config.schema import INPUT_FORMATS, InputConfig, SegmentsConfig, TowersConfig
from prudence_cli.errors import shown
from prudence_cli.io.remote import (
    Store,
    is_url,
    needed_package,
    secret_options,
    secrets_in_url,
)
from prudence_cli.io.specs import ColumnMap


def parse_input(r: Reader, data: object) -> InputConfig:
    m = r.mapping(
        data,
        "input",
        required={"path"},
        allowed={
            "path",
            "format",
            "columns",
            "towers",
            "segments",
            "timezone",
            "time_format",
            "delimiter",
            "on_invalid",
            "cache",
            "cache_dir",
            "storage_options",
        },
    )
    store = _parse_store(r, m)
    fmt = r.choice(m.get("format", "gps"), "input.format", INPUT_FORMATS)
    columns_data = r.mapping(
        m.get("columns", {}),
        "input.columns",
        allowed={"user", "time", "lat", "lon", "tower", "trip", "segment", "enter", "leave"},
    )
    columns = ColumnMap(**{k: r.string(v, f"input.columns.{k}") for k, v in columns_data.items()})
    towers = None
    if fmt == "cdr":
        if "towers" not in m:
            r.fail("input.towers", "a cdr input needs a towers CSV (tower, lat, lon)")
        towers = _parse_towers(r, m["towers"])
    elif "towers" in m:
        r.fail("input.towers", "only a cdr input takes a towers table")
    segments = None
    if fmt == "segments":
        if "segments" not in m:
            r.fail("input.segments", "a segments input needs a segments CSV (segment, wkt)")
        segments = _parse_segments(r, m["segments"])
    elif "segments" in m:
        r.fail("input.segments", "only a segments input takes a segments table")
    timezone = r.string(m.get("timezone", "UTC"), "input.timezone")
    try:
        zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long
        r.fail("input.timezone", f"{shown(timezone)} is not an IANA time zone like Europe/Rome")
    delimiter = r.string(m.get("delimiter", ","), "input.delimiter")
    if len(delimiter) != 1:
        r.fail("input.delimiter", f"{shown(delimiter)} must be a single character")
    cache = r.choice(m.get("cache", "none"), "input.cache", ("none", "parquet"))
    if store is not None and cache == "parquet":
        r.fail(
            "input.cache",
            "parquet keeps the points of local files only (it is found by their sha256, "
            "which an object store's files give only once fetched): remove input.cache, or "
            "copy the input to a local folder",
        )
    return InputConfig(
        path=Path(store.url) if store is not None else r.path(m["path"], "input.path"),
        store=store,
        format=fmt,
        columns=columns,
        towers=towers,
        timezone=timezone,
        time_format=r.choice(
            m.get("time_format", "auto"), "input.time_format", ("auto", "iso", "epoch")
        ),
        delimiter=delimiter,
        on_invalid=r.choice(m.get("on_invalid", "stop"), "input.on_invalid", ("stop", "drop")),
        segments=segments,
        cache=cache,
        cache_dir=r.path(m["cache_dir"], "input.cache_dir") if "cache_dir" in m else None,
    )


def _parse_store(r: Reader, m: dict[str, Any]) -> Store | None:
    """The object store `input.path` names by URL, with its `storage_options` (see
    io/remote.py); None for a local path."""
    text = r.string(m["path"], "input.path")
    if "::" in text and "://" in text:
        r.fail(
            "input.path",
            f"{shown(text)}: chained fsspec URLs (simplecache::...) are not read: name the "
            "store's URL alone (each file is fetched once, as it is read)",
        )
    if not is_url(text):
        if "storage_options" in m:
            r.fail("input.storage_options", "only an input.path in an object store takes it")
        return None
    scheme, rest = text.split("://", 1)
    text = f"{scheme.lower()}://{rest}"  # S3://... as fsspec knows it
    if not rest.strip("/") or rest.startswith("/"):
        r.fail("input.path", f"{shown(text)} names no bucket: write e.g. s3://bucket/calls/")
    secret = secrets_in_url(text)
    if secret is not None:
        r.fail(
            "input.path",
            f"the URL holds {secret}, and the catalog records the config: name the object "
            "without it and give the credentials in the environment (e.g. AWS_PROFILE, "
            "GOOGLE_APPLICATION_CREDENTIALS)",
        )
    missing = needed_package(text)
    if missing is not None:
        r.fail("input.path", missing)
    options = r.mapping(m.get("storage_options", {}), "input.storage_options")
    for key in secret_options(options):
        r.fail(
            f"input.storage_options.{key}",
            "credentials do not belong in a config (the catalog records it): set them in "
            "the environment (e.g. AWS_PROFILE or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, GOOGLE_APPLICATION_CREDENTIALS) or the store's "
            "credentials file",
        )
    return Store(text, tuple(sorted(options.items())))


def _parse_segments(r: Reader, data: object) -> SegmentsConfig:
    if isinstance(data, str):
        return SegmentsConfig(path=r.path(data, "input.segments"))
    m = r.mapping(data, "input.segments", required={"path"}, allowed={"path", "columns"})
    names = {"segment", "wkt", "start_lat", "start_lon", "end_lat", "end_lon"}
    cols = r.mapping(m.get("columns", {}), "input.segments.columns", allowed=names)
    return SegmentsConfig(
        path=r.path(m["path"], "input.segments.path"),
        **{k: r.string(v, f"input.segments.columns.{k}") for k, v in cols.items()},
    )


def _parse_towers(r: Reader, data: object) -> TowersConfig:
    if isinstance(data, str):
        return TowersConfig(path=r.path(data, "input.towers"))
    m = r.mapping(data, "input.towers", required={"path"}, allowed={"path", "columns"})
    cols = r.mapping(m.get("columns", {}), "input.towers.columns", allowed={"tower", "lat", "lon"})
    return TowersConfig(
        path=r.path(m["path"], "input.towers.path"),
        **{k: r.string(v, f"input.towers.columns.{k}") for k, v in cols.items()},
    )
