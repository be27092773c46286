"""What the readers need to know about an input file: its path, format, column names and
how to parse and validate its rows. The readers take these specs, never a config; the
config builds them (`InputConfig.spec()`), as can any caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from prudence_cli.io.dataset import is_parquet
from prudence_cli.io.remote import Store


@dataclass(frozen=True)
class ColumnMap:
    """Names of the input CSV's columns for each canonical field."""

    user: str = "user"
    time: str = "time"
    lat: str = "lat"
    lon: str = "lon"
    tower: str = "tower"
    trip: str = "trip"
    segment: str = "segment"
    enter: str = "enter"
    leave: str = "leave"


@dataclass(frozen=True)
class TowersSpec:
    """The tower table of a cdr input: an id and a position per tower."""

    path: Path
    tower: str = "tower"
    lat: str = "lat"
    lon: str = "lon"


@dataclass(frozen=True)
class SegmentsSpec:
    """The road segments table: an id and either a WKT LineString or its two ends."""

    path: Path
    segment: str = "segment"
    wkt: str = "wkt"
    start_lat: str = "start_lat"
    start_lon: str = "start_lon"
    end_lat: str = "end_lat"
    end_lon: str = "end_lon"


@dataclass(frozen=True)
class PointsSpec:
    """A gps, cdr (with its towers) or segments (with its segments) input of points."""

    path: Path
    format: str = "gps"  # gps | cdr | segments
    columns: ColumnMap = ColumnMap()
    towers: TowersSpec | None = None
    segments: SegmentsSpec | None = None
    timezone: str = "UTC"  # of naive times
    time_format: str = "auto"  # auto | iso | epoch
    delimiter: str = ","
    on_invalid: str = "stop"  # stop | drop
    store: Store | None = None  # `path` in an object store: its URL (io/remote.py)

    @property
    def shown(self) -> str:
        """How messages name the input: its path, or its URL."""
        return self.store.url if self.store is not None else str(self.path)

    @property
    def is_parquet(self) -> bool:
        return is_parquet(self.path)


class PointsSource(Protocol):
    """Anything that describes a points input, e.g. the config's InputConfig."""

    def spec(self) -> PointsSpec: ...


def points_spec(source: PointsSpec | PointsSource) -> PointsSpec:
    """The spec itself, or the one its source builds."""
    return source if isinstance(source, PointsSpec) else source.spec()
