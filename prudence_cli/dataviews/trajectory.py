"""Trajectory dataviews: per user, the time-ordered visits (location, time bin).

A visit is a selected point at a location (grid cell or tower) whose user-location pair
reaches the frequency threshold f (counted as in the presence view of the same grid and
f); its time is floored to the `time` granularity, bins aligned on local midnight of
`input.timezone`. Consecutive visits with the same location and time bin collapse into
one (DESIGN.md section 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from prudence_cli import columns as C
from prudence_cli.arrays import distinct, distinct_sorted
from prudence_cli.dataviews.base import (
    BuildSettings,
    Dataview,
    Dimensions,
    Located,
    StoredTable,
    gathered,
    join_rows,
    same_class,
    table_bins,
    text_column,
)
from prudence_cli.dataviews.coverage import per_row
from prudence_cli.engine.problem import Elements

if TYPE_CHECKING:
    from prudence_cli.select import Selection


@dataclass(frozen=True)
class VisitCodes:
    """The distinct visits (location, time bin) of a whole view, sorted by location then
    time bin, as keys `location * span + (tbin - low)`: a visit's code is its key's rank.
    What numbers the visits of a range of the view's users as the whole view numbers
    them (`TrajectoryView.visit_sets`). Or a range's own visits only, in the whole
    view's frame, with each one's code there (`numbers`: dataviews/kept_codes.py)."""

    low: int  # the view's first time bin
    span: int  # its last − its first + 1
    keys: np.ndarray  # int64, ascending, distinct
    # a range's own visits only (kept_codes.numbered_in_blocks): each key's code, and how
    # many visits the whole view holds; None: the keys are the whole view's, each its rank
    numbers: np.ndarray | None = None
    total: int = 0

    @property
    def frame(self) -> tuple[int, int]:
        return self.low, self.span

    @property
    def count(self) -> int:
        """How many distinct visits the whole view holds."""
        return int(self.keys.shape[0]) if self.numbers is None else self.total

    def coded(self, ordered: np.ndarray) -> np.ndarray:
        """The code of each of the keys `ordered` (ascending, each among `keys`): its
        rank, looked up in key order (a pass, not a search per visit at random)."""
        at = np.searchsorted(self.keys, ordered)
        return at if self.numbers is None else self.numbers[at]

    def __add__(self, other: VisitCodes) -> VisitCodes:
        """`joined` (the runner adds a block's pieces two by two)."""
        return VisitCodes.joined(self, other)

    part: ClassVar[str] = "visit_codes"  # what each part of the view tells: its own codes

    @classmethod
    def of(cls, found: list[VisitCodes]) -> VisitCodes:
        """The codes of the view whose parts told `found` (Dataview.numbering): each
        part's own codes, joined."""
        codes = cls(0, 1, np.zeros(0, dtype=np.int64))
        for part in found:
            codes = cls.joined(codes, part)
        return codes

    @staticmethod
    def joined(one: VisitCodes, other: VisitCodes) -> VisitCodes:
        """The codes of two parts of a view together: their keys in the frame of both
        (a part of no visits has no frame). Parts are joined two by two on a cluster."""
        if not other.keys.shape[0]:
            return one
        if not one.keys.shape[0]:
            return other
        low = min(one.low, other.low)
        span = max(one.low + one.span, other.low + other.span) - low
        keys = np.concatenate([one.keys_in((low, span)), other.keys_in((low, span))])
        keys.sort(kind="stable")  # two sorted runs, merged
        return VisitCodes(low, span, distinct_sorted(keys))

    def keys_in(self, frame: tuple[int, ...]) -> np.ndarray:
        """Its keys in another frame (`low`, `span`) that holds its own."""
        low, span = frame
        if (low, span) == self.frame:
            return self.keys
        return self.keys // self.span * span + (self.keys % self.span + self.low - low)

    def bounds(self) -> tuple[int, ...] | None:
        """Its first time bin and its last + 1; None when it holds no visit."""
        return (self.low, self.low + self.span) if self.keys.shape[0] else None

    @staticmethod
    def frame_of(bounds: list[tuple[int, ...]]) -> tuple[int, ...] | None:
        """The frame of the whole view whose ranges' `bounds` these are (kept_codes)."""
        low = min(b[0] for b in bounds)
        return low, max(b[1] for b in bounds) - low


@dataclass(frozen=True)
class TrajectoryView(Dataview):
    """Rows sorted by user, then time."""

    tbin: np.ndarray  # int64 bin index per visit, local wall clock
    granularity: int = 3600  # seconds
    timezone: str = "UTC"
    # the whole view's visits, when this is a range of its users (`numbered`)
    codes: VisitCodes | None = field(default=None, repr=False, compare=False)

    format = "trajectory"
    row_fields: ClassVar[tuple[str, ...]] = ("user", "location", "tbin")
    numberings: ClassVar[tuple[str, ...]] = ("visits",)
    codes_class: ClassVar[Any] = VisitCodes
    blocked_codes: ClassVar[Any] = VisitCodes

    def visit_codes(self) -> VisitCodes:
        """The codes of its own distinct visits, in its own frame (VisitCodes.of)."""
        low, span = self._time_frame()
        return VisitCodes(low, span, distinct(self._visit_keys(low, span)))

    def _time_frame(self) -> tuple[int, int]:
        """Its first time bin, and how many bins from there to its last (VisitCodes)."""
        if not self.tbin.shape[0]:
            return 0, 1
        low = int(self.tbin.min())
        return low, int(self.tbin.max()) - low + 1

    def _visit_keys(self, low: int, span: int) -> np.ndarray:
        """Each row's visit as a key `location * span + (tbin - low)` (VisitCodes)."""
        return self.location.astype(np.int64) * span + (self.tbin - low)

    def sequences(self) -> Elements:
        """Per user: the location of each visit, in time order (repeats kept)."""
        return Elements(self.offsets, self.location, np.zeros(self.location.shape[0]))

    def multisets(self) -> Elements:
        """Per user: distinct locations (ascending) with how many visits each holds."""
        n_locations = max(len(self.locations), 1)
        key = self.user.astype(np.int64) * n_locations + self.location
        pairs, counts = np.unique(key, return_counts=True)
        return Elements.from_rows(
            self.n_users, pairs // n_locations, pairs % n_locations, counts.astype(float)
        )

    def visit_sets(self) -> Elements:
        """Per user: distinct visits (location, time bin), as ascending visit codes: the
        rank of each among the view's distinct visits (or the whole view's, `codes`)."""
        codes = self.codes
        frame = self._time_frame() if codes is None else codes.frame
        packed = self._visit_keys(*frame)
        order = np.argsort(packed)
        ordered = packed[order]
        del packed
        if codes is None:
            codes = VisitCodes(*frame, distinct_sorted(ordered))  # its own
        visit = np.empty(ordered.shape[0], dtype=np.int64)
        visit[order] = codes.coded(ordered)
        del order, ordered
        n_visits = codes.count
        key = distinct(self.user.astype(np.int64) * max(n_visits, 1) + visit)
        return Elements.from_rows(
            self.n_users,
            key // max(n_visits, 1),
            key % max(n_visits, 1),
            np.ones(key.shape[0]),
        )

    def coverage(self, kind: str) -> np.ndarray:
        """`records` and `visits` count the user's visits; `locations` their distinct
        locations."""
        return per_row(self.user, self.location, self.n_users, len(self.locations), kind)

    def table(self, user_ids: np.ndarray) -> pd.DataFrame:
        starts = (self.tbin * self.granularity).astype("datetime64[s]")
        order = np.arange(self.user.shape[0]) - self.offsets[self.user]
        return pd.DataFrame(
            {
                C.USER: gathered(user_ids, self.user),
                "order": order,
                C.LOCATION: gathered(self.locations["label"].to_numpy(), self.location),
                "time_bin": text_column(np.datetime_as_string(starts)),  # YYYY-MM-DDThh:mm:ss
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
    ) -> TrajectoryView:
        """The visits of the pairs kept at the frequency threshold, in time bins of the
        `time` granularity, consecutive repeats collapsed."""
        values = dict(dimensions)
        f = int(values.get("frequency", 1))
        seconds = int(values["time"])
        keep = located.pair_count >= f
        user = selection.points[C.USER].to_numpy()[keep]
        location = located.location[keep]
        tbin = local_bins(selection.points[C.TIME].to_numpy()[keep], seconds, settings.timezone)
        first = collapse_repeats(user, location, tbin)
        return cls(
            view_id,
            dimensions,
            selection.n_users,
            user[first].astype(np.int32),
            location[first],
            located.locations,
            tbin=tbin[first],
            granularity=seconds,
            timezone=settings.timezone,
        )

    @classmethod
    def from_table(cls, stored: StoredTable) -> TrajectoryView:
        seconds = int(dict(stored.dimensions)["time"])
        tbin = table_bins(stored.table["time_bin"], seconds)
        order = np.lexsort((stored.table["order"].to_numpy(), stored.user))
        return cls(
            stored.view_id,
            stored.dimensions,
            stored.n_users,
            stored.user[order].astype(np.int32),
            stored.location[order].astype(np.int32),
            stored.locations,
            tbin=tbin[order],
            granularity=seconds,
        )

    @classmethod
    def concat(cls, views: Sequence[Dataview]) -> TrajectoryView:
        """Rows sorted by user, then the start of their time bin."""
        trajectories = same_class(views, TrajectoryView)
        view = trajectories[0]
        rows = join_rows(views)
        start = np.concatenate([v.tbin * v.granularity for v in trajectories])
        order = np.lexsort((start, rows.user))
        tbin = np.concatenate([v.tbin for v in trajectories])
        return cls(
            view.id,
            view.dimensions,
            rows.n_users,
            rows.user[order],
            rows.location[order].astype(np.int32),
            rows.locations,
            tbin=tbin[order],
            granularity=view.granularity,
            timezone=view.timezone,
        )


def local_bins(time_ns: np.ndarray, seconds: int, timezone: str) -> np.ndarray:
    """Bin index of each UTC time at the granularity, on the local wall clock."""
    local = pd.DatetimeIndex(time_ns.astype("datetime64[ns]")).tz_localize("UTC")
    wall = local.tz_convert(timezone).tz_localize(None).as_unit("ns").asi8
    return np.floor_divide(wall, seconds * 1_000_000_000)


def collapse_repeats(user: np.ndarray, location: np.ndarray, tbin: np.ndarray) -> np.ndarray:
    """Mask keeping the first of each run of consecutive equal (user, location, tbin)."""
    keep = np.ones(user.shape[0], dtype=bool)
    keep[1:] = (user[1:] != user[:-1]) | (location[1:] != location[:-1]) | (tbin[1:] != tbin[:-1])
    return keep
