"""The catalog's records as types: the manifest (catalog.json) here, the release reports
(report.json) in `release_records`; each with `to_json` (the exact dict written: same
keys, same order) and `from_json` (the record back from that dict)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from prudence_cli.config.policy import ReleasePolicy

Json = dict[str, Any]


@dataclass(frozen=True)
class InputFile:
    path: str
    sha256: str
    bytes: int

    def anonymous(self) -> InputFile:
        """The file named by its name alone: what a release, which goes to a third party,
        says of its input (the sha256 identifies it, the folders are nobody's business)."""
        return InputFile(PurePath(self.path).name, self.sha256, self.bytes)

    def to_json(self) -> Json:
        return {"path": self.path, "sha256": self.sha256, "bytes": self.bytes}

    @classmethod
    def from_json(cls, data: Json) -> InputFile:
        return cls(data["path"], data["sha256"], data["bytes"])


@dataclass(frozen=True)
class InvalidRows:
    mode: str
    dropped: dict[str, int]

    def to_json(self) -> Json:
        return {"mode": self.mode, "dropped": dict(self.dropped)}

    @classmethod
    def from_json(cls, data: Json) -> InvalidRows:
        return cls(data["mode"], dict(data["dropped"]))


@dataclass(frozen=True)
class SelectionEntry:
    """The selection's statistics (free-form, in their order) and its projection: the CRS,
    the rule that chose it (config, utm, azimuthal, conic or polar; see
    `prudence_cli.projections`) and its worst scale error over the data (None: not measurable).
    Catalogs written before the rule was recorded have neither."""

    stats: dict[str, Any]
    crs: str | None
    projection: str | None = None
    scale_error: float | None = None

    @property
    def users(self) -> int:
        return int(self.stats["users"])

    def to_json(self) -> Json:
        data: Json = {**self.stats, "crs": self.crs}
        if self.projection is not None:
            data["projection"] = self.projection
            data["scale_error"] = self.scale_error
        return data

    @classmethod
    def from_json(cls, data: Json) -> SelectionEntry:
        stats = {k: v for k, v in data.items() if k not in _PROJECTION_KEYS}
        return cls(stats, data.get("crs"), data.get("projection"), data.get("scale_error"))


_PROJECTION_KEYS = ("crs", "projection", "scale_error")


@dataclass(frozen=True)
class DataviewEntry:
    id: str
    format: str
    dimensions: dict[str, str]
    users_in_view: int
    locations: int
    rows: int
    visits: int
    file: str
    risks: str
    split: str | None = None  # profiles dataviews: the split instant
    measures: str | None = None  # its mobility measures per person (and `.places` file)

    def to_json(self) -> Json:
        data: Json = {
            "id": self.id,
            "format": self.format,
            "dimensions": dict(self.dimensions),
            "users_in_view": self.users_in_view,
            "locations": self.locations,
            "rows": self.rows,
            "visits": self.visits,
        }
        if self.split is not None:
            data["split"] = self.split
        data["file"] = self.file
        data["risks"] = self.risks
        if self.measures is not None:
            data["measures"] = self.measures
        return data

    @classmethod
    def from_json(cls, data: Json) -> DataviewEntry:
        return cls(
            data["id"],
            data["format"],
            dict(data["dimensions"]),
            data["users_in_view"],
            data["locations"],
            data["rows"],
            data["visits"],
            data.get("file", ""),
            data.get("risks", ""),
            data.get("split"),
            data.get("measures"),
        )

    def show(self) -> str:
        """The dimensions as `name=value ...`."""
        return " ".join(f"{k}={v}" for k, v in self.dimensions.items())


@dataclass(frozen=True)
class MobilityEntry:
    """The mobility measures `assess` computed (Pellungrini et al., sections 2 and 5):
    which (None: every one each format allows), at which risk thresholds, and the tables
    of their distortion and correlation with risk for every dataview and attack level."""

    measures: tuple[str, ...] | None
    thresholds: tuple[float, ...]
    distortion: str  # file in the catalog
    correlation: str

    def to_json(self) -> Json:
        return {
            "measures": "all" if self.measures is None else list(self.measures),
            "thresholds": list(self.thresholds),
            "distortion": self.distortion,
            "correlation": self.correlation,
        }

    @classmethod
    def from_json(cls, data: Json) -> MobilityEntry:
        measures = data["measures"]
        return cls(
            None if measures == "all" else tuple(measures),
            tuple(float(t) for t in data["thresholds"]),
            data["distortion"],
            data["correlation"],
        )


@dataclass(frozen=True)
class LevelEntry:
    """One knowledge level: its knowledge values, in the attack's knowledge order."""

    values: tuple[tuple[str, Any], ...]

    def to_json(self) -> Json:
        return dict(self.values)

    @classmethod
    def from_json(cls, data: Json) -> LevelEntry:
        return cls(tuple(data.items()))


@dataclass(frozen=True)
class AttackEntry:
    """An assessed attack: its knowledge dimensions and levels."""

    attack: str
    knowledge: tuple[str, ...]
    levels: tuple[LevelEntry, ...]

    def to_json(self) -> Json:
        return {
            "attack": self.attack,
            "knowledge": list(self.knowledge),
            "levels": [level.to_json() for level in self.levels],
        }

    @classmethod
    def from_json(cls, data: Json) -> AttackEntry:
        return cls(
            data["attack"],
            tuple(data["knowledge"]),
            tuple(LevelEntry.from_json(level) for level in data["levels"]),
        )


_ENGINE_KEYS = ("memory", "max_instances", "sample", "threads")


@dataclass(frozen=True)
class EngineEntry:
    """The runner's own description (free-form), then the engine's settings."""

    runner: dict[str, Any]
    memory: Any
    max_instances: int
    sample: int | None
    threads: int

    def to_json(self) -> Json:
        return {
            **self.runner,
            "memory": self.memory,
            "max_instances": self.max_instances,
            "sample": self.sample,
            "threads": self.threads,
        }

    @classmethod
    def from_json(cls, data: Json) -> EngineEntry:
        runner = {k: v for k, v in data.items() if k not in _ENGINE_KEYS}
        return cls(runner, data["memory"], data["max_instances"], data["sample"], data["threads"])


@dataclass(frozen=True)
class RandomizeEntry:
    """A profiles catalog's `randomize` entry: the sweep's options and settings."""

    users: int | str  # a number, or "all"
    leak: dict[str, float]  # users, locations
    max_error: float
    split: str
    settings: tuple[dict[str, Any], ...]
    sampler: str

    @property
    def leak_users(self) -> float:
        return float(self.leak.get("users", 0.5))

    @property
    def leak_locations(self) -> float:
        return float(self.leak.get("locations", 0.5))

    def to_json(self) -> Json:
        return {
            "users": self.users,
            "leak": dict(self.leak),
            "max_error": self.max_error,
            "split": self.split,
            "settings": [dict(s) for s in self.settings],
            "sampler": self.sampler,
        }

    @classmethod
    def from_json(cls, data: Json) -> RandomizeEntry:
        return cls(
            data["users"],
            dict(data["leak"]),
            data["max_error"],
            data["split"],
            tuple(dict(s) for s in data["settings"]),
            data["sampler"],
        )


@dataclass(frozen=True)
class Manifest:
    """catalog.json."""

    format: str
    format_version: int
    tool: str
    tool_version: str
    created: str
    name: str
    config_file: str
    config: Mapping[str, Any]  # the config as read, free-form
    seed: int
    inputs: tuple[InputFile, ...]
    invalid_rows: InvalidRows
    input_cache: dict[str, Any]  # free-form
    selection: SelectionEntry
    coverage: str
    format_of_dataviews: str
    dimensions: tuple[str, ...]
    dataviews: tuple[DataviewEntry, ...]
    attacks: tuple[AttackEntry, ...]
    engine: EngineEntry
    sampling: tuple[dict[str, Any], ...]  # free-form statements
    timings_seconds: dict[str, float]
    platform: dict[str, str]
    randomize: RandomizeEntry | None = None  # profiles catalogs
    policy: ReleasePolicy | None = None  # the config's release policy, if it has one
    mobility: MobilityEntry | None = None  # the mobility measures, when assess computed them
    files: dict[str, str] | None = None  # path -> sha256; added when the catalog is finished

    @property
    def is_profiles(self) -> bool:
        return self.format_of_dataviews == "profiles"

    @property
    def total_seconds(self) -> float:
        return float(self.timings_seconds.get("total", 0.0))

    @property
    def knowledge_names(self) -> list[str]:
        names: list[str] = []
        for attack in self.attacks:
            names += [k for k in attack.knowledge if k not in names]
        return names

    def to_json(self) -> Json:
        data: Json = {
            "format": self.format,
            "format_version": self.format_version,
            "tool": self.tool,
            "tool_version": self.tool_version,
            "created": self.created,
            "name": self.name,
            "config_file": self.config_file,
            "config": self.config,
            "seed": self.seed,
            "inputs": [i.to_json() for i in self.inputs],
            "invalid_rows": self.invalid_rows.to_json(),
            "input_cache": self.input_cache,
            "selection": self.selection.to_json(),
            "coverage": self.coverage,
            "format_of_dataviews": self.format_of_dataviews,
            "dimensions": list(self.dimensions),
            "dataviews": [v.to_json() for v in self.dataviews],
            "attacks": [a.to_json() for a in self.attacks],
            "engine": self.engine.to_json(),
            "sampling": [dict(s) for s in self.sampling],
            "timings_seconds": dict(self.timings_seconds),
            "platform": dict(self.platform),
        }
        if self.randomize is not None:
            data["randomize"] = self.randomize.to_json()
        if self.policy is not None:
            data["policy"] = self.policy.to_json()
        if self.mobility is not None:
            data["mobility"] = self.mobility.to_json()
        if self.files is not None:
            data["files"] = dict(self.files)
        return data

    @classmethod
    def from_json(cls, data: Json) -> Manifest:
        randomize = data.get("randomize")
        files = data.get("files")
        return cls(
            format=data["format"],
            format_version=data["format_version"],
            tool=data["tool"],
            tool_version=data["tool_version"],
            created=data["created"],
            name=data["name"],
            config_file=data["config_file"],
            config=data["config"],
            seed=data["seed"],
            inputs=tuple(InputFile.from_json(i) for i in data["inputs"]),
            invalid_rows=InvalidRows.from_json(data["invalid_rows"]),
            input_cache=data["input_cache"],
            selection=SelectionEntry.from_json(data["selection"]),
            coverage=data["coverage"],
            format_of_dataviews=data["format_of_dataviews"],
            dimensions=tuple(data["dimensions"]),
            dataviews=tuple(DataviewEntry.from_json(v) for v in data["dataviews"]),
            attacks=tuple(AttackEntry.from_json(a) for a in data["attacks"]),
            engine=EngineEntry.from_json(data["engine"]),
            sampling=tuple(dict(s) for s in data["sampling"]),
            timings_seconds=dict(data["timings_seconds"]),
            platform=dict(data["platform"]),
            randomize=None if randomize is None else RandomizeEntry.from_json(randomize),
            policy=None if "policy" not in data else ReleasePolicy.from_json(data["policy"]),
            mobility=None if "mobility" not in data else MobilityEntry.from_json(data["mobility"]),
            files=None if files is None else dict(files),
        )


__all__ = [
    "AttackEntry",
    "DataviewEntry",
    "EngineEntry",
    "InputFile",
    "InvalidRows",
    "LevelEntry",
    "Manifest",
    "MobilityEntry",
    "RandomizeEntry",
    "SelectionEntry",
]
