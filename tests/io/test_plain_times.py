"""Times of the plain shapes (io.plain_times) against `parse_times`, the careful path's
parser: the same UTC instants, or None (the file then goes to the careful path)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from prudence_cli.io.plain_times import plain_times
from prudence_cli.io.values import parse_times

ZONES = ["Europe/Rome", "UTC", "America/New_York", "Australia/Lord_Howe"]


@settings(max_examples=300, deadline=None)
@given(
    seconds=st.lists(st.integers(-2_000_000_000, 4_000_000_000), min_size=1, max_size=30),
    shape=st.sampled_from(["naive", "space", "zulu", "offset", "epoch"]),
    offset_minutes=st.integers(-14 * 60, 14 * 60),
    timezone=st.sampled_from(["Europe/Rome", "UTC", "America/New_York", "Australia/Lord_Howe"]),
    time_format=st.sampled_from(["auto", "iso", "epoch"]),
)
def test_plain_times_agree_with_parse_times(seconds, shape, offset_minutes, timezone, time_format):
    """Around every instant, including the hours that clocks skip or repeat."""
    stamps = np.array(seconds, dtype="datetime64[s]")
    text = [str(s) for s in np.datetime_as_string(stamps)]
    if shape == "space":
        text = [t.replace("T", " ") for t in text]
    elif shape == "zulu":
        text = [t + "Z" for t in text]
    elif shape == "offset":
        sign = "-" if offset_minutes < 0 else "+"
        hours, minutes = divmod(abs(offset_minutes), 60)
        text = [f"{t}{sign}{hours:02d}:{minutes:02d}" for t in text]
    elif shape == "epoch":
        text = [str(s) for s in seconds]
    fast = plain_times(pa.array(text), timezone, time_format)
    readable = time_format != ("iso" if shape == "epoch" else "epoch")
    assert (fast is not None) == readable
    if fast is not None:
        careful = parse_times(pd.Series(text, dtype=str), timezone, time_format)
        np.testing.assert_array_equal(fast, careful)


def test_plain_times_of_the_dst_hours():
    text = ["2011-10-30T02:30:00", "2011-03-27T02:30:00", "2011-06-01T12:00:00"]
    fast = plain_times(pa.array(text), "Europe/Rome", "auto")
    assert fast is not None
    assert [str(t) for t in fast.astype("datetime64[s]")] == [
        "2011-10-30T00:30:00",  # the first 02:30, still summer time (UTC+2)
        "2011-03-27T01:00:00",  # 02:30 does not exist: shifted forward to 03:00 (UTC+2)
        "2011-06-01T10:00:00",
    ]


@pytest.mark.parametrize(
    "values",
    [
        ["2011-06-01T08:00:00", "2011-13-01T08:00:00"],
        ["2011-02-29T00:00:00"],
        ["2011-06-01T08:00:60"],
        ["2011-06-01t08:00:00"],
        ["2011-06-01T08:00:00+15:00"],
        ["12345678901"],
        ["9999999999999999999"],
        ["-"],
        ["1306908000", "2011-06-01T08:00:00"],
        ["１２３"],
        # 19 bytes, the shape Arrow parses, but not a date and time to the second
        ["2011-06-01T08:00+02"],
        ["2011-06-01 08+02:00"],
        ["2011-06-01T08:00:0Z"],
        ["2011-06-01t08:00:00"],
        ["2011-06-01_08:00:00"],
        ["+011-06-01T08:00:00"],
        ["2011-06-31T08:00:00"],
        ["2011-06-01T08:00:0５"],
        ["1799-12-31T23:59:59"],  # years outside 1800-2200
        ["2201-01-01T00:00:00"],
        ["0000-01-01T00:00:00"],
        ["9999-12-31T23:59:59"],
        ["2011-06-01T08:00:00", "2011-06-01T08:00:00+02:00", "2011-06-01"],
    ],
)
def test_plain_times_refuse_what_they_do_not_parse(values):
    assert plain_times(pa.array(values), "UTC", "auto") is None


# --- any text of a time, and times close together -----------------------------------

# the days clocks change in Europe/Rome and New York, and leap days
DAYS = ["2011-03-27", "2011-10-30", "2012-03-11", "2012-11-04", "2012-02-29", "2000-02-29"]


@st.composite
def time_texts(draw: st.DrawFn, odd: bool) -> str:
    """A time as a file may write it: ISO to the second, naive or with an offset, around
    the days clocks change and leap days; and, when `odd`, anything near it: cut short,
    with a fraction or spaces, impossible dates and times, years beyond the limits,
    offsets out of range, epoch seconds."""
    day = draw(st.sampled_from(DAYS))
    hour, minute, second = (draw(st.integers(0, n)) for n in (23, 59, 59))
    clock = f"{hour:02d}:{minute:02d}:{second:02d}"
    separator = draw(st.sampled_from(["T", " "]))
    suffix = draw(st.sampled_from(["", "", "", "Z", "+02:00", "-05:30"]))
    space = ""
    if odd and draw(st.booleans()):
        if draw(st.integers(0, 9)) == 0:
            return str(draw(st.integers(-(10**12), 10**12)))
        year = draw(st.sampled_from([0, 1799, 1800, 1970, 2011, 2200, 2201, 9999]))
        month, mday = draw(st.integers(0, 13)), draw(st.integers(0, 32))
        day = draw(st.sampled_from([day, f"{year:04d}-{month:02d}-{mday:02d}"]))
        hour, minute, second = (draw(st.integers(0, n)) for n in (24, 60, 60))
        clock = draw(
            st.sampled_from(
                [
                    f"{hour:02d}:{minute:02d}:{second:02d}",
                    f"{hour:02d}:{minute:02d}",
                    f"{hour:02d}",
                    f"{hour}:{minute:02d}:{second:02d}",
                ]
            )
        )
        separator = draw(st.sampled_from(["T", " ", "t", "_"]))
        suffix = draw(st.sampled_from(["", "+0200", "+02", "+15:00", ".5", ".000", "Z"]))
        space = draw(st.sampled_from(["", " "]))
    text = (
        draw(st.sampled_from([f"{day}{separator}{clock}", day])) if odd else day + separator + clock
    )
    return f"{space}{text}{suffix}{space}"


def _agree(text: list[str], timezone: str, time_format: str) -> None:
    fast = plain_times(pa.array(text), timezone, time_format)
    event("read" if fast is not None else "refused")
    if fast is not None:
        careful = parse_times(pd.Series(text, dtype=str), timezone, time_format)
        assert not np.isnat(careful).any()
        np.testing.assert_array_equal(fast, careful)


@settings(max_examples=1000, deadline=None)
@given(
    text=st.lists(time_texts(odd=False), min_size=1, max_size=6)
    | st.lists(time_texts(odd=True), min_size=1, max_size=3),
    timezone=st.sampled_from(ZONES),
    time_format=st.sampled_from(["auto", "iso", "epoch"]),
)
def test_any_time_text_reads_as_parse_times_reads_it_or_is_refused(text, timezone, time_format):
    _agree(text, timezone, time_format)


@settings(max_examples=300, deadline=None)
@given(
    day=st.sampled_from(DAYS),
    hour=st.integers(0, 23),
    seconds=st.lists(st.integers(0, 7200), min_size=1, max_size=10)
    | st.lists(st.integers(0, 60), min_size=1, max_size=10),
    repeat=st.integers(1, 400),
    space=st.booleans(),
    timezone=st.sampled_from(ZONES),
)
def test_times_close_together_are_localized_as_parse_times_does(
    day, hour, seconds, repeat, space, timezone
):
    """Many values in a short span (each second of it localized once), across the hours
    that clocks skip or repeat."""
    start = np.datetime64(f"{day}T{hour:02d}:00:00", "s")
    stamps = (start + np.array(seconds * repeat, dtype="timedelta64[s]")).astype("datetime64[s]")
    text = [str(t) for t in np.datetime_as_string(stamps)]
    if space:
        text = [t.replace("T", " ") for t in text]
    event("looked up" if max(seconds) - min(seconds) < len(text) // 2 else "one by one")
    _agree(text, timezone, "auto")
