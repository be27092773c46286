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

from prudence_cli import columns as C
from prudence_cli.dataviews.base import (
    BuildSettings,
    Dimensions,
    Located,
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
        bins of d span every selected point, those outside the space units too."""
        seconds = int(dict(dimensions)["time"])
        points = selection.points
        tbin = local_bins(points[C.TIME].to_numpy(), seconds, settings.timezone)
        period = period_bins(tbin, seconds, settings.timezone, *settings.period)
        user, location, count, table, d = bin_rows(
            points[C.USER].to_numpy(), located.location, tbin, located.locations, seconds, period
        )
        return cls(
            view_id,
            dimensions,
            selection.n_users,
            user,
            location,
            table,
            count=count,
            dimensionality=d,
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


def bin_rows(
    user: np.ndarray,
    space: np.ndarray,
    tbin: np.ndarray,
    spaces: pd.DataFrame,
    seconds: int,
    period: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, pd.DataFrame, int]:
    """(user, bin, activity) rows sorted by user and bin, the bins table, and the
    profile's dimensionality d = space units × time bins of the period (its first and last
    time bin, see `period_bins`): the d of the EM- and KL-disclosure averages."""
    keep = space >= 0
    user, space, tbin = user[keep], space[keep], tbin[keep]
    low, high = period
    if tbin.size and (tbin.min() < low or tbin.max() > high):
        raise ValueError(f"time bins {tbin.min()}..{tbin.max()} outside the period {period}")
    span = high - low + 1
    key = space.astype(np.int64) * span + (tbin - low)
    bins, code = np.unique(key, return_inverse=True)
    n_bins = max(bins.shape[0], 1)
    pairs, counts = np.unique(user.astype(np.int64) * n_bins + code.ravel(), return_counts=True)
    bin_space = bins // span
    starts = pd.to_datetime((bins % span + low) * seconds, unit="s").strftime("%Y-%m-%dT%H:%M")
    table = pd.DataFrame(
        {
            "label": spaces["label"].to_numpy()[bin_space].astype(str) + "@" + np.asarray(starts),
            "lon": spaces["lon"].to_numpy()[bin_space],
            "lat": spaces["lat"].to_numpy()[bin_space],
        }
    )
    return (
        (pairs // n_bins).astype(np.int32),
        (pairs % n_bins).astype(np.int32),
        counts.astype(np.int32),
        table,
        len(spaces) * span,
    )
