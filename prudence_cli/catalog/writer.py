"""Writing a catalog's files into its (temporary) folder, the manifest last (the folder
is swapped in by the caller, io/atomic.py)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from prudence_cli.catalog.folder import (
    IRAC,
    LEDGER,
    LOCATIONS_TEXT,
    MANIFEST,
    MOBILITY,
    MOBILITY_CORRELATION,
    PLACES_TEXT,
    RISKS_TEXT,
    VIEW_TEXT,
    places_name,
)
from prudence_cli.catalog.records import DataviewEntry, Manifest
from prudence_cli.catalog.tables import (
    PARQUET,
    PART,
    ROW_GROUP,
    locations_name,
    write_parts,
    write_table,
)
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.io.atomic import write_text_atomic
from prudence_cli.io.checksums import sha256_file

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from prudence_cli.dataviews.base import Dataview
    from prudence_cli.dataviews.on_workers import KeptView

_UNSAFE = re.compile(r"[^A-Za-z0-9=,._-]+")  # characters a file name made of labels avoids


class CatalogWriter:
    """Writes the files of one catalog into a (temporary) folder; `finish` writes the
    manifest last."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        for sub in ("curves", "risks", "dataviews"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)

    def write_dataview(
        self, view_id: str, table: Iterable[pd.DataFrame], locations: pd.DataFrame
    ) -> str:
        """The dataview's table (user ids and location labels as text), from its parts in
        order (Dataview.table_parts), and its locations; returns the table's name in the
        catalog."""
        path = f"dataviews/{view_id}{PARQUET}"
        write_parts(table, self.folder / path, text=VIEW_TEXT)
        write_table(locations, self.folder / locations_name(path), text=LOCATIONS_TEXT)
        return path

    def write_kept(self, view: KeptView, user_ids: np.ndarray, locations: pd.DataFrame) -> str:
        """A dataview kept on the workers: its table written by them as a folder of parts
        (catalog/tables.py) when every worker holding its people sees the catalog's
        folder, else in parts made there and written here (`write_dataview`); its
        locations; returns the table's name in the catalog."""
        path = f"dataviews/{view.id}{PARQUET}"
        if not view.written(self.folder / path, user_ids, PART, write_view_part):
            return self.write_dataview(view.id, view.table_parts(user_ids, ROW_GROUP), locations)
        write_table(locations, self.folder / locations_name(path), text=LOCATIONS_TEXT)
        return path

    def write_view(
        self,
        view: Dataview,
        user_ids: np.ndarray,
        risks: dict[str, np.ndarray],
        locations: pd.DataFrame,
        **entry: Any,
    ) -> DataviewEntry:
        """Write a dataview, with `locations` (the locations table it names), and its
        risks; its manifest entry, with the fields `entry` adds."""
        return DataviewEntry(
            id=view.id,
            format=view.format,
            dimensions=view.labels,
            users_in_view=view.users_in_view,
            locations=len(locations),
            rows=view.rows,
            visits=int(view.coverage("visits").sum()),
            file=self.write_kept(cast("KeptView", view), user_ids, locations)
            if view.on_workers
            else self.write_dataview(view.id, view.table_parts(user_ids, ROW_GROUP), locations),
            risks=self.write_risks(view.id, user_ids, risks),
            **entry,
        )

    def write_risks(self, view_id: str, user_ids: np.ndarray, risks: dict[str, np.ndarray]) -> str:
        """Per person of U (original id, as text): one float64 risk column per attack
        level; returns the file's name in the catalog."""
        import numpy as np
        import pandas as pd

        path = f"risks/{view_id}{PARQUET}"
        columns = {name: np.asarray(values, dtype=np.float64) for name, values in risks.items()}
        write_table(pd.DataFrame({"user": user_ids, **columns}), self.folder / path, RISKS_TEXT)
        return path

    def write_measures(
        self, view_id: str, user_ids: np.ndarray, people: pd.DataFrame, places: pd.DataFrame
    ) -> str:
        """Per person of U (original id, as text), the mobility measures of `people` (one
        row per person, in the order of U); per location (its label) those of `places`;
        returns the people's file name in the catalog (the places' is `places_name` of it)."""
        import pandas as pd

        path = f"measures/{view_id}{PARQUET}"
        (self.folder / "measures").mkdir(exist_ok=True)
        write_table(
            pd.concat([pd.DataFrame({"user": user_ids}), people.reset_index(drop=True)], axis=1),
            self.folder / path,
            RISKS_TEXT,
        )
        write_table(places, self.folder / places_name(path), PLACES_TEXT)
        return path

    def write_mobility(
        self, distortion: pd.DataFrame, correlation: pd.DataFrame
    ) -> tuple[str, str]:
        """The distortion and correlation tables of every dataview (explore/mobility.py)."""
        text = ("dataview", "level", "kind", "measure")  # dimension values are text already
        write_table(distortion, self.folder / MOBILITY, text)
        write_table(correlation, self.folder / MOBILITY_CORRELATION, text)
        return MOBILITY, MOBILITY_CORRELATION

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
        files: dict[str, str] = {}
        for path in sorted(self.folder.rglob("*")):
            name = path.relative_to(self.folder).as_posix()
            if path.is_file() and name.split("/")[0] != LEDGER:
                files[name] = sha256_file(path)
        manifest = dataclasses.replace(manifest, files=files)
        write_text_atomic(
            self.folder / MANIFEST, json.dumps(manifest.to_json(), indent=2, default=str) + "\n"
        )
        return manifest


def write_view_part(view: Dataview, user_ids: np.ndarray, path: str) -> None:
    """A part of a dataview's table — `view`'s rows, `user_ids` the ids of its users —
    written by the worker holding them (KeptView.written), as `write_dataview` writes it."""
    write_parts(view.table_parts(user_ids, ROW_GROUP), Path(path), text=VIEW_TEXT)
