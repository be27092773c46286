"""Spatio-temporal bins (the thesis on disclosure analysis of mobile-phone data, Table 4.1): per
user, the bins (space × time) they were
active in, with their activity (the number of records in the bin). A combination of a
spatial and a temporal granularity is a generalization profile. Sparse rows only.

The profile's dimensionality d (the thesis's number of spatio-temporal bins, which EM-
and KL-disclosure average over) is every space unit × every time bin of the period, empty
ones too: the time bins from the first to the last of the selected points (`period_bins`;
it also takes a configured period's ends, so that d can count the bins of [start, end))."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from prudence_cli import columns as C
from prudence_cli.arrays import distinct
from prudence_cli.dataviews.base import (
    BuildSettings,
    Dimensions,
    Located,
    text_column,
)
from prudence_cli.dataviews.presence import PresenceView
from prudence_cli.dataviews.trajectory import local_bins

if TYPE_CHECKING:
    from prudence_cli.select import Selection


@dataclass(frozen=True)
class BinsView(PresenceView):
    """Rows sorted by user, then bin code; `locations` labels a bin as space@time and
    `count` is the activity per (user, bin): a presence view whose places are
    spatio-temporal bins, so it keeps its own format (its bins are not places to measure
    mobility on). Read back from a catalog or a ledger, its dimensionality d is unknown
    (0: not stored), and EM and KL then average over the bins someone is active in."""

    dimensionality: int = 0  # d: space units × time bins of the profile, empty ones too

    format = "bins"

    @classmethod
    def build(
        cls,
        selection: Selection,
        located: Located,
        view_id: str,
        dimensions: Dimensions,
        settings: BuildSettings,
    ) -> BinsView:
        """The activity of each user in each (space, time bin) of the profile; the time
        bins of d span every selected point, those outside the space units too. The bins
        are numbered from these points, or as `located.bins` numbers them (a range of
        users on a worker: the whole view's numbering)."""
        seconds = int(dict(dimensions)["time"])
        points = selection.points
        tbin = local_bins(points[C.TIME].to_numpy(), seconds, settings.timezone)
        numbering = located.bins
        if numbering is None:
            period = period_bins(tbin, seconds, settings.timezone, *settings.period)
            keys = bin_keys(located.location, tbin, period)[1]
            numbering = number_bins(distinct(keys), located.locations, seconds, period)
        user, location, count = numbering.rows(points[C.USER].to_numpy(), located.location, tbin)
        return cls(
            view_id,
            dimensions,
            selection.n_users,
            user,
            location,
            numbering.table,
            count=count,
            dimensionality=numbering.d,
        )


@dataclass(frozen=True)
class BinNumbering:
    """The bins of a profile: the first and last time bin of its period (local clock,
    both included), the keys (`bin_keys`) of the bins some point falls in, sorted — a
    bin's code is its key's rank —, their table, and the profile's dimensionality d."""

    period: tuple[int, int]
    keys: np.ndarray
    table: pd.DataFrame
    d: int

    def rows(
        self, user: np.ndarray, space: np.ndarray, tbin: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(user, bin, activity) rows of the points, sorted by user and bin (points in no
        space unit: none). Every point's bin must be numbered."""
        inside, key = bin_keys(space, tbin, self.period)
        code = np.searchsorted(self.keys, key)
        if code.size and (code.max() >= self.keys.size or not (self.keys[code] == key).all()):
            raise ValueError("a point falls in a bin the numbering does not hold")
        n_bins = max(self.keys.shape[0], 1)
        pairs, counts = np.unique(user[inside].astype(np.int64) * n_bins + code, return_counts=True)
        return (
            (pairs // n_bins).astype(np.int32),
            (pairs % n_bins).astype(np.int32),
            counts.astype(np.int32),
        )


def period_bins(
    tbin: np.ndarray,
    seconds: int,
    timezone: str,
    start: int | None = None,
    end: int | None = None,
) -> tuple[int, int]:
    """The first and the last time bin (local clock, both included) of the selected
    period [start, end) (UTC ns): where an end is not given, the first or the last bin of
    the selected points (`tbin`), never the epoch. Widened to hold every point's bin."""
    first = [int(tbin.min())] if tbin.size else []
    last = [int(tbin.max())] if tbin.size else []
    if start is not None:
        first.append(int(local_bins(np.array([start], dtype=np.int64), seconds, timezone)[0]))
    if end is not None:
        last.append(int(local_bins(np.array([end - 1], dtype=np.int64), seconds, timezone)[0]))
    low = min(first, default=0)
    return low, max(last, default=low)


def bin_keys(
    space: np.ndarray, tbin: np.ndarray, period: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """The points in a space unit (a mask), and the key of each one's bin: space code ×
    the period's time bins + its time bin's rank in the period."""
    low, high = period
    inside = space >= 0
    tbin = tbin[inside]
    if tbin.size and (tbin.min() < low or tbin.max() > high):
        raise ValueError(f"time bins {tbin.min()}..{tbin.max()} outside the period {period}")
    return inside, space[inside].astype(np.int64) * (high - low + 1) + (tbin - low)


def number_bins(
    keys: np.ndarray, spaces: pd.DataFrame, seconds: int, period: tuple[int, int]
) -> BinNumbering:
    """The numbering of the bins of the distinct, sorted `keys` (`bin_keys`): their
    table, labelled space@start, and d = space units × time bins of the period. The
    labels are joined as Arrow text from those of the space units and of the time bins
    used (millions of bins: no Python string a bin)."""
    low, high = period
    bin_space, offset = np.divmod(keys, high - low + 1)
    times, time_of = np.unique(offset, return_inverse=True)
    starts = pd.to_datetime((times + low) * seconds, unit="s").strftime("%Y-%m-%dT%H:%M")
    text = pa.large_string()  # 64-bit offsets: more than 2 GiB of labels
    space_labels = pa.array(spaces["label"].to_numpy().astype(str), type=text)
    labels = pc.binary_join_element_wise(
        space_labels.take(bin_space),
        pa.array(np.asarray(starts, dtype=str), type=text).take(time_of.ravel()),
        pa.scalar("@", type=text),
    )
    table = pd.DataFrame(
        {
            "label": text_column(labels),
            "lon": spaces["lon"].to_numpy()[bin_space],
            "lat": spaces["lat"].to_numpy()[bin_space],
        }
    )
    return BinNumbering(period, keys, table, len(spaces) * (high - low + 1))
