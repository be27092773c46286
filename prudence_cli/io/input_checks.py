"""What `prudence validate` checks of the points input without reading its rows: every
file's header (and that a .gz file is whole), the towers or segments table and a
GeoJSON area, read as an assessment reads them. An input in an object store is listed
and each file's header read from its first bytes (its rows, and a .gz file's stream,
are checked as an assessment fetches them)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from prudence_cli.io.dataset import data_files, is_parquet
from prudence_cli.io.geojson import read_area_geojson
from prudence_cli.io.points import input_columns
from prudence_cli.io.remote import header, listed
from prudence_cli.io.specs import PointsSpec
from prudence_cli.io.tables import read_segments, read_towers, segments_columns
from prudence_cli.io.text import check_columns, check_gzip, read_header


@dataclass(frozen=True)
class CheckedFile:
    """One input file read by `check_inputs`, and what was found (`str`: a line)."""

    path: Path | str  # a local path, or a URL
    role: str  # input, towers, segments, area, regions or scores
    count: int | None  # rows of a table, polygons of a layer; None: rows not read
    found: str  # in words

    def __str__(self) -> str:
        return f"{self.path}: {self.found}"

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "role": self.role, "count": self.count, "found": self.found}


def check_inputs(spec: PointsSpec, area_path: Path | None = None) -> list[CheckedFile]:
    """Check the input's header (and that a .gz input is whole), read the towers or
    segments table and a GeoJSON area as `read_points` does; the input's rows are
    checked only as they are read.

    Returns each checked file; raises InputError on the first problem.
    """
    needed = input_columns(spec)
    present = f"columns {', '.join(needed.values())} present"
    if spec.store is not None:
        checked = [_check_stored(spec, needed, present)]
    else:
        checked = [_check_local(spec, needed, present)]
    if spec.towers is not None:
        towers = spec.towers
        table = read_towers(towers)
        found = f"{len(table):,} towers, columns present and valid"
        checked.append(CheckedFile(towers.path, "towers", len(table), found))
    if spec.segments is not None:
        segs = spec.segments
        wanted = segments_columns(segs, read_header(segs.path))
        table = read_segments(segs)
        found = f"{len(table):,} segments, columns {', '.join(wanted.values())} present and valid"
        checked.append(CheckedFile(segs.path, "segments", len(table), found))
    if area_path is not None:
        area = read_area_geojson(area_path)
        polygons = len(getattr(area, "geoms", [area]))
        checked.append(CheckedFile(area_path, "area", polygons, "polygon area readable"))
    return checked


def _check_local(spec: PointsSpec, needed: dict[str, str], present: str) -> CheckedFile:
    files = data_files(spec.path)
    several = files != (spec.path,)
    empty = [f for f in files if several and f.stat().st_size == 0]
    for file in files:
        if file not in empty:
            columns = read_header(file, spec.delimiter)
            check_columns(file, columns, needed, "input.columns")
            check_gzip(file)
    if not several:
        return CheckedFile(spec.path, "input", None, present)
    found = f"{_files(len(files))} ({_kinds([f.name for f in files])}), {present} in each"
    if empty:
        found += f" ({_files(len(empty))} empty: no rows)"
    return CheckedFile(spec.path, "input", None, found)


def _check_stored(spec: PointsSpec, needed: dict[str, str], present: str) -> CheckedFile:
    assert spec.store is not None
    files = listed(spec.store)
    several = len(files) > 1
    empty = [f for f in files if several and f.size == 0]
    for file in files:
        if file not in empty:
            check_columns(file.url, header(file, spec.delimiter), needed, "input.columns")
    size = sum(f.size for f in files)
    found = f"{_files(len(files))} ({_kinds([f.name for f in files])}, {size:,} bytes)"
    found += f", {present} in each" if several else f", {present}"
    if empty:
        found += f" ({_files(len(empty))} empty: no rows)"
    return CheckedFile(spec.store.url, "input", None, found + " (rows checked when read)")


def _files(n: int) -> str:
    return f"{n:,} file" if n == 1 else f"{n:,} files"


def _kinds(names: list[str]) -> str:
    """How many of the files `names` are of each kind, e.g. `18 Parquet, 2 CSV`."""
    kinds = Counter("Parquet" if is_parquet(n) else "CSV" for n in names)
    return ", ".join(f"{n:,} {kind}" for kind, n in kinds.most_common())
