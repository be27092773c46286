"""The release reports (report.json of a release folder) as types: `ReleaseReport` of a
suppression release, `RandomizedReport` of a randomized one (`InputFile`, which they
share with the manifest, is in `prudence_cli.catalog.records`). Only the commands that
release or read a release import them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prudence_cli.catalog.records import InputFile, Json


@dataclass(frozen=True)
class CatalogRef:
    """The catalog a suppression release comes from: its name and the sha256 of its
    catalog.json, not where it is (a release goes to a third party). `path` is only
    read, from the reports of earlier versions."""

    name: str
    manifest_sha256: str
    path: str | None = None

    def to_json(self) -> Json:
        place: Json = {} if self.path is None else {"path": self.path}
        return {**place, "name": self.name, "manifest_sha256": self.manifest_sha256}

    @classmethod
    def from_json(cls, data: Json) -> CatalogRef:
        return cls(data["name"], data["manifest_sha256"], data.get("path"))


@dataclass(frozen=True)
class ReleasedView:
    id: str
    format: str
    dimensions: dict[str, str]

    def to_json(self) -> Json:
        return {"id": self.id, "format": self.format, "dimensions": dict(self.dimensions)}

    @classmethod
    def from_json(cls, data: Json) -> ReleasedView:
        return cls(data["id"], data["format"], dict(data["dimensions"]))


@dataclass(frozen=True)
class UserCounts:
    in_universe: int
    in_view: int
    released: int
    removed: int

    def to_json(self) -> Json:
        return {
            "in_universe": self.in_universe,
            "in_view": self.in_view,
            "released": self.released,
            "removed": self.removed,
        }

    @classmethod
    def from_json(cls, data: Json) -> UserCounts:
        return cls(data["in_universe"], data["in_view"], data["released"], data["removed"])


@dataclass(frozen=True)
class DataCounts:
    coverage: str
    before: float
    released: float
    removed: float
    rows_before: int
    rows_released: int

    def to_json(self) -> Json:
        return {
            "coverage": self.coverage,
            "before": self.before,
            "released": self.released,
            "removed": self.removed,
            "rows_before": self.rows_before,
            "rows_released": self.rows_released,
        }

    @classmethod
    def from_json(cls, data: Json) -> DataCounts:
        return cls(
            data["coverage"],
            data["before"],
            data["released"],
            data["removed"],
            data["rows_before"],
            data["rows_released"],
        )


@dataclass(frozen=True)
class PassEntry:
    """One suppression pass."""

    iteration: int
    users_above: int
    max_risk: float
    users_removed: int
    rows_removed: int

    def to_json(self) -> Json:
        return {
            "iteration": self.iteration,
            "users_above": self.users_above,
            "max_risk": self.max_risk,
            "users_removed": self.users_removed,
            "rows_removed": self.rows_removed,
        }

    @classmethod
    def from_json(cls, data: Json) -> PassEntry:
        return cls(
            data["iteration"],
            data["users_above"],
            data["max_risk"],
            data["users_removed"],
            data["rows_removed"],
        )


@dataclass(frozen=True)
class RacEntry:
    i_rac_u: float
    i_rac_d: float
    mean_risk: float
    share_at_risk_1: float

    def to_json(self) -> Json:
        return {
            "i_rac_u": self.i_rac_u,
            "i_rac_d": self.i_rac_d,
            "mean_risk": self.mean_risk,
            "share_at_risk_1": self.share_at_risk_1,
        }

    @classmethod
    def from_json(cls, data: Json) -> RacEntry:
        return cls(data["i_rac_u"], data["i_rac_d"], data["mean_risk"], data["share_at_risk_1"])


@dataclass(frozen=True)
class LevelRisk:
    """One attack level assessed on the dataview, re-assessed on the released data: the
    highest and mean risk of the released people, and how many are above the threshold.
    A level that was not counted is not covered by the release when someone is above."""

    level: str
    counted: bool
    max_risk: float
    mean_risk: float
    users_above: int
    sampled: bool = False  # assessed on sampled instances: the risks are lower bounds

    @property
    def covered(self) -> bool:
        return self.users_above == 0

    def to_json(self) -> Json:
        return {
            "level": self.level,
            "counted": self.counted,
            "max_risk": self.max_risk,
            "mean_risk": self.mean_risk,
            "users_above": self.users_above,
            "covered": self.covered,
            "sampled": self.sampled,
        }

    @classmethod
    def from_json(cls, data: Json) -> LevelRisk:
        return cls(
            data["level"],
            data["counted"],
            data["max_risk"],
            data["mean_risk"],
            data["users_above"],
            bool(data.get("sampled", False)),
        )


@dataclass(frozen=True)
class ReleaseReport:
    """report.json of a suppression release."""

    format: str
    format_version: int
    tool: str
    tool_version: str
    created: str
    release: str
    recipient: str | None
    met: bool
    threshold: float
    method: str
    catalog: CatalogRef
    dataview: ReleasedView
    levels_counted: tuple[str, ...]
    combined_with: tuple[str, ...]
    users: UserCounts
    data: DataCounts
    iterations: tuple[PassEntry, ...]
    max_risk_after: float
    sampled: bool
    i_rac_before: RacEntry
    i_rac_after: RacEntry
    curves: dict[str, Any]  # before / after: the RAC curves as columns, free-form
    inputs: tuple[InputFile, ...]
    seed: int
    pseudonymized: bool
    # every level assessed on the dataview, counted or not, on the released data
    levels_assessed: tuple[LevelRisk, ...] = ()
    notes: tuple[str, ...] = ()  # counted levels that cannot single anyone out, and why
    # per mobility measure: its distribution on the dataview and on the release (measure,
    # of, ks, wasserstein, count_before, count_released, median_before, median_released)
    mobility: tuple[dict[str, Any], ...] = ()
    files: dict[str, str] | None = None  # name -> sha256, once the files are written

    @property
    def not_covered(self) -> tuple[LevelRisk, ...]:
        """Assessed levels under which someone released is above the threshold."""
        return tuple(level for level in self.levels_assessed if not level.covered)

    def to_json(self) -> Json:
        data: Json = {
            "format": self.format,
            "format_version": self.format_version,
            "tool": self.tool,
            "tool_version": self.tool_version,
            "created": self.created,
            "release": self.release,
            "recipient": self.recipient,
            "met": self.met,
            "threshold": self.threshold,
            "method": self.method,
            "catalog": self.catalog.to_json(),
            "dataview": self.dataview.to_json(),
            "levels_counted": list(self.levels_counted),
            "combined_with": list(self.combined_with),
            "users": self.users.to_json(),
            "data": self.data.to_json(),
            "iterations": [step.to_json() for step in self.iterations],
            "max_risk_after": self.max_risk_after,
            "sampled": self.sampled,
            "i_rac": {"before": self.i_rac_before.to_json(), "after": self.i_rac_after.to_json()},
            "curves": self.curves,
            "inputs": [i.to_json() for i in self.inputs],
            "seed": self.seed,
            "pseudonymized": self.pseudonymized,
            "levels_assessed": [level.to_json() for level in self.levels_assessed],
            "notes": list(self.notes),
            "mobility": [dict(m) for m in self.mobility],
        }
        if self.files is not None:
            data["files"] = dict(self.files)
        return data

    @classmethod
    def from_json(cls, data: Json) -> ReleaseReport:
        files = data.get("files")
        return cls(
            format=data["format"],
            format_version=data["format_version"],
            tool=data["tool"],
            tool_version=data["tool_version"],
            created=data["created"],
            release=data["release"],
            recipient=data["recipient"],
            met=data["met"],
            threshold=data["threshold"],
            method=data["method"],
            catalog=CatalogRef.from_json(data["catalog"]),
            dataview=ReleasedView.from_json(data["dataview"]),
            levels_counted=tuple(data["levels_counted"]),
            combined_with=tuple(data["combined_with"]),
            users=UserCounts.from_json(data["users"]),
            data=DataCounts.from_json(data["data"]),
            iterations=tuple(PassEntry.from_json(s) for s in data["iterations"]),
            max_risk_after=data["max_risk_after"],
            sampled=data["sampled"],
            i_rac_before=RacEntry.from_json(data["i_rac"]["before"]),
            i_rac_after=RacEntry.from_json(data["i_rac"]["after"]),
            curves=data["curves"],
            inputs=tuple(InputFile.from_json(i) for i in data["inputs"]),
            seed=data["seed"],
            pseudonymized=data["pseudonymized"],
            levels_assessed=tuple(
                LevelRisk.from_json(level) for level in data.get("levels_assessed", [])
            ),
            notes=tuple(data.get("notes", [])),
            mobility=tuple(dict(m) for m in data.get("mobility", [])),
            files=None if files is None else dict(files),
        )


@dataclass(frozen=True)
class MechanismEntry:
    name: str
    epsilon: float
    p: float | None
    chi: str
    guarantee: str
    sampler: str

    def to_json(self) -> Json:
        return {
            "name": self.name,
            "epsilon": self.epsilon,
            "p": self.p,
            "chi": self.chi,
            "guarantee": self.guarantee,
            "sampler": self.sampler,
        }

    @classmethod
    def from_json(cls, data: Json) -> MechanismEntry:
        return cls(
            data["name"],
            data["epsilon"],
            data["p"],
            data["chi"],
            data["guarantee"],
            data["sampler"],
        )


@dataclass(frozen=True)
class ProfileCounts:
    released: int
    people_in_universe: int
    locations: int
    rows: int

    def to_json(self) -> Json:
        return {
            "released": self.released,
            "people_in_universe": self.people_in_universe,
            "locations": self.locations,
            "rows": self.rows,
        }

    @classmethod
    def from_json(cls, data: Json) -> ProfileCounts:
        return cls(data["released"], data["people_in_universe"], data["locations"], data["rows"])


@dataclass(frozen=True)
class UtilityEntry:
    statistic: str
    mean_error: float
    mean_value: float
    relative_error: float
    max_error: float
    admissible: bool

    def to_json(self) -> Json:
        return {
            "statistic": self.statistic,
            "mean_error": self.mean_error,
            "mean_value": self.mean_value,
            "relative_error": self.relative_error,
            "max_error": self.max_error,
            "admissible": self.admissible,
        }

    @classmethod
    def from_json(cls, data: Json) -> UtilityEntry:
        return cls(
            data["statistic"],
            data["mean_error"],
            data["mean_value"],
            data["relative_error"],
            data["max_error"],
            data["admissible"],
        )


@dataclass(frozen=True)
class AttackResult:
    """One attack level on the released setting: its knowledge, then its measures (the
    sweep's row, free-form, success_rate among them)."""

    attack: str
    knowledge: dict[str, str]
    measures: dict[str, Any]

    @property
    def success_rate(self) -> float:
        return float(self.measures["success_rate"])

    def to_json(self) -> Json:
        return {"attack": self.attack, "knowledge": dict(self.knowledge), **self.measures}

    @classmethod
    def from_json(cls, data: Json) -> AttackResult:
        measures = {k: v for k, v in data.items() if k not in ("attack", "knowledge")}
        return cls(data["attack"], dict(data["knowledge"]), measures)


@dataclass(frozen=True)
class RandomizedReport:
    """report.json of a randomized release."""

    format: str
    kind: str
    tool_version: str
    created: str
    catalog_name: str
    catalog_path: str
    dataview_id: str
    dataview_format: str
    profile: str  # the profiles' kind
    mechanism: MechanismEntry
    seed: int
    profiles: ProfileCounts
    utility: UtilityEntry
    attack_sample: int | str  # a number of people, or "all"
    leak: dict[str, float]  # users, locations
    attacks: tuple[AttackResult, ...]

    def to_json(self) -> Json:
        return {
            "format": self.format,
            "kind": self.kind,
            "tool_version": self.tool_version,
            "created": self.created,
            "catalog": {"name": self.catalog_name, "path": self.catalog_path},
            "dataview": {
                "id": self.dataview_id,
                "format": self.dataview_format,
                "profile": self.profile,
            },
            "mechanism": self.mechanism.to_json(),
            "seed": self.seed,
            "profiles": self.profiles.to_json(),
            "utility": self.utility.to_json(),
            "attacks": {
                "sample": self.attack_sample,
                "leak": dict(self.leak),
                "results": [a.to_json() for a in self.attacks],
            },
        }

    @classmethod
    def from_json(cls, data: Json) -> RandomizedReport:
        catalog, view, attacks = data["catalog"], data["dataview"], data["attacks"]
        return cls(
            format=data["format"],
            kind=data["kind"],
            tool_version=data["tool_version"],
            created=data["created"],
            catalog_name=catalog["name"],
            catalog_path=catalog["path"],
            dataview_id=view["id"],
            dataview_format=view["format"],
            profile=view["profile"],
            mechanism=MechanismEntry.from_json(data["mechanism"]),
            seed=data["seed"],
            profiles=ProfileCounts.from_json(data["profiles"]),
            utility=UtilityEntry.from_json(data["utility"]),
            attack_sample=attacks["sample"],
            leak=dict(attacks["leak"]),
            attacks=tuple(AttackResult.from_json(a) for a in attacks["results"]),
        )
