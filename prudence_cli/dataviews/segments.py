"""Trajectories over road segments (Pratesi et al., PRUDEnce, section 4.2): per user the
time-ordered
sequence of (segment, t_origin, t_destination), the times a segment was entered and left
floored to the `time` granularity (bins aligned on local midnight of `input.timezone`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pandas as pd

from prudence_cli import columns as C
from prudence_cli.dataviews.base import (
    BuildSettings,
    Dataview,
    Dimensions,
    Located,
    StoredTable,
    gathered,
    table_bins,
)
from prudence_cli.dataviews.coverage import per_row
from prudence_cli.dataviews.trajectory import local_bins
from prudence_cli.engine.problem import Elements

if TYPE_CHECKING:
    from prudence_cli.select import Selection


@dataclass(frozen=True)
class SegmentView(Dataview):
    """Rows sorted by user, then time entered."""

    tbin: np.ndarray  # int64 bin of the time entered
    tbin_end: np.ndarray  # int64 bin of the time left
    granularity: int = 3600

    format = "segments"
    row_fields: ClassVar[tuple[str, ...]] = ("user", "location", "tbin", "tbin_end")

    def triples(self) -> Elements:
        """Per user, in time order: one code per distinct (segment, t_origin, t_destination)."""
        keys = pd.MultiIndex.from_arrays([self.location, self.tbin, self.tbin_end])
        codes, _ = pd.factorize(keys, sort=True)
        return Elements(self.offsets, codes.astype(np.int32), np.zeros(codes.shape[0]))

    def coverage(self, kind: str) -> np.ndarray:
        """`segments`, `records` and `visits` count the user's segment traversals,
        `locations` their distinct segments."""
        return per_row(self.user, self.location, self.n_users, len(self.locations), kind)

    def table(self, user_ids: np.ndarray) -> pd.DataFrame:
        def stamp(bins: np.ndarray) -> pd.Index:
            return pd.to_datetime(bins * self.granularity, unit="s").strftime("%Y-%m-%dT%H:%M:%S")

        order = np.arange(self.user.shape[0]) - self.offsets[self.user]
        return pd.DataFrame(
            {
                C.USER: gathered(user_ids, self.user),
                "order": order,
                C.LOCATION: gathered(self.locations["label"].to_numpy(), self.location),
                "t_origin": stamp(self.tbin),
                "t_destination": stamp(self.tbin_end),
            }
        )

    @classmethod
    def build(
        cls,
        selection: Selection,
        located: Located,
        view_id: str,
        dimensions: Dimensions,
        settings: BuildSettings,
    ) -> SegmentView:
        """Every selected segment traversal, its times in bins of the `time` granularity."""
        seconds = int(dict(dimensions)["time"])
        points = selection.points
        return cls(
            view_id,
            dimensions,
            selection.n_users,
            points[C.USER].to_numpy().astype(np.int32),
            located.location,
            located.locations,
            tbin=local_bins(points[C.TIME].to_numpy(), seconds, settings.timezone),
            tbin_end=local_bins(points[C.LEAVE].to_numpy(), seconds, settings.timezone),
            granularity=seconds,
        )

    @classmethod
    def from_table(cls, stored: StoredTable) -> SegmentView:
        seconds = int(dict(stored.dimensions)["time"])
        start = table_bins(stored.table["t_origin"], seconds)
        end = table_bins(stored.table["t_destination"], seconds)
        order = np.lexsort((stored.table["order"].to_numpy(), stored.user))
        return cls(
            stored.view_id,
            stored.dimensions,
            stored.n_users,
            stored.user[order].astype(np.int32),
            stored.location[order].astype(np.int32),
            stored.locations,
            tbin=start[order],
            tbin_end=end[order],
            granularity=seconds,
        )
