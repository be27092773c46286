"""Hostile input files through the command line (issue 15, Data): a byte-order mark is
read, a damaged .gz or a repeated column ends in exit code 2 naming the file, and user
ids are kept exactly as written — never merged."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prudence_cli.cli import main
from prudence_cli.errors import InputError
from prudence_cli.io.readers import check_inputs
from prudence_cli.io.specs import ColumnMap, PointsSpec
from prudence_cli.io.text import reading
from tests.conftest import MINIMAL_CONFIG, gps_rows

LOOKALIKES = ["A17", " A17", "A17 ", "\tA17"]
USERS = [f"u{i:02d}" for i in range(26)] + LOOKALIKES  # 30 people


def rows_of(users: list[str], days: int = 3) -> list[tuple[str, str, float, float]]:
    """Each user at a place of their own on `days` mornings (ids quoted as written)."""
    return [
        (f'"{u}"', f"2011-06-0{d + 1}T08:00:00", 43.70 + 0.01 * k, 10.40 + 0.01 * d)
        for k, u in enumerate(users)
        for d in range(days)
    ]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(folder: Path, command: str, config: str = MINIMAL_CONFIG, *extra: str):
    (folder / "config.yaml").write_text(config, encoding="utf-8")
    args = [command, "config.yaml", *extra] + (["--quiet"] if command == "assess" else [])
    return CliRunner().invoke(main, args, catch_exceptions=False)


def refused(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.output


def with_input(name: str, extra: str = "") -> str:
    text = MINIMAL_CONFIG.replace("points.csv", name)
    return text.replace("  timezone: Europe/Rome\n", f"  timezone: Europe/Rome\n{extra}")


def csv_text(header: str, rows: list[tuple[str, str, float, float]], tail: str = "") -> str:
    """A CSV of gps `rows` under `header`, each row ending with `tail`."""
    return header + "\n" + "".join(f"{u},{t},{la},{lo}{tail}\n" for u, t, la, lo in rows)


def users_of(catalog: Path) -> list[str]:
    from prudence_cli.catalog import open_catalog

    return sorted(open_catalog(catalog).risks("d1")["user"].astype(str))


# --- a byte-order mark -------------------------------------------------------------


@pytest.mark.parametrize("name", ["points.csv", "points.csv.gz"])
def test_a_byte_order_mark_is_read(folder, name):
    data = "\ufeff" + gps_rows(rows_of(USERS[:5]))
    path = folder / name
    path.write_bytes(gzip.compress(data.encode()) if name.endswith(".gz") else data.encode())
    config = with_input(name)
    checked = run(folder, "validate", config)
    assert checked.exit_code == 0, checked.output
    assert "columns uid, datetime, lat, lng present" in checked.stderr
    assessed = run(folder, "assess", config)
    assert assessed.exit_code == 0, assessed.output
    assert users_of(folder / "out") == USERS[:5]


def test_a_byte_order_mark_in_the_towers_table_is_read(folder):
    (folder / "towers.csv").write_text("\ufefftower,lat,lon\nT1,43.7,10.4\n", encoding="utf-8")
    (folder / "events.csv").write_text("\ufeffcaller,ts,cell\nx,1306908000,T1\n")
    config = (
        "input:\n  path: events.csv\n  format: cdr\n"
        "  columns: {user: caller, time: ts, tower: cell}\n  towers: towers.csv\n"
        "dataview: {format: presence, dimensions: {frequency: [1]}}\n"
        "attacks: [{attack: presence, knowledge: {h: [1]}}]\noutput: out\n"
    )
    assert run(folder, "validate", config).exit_code == 0
    assert run(folder, "assess", config).exit_code == 0


def test_a_missing_column_quotes_names_with_hidden_characters(folder):
    text = gps_rows(rows_of(USERS[:2])).replace("uid,", "\u00a0uid,", 1)
    (folder / "points.csv").write_text(text, encoding="utf-8")
    refused(run(folder, "validate"), "columns found: '\\xa0uid', datetime, lat, lng")


# --- damaged gzip files --------------------------------------------------------------


def _compressed() -> bytes:
    return gzip.compress(gps_rows(rows_of(USERS, days=9) * 40).encode(), mtime=0)


def _flip(data: bytes, start: int, count: int) -> bytes:
    damaged = bytearray(data)
    for i in range(start, start + count):
        damaged[i] ^= 0x55
    return bytes(damaged)


DAMAGES = {
    "truncated": lambda data: data[: len(data) // 2],
    "truncated_tail": lambda data: data[:-4],  # the length field of the trailer is cut
    "checksum": lambda data: _flip(data, len(data) - 8, 4),  # the CRC of the trailer
    "early_bytes": lambda data: _flip(data, 40, 30),
    "middle_bytes": lambda data: _flip(data, len(data) // 2, 30),
    "late_bytes": lambda data: _flip(data, len(data) - 40, 8),
}


@pytest.mark.parametrize("command", ["validate", "assess"])
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_gzip_input_is_named(folder, command, damage):
    (folder / "points.csv.gz").write_bytes(DAMAGES[damage](_compressed()))
    result = run(folder, command, with_input("points.csv.gz"))
    refused(result, f"{folder / 'points.csv.gz'}: is a damaged gzip file (")
    assert "compress the CSV again" in result.stderr
    assert not (folder / "out").exists()


def test_a_damaged_gzip_input_is_named_with_on_invalid_drop(folder):
    (folder / "points.csv.gz").write_bytes(DAMAGES["middle_bytes"](_compressed()))
    result = run(folder, "assess", with_input("points.csv.gz", "  on_invalid: drop\n"))
    refused(result, "points.csv.gz: is a damaged gzip file")


def test_a_file_named_gz_that_is_not_gzip(folder):
    (folder / "points.csv.gz").write_text(gps_rows(rows_of(USERS[:2])))
    for command in ("validate", "assess"):
        refused(
            run(folder, command, with_input("points.csv.gz")),
            "points.csv.gz: is a damaged gzip file (it is not gzip-compressed",
        )


def test_a_damaged_gzip_towers_table_is_named(folder):
    (folder / "events.csv").write_text("caller,ts,cell\nx,1306908000,T1\n")
    towers = "tower,lat,lon\n" + "".join(f"T{i},43.7,10.4\n" for i in range(5000))
    (folder / "towers.csv.gz").write_bytes(gzip.compress(towers.encode())[:-6])
    config = (
        "input:\n  path: events.csv\n  format: cdr\n"
        "  columns: {user: caller, time: ts, tower: cell}\n  towers: towers.csv.gz\n"
        "dataview: {format: presence, dimensions: {frequency: [1]}}\n"
        "attacks: [{attack: presence, knowledge: {h: [1]}}]\noutput: out\n"
    )
    for command in ("validate", "assess"):
        refused(run(folder, command, config), "towers.csv.gz: is a damaged gzip file")


def test_reading_names_a_damaged_gzip_whatever_the_reader_raised(tmp_path):
    """pandas' C reader has been seen to pass a zlib error on as a SystemError."""
    path = tmp_path / "points.csv.gz"
    path.write_bytes(_compressed()[:100])
    for raised in (SystemError("error return without exception set"), OSError("?")):
        damaged = pytest.raises(InputError, match="points.csv.gz: is a damaged gzip file")
        with damaged, reading(path):
            raise raised
    plain = tmp_path / "points.csv"
    plain.write_text("uid\n")
    with pytest.raises(SystemError), reading(plain):  # no file's fault: a bug, for the CLI
        raise SystemError("error return without exception set")


# --- repeated columns ------------------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "assess"])
def test_a_repeated_column_is_refused(folder, command):
    text = csv_text("uid,datetime,lat,lng,lat", rows_of(USERS[:3]), tail=",0")
    (folder / "points.csv").write_text(text)
    refused(
        run(folder, command),
        f"{folder / 'points.csv'}:1: has 2 columns named 'lat' (columns 3, 5), so the lat "
        "is ambiguous",
    )


def test_a_repeated_column_of_a_parquet_input_is_refused(folder):
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = [pa.array(["a"]), pa.array(["2011-06-01T08:00:00"]), pa.array([43.7])]
    table = pa.table([*columns, pa.array([10.4]), pa.array([0.0])], names=[
        "uid", "datetime", "lat", "lng", "uid"
    ])  # fmt: skip
    pq.write_table(table, folder / "points.parquet")
    refused(
        run(folder, "validate", with_input("points.parquet")),
        "points.parquet: has 2 columns named 'uid' (columns 1, 5)",
    )


def test_a_repeated_column_that_is_not_read_is_allowed(folder):
    # a trailing ",," on every line: two columns named "" that no field maps
    text = csv_text("uid,datetime,lat,lng,,", rows_of(USERS[:3]), tail=",,")
    (folder / "points.csv").write_text(text)
    result = run(folder, "assess")
    assert result.exit_code == 0, result.output


def test_a_repeated_column_of_the_towers_table_is_refused(folder):
    (folder / "towers.csv").write_text("tower,lat,lon,lat\nT1,43.7,10.4,0\n")
    (folder / "events.csv").write_text("caller,ts,cell\nx,1306908000,T1\n")
    config = (
        "input:\n  path: events.csv\n  format: cdr\n"
        "  columns: {user: caller, time: ts, tower: cell}\n  towers: towers.csv\n"
        "dataview: {format: presence, dimensions: {frequency: [1]}}\n"
        "attacks: [{attack: presence, knowledge: {h: [1]}}]\noutput: out\n"
    )
    refused(run(folder, "validate", config), "towers.csv:1: has 2 columns named 'lat'")


# --- user ids as written -------------------------------------------------------------------


@pytest.mark.parametrize("cache", [False, True])
def test_user_ids_are_kept_exactly_as_written(folder, cache):
    (folder / "points.csv").write_text(gps_rows(rows_of(USERS)))
    config = with_input("points.csv", "  cache: parquet\n" if cache else "")
    for out in ("first", "second"):  # with the cache, the second run reads it
        result = run(folder, "assess", config, "--out", out)
        assert result.exit_code == 0, result.output
        assert users_of(folder / out) == sorted(USERS)
        manifest = json.loads((folder / out / "catalog.json").read_text())
        assert manifest["selection"]["users"] == 30
    if cache:
        assert manifest["input_cache"]["used"] is True


def test_trip_ids_of_segments_input_are_kept_exactly_as_written(folder):
    (folder / "streets.csv").write_text(
        'segment,wkt\ns1,"LINESTRING (10.40 43.70, 10.41 43.70)"\n'
        's2,"LINESTRING (10.41 43.70, 10.42 43.70)"\n'
    )
    (folder / "trips.csv").write_text(
        "uid,trip,segment,enter,leave\n"
        "A17,t1,s1,2011-06-01T08:00:00,2011-06-01T08:01:00\n"
        " A17,t1,s2,2011-06-01T08:01:00,2011-06-01T08:02:00\n"
        "A17, t1,s2,2011-06-01T08:01:00,2011-06-01T08:02:00\n"
    )
    from prudence_cli.io.readers import read_points
    from prudence_cli.io.specs import SegmentsSpec

    spec = PointsSpec(
        path=folder / "trips.csv",
        format="segments",
        columns=ColumnMap(user="uid"),
        segments=SegmentsSpec(path=folder / "streets.csv"),
    )
    table = read_points(spec).table
    assert sorted(set(table["user"].astype(str))) == [" A17", "A17"]
    assert sorted(table["trip"]) == [" t1", "t1", "t1"]


def test_an_id_of_spaces_only_is_an_empty_user(folder):
    rows = rows_of(USERS[:2])
    (folder / "points.csv").write_text(gps_rows([*rows, ('"  "', *rows[0][1:])]))
    assert run(folder, "validate").exit_code == 0  # validate reads no rows
    result = run(folder, "assess")
    refused(result, f"{folder / 'points.csv'}:8: empty user")


@pytest.mark.parametrize(
    "time",
    ["0000-01-01T00:00:00", "0000-01-01T00:00:00+01:00", "9999-12-31T23:59:59", "1600-01-01"],
)
def test_a_time_nanoseconds_cannot_hold_is_a_bad_time_with_its_line(folder, time):
    """pandas parses such a year at a coarser unit; converting it to nanoseconds used to
    fail inside pandas (exit 3)."""
    rows = rows_of(USERS[:2])
    (folder / "points.csv").write_text(gps_rows([*rows, ("x", time, 43.7, 10.4)]))
    result = run(folder, "assess")
    refused(result, f"points.csv:8: time is not ISO-8601 or epoch seconds (got '{time}')")


def test_a_long_value_in_a_row_is_quoted_on_one_line(folder):
    rows = rows_of(USERS[:2])
    (folder / "points.csv").write_text(gps_rows([*rows, ("x", "y" * 100_000, 43.7, 10.4)]))
    result = run(folder, "assess")
    refused(result, "points.csv:8: time is not ISO-8601 or epoch seconds (got 'yyyy")
    assert "…" in result.stderr and len(result.stderr) < 400


# --- validate reads what assess reads, but the rows ---------------------------------------


def test_check_inputs_reads_region_layers_and_utility_scores(tmp_path):
    (tmp_path / "points.csv").write_text(gps_rows(rows_of(USERS[:2])))
    columns = ColumnMap(user="uid", time="datetime", lon="lng")
    spec = PointsSpec(path=tmp_path / "points.csv", columns=columns)
    layer = tmp_path / "districts.geojson"
    layer.write_text('{"type": "FeatureCollection", "features": [{"type": "Feature"}]}')
    with pytest.raises(InputError, match="districts.geojson: feature 0 holds no valid geometry"):
        check_inputs(spec, layers=[layer])
    scores = tmp_path / "scores.csv"
    scores.write_text("grid,score\n500m,high\n")
    with pytest.raises(InputError, match=r"scores.csv:2: score is not a number \(got 'high'\)"):
        check_inputs(spec, scores=scores, dimensions=["grid"])
    scores.write_text("grid,score\n500m,0.5\n")
    lines = check_inputs(spec, scores=scores, dimensions=["grid"])
    assert str(lines[-1]) == f"{scores}: 1 utility scores readable"
