"""Trajectories over road segments (Pratesi et al., PRUDEnce, section 4.2): per user the
time-ordered
sequence of (segment, t_origin, t_destination), the times a segment was entered and left
floored to the `time` granularity (bins aligned on local midnight of `input.timezone`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from prudence_cli import columns as C
from prudence_cli.arrays import distinct
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
    users as the whole view numbers them (`SegmentView.triples`).

    A triple is found by its parts' ranks, never packed whole (a segment × two spans of
    time bins can pass 64 bits): each part's rank among the distinct values of that part,
    the (segment, t_origin) pair's rank among the distinct pairs, and the triple as
    pair rank × |t_destination values| + its rank — below 2^62 while the codes are
    numbered in 32 bits — searched among the sorted `keys`."""

    parts: Triple  # the distinct values of each part, sorted (int64)
    pairs: np.ndarray  # the distinct (segment, t_origin) as rank × |t_origin| + rank
    keys: np.ndarray  # the triples as pair rank × |t_destination| + rank: sorted, distinct

    part: ClassVar[str] = "distinct_triples"  # what each part of the view tells

    @staticmethod
    def joined(one: Triple, other: Triple) -> Triple:
        """The distinct triples of two parts of a view together (joined two by two on a
        cluster before `of`)."""
        return _distinct(*(np.concatenate([a, b]) for a, b in zip(one, other, strict=True)))

    @classmethod
    def of(cls, found: list[Triple]) -> TripleCodes:
        """The codes of the view whose parts told `found` (Dataview.numbering): each
        part's distinct triples."""
        joined = [
            np.concatenate([f[k] for f in found] or [np.zeros(0, np.int64)]) for k in range(3)
        ]
        del found
        triples = _distinct(*joined)
        del joined
        Elements.check_codes(triples[0].shape[0] - 1)
        parts = tuple(distinct(part) for part in triples)
        ranks = [np.searchsorted(values, part) for values, part in zip(parts, triples, strict=True)]
        pair = ranks[0] * max(parts[1].shape[0], 1) + ranks[1]
        pairs = distinct(pair)
        keys = np.searchsorted(pairs, pair) * max(parts[2].shape[0], 1) + ranks[2]
        return cls((parts[0], parts[1], parts[2]), pairs, keys)

    def ranks(self, location: np.ndarray, tbin: np.ndarray, tbin_end: np.ndarray) -> np.ndarray:
        """Each row's code: the rank of its triple among the codes' (every one there; a
        row's triple that is not is an error, never a neighbour's code)."""
        ranks = [
            _rank(values, part.astype(np.int64, copy=False))
            for values, part in zip(self.parts, (location, tbin, tbin_end), strict=True)
        ]
        pair = _rank(self.pairs, ranks[0] * max(self.parts[1].shape[0], 1) + ranks[1])
        return _rank(self.keys, pair * max(self.parts[2].shape[0], 1) + ranks[2])


@dataclass(frozen=True)
class TripleKeys:
    """The distinct triples of a range of a view's users, packed in the frame of the
    whole view as keys `(segment * span + t_origin − low) * dspan + duration − dlow`
    (the duration t_destination − t_origin, in bins), with each one's code in the whole
    view (`numbers`) and how many it holds (`total`): a segments view's triples numbered
    in blocks (dataviews/kept_codes.py), as VisitCodes number a trajectory's visits.

    The keys sort as the triples do (for a segment and t_origin, t_destination grows
    with the duration), so a key's rank is the triple's (TripleCodes). They are made
    only while the whole view's frame packs into 63 bits (`frame_of`); past that, the
    view is numbered whole, by TripleCodes."""

    low: int  # the first t_origin bin
    span: int  # the last − the first + 1
    dlow: int  # the shortest duration, in bins
    dspan: int  # the longest − the shortest + 1
    keys: np.ndarray  # int64, ascending, distinct
    numbers: np.ndarray | None = None  # each key's code in the whole view (a range's own)
    total: int = 0  # the whole view's distinct triples
    segments: int = 0  # its largest segment + 1 (`bounds`)

    part: ClassVar[str] = "triple_keys"  # what each range of the view tells

    @property
    def frame(self) -> tuple[int, int, int, int]:
        return self.low, self.span, self.dlow, self.dspan

    @classmethod
    def of_rows(cls, location: np.ndarray, tbin: np.ndarray, tbin_end: np.ndarray) -> TripleKeys:
        """The distinct triples of rows, in their own frame; none packed when that frame
        does not pack (then the whole view's, which holds it, does not either)."""
        if not location.shape[0]:
            return cls(0, 1, 0, 1, np.zeros(0, np.int64))
        low, high = int(tbin.min()), int(tbin.max())
        first, last = int(tbin_end.min()), int(tbin_end.max())
        segments, none = int(location.max()) + 1, np.zeros(0, np.int64)
        if first - high < -(2**63) or last - low >= 2**63:  # a duration past int64
            return cls(low, high + 1 - low, 0, 2**64, none, segments=segments)  # never packs
        duration = tbin_end - tbin
        dlow = int(duration.min())
        frame = (low, high + 1 - low, dlow, int(duration.max()) + 1 - dlow)
        made = cls(*frame, none, segments=segments)
        if cls.frame_of([made.bounds()]) is None:  # type: ignore[list-item]
            return made
        return replace(made, keys=distinct(_packed(frame, location, tbin, duration)))

    def bounds(self) -> tuple[int, ...] | None:
        """Its t_origin bins and durations (first, last + 1 each) and segments (largest
        + 1), as told (`of_rows`) even when it packed none; None when it holds none."""
        if not self.segments:
            return None
        return (self.low, self.low + self.span, self.dlow, self.dlow + self.dspan, self.segments)

    @staticmethod
    def frame_of(bounds: list[tuple[int, ...]]) -> tuple[int, ...] | None:
        """The frame (low, span, dlow, dspan) holding every one of `bounds`; None when its
        keys could reach 2^63 (a segment × every t_origin bin × every duration)."""
        low, dlow = min(b[0] for b in bounds), min(b[2] for b in bounds)
        span, dspan = max(b[1] for b in bounds) - low, max(b[3] for b in bounds) - dlow
        if max(b[4] for b in bounds) * span * dspan >= 2**63:
            return None
        return low, span, dlow, dspan

    def keys_in(self, frame: tuple[int, ...]) -> np.ndarray:
        """Its keys in another frame that holds its own."""
        if frame == self.frame:
            return self.keys
        duration = self.keys % self.dspan + self.dlow
        at = self.keys // self.dspan
        return _packed(frame, at // self.span, at % self.span + self.low, duration)

    def __add__(self, other: TripleKeys) -> TripleKeys:
        """The keys of two parts of a block, in the same frame (the runner adds a
        block's pieces two by two)."""
        return replace(self, keys=distinct(np.concatenate([self.keys, other.keys])))

    def ranks(self, location: np.ndarray, tbin: np.ndarray, tbin_end: np.ndarray) -> np.ndarray:
        """Each row's code in the whole view (every row's triple among its own keys)."""
        at = _rank(self.keys, _packed(self.frame, location, tbin, tbin_end - tbin))
        return at if self.numbers is None else self.numbers[at]


def _packed(
    frame: tuple[int, ...], location: np.ndarray, tbin: np.ndarray, duration: np.ndarray
) -> np.ndarray:
    """Each triple's key in `frame` (TripleKeys: low, span, dlow, dspan)."""
    low, span, dlow, dspan = frame
    return (location.astype(np.int64) * span + (tbin - low)) * dspan + (duration - dlow)


def _rank(values: np.ndarray, found: np.ndarray) -> np.ndarray:
    """The position of each of `found` among the sorted distinct `values` (all there)."""
    at = np.searchsorted(values, found)
    if found.shape[0] == 0:
        return at
    if values.shape[0] == 0 or not np.array_equal(
        values[np.minimum(at, values.shape[0] - 1)], found
    ):
        raise AssertionError("a triple of the rows is not among the view's codes")
    return at


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
    codes: TripleCodes | TripleKeys | None = field(default=None, repr=False, compare=False)

    format = "segments"
    row_fields: ClassVar[tuple[str, ...]] = ("user", "location", "tbin", "tbin_end")
    numberings: ClassVar[tuple[str, ...]] = ("triples",)
    codes_class: ClassVar[Any] = TripleCodes
    blocked_codes: ClassVar[Any] = TripleKeys

    def triples(self) -> Elements:
        """Per user, in time order: one code per distinct (segment, t_origin, t_destination)
        of the view (or of the whole view, `codes`), in lexicographic order."""
        if self.codes is None:
            keys = pd.MultiIndex.from_arrays([self.location, self.tbin, self.tbin_end])
            codes, _ = pd.factorize(keys, sort=True)
        else:
            codes = self.codes.ranks(self.location, self.tbin, self.tbin_end)
        return Elements.from_rows(self.n_users, self.user, codes, np.zeros(codes.shape[0]))

    def triple_keys(self) -> TripleKeys:
        """Its distinct triples packed in its own frame (TripleKeys.of_rows)."""
        return TripleKeys.of_rows(self.location, self.tbin, self.tbin_end)

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
