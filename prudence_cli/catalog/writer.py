"""Writing a catalog's files into its (temporary) folder, the manifest last (the folder
is swapped in by the caller, io/atomic.py)."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    from prudence_cli.measures.kept_mobility import KeptProfile
    from prudence_cli.measures.mobility import Measured, Profile
    from prudence_cli.select import IdsKept

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

    def write_kept(self, view: KeptView, locations: pd.DataFrame) -> str:
        """A dataview kept on the workers: its table written by them as a folder of parts
        (catalog/tables.py) when every worker holding its people sees the catalog's
        folder, else in parts made there and written here (`write_dataview`); its
        locations; returns the table's name in the catalog."""
        path = f"dataviews/{view.id}{PARQUET}"
        if not view.sees(self.folder):
            return self.write_dataview(view.id, view.table_parts(ROW_GROUP), locations)
        view.written(self.folder / path, PART, write_view_part)
        write_table(locations, self.folder / locations_name(path), text=LOCATIONS_TEXT)
        return path

    def write_view(
        self,
        view: Dataview,
        user_ids: np.ndarray | IdsKept,
        risks: Mapping[str, np.ndarray],
        locations: pd.DataFrame,
        **entry: Any,
    ) -> DataviewEntry:
        """Write a dataview, with `locations` (the locations table it names), and its
        risks; its manifest entry, with the fields `entry` adds. A view kept on the Dask
        workers is written from there, with the ids they keep (`user_ids` is not read)."""
        if view.on_workers:
            kept = cast("KeptView", view)
            file, risks_file = self.write_kept(kept, locations), self._kept_risks(kept, risks)
        else:
            ids = _here(user_ids)
            file = self.write_dataview(view.id, view.table_parts(ids, ROW_GROUP), locations)
            risks_file = self.write_risks(view.id, ids, risks)
        return DataviewEntry(
            id=view.id,
            format=view.format,
            dimensions=view.labels,
            users_in_view=view.users_in_view,
            locations=len(locations),
            rows=view.rows,
            visits=int(view.coverage_total("visits")),
            file=file,
            risks=risks_file,
            **entry,
        )

    def write_risks(
        self, view_id: str, user_ids: np.ndarray, risks: Mapping[str, np.ndarray]
    ) -> str:
        """Per person of U (original id, as text): one float64 risk column per attack
        level; returns the file's name in the catalog."""
        path = f"risks/{view_id}{PARQUET}"
        write_table(risks_frame(user_ids, risks), self.folder / path, RISKS_TEXT)
        return path

    def _kept_risks(self, view: KeptView, risks: Mapping[str, np.ndarray]) -> str:
        """`write_risks` of a view kept on the workers: each range's part made there, its
        share of the risks sent as its task is submitted (a few ranges at a time). Only
        those shares are held here: the risks mapped from disk are read range by range,
        each mapping let go with the pages it read."""
        import numpy as np

        path = f"risks/{view.id}{PARQUET}"

        def sent(k: int) -> tuple[Any, ...]:
            b = view.ranges[k]
            share = {key: np.array(risks[key][b.first : b.last]) for key in risks}
            return (view.sent(share, k),)

        self._kept_people(view, path, RISKS_TEXT, risks_frame, sent)
        return path

    def write_measures(
        self,
        view: Dataview,
        people: Measured,
        user_ids: np.ndarray | IdsKept,
        places: pd.DataFrame,
    ) -> str:
        """Per person of U (original id, as text, then one column per measure of
        `people`); per location (its label) the measures of `places`; returns the
        people's file name in the catalog (the places' is `places_name` of it). A view
        kept on the Dask workers has its people's measures written from there, with the
        ids they keep."""
        path = f"measures/{view.id}{PARQUET}"
        (self.folder / "measures").mkdir(exist_ok=True)
        if view.on_workers:
            frames = cast("KeptProfile", people).kept_people.frames
            kept = cast("KeptView", view)
            self._kept_people(kept, path, RISKS_TEXT, measures_frame, lambda k: (frames[k],))
        else:
            frame = measures_frame(_here(user_ids), cast("Profile", people).people)
            write_table(frame, self.folder / path, RISKS_TEXT)
        write_table(places, self.folder / places_name(path), PLACES_TEXT)
        return path

    def _kept_people(
        self,
        view: KeptView,
        path: str,
        text: Sequence[str],
        make: Callable[..., pd.DataFrame],
        arguments: Callable[[int], tuple[Any, ...]],
    ) -> None:
        """A per-person table of a view kept on the workers, range k's part made there by
        `make(its users' ids, *arguments(k))`: written by the workers as a folder of parts
        when they see the catalog's folder, else here, part after part, as one file."""
        target = self.folder / path
        if view.sees(self.folder):
            view.people_written(
                target, PART, functools.partial(_part_written, text=text), make, arguments
            )
        else:
            write_parts(view.people_parts(make, arguments), target, text)

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


def risks_frame(user_ids: np.ndarray, risks: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """The risks table's rows of these people: their ids, then a column per level."""
    import numpy as np
    import pandas as pd

    columns = {name: np.asarray(values, dtype=np.float64) for name, values in risks.items()}
    return pd.DataFrame({"user": user_ids, **columns})


def measures_frame(user_ids: np.ndarray, people: pd.DataFrame) -> pd.DataFrame:
    """The measures table's rows of these people: their ids, then their measures."""
    import pandas as pd

    return pd.concat([pd.DataFrame({"user": user_ids}), people.reset_index(drop=True)], axis=1)


def _part_written(frame: pd.DataFrame, path: str, text: Sequence[str]) -> None:
    """A part of a per-person table written by the worker that made it."""
    write_table(frame, Path(path), text)


def _here(user_ids: np.ndarray | IdsKept) -> np.ndarray:
    """The ids, gathered from the workers when they keep them."""
    import numpy as np

    return user_ids if isinstance(user_ids, np.ndarray) else user_ids.gathered()


def write_view_part(view: Dataview, user_ids: np.ndarray, path: str) -> None:
    """A part of a dataview's table — `view`'s rows, `user_ids` the ids of its users —
    written by the worker holding them (KeptView.written), as `write_dataview` writes it."""
    write_parts(view.table_parts(user_ids, ROW_GROUP), Path(path), text=VIEW_TEXT)
