"""Spatio-temporal bins (seed 003, Table 4.1): per user, the bins (space × time) they were
active in, with their activity (the number of records in the bin). A combination of a
spatial and a temporal granularity is a generalization profile. Sparse rows only."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from prudence_cli.dataviews.base import CountedView


@dataclass(frozen=True)
class BinsView(CountedView):
    """Rows sorted by user, then bin code; `locations` labels a bin as space@time and
    `count` is the activity per (user, bin)."""

    dimensionality: int = 0  # d: space units × time bins of the profile, empty ones too

    format = "bins"


def bin_rows(
    user: np.ndarray, space: np.ndarray, tbin: np.ndarray, spaces: pd.DataFrame, seconds: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, pd.DataFrame, int]:
    """(user, bin, activity) rows sorted by user and bin, the bins table, and the
    profile's dimensionality d = space units × time bins from the first to the last."""
    keep = space >= 0
    user, space, tbin = user[keep], space[keep], tbin[keep]
    low = tbin.min(initial=0)
    span = int(tbin.max(initial=0) - low) + 1
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
