"""The config's frozen, typed objects (DESIGN.md section 7), as config/parse.py builds
them from YAML. The input's objects build the specs the io readers take (`spec()`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.config.mechanisms import Setting
from prudence_cli.config.mobility import MobilityConfig
from prudence_cli.config.policy import ReleasePolicy
from prudence_cli.io.dataset import data_files
from prudence_cli.io.remote import Store
from prudence_cli.io.specs import ColumnMap, PointsSpec, SegmentsSpec, TowersSpec

if TYPE_CHECKING:
    import pandas as pd

INPUT_FORMATS = ("gps", "cdr", "segments")
POINT_MODES = ("all", "trip_ends")
BACKENDS = ("local", "dask")
COVERAGES = ("locations", "visits", "records", "segments")
DEFAULT_MAX_INSTANCES = 400_000_000


# the towers and segments tables are declared as the readers take them
TowersConfig = TowersSpec
SegmentsConfig = SegmentsSpec


@dataclass(frozen=True)
class InputConfig:
    path: Path
    format: str
    columns: ColumnMap
    towers: TowersConfig | None
    timezone: str
    time_format: str  # auto | iso | epoch
    delimiter: str
    on_invalid: str  # stop | drop
    segments: SegmentsConfig | None = None
    cache: str = "none"  # none | parquet: keep the prepared points for the next run
    cache_dir: Path | None = None  # default: .prudence-cache beside the config
    store: Store | None = None  # an input in an object store: its URL (`path` shows it)

    @property
    def files(self) -> tuple[Path, ...]:
        """The local files `path` names: itself, or those of a folder or pattern
        (io.dataset); none for an input in an object store (listed as it is read:
        io/remote.py)."""
        return () if self.store is not None else data_files(self.path)

    def spec(self) -> PointsSpec:
        """What the points reader needs (io.points): the files, columns and parsing."""
        return PointsSpec(
            path=self.path,
            format=self.format,
            columns=self.columns,
            towers=self.towers,
            segments=self.segments,
            timezone=self.timezone,
            time_format=self.time_format,
            delimiter=self.delimiter,
            on_invalid=self.on_invalid,
            store=self.store,
        )


@dataclass(frozen=True)
class Area:
    """A selection area in WGS84 lon/lat: a bbox, a WKT polygon or a GeoJSON file."""

    kind: str  # bbox | wkt | geojson
    bbox: tuple[float, float, float, float] | None = None
    wkt: str | None = None
    path: Path | None = None


@dataclass(frozen=True)
class SelectConfig:
    area: Area | None = None
    start: pd.Timestamp | None = None  # UTC, inclusive
    end: pd.Timestamp | None = None  # UTC, exclusive
    points: str = "all"
    max_gap: int = 20 * 60  # seconds between fixes that splits two trips
    min_points: int = 1
    min_trips: int = 0


@dataclass(frozen=True)
class DataviewConfig:
    format: str
    dimensions: tuple[tuple[str, tuple[Any, ...]], ...]
    layers: tuple[tuple[str, Path], ...] = ()  # region layers: name → GeoJSON polygons

    @property
    def dimension_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.dimensions)


@dataclass(frozen=True)
class AttackConfig:
    attack: str
    levels: tuple[KnowledgeLevel, ...]


@dataclass(frozen=True)
class EngineConfig:
    max_instances: int = DEFAULT_MAX_INSTANCES
    jobs: int = 0  # 0: every core (dask without scheduler: LocalCluster workers)
    sample: int | None = None  # instances per person when a level is over max_instances
    backend: str = "local"  # local | dask
    scheduler: str | None = None  # dask: tcp://host:8786; None: a LocalCluster
    memory: int | None = None  # bytes a partition may use with the level's data


@dataclass(frozen=True)
class Aggregate:
    """A declared aggregate, e.g. records per district and hour: a region layer of
    dataview.layers or a grid size, and a time granularity."""

    grid: float | None
    layer: str | None
    seconds: int


@dataclass(frozen=True)
class RandomizeConfig:
    """How randomized settings are assessed (Olivier and Quertier): on a sample of `users` people,
    with leaked shares for scenarios 2.1 (locations) and 2.2 (users), and the largest
    admissible relative error of the statistician's statistic."""

    users: int | None = 1000  # None: every user
    leak_users: float = 0.5
    leak_locations: float = 0.5
    max_error: float = 0.1
    split: pd.Timestamp | None = None  # T1 | T2 boundary; None: the middle of the data


@dataclass(frozen=True)
class Config:
    file: Path
    name: str
    seed: int
    input: InputConfig
    select: SelectConfig
    dataview: DataviewConfig
    attacks: tuple[AttackConfig, ...]
    coverage: str
    output: Path
    engine: EngineConfig = field(default_factory=EngineConfig)
    crs: str | None = None  # projected CRS for the grid; None: chosen from the data (space.py)
    utility_scores: Path | None = None  # expert utility score per profile (CSV)
    utility_aggregate: Aggregate | None = None  # or the error of a declared aggregate
    mobility: MobilityConfig = field(default_factory=MobilityConfig)  # measured per dataview
    mechanisms: tuple[Setting, ...] = ()  # randomized settings swept on profiles dataviews
    randomize: RandomizeConfig = field(default_factory=RandomizeConfig)
    policy: ReleasePolicy | None = None  # the release policy, the default of sanitize etc.
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def point_files(self) -> tuple[Path, ...]:
        """The files the selected points are made of: input, towers, segments, area."""
        files = list(self.input.files)
        if self.input.towers is not None:
            files.append(self.input.towers.path)
        if self.input.segments is not None:
            files.append(self.input.segments.path)
        if self.select.area is not None and self.select.area.path is not None:
            files.append(self.select.area.path)
        return tuple(files)

    @property
    def input_files(self) -> tuple[Path, ...]:
        files = list(self.point_files)
        files.extend(path for _, path in self.dataview.layers)
        if self.utility_scores is not None:
            files.append(self.utility_scores)
        return tuple(files)
