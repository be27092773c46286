"""The data catalog folder (DESIGN.md section 8): its layout, and reading it back
(`catalog/writer.py` writes it, atomically with io/atomic.py).

Layout:
  catalog.json                 manifest, written last; lists every other file's sha256
  irac.csv                     one row per (dataview, attack, knowledge level)
  randomized.csv               profiles dataviews: utility and attack success per
                               randomized setting and attack level (Olivier and Quertier,
                               randomized sanitization mechanisms)
  curves/<row>.csv             risk, rac_u, rac_d — the step curves of each irac row
  risks/<dataview>.parquet     user, then one risk column per attack level (all users of U)
  dataviews/<dataview>.parquet the dataview as it would be shared: user, location, count
  dataviews/<dataview>.locations.parquet   label, lon, lat of each location of the view
  measures/<dataview>.parquet  user, then each mobility measure of the person (Pellungrini
                               et al., Analyzing Privacy Risk in Human Mobility Data)
  measures/<dataview>.places.parquet   location (label), then each location measure
  mobility.parquet             per dataview, attack level, risk threshold t and measure:
                               its distribution on the people at risk ≤ t against everyone
  mobility-correlation.parquet per dataview, attack level and per-person measure: its
                               Pearson and Spearman correlation with risk
  ledger/                      the releases made from the catalog (sanitize/ledger.py)

Integrity: `catalog.json` records the sha256 of every file but itself and the ledger.
`Catalog` checks a file against it the first time the file is read (each file once per
opened catalog, so a command hashes only what it reads), and refuses a file that was
changed, truncated or removed since `prudence assess` wrote it: whatever a command
certifies comes from the files that were assessed. The ledger grows after the catalog is
written, so it is not listed here: each of its records holds the sha256 of the files it
adds, and the ledger checks them when it reads them.

Format versions: 2 stores the per-dataview tables as Parquet (`catalog/tables.py`); 1
stored them as CSV (`.csv.gz`, the locations as `.csv`). Both are read: each file by the
extension catalog.json records.
"""

from __future__ import annotations

import csv
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from prudence_cli.catalog.records import DataviewEntry, Manifest
from prudence_cli.catalog.rows import Rows, read_rows
from prudence_cli.catalog.tables import (
    PARQUET,
    TableFileError,
    locations_name,
    read_arrow,
    read_table,
)
from prudence_cli.config.mobility import trips_in
from prudence_cli.errors import CatalogError
from prudence_cli.io.atomic import recover
from prudence_cli.io.checksums import sha256_fresh

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    # the dataview classes load the counting engine: only `view` needs them
    from prudence_cli.dataviews.base import Dataview

CATALOG_FORMAT = "prudence-catalog"
CATALOG_VERSION = 2  # 2: per-dataview tables in Parquet; 1: in CSV
READABLE_VERSIONS = (1, 2)
MANIFEST = "catalog.json"
MOBILITY = "mobility.parquet"
MOBILITY_CORRELATION = "mobility-correlation.parquet"
IRAC = "irac.csv"
RANDOMIZED = "randomized.csv"  # profiles catalogs: one row per (setting, attack level)
LEDGER = "ledger"  # written after the catalog: not in its `files` (see sanitize/ledger.py)
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


def is_catalog(folder: Path) -> bool:
    return (Path(folder) / MANIFEST).is_file()


def assessed_from(folder: Path) -> tuple[str, str] | None:
    """The config a catalog was assessed from, as (its name, its file's name); None when
    catalog.json does not say. Read leniently: a catalog of an older format can be
    replaced, so it must be recognised too."""
    try:
        manifest = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
        name, file = manifest["name"], manifest["config_file"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(name, str) or not isinstance(file, str):
        return None
    return name, Path(file).name


@dataclass
class Catalog:
    """A catalog folder opened for reading."""

    path: Path
    manifest: dict[str, Any]  # catalog.json as read; `record` is its typed form
    # names of the files checked against catalog.json so far (see `file`)
    _verified: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    def file(self, name: str) -> Path:
        """The path of the catalog file `name` (as catalog.json lists it, e.g.
        `risks/d1.csv.gz`), once its sha256 is found to be the one catalog.json records.

        Each file is hashed the first time it is asked for; a file that is missing, not
        listed, or changed since `prudence assess` wrote it is a CatalogError naming it."""
        path = self.path / name
        if name in self._verified:
            return path
        files = self.manifest.get("files")
        if not isinstance(files, dict) or not files:
            raise CatalogError(
                f"{self.path}: {MANIFEST} records no checksums of the catalog's files, so "
                "nothing read from it can be trusted; run prudence assess again"
            )
        if name.endswith(PARQUET) and path.is_dir():  # a table the workers wrote in parts
            return self._parts(name, files)
        recorded = files.get(name)
        if not isinstance(recorded, str):
            raise CatalogError(
                f"{path}: not one of the files {MANIFEST} lists, so it cannot be checked; "
                "run prudence assess again"
            )
        if not path.is_file():
            raise CatalogError(f"{path}: missing from the catalog; run prudence assess again")
        if sha256_fresh(path) != recorded:
            raise CatalogError(
                f"{path}: changed or damaged since prudence assess wrote it (its sha256 is not "
                f"the one {MANIFEST} records), so nothing can be certified from it; run "
                "prudence assess again to rebuild the catalog"
            )
        self._verified.add(name)
        return path

    def _parts(self, name: str, files: dict[str, Any]) -> Path:
        """`file` of a table written as a folder of parts: each part checked, and the
        folder holding exactly the parts catalog.json lists."""
        path = self.path / name
        listed = sorted(k for k in files if k.startswith(f"{name}/"))
        held = sorted(f"{name}/{p.name}" for p in path.iterdir())
        if not listed or held != listed:
            raise CatalogError(
                f"{path}: its parts are not the ones {MANIFEST} lists (changed since prudence "
                "assess wrote them), so nothing can be certified from it; run prudence "
                "assess again to rebuild the catalog"
            )
        for part in listed:
            self.file(part)
        self._verified.add(name)
        return path

    def read_csv(self, name: str, **options: Any) -> pd.DataFrame:
        """The catalog table `name` (see `file`), read with pandas `options`."""
        import pandas as pd

        path = self.file(name)
        try:
            return pd.read_csv(path, **options)
        except (OSError, EOFError, ValueError, UnicodeDecodeError, zlib.error) as exc:
            raise CatalogError(f"{path}: unreadable ({exc}); run prudence assess again") from None

    def read_rows(self, name: str, numbers: Sequence[str], flags: Sequence[str] = ()) -> Rows:
        """The small CSV table `name` (see `file`) as plain rows, without pandas: every
        column text but `numbers` and `flags` (see catalog/rows.py)."""
        path = self.file(name)
        try:
            return read_rows(path, numbers, flags)
        except (OSError, ValueError, UnicodeDecodeError, csv.Error) as exc:
            raise CatalogError(f"{path}: unreadable ({exc}); run prudence assess again") from None

    def read_table(self, name: str, text: Sequence[str]) -> pd.DataFrame:
        """The per-dataview table `name` (see `file`; Parquet, or CSV in a catalog of
        format version 1), the columns `text` as text."""
        path = self.file(name)
        try:
            return read_table(path, text)
        except TableFileError as exc:
            raise CatalogError(f"{path}: unreadable ({exc}); run prudence assess again") from None

    def read_arrow(self, name: str) -> pa.Table | None:
        """The per-dataview table `name` (see `file`) as an Arrow table, without pandas;
        None in a catalog of format version 1 (CSV: `read_table` reads it)."""
        path = self.file(name)
        try:
            return read_arrow(path)
        except TableFileError as exc:
            raise CatalogError(f"{path}: unreadable ({exc}); run prudence assess again") from None

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
    def trips(self) -> bool:
        """Whether the dataviews' consecutive visits are trips between stays, as the trip
        measures need (config/mobility.py, `trips_between_stays`)."""
        return trips_in(self.record.config)

    @cached_property
    def irac_records(self) -> Rows:
        """The i-RAC table as plain rows: the measures as numbers, `sampled` as a flag,
        every other column (dimension and knowledge values among them) as text."""
        return self.read_rows(IRAC, (*MEASURE_COLUMNS, *EXTRA_MEASURES), ("sampled",))

    @cached_property
    def irac(self) -> pd.DataFrame:
        """The i-RAC table (`irac_records`) as a DataFrame."""
        return self.irac_records.to_frame()

    @property
    def kind(self) -> CatalogKind:
        """`profiles` for a catalog of randomized profiles, `risks` for one of per-person
        risks: each command branches on it once."""
        return "profiles" if self.record.is_profiles else "risks"

    @cached_property
    def randomized_records(self) -> Rows:
        """The randomized.csv table as plain rows: its numbers as numbers, `admissible`
        as a flag, every other column (dimension and knowledge values among them) as text."""
        if self.kind != "profiles":
            raise CatalogError(f"{self.path}: not a catalog of profiles dataviews")
        return self.read_rows(RANDOMIZED, RANDOMIZED_NUMBERS, ("admissible",))

    @cached_property
    def randomized(self) -> pd.DataFrame:
        """The randomized.csv table (`randomized_records`) as a DataFrame."""
        return self.randomized_records.to_frame()

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
        """Per person of U: `user` (original id, as text), then one risk column per attack
        level (`presence[h=2,visits=half]`)."""
        entry = self.dataview_entry(view_id)
        return self.read_table(entry.risks, RISKS_TEXT)

    def require_files(self, entry: DataviewEntry) -> None:
        """CatalogError unless the dataview's risks and rows files are there."""
        for key, name in (("risks", entry.risks), ("file", entry.file)):
            if not name or not (self.path / name).exists():
                raise CatalogError(
                    f"{self.path}: dataview {entry.id} has no {key} file; this catalog cannot "
                    "be used for it: run prudence assess again"
                )

    def view(self, view_id: str, risks: pd.DataFrame | None = None) -> tuple[Dataview, np.ndarray]:
        """A dataview rebuilt from its files, and its universe U (original user ids);
        `risks`: its table of per-user risks, when the caller has read it already."""
        from prudence_cli.dataviews.restore import parse_dimensions, view_from_table

        entry = self.dataview_entry(view_id)
        self.require_files(entry)
        if risks is None:
            risks = self.risks(view_id)
        user_ids = risks["user"].astype(str).to_numpy(dtype=object)
        try:
            locations = self.read_table(locations_name(entry.file), LOCATIONS_TEXT)
        except TableFileError as exc:
            raise CatalogError(f"{self.path}: dataview {view_id}: {exc}") from None
        dims = parse_dimensions(entry.format, entry.dimensions)
        try:
            crs = self.record.selection.crs
            table = self.dataview_table(view_id)
            view = view_from_table(view_id, entry.format, dims, user_ids, table, locations, crs)
        except ValueError as exc:
            raise CatalogError(f"{self.path}: dataview {view_id} is inconsistent: {exc}") from None
        return view, user_ids

    def mobility_tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The distortion and correlation tables `assess` stored (see MobilityEntry)."""
        entry = self.record.mobility
        if entry is None:
            raise CatalogError(f"{self.path}: the catalog holds no mobility measures")
        return self.read_table(entry.distortion, ()), self.read_table(entry.correlation, ())

    def measures(self, view_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The mobility measures `assess` stored for a dataview: per person of U (`user`,
        as text, then one column per measure) and per location (`location`, its label)."""
        entry = self.dataview_entry(view_id)
        if entry.measures is None:
            raise CatalogError(f"{self.path}: no mobility measures for dataview {view_id}")
        people = self.read_table(entry.measures, RISKS_TEXT)
        return people, self.read_table(places_name(entry.measures), PLACES_TEXT)

    def dataview_table(self, view_id: str) -> pd.DataFrame:
        """The dataview as it would be shared, with the original user ids (as text)."""
        entry = self.dataview_entry(view_id)
        return self.read_table(entry.file, VIEW_TEXT)


# the columns of the per-dataview tables that are text whatever they look like
VIEW_TEXT = ("user", "location")
LOCATIONS_TEXT = ("label",)
RISKS_TEXT = ("user",)
PLACES_TEXT = ("location",)


def places_name(measures_name: str) -> str:
    """`measures/d1.parquet` → `measures/d1.places.parquet`."""
    return measures_name.removesuffix(PARQUET) + ".places" + PARQUET


def open_catalog(path: Path | str, kind: CatalogKind | None = None, instead: str = "") -> Catalog:
    """Open a catalog folder, checking it is complete, of this format version and, when
    `kind` is given, of that kind (else the error names the kind and `instead`, what to
    do with this one)."""
    folder = Path(path)
    manifest_path = folder / MANIFEST
    if not folder.is_dir():
        recover(folder)  # a catalog a killed `assess` moved aside comes back
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
    if manifest.get("format_version") not in READABLE_VERSIONS:
        readable = " and ".join(str(v) for v in READABLE_VERSIONS)
        raise CatalogError(
            f"{folder}: catalog format version {manifest.get('format_version')} "
            f"(written by prudence {manifest.get('tool_version', '?')}); this prudence reads "
            f"versions {readable}: run prudence assess again"
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
        if not is_catalog(output):
            recover(output)
        if is_catalog(output) and output not in found:
            found.append(output)
    return found
