"""Readers of the raw inputs, in one place: points (gps, cdr, segments), reference tables,
GeoJSON polygons and expert scores.

Each reader lives with its kind of file (io.points, io.tables, io.geojson, io.text,
io.values) and takes an io spec, never a config. `read_points` and `check_inputs` also
take what builds a spec (the config's InputConfig, through its `spec()`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prudence_cli.io import input_checks, points
from prudence_cli.io.geojson import read_area_geojson, read_region_layer
from prudence_cli.io.input_checks import CheckedFile
from prudence_cli.io.points import CHUNK_ROWS, RawPoints, ReadProgress, input_columns
from prudence_cli.io.specs import (
    ColumnMap,
    PointsSource,
    PointsSpec,
    SegmentsSpec,
    TowersSpec,
    points_spec,
)
from prudence_cli.io.tables import (
    read_segments,
    read_towers,
    read_trajectories,
    read_utility_scores,
)
from prudence_cli.io.text import check_columns, read_header
from prudence_cli.io.values import parse_times

__all__ = [
    "CHUNK_ROWS",
    "CheckedFile",
    "ColumnMap",
    "PointsSource",
    "PointsSpec",
    "RawPoints",
    "SegmentsSpec",
    "TowersSpec",
    "check_columns",
    "check_inputs",
    "input_columns",
    "parse_times",
    "read_area_geojson",
    "read_header",
    "read_points",
    "read_region_layer",
    "read_segments",
    "read_towers",
    "read_trajectories",
    "read_utility_scores",
]


def read_points(
    source: PointsSpec | PointsSource, progress: ReadProgress | None = None
) -> RawPoints:
    """Read a gps, cdr or segments input into RawPoints (see io.points.read_points)."""
    return points.read_points(points_spec(source), progress)


def check_inputs(
    source: PointsSpec | PointsSource,
    area_path: Path | None = None,
    layers: Sequence[Path] = (),
    scores: Path | None = None,
    dimensions: Sequence[str] = (),
) -> list[CheckedFile]:
    """Check every input file the way an assessment reads it, except the rows of the
    points input (see io.input_checks): also the GeoJSON region `layers` and the
    utility `scores` CSV (with a column per dataview dimension). One entry per file."""
    checked = input_checks.check_inputs(points_spec(source), area_path)
    for path in layers:
        regions = read_region_layer(path)
        found = f"{len(regions):,} regions readable"
        checked.append(CheckedFile(path, "regions", len(regions), found))
    if scores is not None:
        table = read_utility_scores(scores, list(dimensions))
        found = f"{len(table):,} utility scores readable"
        checked.append(CheckedFile(scores, "scores", len(table), found))
    return checked
