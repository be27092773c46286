"""Presence and probability dataviews (Pratesi et al., PRUDEnce, section 4.1; Pellungrini et al.,
Analyzing Privacy Risk in Human Mobility Data Definitions 2-3).

A presence view holds per user: location → visit count, where a location is a grid cell
(or the raw tower of a cdr input without grid) and a visit is one selected point; a
user-location pair is kept when its count reaches the `frequency` threshold f. A
probability view holds the same pairs with each pair's share of the user's kept visits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from prudence_cli.dataviews.base import (
    BuildSettings,
    CountedView,
    Dataview,
    Dimensions,
    Located,
    join_rows,
    same_class,
)
from prudence_cli.engine.problem import Elements

if TYPE_CHECKING:
    from prudence_cli.select import Selection


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
        """Per user: locations by descending count, ties by ascending id (Pellungrini et al.,
        Analyzing Privacy Risk in Human Mobility Data's
        frequency vector order), values = counts."""
        order = np.lexsort((self.location, -self.count.astype(np.int64), self.user))
        return Elements(self.offsets, self.location[order], self.count[order].astype(float))

    @classmethod
    def build(
        cls,
        selection: Selection,
        located: Located,
        view_id: str,
        dimensions: Dimensions,
        settings: BuildSettings,
    ) -> PresenceView:
        """The (user, location) pairs visited at least `frequency` times."""
        f = int(dict(dimensions).get("frequency", 1))
        pairs = located.pairs
        if pairs is None:
            raise ValueError("a presence view needs its points on a grid or on towers")
        user, location, count = pairs.user, pairs.location, pairs.count
        if f > 1:
            keep = count >= f
            user, location, count = user[keep], location[keep], count[keep]
        return cls(
            view_id, dimensions, selection.n_users, user, location, located.locations, count=count
        )

    @classmethod
    def concat(cls, views: Sequence[Dataview]) -> PresenceView:
        """Rows sorted by user, then location; each keeps the frequency threshold of the
        view it comes from."""
        view = views[0]
        rows = join_rows(views)
        presence = same_class(views, PresenceView)
        count = np.concatenate([v.count for v in presence])
        threshold = np.concatenate([v.thresholds for v in presence])
        order = np.lexsort((rows.location, rows.user))
        return cls(
            view.id,
            view.dimensions,
            rows.n_users,
            rows.user[order],
            rows.location[order].astype(np.int32),
            rows.locations,
            count=count[order],
            row_threshold=threshold[order],
            **cls.joined_fields(presence, order),
        )

    @classmethod
    def joined_fields(cls, views: list[PresenceView], order: np.ndarray) -> dict[str, Any]:
        """The format's own per-row fields of a joined view, rows in `order`."""
        return {}


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

    @classmethod
    def joined_fields(cls, views: list[PresenceView], order: np.ndarray) -> dict[str, Any]:
        """Each row keeps its share in the view it comes from."""
        share = np.concatenate([v.share for v in same_class(views, ProbabilityView)])
        return {"row_share": share[order]}
