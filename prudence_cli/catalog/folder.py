"""The data catalog folder (DESIGN.md section 8): writing it atomically and reading it back.

Layout:
  catalog.json                 manifest, written last; lists every other file's sha256
  irac.csv                     one row per (dataview, attack, knowledge level)
  randomized.csv               profiles dataviews: utility and attack success per
                               randomized setting and attack level (seed 004)
  curves/<row>.csv             risk, rac_u, rac_d — the step curves of each irac row
  risks/<dataview>.csv.gz      user, then one risk column per attack level (all users of U)
  dataviews/<dataview>.csv.gz  the dataview as it would be shared: user, location, count
  dataviews/<dataview>.locations.csv   label, lon, lat of each location of the view
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.catalog.records import DataviewEntry, Manifest
from prudence_cli.dataviews.base import Dataview
from prudence_cli.dataviews.restore import parse_dimensions, view_from_table
from prudence_cli.errors import CatalogError
from prudence_cli.io.atomic import write_text_atomic
from prudence_cli.io.checksums import sha256_file

CATALOG_FORMAT = "prudence-catalog"
CATALOG_VERSION = 1
MANIFEST = "catalog.json"
IRAC = "irac.csv"
RANDOMIZED = "randomized.csv"  # profiles catalogs: one row per (setting, attack level)
MEASURE_COLUMNS = (
    "users",
    "users_in_view",
    "i_rac_u",
    "i_rac_d",
    "mean_risk",
    "share_at_risk_1",
)
EXTRA_MEASURES = ("unicity", "k_disclosure", "em", "em_ci", "kl", "kl_ci", "sampled_people")
RANDOMIZED_NUMBERS = (
    "epsilon",
    "p",
    "users",
    "mean_error",
    "mean_value",
    "relative_error",
    "success_rate",
    "successes",
    "targets",
    "mean_relative_error",
)
# risks: per-person risks of attack levels; profiles: randomized profiles (success rates)
CatalogKind = Literal["risks", "profiles"]
_KIND_NAMES = {"risks": "per-person risks", "profiles": "randomized profiles"}
_GZIP = {"method": "gzip", "compresslevel": 1, "mtime": 0}
_UNSAFE = re.compile(r"[^A-Za-z0-9=,._-]+")


def is_catalog(folder: Path) -> bool:
    return (Path(folder) / MANIFEST).is_file()


class CatalogWriter:
    """Writes the files of one catalog into a (temporary) folder; `finish` writes the
    manifest last."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        for sub in ("curves", "risks", "dataviews"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)

    def write_dataview(self, view_id: str, table: pd.DataFrame, locations: pd.DataFrame) -> str:
        path = f"dataviews/{view_id}.csv.gz"
        table.to_csv(self.folder / path, index=False, compression=_GZIP)
        locations.to_csv(self.folder / f"dataviews/{view_id}.locations.csv", index=False)
        return path

    def write_risks(self, view_id: str, user_ids: np.ndarray, risks: dict[str, np.ndarray]) -> str:
        path = f"risks/{view_id}.csv.gz"
        frame = pd.DataFrame({"user": user_ids, **risks})
        frame.to_csv(self.folder / path, index=False, compression=_GZIP)
        return path

    def write_curve(self, view_id: str, level: KnowledgeLevel, curve: pd.DataFrame) -> str:
        name = _UNSAFE.sub("_", f"{view_id}__{level.attack}__{level.label}")
        path = f"curves/{name}.csv"
        curve.to_csv(self.folder / path, index=False)
        return path

    def write_table(
        self, name: str, view_id: str, level: KnowledgeLevel, table: pd.DataFrame
    ) -> str:
        """A per-location table of one row, e.g. disclosure/<row>.csv (EM and KL per bin)."""
        safe = _UNSAFE.sub("_", f"{view_id}__{level.attack}__{level.label}")
        path = f"{name}/{safe}.csv"
        (self.folder / name).mkdir(exist_ok=True)
        table.to_csv(self.folder / path, index=False)
        return path

    def finish(self, manifest: Manifest, irac: pd.DataFrame) -> Manifest:
        """Writes the i-RAC table and the manifest, with every file's sha256; returns the
        manifest as written."""
        irac.to_csv(self.folder / IRAC, index=False)
        files = {
            str(p.relative_to(self.folder)): sha256_file(p)
            for p in sorted(self.folder.rglob("*"))
            if p.is_file()
        }
        manifest = dataclasses.replace(manifest, files=files)
        write_text_atomic(
            self.folder / MANIFEST, json.dumps(manifest.to_json(), indent=2, default=str) + "\n"
        )
        return manifest


@dataclass
class Catalog:
    """A catalog folder opened for reading."""

    path: Path
    manifest: dict[str, Any]  # catalog.json as read; `record` is its typed form

    @cached_property
    def record(self) -> Manifest:
        """The manifest as a typed record."""
        try:
            return Manifest.from_json(self.manifest)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CatalogError(
                f"{self.path}: incomplete manifest ({exc!r}); run prudence assess again"
            ) from None

    @cached_property
    def irac(self) -> pd.DataFrame:
        """The i-RAC table; dimension and knowledge columns as text."""
        frame = pd.read_csv(self.path / IRAC, dtype=str, keep_default_na=False)
        for column in (*MEASURE_COLUMNS, *EXTRA_MEASURES):
            if column in frame:
                frame[column] = pd.to_numeric(frame[column].replace("", np.nan))
        if "sampled" in frame:
            frame["sampled"] = frame["sampled"] == "True"
        return frame

    @property
    def kind(self) -> CatalogKind:
        """`profiles` for a catalog of randomized profiles, `risks` for one of per-person
        risks: each command branches on it once."""
        return "profiles" if self.record.is_profiles else "risks"

    @cached_property
    def randomized(self) -> pd.DataFrame:
        """The randomized.csv table; dimension and knowledge columns as text."""
        if self.kind != "profiles":
            raise CatalogError(f"{self.path}: not a catalog of profiles dataviews")
        frame = pd.read_csv(self.path / RANDOMIZED, dtype=str, keep_default_na=False)
        for column in RANDOMIZED_NUMBERS:
            if column in frame:
                frame[column] = pd.to_numeric(frame[column].replace("", np.nan))
        frame["admissible"] = frame["admissible"] == "True"
        return frame

    @property
    def dimension_names(self) -> list[str]:
        return list(self.record.dimensions)

    @property
    def knowledge_names(self) -> list[str]:
        return self.record.knowledge_names

    @property
    def dataviews(self) -> list[DataviewEntry]:
        return list(self.record.dataviews)

    def dataview_entry(self, view_id: str) -> DataviewEntry:
        for entry in self.dataviews:
            if entry.id == view_id:
                return entry
        known = ", ".join(e.id for e in self.dataviews)
        raise CatalogError(f"{self.path}: no dataview {view_id!r} (known: {known})")

    def risks(self, view_id: str) -> pd.DataFrame:
        entry = self.dataview_entry(view_id)
        return pd.read_csv(self.path / entry.risks, dtype={"user": str}, keep_default_na=False)

    def view(self, view_id: str) -> tuple[Dataview, np.ndarray]:
        """A dataview rebuilt from its files, and its universe U (original user ids)."""
        entry = self.dataview_entry(view_id)
        for key, name in (("risks", entry.risks), ("file", entry.file)):
            if not name or not (self.path / name).is_file():
                raise CatalogError(
                    f"{self.path}: dataview {view_id} has no {key} file; this catalog cannot "
                    "be used for it: run prudence assess again"
                )
        user_ids = self.risks(view_id)["user"].astype(str).to_numpy(dtype=object)
        locations = pd.read_csv(
            self.path / entry.file.replace(".csv.gz", ".locations.csv"),
            dtype={"label": str},
            keep_default_na=False,
        )
        dims = parse_dimensions(entry.format, entry.dimensions)
        try:
            crs = self.record.selection.crs
            table = self.dataview_table(view_id)
            view = view_from_table(view_id, entry.format, dims, user_ids, table, locations, crs)
        except ValueError as exc:
            raise CatalogError(f"{self.path}: dataview {view_id} is inconsistent: {exc}") from None
        return view, user_ids

    def dataview_table(self, view_id: str) -> pd.DataFrame:
        entry = self.dataview_entry(view_id)
        return pd.read_csv(
            self.path / entry.file, dtype={"user": str, "location": str}, keep_default_na=False
        )


def open_catalog(
    path: Path | str, kind: CatalogKind | None = None, instead: str = ""
) -> Catalog:
    """Open a catalog folder, checking it is complete, of this format version and, when
    `kind` is given, of that kind (else the error names the kind and `instead`, what to
    do with this one)."""
    folder = Path(path)
    manifest_path = folder / MANIFEST
    if not folder.is_dir():
        raise CatalogError(f"{folder}: no such catalog folder; run prudence assess first")
    if not manifest_path.is_file():
        raise CatalogError(
            f"{folder}: not a complete catalog (no {MANIFEST}); run prudence assess again"
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CatalogError(f"{manifest_path}: unreadable manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != CATALOG_FORMAT:
        raise CatalogError(f"{manifest_path}: not a Prudence catalog manifest")
    if manifest.get("format_version") != CATALOG_VERSION:
        raise CatalogError(
            f"{folder}: catalog format version {manifest.get('format_version')} "
            f"(written by prudence {manifest.get('tool_version', '?')}); this prudence reads "
            f"version {CATALOG_VERSION}: run prudence assess again"
        )
    catalog = Catalog(folder, manifest)
    if kind is not None and catalog.kind != kind:
        raise CatalogError(
            f"{folder} is a catalog of {_KIND_NAMES[catalog.kind]}, and this command needs "
            f"one of {_KIND_NAMES[kind]}" + (f"; {instead}" if instead else "")
        )
    return catalog


def find_catalog(given: Path | None, cwd: Path | None = None) -> Path:
    """The catalog to read: `given`; else the output of the config in the current folder
    (the only *.yaml / *.yml there that is a Prudence config with an assessed catalog);
    else ./catalog, or the only catalog inside it."""
    if given is not None:
        return given
    here = cwd or Path.cwd()
    from_config = _catalogs_of_configs(here)
    if len(from_config) == 1:
        return from_config[0]
    root = here / "catalog"
    if is_catalog(root):
        return root
    found = sorted(p for p in root.glob("*") if is_catalog(p)) if root.is_dir() else []
    if len(found) == 1:
        return found[0]
    if not found and not from_config:
        raise CatalogError("no catalog in ./catalog; run prudence assess, or pass --catalog DIR")
    names = ", ".join(str(p) for p in (from_config or found))
    raise CatalogError(f"several catalogs ({names}); pick one with --catalog")


def _catalogs_of_configs(folder: Path) -> list[Path]:
    from prudence_cli.config import load_config
    from prudence_cli.errors import ConfigError

    found = []
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        try:
            output = load_config(path).output
        except ConfigError:
            continue
        if is_catalog(output) and output not in found:
            found.append(output)
    return found
