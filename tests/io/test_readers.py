"""Reading GPS and CDR CSVs: times, invalid rows (stop and drop), broken files."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from prudence_cli.config import load_config
from prudence_cli.errors import InputError
from prudence_cli.io.readers import check_inputs, parse_times, read_points
from tests.conftest import MINIMAL_CONFIG, gps_rows

GOOD = [
    ("a", "2011-06-01T08:00:00", 43.7, 10.4),
    ("b", "2011-06-01T08:00:00+02:00", 43.71, 10.41),
    ("a", "1306908000", 43.72, 10.42),
]


def config_for(write_config, tmp_path: Path, csv_text: str, extra: str = "", name="points.csv"):
    (tmp_path / name).write_text(csv_text, encoding="utf-8")
    text = MINIMAL_CONFIG.replace("points.csv", name)
    if extra:
        text = text.replace("  timezone: Europe/Rome\n", f"  timezone: Europe/Rome\n{extra}")
    return load_config(write_config(text))


def utc(text: str) -> int:
    return pd.Timestamp(text).value


def test_reads_iso_naive_iso_offset_and_epoch(write_config, tmp_path):
    points = read_points(config_for(write_config, tmp_path, gps_rows(GOOD)).input)
    table = points.table
    assert table["user"].tolist() == ["a", "b", "a"]
    # naive times are Europe/Rome (UTC+2 in June); the offset and the epoch are absolute
    assert table["time"].tolist() == [utc("2011-06-01T06:00:00Z")] * 2 + [
        utc("2011-06-01T06:00:00Z")
    ]
    assert points.rows_read == 3 and not points.dropped


def test_parse_times_dst_and_garbage():
    values = pd.Series(["2011-10-30T02:30:00", "2011-03-27T02:30:00", "yesterday", "", "1.5"])
    out = parse_times(values, "Europe/Rome")
    # the repeated hour reads as its first occurrence (summer time, UTC+2)
    assert out[0] == np.datetime64("2011-10-30T00:30:00")
    # the skipped hour shifts forward to 03:00 local = 01:00 UTC
    assert out[1] == np.datetime64("2011-03-27T01:00:00")
    assert np.isnat(out[2]) and np.isnat(out[3])
    assert out[4] == np.datetime64("1970-01-01T00:00:01.500")


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2011-06-01", "2011-05-31T22:00:00"),  # a date alone is local midnight: "-01" is its day
        ("2011-12-01", "2011-11-30T23:00:00"),
        ("2011-06-01T05", "2011-06-01T03:00:00"),
        ("2011-06-01 02:00-0500", "2011-06-01T07:00:00"),
        ("2011-06-01T00:00:00 +01:00", "2011-05-31T23:00:00"),
        ("20110601T000000+0100", "2011-05-31T23:00:00"),
        ("2011-06-01T00:00:00Z", "2011-06-01T00:00:00"),
    ],
)
def test_only_a_time_of_day_carries_an_offset(text, utc):
    assert parse_times(pd.Series([text]), "Europe/Rome")[0] == np.datetime64(utc)


@pytest.mark.parametrize(
    ("row", "line", "reason"),
    [
        (
            ("c", "not a time", 43.7, 10.4),
            4,
            "time is not ISO-8601 or epoch seconds (got 'not a time')",
        ),
        (
            ("c", "2011-06-01T08:00:00", 91.0, 10.4),
            4,
            "lat is not a number within ±90 (got '91.0')",
        ),
        (("c", "2011-06-01T08:00:00", 43.7, -180.5), 4, "lon is not a number within ±180"),
        (("c", "2011-06-01T08:00:00", "north", 10.4), 4, "lat is not a number within ±90"),
        (("", "2011-06-01T08:00:00", 43.7, 10.4), 4, "empty user"),
    ],
)
def test_invalid_row_stops_with_file_and_line(write_config, tmp_path, row, line, reason):
    config = config_for(write_config, tmp_path, gps_rows([*GOOD[:2], row, GOOD[2]]))
    with pytest.raises(InputError) as info:
        read_points(config.input)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'points.csv'}:{line}: {reason}")
    assert "input.on_invalid: drop" in message


def test_first_invalid_row_of_the_file_is_reported(write_config, tmp_path):
    rows = [GOOD[0], ("x", "2011-06-01T08:00:00", 99, 10.4), ("", "bad", 43.7, 10.4)]
    with pytest.raises(InputError, match=r"points.csv:3: lat"):
        read_points(config_for(write_config, tmp_path, gps_rows(rows)).input)


def test_drop_mode_counts_invalid_rows_by_reason(write_config, tmp_path):
    rows = [
        *GOOD,
        ("c", "never", 43.7, 10.4),
        ("c", "2011-06-01T08:00:00", 95, 10.4),
        ("", "never", 95, 10.4),  # counted once, under its first reason
    ]
    text = gps_rows(rows) + "d,2011-06-01T08:00:00,43.7,10.4,extra\n\n"
    config = config_for(write_config, tmp_path, text, extra="  on_invalid: drop\n")
    points = read_points(config.input)
    assert len(points.table) == 3
    assert dict(points.dropped) == {
        "empty user": 1,  # the blank line is skipped, not counted
        "time is not ISO-8601 or epoch seconds": 1,
        "lat is not a number within ±90": 1,
        "wrong number of fields": 1,
    }
    assert points.rows_read == 8


def test_blank_lines_are_skipped_in_stop_mode(write_config, tmp_path):
    text = gps_rows(GOOD[:2]) + "\n" + gps_rows(GOOD[2:]).split("\n", 1)[1] + "\n"
    points = read_points(config_for(write_config, tmp_path, text).input)
    assert len(points.table) == 3


def test_malformed_row_stops_with_its_line(write_config, tmp_path):
    text = gps_rows(GOOD) + "d,2011-06-01T08:00:00,43.7,10.4,extra\n"
    with pytest.raises(InputError, match=r"points.csv:5: malformed CSV row: Expected 4 fields"):
        read_points(config_for(write_config, tmp_path, text).input)


def test_missing_column_names_the_config_key(write_config, tmp_path):
    text = "uid,when,lat,lng\na,2011-06-01T08:00:00,43.7,10.4\n"
    with pytest.raises(
        InputError,
        match=r"no column 'datetime' for the time \(columns found: "
        r"uid, when, lat, lng\); name the right one with "
        r"input.columns.time",
    ):
        read_points(config_for(write_config, tmp_path, text).input)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"uid,datetime,lat,lng\n", "holds a header but no data rows"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is not"),
        (b"\xff\xfe\xfa\xfb", "is not a UTF-8 CSV file"),
    ],
)
def test_unusable_files(write_config, tmp_path, content, message):
    config = config_for(write_config, tmp_path, "")
    config.input.path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        read_points(config.input)


def test_missing_file(write_config, tmp_path):
    config = load_config(write_config(MINIMAL_CONFIG))
    with pytest.raises(InputError, match="points.csv: no such file"):
        read_points(config.input)


def test_gzip_input(write_config, tmp_path):
    (tmp_path / "points.csv.gz").write_bytes(gzip.compress(gps_rows(GOOD).encode()))
    config = load_config(write_config(MINIMAL_CONFIG.replace("points.csv", "points.csv.gz")))
    assert len(read_points(config.input).table) == 3


CDR_CONFIG = """\
input:
  path: events.csv
  format: cdr
  columns: {user: caller, time: ts, tower: cell}
  towers: towers.csv
dataview:
  format: presence
  dimensions: {frequency: [1]}
attacks:
  - attack: presence
"""


def test_cdr_rows_take_their_tower_position(write_config, tmp_path):
    (tmp_path / "towers.csv").write_text("tower,lat,lon\nT1,43.7,10.4\nT2,43.8,10.5\n")
    (tmp_path / "events.csv").write_text("caller,ts,cell\nx,1306908000,T2\ny,1306908060,T1\n")
    points = read_points(load_config(write_config(CDR_CONFIG)).input).table
    assert points["location"].tolist() == ["T2", "T1"]
    assert points["lat"].tolist() == [43.8, 43.7]


def test_cdr_unknown_tower_stops(write_config, tmp_path):
    (tmp_path / "towers.csv").write_text("tower,lat,lon\nT1,43.7,10.4\n")
    (tmp_path / "events.csv").write_text("caller,ts,cell\nx,1306908000,T1\ny,1306908060,T9\n")
    with pytest.raises(InputError, match=r"events.csv:3: tower not in towers.csv \(got 'T9'\)"):
        read_points(load_config(write_config(CDR_CONFIG)).input)


def test_bad_tower_table(write_config, tmp_path):
    (tmp_path / "towers.csv").write_text("tower,lat,lon\nT1,43.7,10.4\nT1,43.8,10.4\n")
    (tmp_path / "events.csv").write_text("caller,ts,cell\nx,1306908000,T1\n")
    with pytest.raises(InputError, match=r"towers.csv:3: tower id listed twice"):
        read_points(load_config(write_config(CDR_CONFIG)).input)


def test_check_inputs_reads_the_header_and_the_towers_table(write_config, tmp_path):
    (tmp_path / "towers.csv").write_text("tower,lat,lon\nT1,43.7,10.4\n")
    (tmp_path / "events.csv").write_text("caller,ts,cell\nx,never,T9\n")  # rows: unread
    lines = check_inputs(load_config(write_config(CDR_CONFIG)).input)
    assert len(lines) == 2
    (tmp_path / "towers.csv").write_text("id,lat,lon\n")
    with pytest.raises(InputError, match="input.towers.columns.tower"):
        check_inputs(load_config(write_config(CDR_CONFIG)).input)
    # what assess would refuse in the towers table, validate refuses too
    (tmp_path / "towers.csv").write_text("tower,lat,lon\nT1,43.7,10.4\nT1,43.8,10.4\n")
    with pytest.raises(InputError, match=r"towers.csv:3: tower id listed twice"):
        check_inputs(load_config(write_config(CDR_CONFIG)).input)


def test_readers_take_an_io_spec_built_by_the_config(write_config, tmp_path):
    from prudence_cli.io.points import read_points as read_spec_points
    from prudence_cli.io.specs import ColumnMap, PointsSpec, TowersSpec

    (tmp_path / "towers.csv").write_text("tower,lat,lon\nT1,43.7,10.4\nT2,43.8,10.5\n")
    (tmp_path / "events.csv").write_text("caller,ts,cell\nx,1306908000,T2\ny,1306908060,T1\n")
    config = load_config(write_config(CDR_CONFIG)).input
    spec = PointsSpec(
        path=tmp_path / "events.csv",
        format="cdr",
        columns=ColumnMap(user="caller", time="ts", tower="cell"),
        towers=TowersSpec(path=tmp_path / "towers.csv"),
    )
    assert config.spec() == spec
    by_spec = read_spec_points(spec).table
    pd.testing.assert_frame_equal(by_spec, read_points(config).table)
    assert check_inputs(spec) == check_inputs(config)
