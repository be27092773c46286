"""What every dataview has: an id, its dimension values, the user universe U, rows
sorted by user, and the locations they refer to (DESIGN.md section 4)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import pandas as pd

COVERAGE_KINDS = ("locations", "visits", "records", "segments")


@dataclass(frozen=True)
class Dataview:
    """Rows sorted by user; user codes index `Selection.user_ids`; `location` codes index
    `locations` (label, lon, lat)."""

    id: str
    dimensions: tuple[tuple[str, Any], ...]
    n_users: int  # |U|: every selected user, including those absent from the view
    user: np.ndarray  # int32 per row
    location: np.ndarray  # int32 per row
    locations: pd.DataFrame = field(repr=False)

    format = "dataview"
    row_fields: ClassVar[tuple[str, ...]] = ("user", "location")  # per-row arrays
    additive: ClassVar[bool] = True  # the data of a group of people = the sum of theirs

    @cached_property
    def offsets(self) -> np.ndarray:
        """CSR offsets: user u's rows are [offsets[u], offsets[u + 1])."""
        out = np.zeros(self.n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.user, minlength=self.n_users), out=out[1:])
        return out

    @property
    def users_in_view(self) -> int:
        return int(np.count_nonzero(np.diff(self.offsets)))

    @property
    def frequency(self) -> int:
        return int(dict(self.dimensions).get("frequency", 1))

    def keep(self, rows: np.ndarray) -> Dataview:
        """The same view (same universe U) with only the rows where `rows` is True."""
        changes = {
            name: getattr(self, name)[rows]
            for name in self.row_fields
            if getattr(self, name) is not None
        }
        return replace(self, **changes)

    def used_locations(self) -> pd.DataFrame:
        """The locations table restricted to the locations the view holds."""
        return self.locations.iloc[np.unique(self.location)].reset_index(drop=True)

    def coverage(self, kind: str) -> np.ndarray:
        """c({u}, D) per user, for the coverage `kind`."""
        raise NotImplementedError

    def data_of(self, people: np.ndarray, kind: str) -> float:
        """The data the people of the mask `people` (over U) produce together."""
        return float(self.coverage(kind)[people].sum())

    def table(self, user_ids: np.ndarray) -> pd.DataFrame:
        """The dataview's rows with the original user ids (what the catalog keeps)."""
        raise NotImplementedError

    def release_table(self, user_ids: np.ndarray) -> pd.DataFrame:
        """What a release of this dataview shares: its rows, unless the format shares an
        aggregate instead."""
        return self.table(user_ids)


def check_coverage(kind: str) -> None:
    if kind not in COVERAGE_KINDS:
        raise ValueError(f"unknown coverage {kind!r}; known: {', '.join(COVERAGE_KINDS)}")
