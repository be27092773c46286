"""The fast path of reading a gps or cdr CSV (io.fast_points) against the
careful path: the same RawPoints for every file, or the same error; and the fallback to
the careful path on anything out of the ordinary."""

from __future__ import annotations

import gzip
import tempfile
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from prudence_cli.errors import InputError
from prudence_cli.io import points
from prudence_cli.io.fast_points import read_plain
from prudence_cli.io.specs import ColumnMap, PointsSpec, TowersSpec
from prudence_cli.io.tables import read_towers
from prudence_cli.io.text import read_header

COLUMNS = ColumnMap(user="uid", time="datetime", lat="lat", lon="lng", tower="cell")
TOWERS = "tower,lat,lon\nT1,43.7,10.4\nT2,43.71,10.41\n T3 ,43.72,10.42\n"

# values a file may hold: plain ones the fast path reads, and hostile ones
PLAIN_USERS = ["a", "b", "A17", " A17", "A17 ", "\tA17", "é", "ü 7", '"a,b"', '"q""uote"', '"c"']
PLAIN_USERS += ["person-000000017", "\u00a0b", "u0000001"]  # longer than 8 bytes (not packed)
HOSTILE_USERS = ["", "  ", '"x\ny"', '"unclosed']
NAIVE = [
    "2011-06-01T08:00:00",
    "2011-06-01 09:30:00",
    "2011-10-30T02:30:00",  # Europe/Rome: ambiguous (clocks go back)
    "2011-03-27T02:30:00",  # Europe/Rome: does not exist (clocks go forward)
    "2012-02-29T23:59:59",
]
WITH_OFFSET = ["2011-06-01T08:00:00Z", "2011-06-01T08:00:00+02:00", "2011-10-30T02:30:00-05:30"]
EPOCH = ["1306908000", "1319934600", "0", "-86400", "0001306908000"]
HOSTILE_TIMES = [
    " 2011-06-01T08:00:00",
    "2011-06-01T08:00:00.5",
    "2011-06-01",
    "1306908000.5",
    "2011-02-30T08:00:00",
    "2011-06-01T24:00:00",
    "2011-06-01T08:00:00+0200",
    "yesterday",
    "",
]
PLAIN_LAT = ["43.7", "-10.41", "0", "90", "1e1", " 43.7", '"43.7"', "43.70000001", "-0.0"]
PLAIN_LON = [*PLAIN_LAT, "-180", "179.99999999999"]
HOSTILE_COORDINATES = ["", "nan", "91", "-180.5", "x", "inf"]


def _write(folder: Path, text: str, bom: bool, gz: bool) -> Path:
    data = ("\ufeff" if bom else "").encode() + text.encode("utf-8")
    path = folder / ("points.csv.gz" if gz else "points.csv")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def fields_of(cdr: bool) -> list[str]:
    return ["uid", "datetime", "cell"] if cdr else ["uid", "datetime", "lat", "lng"]


@st.composite
def csv_files(draw: st.DrawFn, hostile: bool) -> dict[str, object]:
    """A small gps or cdr CSV: its text and how to read it."""
    cdr = draw(st.booleans())
    delimiter = draw(st.sampled_from([",", ";"]))
    times = draw(st.sampled_from(["naive", "offset", "epoch", "mixed"]))
    pool = {"naive": NAIVE, "offset": WITH_OFFSET, "epoch": EPOCH}
    time_values = NAIVE + WITH_OFFSET + EPOCH if times == "mixed" else pool[times]
    # a hostile file holds one hostile value in about 8 rows, so that some take the fast path
    rare = 8 * len(fields_of(cdr)) if hostile else 0

    def value(plain: list[str], bad: list[str]) -> str:
        pool = bad if rare and draw(st.integers(0, rare - 1)) == 0 else plain
        return draw(st.sampled_from(pool))

    fields = fields_of(cdr)
    if draw(st.booleans()):
        fields.insert(draw(st.integers(0, len(fields))), "note")
    lines = [delimiter.join(fields)]
    for _ in range(draw(st.integers(1, 12))):
        values = {
            "uid": value(PLAIN_USERS, HOSTILE_USERS),
            "datetime": value(time_values, HOSTILE_TIMES),
            "lat": value(PLAIN_LAT, HOSTILE_COORDINATES),
            "lng": value(PLAIN_LON, HOSTILE_COORDINATES),
            "cell": value(["T1", "T2", "T3", " T1"], ["T9"]),
            "note": draw(st.sampled_from(["", "x", '"a;b,c"', '"say ""hi"""'])),
        }
        line = delimiter.join(values[f] for f in fields)
        line = value([line], ["", line + delimiter, "\ufeff" + line])
        lines.append(line)
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return {
        "text": newline.join(lines) + draw(st.sampled_from([newline, ""])),
        "cdr": cdr,
        "delimiter": delimiter,
        "bom": draw(st.booleans()),
        "gz": draw(st.booleans()),
        "timezone": draw(st.sampled_from(["Europe/Rome", "UTC", "America/New_York"])),
        "time_format": draw(st.sampled_from(["auto", "auto", "iso", "epoch"])),
        "on_invalid": draw(st.sampled_from(["stop", "drop"])),
    }


def _spec(folder: Path, case: dict[str, object]) -> PointsSpec:
    path = _write(folder, str(case["text"]), bool(case["bom"]), bool(case["gz"]))
    towers = None
    if case["cdr"]:
        (folder / "towers.csv").write_text(TOWERS, encoding="utf-8")
        towers = TowersSpec(folder / "towers.csv")
    return PointsSpec(
        path,
        format="cdr" if case["cdr"] else "gps",
        columns=COLUMNS,
        towers=towers,
        timezone=str(case["timezone"]),
        time_format=str(case["time_format"]),
        delimiter=str(case["delimiter"]),
        on_invalid=str(case["on_invalid"]),
    )


def _careful(spec: PointsSpec, monkeypatch: pytest.MonkeyPatch) -> points.RawPoints | str:
    with monkeypatch.context() as patch:
        patch.setattr(points, "read_plain", lambda *args: None)
        return _outcome(spec)


def _outcome(spec: PointsSpec) -> points.RawPoints | str:
    """What reading gives: the points, or the error (whatever the careful path raises,
    the fast path, falling back to it, must raise the same)."""
    try:
        return points.read_points(spec)
    except InputError as exc:
        return f"InputError: {exc}"
    except Exception as exc:  # noqa: BLE001 - compared, not hidden
        return f"{type(exc).__name__}: {exc}"


def assert_same(fast: points.RawPoints | str, careful: points.RawPoints | str) -> None:
    if isinstance(careful, str) or isinstance(fast, str):
        assert fast == careful
        return
    pd.testing.assert_frame_equal(fast.table, careful.table, check_exact=True)
    for name in ("user", "location"):
        if name in careful.table:
            fast_labels = fast.table[name].cat.categories
            careful_labels = careful.table[name].cat.categories
            assert fast_labels.dtype == careful_labels.dtype
            assert list(fast_labels) == list(careful_labels)
    assert fast.rows_read == careful.rows_read
    assert fast.dropped == careful.dropped


def _plain(spec: PointsSpec) -> tuple[pd.DataFrame, int] | None:
    needed = points.input_columns(spec)
    towers = read_towers(spec.towers) if spec.towers is not None else None
    return read_plain(spec, read_header(spec.path, spec.delimiter), needed, towers)


SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(case=csv_files(hostile=True))
def test_hostile_files_read_the_same_either_way(case, monkeypatch):
    with tempfile.TemporaryDirectory() as tmp:
        spec = _spec(Path(tmp), case)
        fast = _outcome(spec)
        event("fast path" if _plain(spec) is not None else "careful path")
        assert_same(fast, _careful(spec, monkeypatch))


@SETTINGS
@given(case=csv_files(hostile=False))
def test_plain_files_take_the_fast_path_and_read_the_same(case, monkeypatch):
    """Files with a BOM, spaces around ids, quoted fields, DST times, offsets or epoch
    seconds, CRLF, an extra column, gzip: the fast path reads them (unless their times
    are of the wrong kind for time_format, or mix epoch and ISO) and agrees."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = _spec(Path(tmp), case)
        plain = _plain(spec)
        kinds = {"epoch" if t.lstrip("-").isdigit() else "iso" for t in _times(spec)}
        readable = len(kinds) == 1 and case["time_format"] in ("auto", kinds.pop())
        assert (plain is not None) == readable
        assert_same(_outcome(spec), _careful(spec, monkeypatch))


def _times(spec: PointsSpec) -> list[str]:
    table = pd.read_csv(
        spec.path, sep=spec.delimiter, dtype=str, keep_default_na=False, encoding="utf-8-sig"
    )
    return list(table["datetime"])


# --- the fallback, one unusual thing at a time ------------------------------------------

GOOD = ["u1,2011-06-01T08:00:00,43.7,10.4", "u2,2011-06-01T09:00:00,43.71,10.41"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("", None),  # a blank line: skipped by the careful path, counted as read
        ("u3,2011-06-01T08:00:00,43.7", ":4: lon is not a number"),  # a field short
        ("u3,2011-06-01T08:00:00,43.7,10.4,9", ":4: malformed CSV row: Expected 4 fields in"),
        (",2011-06-01T08:00:00,43.7,10.4", ":4: empty user"),
        ("   ,2011-06-01T08:00:00,43.7,10.4", ":4: empty user"),
        ("u3,2011-06-01T8:00:00,43.7,10.4", None),  # pandas reads a one-digit hour
        ("u3,June 1st,43.7,10.4", ":4: time is not ISO-8601 or epoch seconds (got 'June 1st')"),
        ("u3,2011-06-01T08:00:00.5,43.7,10.4", None),  # a fraction of a second
        ("u3,1306908000,43.7,10.4", None),  # epoch seconds among ISO times
        ("u3,2011-06-01T08:00:00,91,10.4", ":4: lat is not a number within ±90 (got '91')"),
        ("u3,2011-06-01T08:00:00,43.7,", ":4: lon is not a number within ±180 (got '')"),
        ("u3,2011-06-01T08:00:00,43.7,nan", ":4: lon is not a number within ±180 (got 'nan')"),
    ],
)
def test_the_unusual_sends_the_file_to_the_careful_path(tmp_path, monkeypatch, row, message):
    path = tmp_path / "points.csv"
    path.write_text("uid,datetime,lat,lng\n" + "\n".join([*GOOD, row]) + "\n", encoding="utf-8")
    spec = PointsSpec(path, columns=COLUMNS, timezone="Europe/Rome")
    assert _plain(spec) is None
    outcome = _outcome(spec)
    assert_same(outcome, _careful(spec, monkeypatch))
    if message is None:
        assert not isinstance(outcome, str)
    else:
        assert isinstance(outcome, str) and f"points.csv{message}" in outcome


def test_a_quoted_line_break_across_blocks_goes_to_the_careful_path(tmp_path, monkeypatch):
    """Arrow splits the file into blocks at line breaks: a quoted one that falls across
    blocks stops it. (Within a block it reads the value as the careful path does.)"""
    monkeypatch.setattr("prudence_cli.io.fast_points.BLOCK_BYTES", 1 << 10)
    rows = [f'"u\n{k}",2011-06-01T08:00:00,43.7,10.4' for k in range(200)]
    path = tmp_path / "points.csv"
    path.write_text("uid,datetime,lat,lng\n" + "\n".join(rows) + "\n", encoding="utf-8")
    spec = PointsSpec(path, columns=COLUMNS)
    assert _plain(spec) is None
    outcome = _outcome(spec)
    assert not isinstance(outcome, str) and outcome.rows_read == 200
    assert_same(outcome, _careful(spec, monkeypatch))


def test_bytes_that_are_not_utf8_go_to_the_careful_path(tmp_path, monkeypatch):
    path = tmp_path / "points.csv"
    good = b"u1,2011-06-01T08:00:00,43.7,10.4,cafe\n" * 1000  # past the header's buffer
    path.write_bytes(b"uid,datetime,lat,lng,note\n" + good + b"u1,1306908000,43.7,10.4,caf\xe9\n")
    spec = PointsSpec(path, columns=COLUMNS)
    assert _plain(spec) is None
    outcome = _outcome(spec)
    assert isinstance(outcome, str) and "is not a UTF-8 CSV file" in outcome
    assert outcome == _careful(spec, monkeypatch)


def test_a_tower_not_in_the_table_goes_to_the_careful_path(tmp_path, monkeypatch):
    (tmp_path / "towers.csv").write_text(TOWERS, encoding="utf-8")
    path = tmp_path / "events.csv"
    path.write_text("uid,datetime,cell\nu1,1306908000,T1\nu2,1306908000,T7\n", encoding="utf-8")
    spec = PointsSpec(
        path, format="cdr", columns=COLUMNS, towers=TowersSpec(tmp_path / "towers.csv")
    )
    assert _plain(spec) is None
    outcome = _outcome(spec)
    assert (
        isinstance(outcome, str) and "events.csv:3: tower not in towers.csv (got 'T7')" in outcome
    )


def test_a_damaged_gzip_goes_to_the_careful_path(tmp_path):
    data = gzip.compress(("uid,datetime,lat,lng\n" + "\n".join(GOOD * 200) + "\n").encode())
    path = tmp_path / "points.csv.gz"
    path.write_bytes(data[: len(data) - 10])
    spec = PointsSpec(path, columns=COLUMNS)
    assert _plain(spec) is None
    outcome = _outcome(spec)
    assert isinstance(outcome, str) and "is a damaged gzip file" in outcome


def test_a_tab_delimited_file_takes_the_fast_path(tmp_path, monkeypatch):
    path = tmp_path / "points.tsv"
    path.write_text("uid\tdatetime\tlat\tlng\n" + "\n".join(GOOD).replace(",", "\t") + "\n")
    spec = PointsSpec(path, columns=COLUMNS, delimiter="\t")
    assert _plain(spec) is not None
    assert_same(_outcome(spec), _careful(spec, monkeypatch))


@pytest.mark.parametrize("first", ["u1", "person-000000001"])
def test_ids_of_both_kinds_read_the_same(tmp_path, monkeypatch, first):
    """Ids packed into numbers (at most 8 bytes) and ids kept as strings; long ids after
    a first batch of short ones send the file to the careful path."""
    monkeypatch.setattr("prudence_cli.io.fast_points.BLOCK_BYTES", 1 << 10)
    rows = [f"{first},2011-06-01T08:00:00,43.7,10.4"] * 100
    rows += [f"person-{k:09d},2011-06-01T08:00:00,43.7,10.4" for k in range(100)]
    path = tmp_path / "points.csv"
    path.write_text("uid,datetime,lat,lng\n" + "\n".join(rows) + "\n", encoding="utf-8")
    spec = PointsSpec(path, columns=COLUMNS)
    assert (_plain(spec) is None) == (first == "u1")
    assert_same(_outcome(spec), _careful(spec, monkeypatch))


def test_the_fast_path_reports_progress_to_the_end(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("uid,datetime,lat,lng\n" + "\n".join(GOOD * 50) + "\n", encoding="utf-8")
    heard: list[tuple[int, int]] = []
    raw = points.read_points(PointsSpec(path, columns=COLUMNS), lambda *a: heard.append(a))
    assert raw.rows_read == 100 and raw.dropped == Counter()
    assert heard and heard[-1] == (path.stat().st_size, path.stat().st_size)


@pytest.mark.parametrize("day", ["2011-03-27", "2011-10-30"])
def test_times_in_order_across_a_clock_change_read_the_same(tmp_path, monkeypatch, day):
    """25 people every 10 seconds, in time order, over the hours clocks skip or repeat in
    Europe/Rome, in many small batches: each second of a batch's span is localized once."""
    monkeypatch.setattr("prudence_cli.io.fast_points.BLOCK_BYTES", 1 << 14)
    start = np.datetime64(f"{day}T01:30:00", "s")
    stamps = np.datetime_as_string(start + np.arange(0, 2 * 3600, 10).astype("timedelta64[s]"))
    rows = [f"u{k},{t},43.7,10.4" for t in stamps for k in range(25)]
    path = tmp_path / "points.csv"
    path.write_text("uid,datetime,lat,lng\n" + "\n".join(rows) + "\n", encoding="utf-8")
    spec = PointsSpec(path, columns=COLUMNS, timezone="Europe/Rome")
    assert _plain(spec) is not None
    assert_same(_outcome(spec), _careful(spec, monkeypatch))


@pytest.mark.parametrize("last", ["u3,2011-06-01T08:00:00,43.7,10.4", "u3,June 1st,43.7,10.4"])
def test_no_reading_thread_outlives_the_fast_path(tmp_path, monkeypatch, last):
    """Arrow parses the next batch on a thread of its own; when the fast path ends, at
    the end of the file or early on something unusual, that thread has ended too."""
    monkeypatch.setattr("prudence_cli.io.fast_points.BLOCK_BYTES", 1 << 10)
    path = tmp_path / "points.csv"
    rows = GOOD * 200 + [last] + GOOD * 200
    path.write_text("uid,datetime,lat,lng\n" + "\n".join(rows) + "\n", encoding="utf-8")
    spec = PointsSpec(path, columns=COLUMNS)
    assert (_plain(spec) is None) == ("June" in last)
    assert not [t for t in threading.enumerate() if t.name == "csv-read-ahead"]
