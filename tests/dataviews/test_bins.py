"""Spatio-temporal bins: the time bins of the period and the dimensionality d of a profile
(space units × time bins of the period), which EM- and KL-disclosure average over."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.arrays import distinct
from prudence_cli.dataviews.bins import bin_keys, number_bins, period_bins
from prudence_cli.dataviews.trajectory import local_bins

HOUR = 3600
ROME = "Europe/Rome"


def bin_rows(user, space, tbin, spaces, seconds, period):
    """(user, bin, activity) rows, the bins table and d, as BinsView.build numbers the
    bins of these points."""
    numbering = number_bins(distinct(bin_keys(space, tbin, period)[1]), spaces, seconds, period)
    return (*numbering.rows(user, space, tbin), numbering.table, numbering.d)


def ns(text: str) -> int:
    """UTC ns of a Rome wall-clock time."""
    return int(pd.Timestamp(text, tz=ROME).tz_convert("UTC").value)


def hours(*texts: str) -> np.ndarray:
    return local_bins(np.array([ns(t) for t in texts], dtype=np.int64), HOUR, ROME)


def test_without_a_period_the_data_span_from_its_first_to_its_last_bin():
    tbin = hours("2024-03-05 10:59", "2024-03-05 08:05", "2024-03-05 08:30")
    first, last = period_bins(tbin, HOUR, ROME)
    assert (first, last) == (tbin[1], tbin[0])
    assert last - first + 1 == 3  # 08:00, 09:00 (no call) and 10:00
    assert first > 400_000  # hours since 1970 on the wall clock, not 0


def test_a_period_is_start_to_end_exclusive_on_the_local_clock():
    tbin = hours("2024-03-05 08:05", "2024-03-05 08:30")
    start, end = ns("2024-03-05 06:00"), ns("2024-03-05 10:00")
    first, last = period_bins(tbin, HOUR, ROME, start, end)
    assert (first, last) == (hours("2024-03-05 06:00")[0], hours("2024-03-05 09:00")[0])
    # one end given: the other is the data's
    assert period_bins(tbin, HOUR, ROME, start=start) == (first, tbin[0])
    assert period_bins(tbin, HOUR, ROME, end=end) == (tbin[0], last)
    # a day-long bin of a period ending at midnight is that one day
    day = local_bins(np.array([ns("2024-03-05 08:05")]), 86400, ROME)
    assert period_bins(day, 86400, ROME, end=ns("2024-03-06 00:00")) == (day[0], day[0])


def test_no_points_no_time_bins_but_one():
    assert period_bins(np.zeros(0, dtype=np.int64), HOUR, ROME) == (0, 0)


def test_d_is_every_space_unit_times_every_time_bin_of_the_period():
    spaces = pd.DataFrame({"label": ["a", "b", "c"], "lon": 0.0, "lat": 0.0})
    tbin = hours("2024-03-05 08:05", "2024-03-05 10:10", "2024-03-05 08:40")
    user = np.array([0, 0, 1])
    space = np.array([0, 2, -1])  # the third point lies in no space unit
    period = period_bins(tbin, HOUR, ROME)
    rows_user, rows_bin, count, table, d = bin_rows(user, space, tbin, spaces, HOUR, period)
    assert d == 3 * 3
    assert rows_user.tolist() == [0, 0] and rows_bin.tolist() == [0, 1]
    assert count.tolist() == [1, 1]
    assert table["label"].tolist() == ["a@2024-03-05T08:00", "c@2024-03-05T10:00"]
    wider = (period[0] - 1, period[1] + 2)
    again = bin_rows(user, space, tbin, spaces, HOUR, wider)
    assert again[4] == 3 * 6 and again[3]["label"].tolist() == table["label"].tolist()
    with pytest.raises(ValueError, match="outside the period"):
        bin_rows(user, space, tbin, spaces, HOUR, (period[0] + 1, period[1]))


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    seconds=st.sampled_from([900, HOUR, 6 * HOUR, 86400]),
    low=st.integers(-50, 500_000),
    numbers=st.booleans(),
)
def test_bins_are_labelled_space_at_their_start_on_the_local_clock(data, seconds, low, numbers):
    """Each bin's label, lon and lat, as the literal space@start of its key: a space
    unit's label (text, or numbers as text) and its time bin's start."""
    n_space = data.draw(st.integers(1, 6))
    span = data.draw(st.integers(1, 40))
    labels = list(range(100, 100 + n_space)) if numbers else [f"s{i}-é" for i in range(n_space)]
    spaces = pd.DataFrame(
        {"label": labels, "lon": np.arange(n_space) + 0.5, "lat": -np.arange(n_space) - 0.25}
    )
    keys = np.array(
        sorted(data.draw(st.sets(st.integers(0, n_space * span - 1), max_size=30))), dtype=np.int64
    )
    numbering = number_bins(keys, spaces, seconds, (low, low + span - 1))
    table = numbering.table
    assert numbering.d == n_space * span and len(table) == keys.size
    for key, (label, lon, lat) in zip(keys, table.itertuples(index=False), strict=True):
        space, offset = divmod(int(key), span)
        start = pd.Timestamp((low + offset) * seconds, unit="s").strftime("%Y-%m-%dT%H:%M")
        assert label == f"{labels[space]}@{start}"
        assert (lon, lat) == (spaces["lon"][space], spaces["lat"][space])
