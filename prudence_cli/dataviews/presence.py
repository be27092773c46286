"""Presence and probability dataviews (seed 000 section 4.1; seed 002 Definitions 2-3).

A presence view holds per user: location → visit count, where a location is a grid cell
(or the raw tower of a cdr input without grid) and a visit is one selected point; a
user-location pair is kept when its count reaches the `frequency` threshold f. A
probability view holds the same pairs with each pair's share of the user's kept visits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from prudence_cli.dataviews.base import CountedView
from prudence_cli.engine.problem import Elements


@dataclass(frozen=True)
class PresenceView(CountedView):
    """Rows sorted by user, then location id; counts ≥ the frequency threshold."""

    # per-row frequency threshold, for views that join releases with different thresholds
    row_threshold: np.ndarray | None = None

    format = "presence"
    row_fields: ClassVar[tuple[str, ...]] = ("user", "location", "count", "row_threshold")

    @property
    def thresholds(self) -> np.ndarray:
        """The frequency threshold each row was kept under (known to the attacker)."""
        if self.row_threshold is not None:
            return self.row_threshold
        return np.full(self.count.shape[0], self.frequency, dtype=np.int64)

    def ranked(self) -> Elements:
        """Per user: locations by descending count, ties by ascending id (seed 002's
        frequency vector order), values = counts."""
        order = np.lexsort((self.location, -self.count.astype(np.int64), self.user))
        return Elements(self.offsets, self.location[order], self.count[order].astype(float))


@dataclass(frozen=True)
class ProbabilityView(PresenceView):
    """A presence view whose pairs also carry their share of the user's visits."""

    # shares fixed by the view they come from, for views that join several releases
    row_share: np.ndarray | None = None

    format = "probability"
    row_fields: ClassVar[tuple[str, ...]] = (
        "user",
        "location",
        "count",
        "row_threshold",
        "row_share",
    )

    @property
    def share(self) -> np.ndarray:
        if self.row_share is not None:
            return self.row_share
        totals = np.bincount(self.user, weights=self.count, minlength=self.n_users)
        return self.count / totals[self.user]

    def elements(self) -> Elements:
        """Per user: locations (ascending ids) with their shares."""
        return Elements(self.offsets, self.location, self.share)

    def table(self, user_ids: np.ndarray) -> pd.DataFrame:
        frame = super().table(user_ids)
        frame["share"] = self.share
        return frame


def presence_pairs(
    user: np.ndarray, location: np.ndarray, n_locations: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user, location, count) of every visited pair, sorted by user then location."""
    key = user.astype(np.int64) * max(n_locations, 1) + location
    pairs, counts = np.unique(key, return_counts=True)
    return (
        (pairs // max(n_locations, 1)).astype(np.int32),
        (pairs % max(n_locations, 1)).astype(np.int32),
        counts.astype(np.int32),
    )
