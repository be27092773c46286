"""Trajectories over road segments (Pratesi et al., PRUDEnce, section 4.2): per user the
time-ordered
sequence of (segment, t_origin, t_destination), the times a segment was entered and left
floored to the `time` granularity (bins aligned on local midnight of `input.timezone`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

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


Triple = tuple[np.ndarray, np.ndarray, np.ndarray]  # segments, t_origin and t_destination bins


@dataclass(frozen=True)
class TripleCodes:
    """The distinct (segment, t_origin, t_destination) of a whole view, in lexicographic
    order: a triple's code is its rank. What numbers the triples of a range of the view's
    users as the whole view numbers them (`SegmentView.triples`)."""

    triples: Triple  # int64 each, sorted, distinct

    @classmethod
    def of(cls, call: Callable[..., list[Any]]) -> TripleCodes:
        """The codes of the view whose parts `call` asks (Dataview.numbering): from each
        part's distinct triples."""
        found = call("distinct_triples")
        joined = [
            np.concatenate([f[k] for f in found] or [np.zeros(0, np.int64)]) for k in range(3)
        ]
        del found
        return cls(_distinct(*joined))

    def ranks(self, location: np.ndarray, tbin: np.ndarray, tbin_end: np.ndarray) -> np.ndarray:
        """Each row's code: the rank of its triple among the codes' (every one there).
        The rows and the codes sorted together, each code before the rows equal to it:
        a row's rank is the number of codes before it, less one."""
        k, n = self.triples[0].shape[0], location.shape[0]
        keys = [
            np.concatenate([mine, theirs.astype(np.int64)])
            for mine, theirs in zip(self.triples, (location, tbin, tbin_end), strict=True)
        ]
        row = np.concatenate([np.zeros(k, dtype=np.int8), np.ones(n, dtype=np.int8)])
        order = np.lexsort((row, keys[2], keys[1], keys[0]))
        del keys, row
        rank = np.cumsum(order < k) - 1
        found = np.empty(n, dtype=np.int64)
        rows = order >= k
        found[order[rows] - k] = rank[rows]
        del order, rank, rows
        held = (
            code[found] == theirs
            for code, theirs in zip(self.triples, (location, tbin, tbin_end), strict=True)
        )
        if n and (k == 0 or not all(bool(same.all()) for same in held)):
            raise AssertionError("a triple of the rows is not among the view's codes")
        return found


def _distinct(location: np.ndarray, tbin: np.ndarray, tbin_end: np.ndarray) -> Triple:
    """The distinct triples, in lexicographic order."""
    order = np.lexsort((tbin_end, tbin, location))
    a, b, c = location[order], tbin[order], tbin_end[order]
    del order
    new = np.ones(a.shape[0], dtype=bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1]) | (c[1:] != c[:-1])
    return a[new], b[new], c[new]


@dataclass(frozen=True)
class SegmentView(Dataview):
    """Rows sorted by user, then time entered."""

    tbin: np.ndarray  # int64 bin of the time entered
    tbin_end: np.ndarray  # int64 bin of the time left
    granularity: int = 3600
    # the whole view's triples, when this is a range of its users (`numbered`)
    codes: TripleCodes | None = field(default=None, repr=False, compare=False)

    format = "segments"
    row_fields: ClassVar[tuple[str, ...]] = ("user", "location", "tbin", "tbin_end")
    numberings: ClassVar[tuple[str, ...]] = ("triples",)
    codes_class: ClassVar[Any] = TripleCodes

    def triples(self) -> Elements:
        """Per user, in time order: one code per distinct (segment, t_origin, t_destination)
        of the view (or of the whole view, `codes`), in lexicographic order."""
        if self.codes is None:
            keys = pd.MultiIndex.from_arrays([self.location, self.tbin, self.tbin_end])
            codes, _ = pd.factorize(keys, sort=True)
        else:
            codes = self.codes.ranks(self.location, self.tbin, self.tbin_end)
        return Elements.from_rows(self.n_users, self.user, codes, np.zeros(codes.shape[0]))

    def distinct_triples(self) -> Triple:
        """Its distinct triples (int64 each), in lexicographic order."""
        return _distinct(self.location.astype(np.int64), self.tbin, self.tbin_end)

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
