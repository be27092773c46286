"""User profiles over locations (Olivier and Quertier, randomized sanitization mechanisms,
section II.A): per user and location (a tower, grid cell or region: the paper's POIs), the
number of visits over the observation period T.

A `boolean` profile b_i records whether user i visited location j (b_ij ∈ {0, 1}); a
`count` profile c_i how often (c_ij). Each row also keeps its visits in the first part of
the period (before `split`), so that scenario 1 of the seed — true profiles leaked for a
period T1, sanitized profiles of a later period T2 published — needs no second pass over
the raw data. Rows sorted by user, then location; only visited pairs are stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd
from scipy import sparse

from prudence_cli import columns as C
from prudence_cli.arrays import distinct
from prudence_cli.dataviews.base import BuildSettings, CountedView, Dimensions, Located

if TYPE_CHECKING:
    from prudence_cli.select import Selection

PERIODS = ("all", "first", "second")


@dataclass(frozen=True)
class ProfilesView(CountedView):
    """`count` holds c_ij over T; `first` the visits before `split` (period T1)."""

    first: np.ndarray | None = None  # per row: visits in T1
    split: int = 0  # UTC ns: T1 = [start, split), T2 = [split, end]

    format = "profiles"
    row_fields: ClassVar[tuple[str, ...]] = ("user", "location", "count", "first")

    @property
    def kind(self) -> str:
        """boolean or count (the `profile` dimension)."""
        return str(dict(self.dimensions).get("profile", "boolean"))

    @property
    def n_locations(self) -> int:
        """m: every location of the view's table, visited by somebody or not."""
        return len(self.locations)

    def matrix(self, period: str = "all", users: np.ndarray | None = None) -> sparse.csr_matrix:
        """The profiles as an n × m sparse matrix (int64): rows are `users` (codes of U, in
        that order; default every user of U), values are counts, or 1 for boolean
        profiles. `period` is all of T, its first part T1 or its second part T2."""
        if period not in PERIODS:
            raise ValueError(f"unknown period {period!r}; known: {', '.join(PERIODS)}")
        first = self.first if self.first is not None else np.zeros_like(self.count)
        values = {"all": self.count, "first": first, "second": self.count - first}[period]
        values = values.astype(np.int64)
        if self.kind == "boolean":
            values = (values > 0).astype(np.int64)
        rows = np.arange(self.n_users) if users is None else np.asarray(users)
        position = np.full(self.n_users, -1, dtype=np.int64)
        position[rows] = np.arange(rows.shape[0])
        keep = (position[self.user] >= 0) & (values > 0)
        out = sparse.csr_matrix(
            (values[keep], (position[self.user[keep]], self.location[keep])),
            shape=(rows.shape[0], self.n_locations),
            dtype=np.int64,
        )
        out.sort_indices()
        return out

    def present_and_together(self) -> tuple[np.ndarray, sparse.csr_matrix]:
        """The codes of the users with a visit in the view (sorted), and per pair of
        locations how many of them visited both (`visited_together`): what the sweep
        reads of every user, asked of each range of a view kept on Dask workers (the
        counts are whole numbers: their sum over the ranges is exact)."""
        return distinct(self.user), visited_together(self.matrix("all"))

    def table(self, user_ids: np.ndarray) -> pd.DataFrame:
        frame = super().table(user_ids)
        frame["first"] = self.first if self.first is not None else 0
        return frame

    @classmethod
    def stored_fields(cls, table: pd.DataFrame, order: np.ndarray) -> dict[str, Any]:
        return {"first": table["first"].to_numpy()[order].astype(np.int32)}

    @classmethod
    def build(
        cls,
        selection: Selection,
        located: Located,
        view_id: str,
        dimensions: Dimensions,
        settings: BuildSettings,
    ) -> ProfilesView:
        """Visits per (user, location), all of T and before the split; points outside
        every region are not counted."""
        points = selection.points
        at = middle_of(selection) if settings.split is None else settings.split
        inside = located.location >= 0
        user, location, count, first = profile_rows(
            points[C.USER].to_numpy()[inside],
            located.location[inside],
            points[C.TIME].to_numpy()[inside],
            at,
            len(located.locations),
        )
        return cls(
            view_id,
            dimensions,
            selection.n_users,
            user,
            location,
            located.locations,
            count=count,
            first=first,
            split=at,
        )


def middle_of(selection: Selection) -> int:
    """The middle of the selected points' time span (UTC ns)."""
    times = selection.points[C.TIME].to_numpy()
    if times.shape[0] == 0:
        return 0
    return middle(int(times.min()), int(times.max()))


def middle(first: int, last: int) -> int:
    """The middle of the times [first, last] (UTC ns), rounded down by halves."""
    return first // 2 + last // 2


def profile_rows(
    user: np.ndarray, location: np.ndarray, time: np.ndarray, split: int, n_locations: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(user, location, count, first) of every visited pair, sorted by user then location;
    `first` counts the visits with time < split."""
    width = max(n_locations, 1)
    key = user.astype(np.int64) * width + location
    pairs, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    first = np.bincount(inverse.ravel(), weights=time < split, minlength=pairs.shape[0])
    return (
        (pairs // width).astype(np.int32),
        (pairs % width).astype(np.int32),
        counts.astype(np.int32),
        first.astype(np.int32),
    )


def visited_together(profiles: sparse.csr_matrix) -> sparse.csr_matrix:
    """B^T B of the boolean profiles B (nonzero: visited), m × m, float64: per pair of
    locations the number of users who visited both (whole numbers: exact up to 2^53),
    indices sorted."""
    b = (profiles > 0).astype(np.float64)
    counts = (b.T @ b).tocsr()
    counts.sort_indices()
    return counts
