"""Dataview formats and their data dimensions, by name (DESIGN.md sections 2 and 4): how a
config value of each dimension is parsed and printed. The formats' classes are registered
in dataviews/registry.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from prudence_cli.units import format_duration, format_size, parse_duration, parse_size


@dataclass(frozen=True)
class DimensionSpec:
    """One data dimension: how a config value is parsed and how it is printed."""

    parse: Callable[[object], Any]
    label: Callable[[Any], str]
    default: tuple[Any, ...] | None  # None: the dimension is left out when not given


@dataclass(frozen=True)
class FormatSpec:
    """A dataview format: its data dimensions, its class as `module:Class` of the
    package `prudence_cli.dataviews` (imported only when a dataview is built or read),
    and how a person's data is counted from the view's stored rows (the function of
    dataviews/coverage.py its class's `coverage` uses: `counted` for rows of (user,
    location, count), `per_row` for a row per visit or traversal); None when the view's
    data is not a sum over people, so it must be rebuilt to be measured."""

    name: str
    dimensions: dict[str, DimensionSpec]
    view: str
    stored_coverage: Literal["counted", "per_row"] | None


def parse_frequency(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{value!r} is not a frequency threshold (a whole number ≥ 1)")
    return value


GRID = DimensionSpec(parse=parse_size, label=format_size, default=None)
TIME = DimensionSpec(parse=parse_duration, label=format_duration, default=(3600,))
FREQUENCY = DimensionSpec(parse=parse_frequency, label=str, default=(1,))


def parse_layer(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{value!r} is not the name of a region layer")
    return value


PROFILE_KINDS = ("boolean", "count")


def parse_profile_kind(value: object) -> str:
    if value not in PROFILE_KINDS:
        raise ValueError(f"{value!r} is not a profile kind (boolean or count)")
    return str(value)


REGIONS = DimensionSpec(parse=parse_layer, label=str, default=None)
WINDOW = DimensionSpec(parse=parse_duration, label=format_duration, default=(3600,))
TOLERANCE = DimensionSpec(parse=parse_size, label=format_size, default=(100.0,))

# The registry of dataview formats: a new format is its module in dataviews/ (a Dataview
# class with build, table, from_table and concat) and one line here.
FORMATS: dict[str, FormatSpec] = {
    spec.name: spec
    for spec in (
        FormatSpec(
            "presence", {"grid": GRID, "frequency": FREQUENCY}, "presence:PresenceView", "counted"
        ),
        FormatSpec(
            "trajectory",
            {"grid": GRID, "time": TIME, "frequency": FREQUENCY},
            "trajectory:TrajectoryView",
            "per_row",
        ),
        FormatSpec(
            "probability",
            {"grid": GRID, "frequency": FREQUENCY},
            "presence:ProbabilityView",
            "counted",
        ),
        FormatSpec("segments", {"time": TIME}, "segments:SegmentView", "per_row"),
        FormatSpec(
            "bins", {"grid": GRID, "regions": REGIONS, "time": TIME}, "bins:BinsView", "counted"
        ),
        FormatSpec(
            "profiles",
            {
                "grid": GRID,
                "regions": REGIONS,
                "profile": DimensionSpec(parse=parse_profile_kind, label=str, default=("boolean",)),
            },
            "profiles:ProfilesView",
            "counted",
        ),
        FormatSpec(
            "clusters",
            {"window": WINDOW, "frequency": FREQUENCY, "tolerance": TOLERANCE},
            "clusters:ClusterView",
            None,
        ),
    )
}
# formats built from map-matched road segments (input.format: segments)
SEGMENT_FORMATS = ("segments", "clusters")


def dimension_label(view_format: str, name: str, value: Any) -> str:
    """The printed form of a dimension value, as in the catalog's columns."""
    return FORMATS[view_format].dimensions[name].label(value)
