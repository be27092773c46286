"""What every dataview has: an id, its dimension values, the user universe U, rows
sorted by user, and the locations they refer to (DESIGN.md section 4)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from prudence_cli import columns as C
from prudence_cli.engine.problem import Elements

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


@dataclass(frozen=True)
class CountedView(Dataview):
    """Rows of (user, location, count): a location (or bin) with how often the user was
    there. Rows sorted by user, then location id."""

    count: np.ndarray  # per row

    row_fields: ClassVar[tuple[str, ...]] = ("user", "location", "count")

    def elements(self) -> Elements:
        """Per user: locations (ascending ids) with their counts."""
        return Elements(self.offsets, self.location, self.count.astype(float))

    def coverage(self, kind: str) -> np.ndarray:
        """`locations` and `records` count the user's rows (one per user-location pair),
        `visits` sums their counts."""
        check_coverage(kind)
        if kind == "visits":
            return np.bincount(self.user, weights=self.count, minlength=self.n_users)
        return np.bincount(self.user, minlength=self.n_users).astype(float)

    def table(self, user_ids: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            {
                C.USER: user_ids[self.user],
                C.LOCATION: self.locations["label"].to_numpy()[self.location],
                C.COUNT: self.count,
            }
        )


def check_coverage(kind: str) -> None:
    if kind not in COVERAGE_KINDS:
        raise ValueError(f"unknown coverage {kind!r}; known: {', '.join(COVERAGE_KINDS)}")
