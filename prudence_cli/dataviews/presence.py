"""Presence dataviews: per user, location → visit count (seed 000, section 4.1).

A location is a grid cell of the `grid` dimension, or the raw tower when a cdr input has
no grid. A visit is one selected point; a user-location pair is kept when its count
reaches the `frequency` threshold f.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from prudence_cli import columns as C
from prudence_cli.space import grid_cells

if TYPE_CHECKING:
    from prudence_cli.select import Selection

COVERAGE_KINDS = ("locations", "visits", "records")


@dataclass(frozen=True)
class PresenceView:
    """One presence dataview over the user universe U of the selection.

    Arrays are sorted by user, then location; user codes index `Selection.user_ids`.
    """

    id: str
    dimensions: tuple[tuple[str, Any], ...]
    n_users: int  # |U|, every selected user, including those absent from the view
    user: np.ndarray  # int32
    location: np.ndarray  # int32, codes into `locations`
    count: np.ndarray  # int32, ≥ the frequency threshold
    locations: pd.DataFrame = field(repr=False)  # label, lon, lat per location code
    format: str = "presence"

    @cached_property
    def offsets(self) -> np.ndarray:
        """CSR offsets: user u's rows are [offsets[u], offsets[u + 1])."""
        out = np.zeros(self.n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.user, minlength=self.n_users), out=out[1:])
        return out

    @property
    def frequency(self) -> int:
        return int(dict(self.dimensions).get("frequency", 1))

    @property
    def users_in_view(self) -> int:
        return int(np.count_nonzero(np.diff(self.offsets)))

    def coverage(self, kind: str) -> np.ndarray:
        """c({u}, D) per user: `locations` and `records` count the user's rows (one per
        user-location pair), `visits` sums their counts."""
        if kind == "visits":
            return np.bincount(self.user, weights=self.count, minlength=self.n_users)
        if kind in ("locations", "records"):
            return np.bincount(self.user, minlength=self.n_users).astype(float)
        raise ValueError(f"unknown coverage {kind!r}; known: {', '.join(COVERAGE_KINDS)}")

    def table(self, user_ids: np.ndarray) -> pd.DataFrame:
        """The dataview as shared: original user id, location label, count."""
        return pd.DataFrame(
            {
                C.USER: user_ids[self.user],
                C.LOCATION: self.locations["label"].to_numpy()[self.location],
                C.COUNT: self.count,
            }
        )

    def restrict(self, keep_rows: np.ndarray) -> PresenceView:
        """The same view with only the rows where keep_rows is True (same universe)."""
        return PresenceView(
            id=self.id,
            dimensions=self.dimensions,
            n_users=self.n_users,
            user=self.user[keep_rows],
            location=self.location[keep_rows],
            count=self.count[keep_rows],
            locations=self.locations,
        )


def build_presence_views(
    selection: Selection,
    grid: float | None,
    frequencies: tuple[int, ...],
    ids: Iterator[str],
    dimensions: dict[str, Any],
) -> list[PresenceView]:
    """One view per frequency threshold for one grid (or raw towers when grid is None).

    `dimensions` holds the other dimension values of these views (e.g. the grid);
    `ids` yields their ids in order.
    """
    points = selection.points
    if grid is None:
        if selection.towers is None:
            raise ValueError("a presence dataview without grid needs raw locations (cdr towers)")
        location = points[C.TOWER].to_numpy()
        locations = selection.towers
    else:
        location, locations = grid_cells(
            points[C.X].to_numpy(), points[C.Y].to_numpy(), grid, selection.crs
        )
    n_locations = max(len(locations), 1)
    key = points[C.USER].to_numpy().astype(np.int64) * n_locations + location
    pairs, counts = np.unique(key, return_counts=True)
    user = (pairs // n_locations).astype(np.int32)
    loc = (pairs % n_locations).astype(np.int32)
    counts = counts.astype(np.int32)
    views = []
    for f in frequencies:
        keep = counts >= f
        views.append(
            PresenceView(
                id=next(ids),
                dimensions=tuple({**dimensions, "frequency": f}.items()),
                n_users=selection.n_users,
                user=user[keep],
                location=loc[keep],
                count=counts[keep],
                locations=locations,
            )
        )
    return views
