"""Ingestion at scale: compact codes, Parquet input read like its CSV, and the Parquet
cache of the prepared points."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from prudence_cli.cli import main
from prudence_cli.config import load_config
from prudence_cli.errors import InputError
from prudence_cli.io.readers import read_header, read_points
from tests.conftest import MINIMAL_CONFIG, gps_rows

ROWS = [
    ("b", "2011-06-01T08:00:00", 43.7, 10.4),
    ("a", "2011-06-01T09:30:00", 43.71, 10.41),
    ("b", "2011-06-02T10:00:00", 43.72, 10.42),
    ("c", "2011-06-02T11:00:00", 43.73, 10.43),
]


def _config(write_config, tmp_path, name, extra=""):
    text = MINIMAL_CONFIG.replace("points.csv", name)
    if extra:
        text = text.replace("  timezone: Europe/Rome\n", f"  timezone: Europe/Rome\n{extra}")
    return load_config(write_config(text))


def _frame(rows):
    return pd.DataFrame(rows, columns=["uid", "datetime", "lat", "lng"])


def test_ids_are_compact_codes_in_sorted_order(write_config, tmp_path):
    (tmp_path / "points.csv").write_text(gps_rows(ROWS))
    table = read_points(_config(write_config, tmp_path, "points.csv").input).table
    assert isinstance(table["user"].dtype, pd.CategoricalDtype)
    assert list(table["user"].cat.categories) == ["a", "b", "c"]
    assert table["user"].tolist() == ["b", "a", "b", "c"]


@pytest.mark.parametrize("times", ["naive", "aware", "text", "epoch"])
def test_parquet_input_reads_like_its_csv(write_config, tmp_path, times):
    (tmp_path / "points.csv").write_text(gps_rows(ROWS))
    frame = _frame(ROWS)
    stamps = pd.to_datetime(frame["datetime"])
    if times == "naive":
        frame["datetime"] = stamps
    elif times == "aware":
        frame["datetime"] = stamps.dt.tz_localize("Europe/Rome").dt.tz_convert("Asia/Tokyo")
    elif times == "epoch":
        local = stamps.dt.tz_localize("Europe/Rome")
        frame["datetime"] = (local - pd.Timestamp("1970-01-01", tz="UTC")) // pd.Timedelta("1s")
    frame.to_parquet(tmp_path / "points.parquet", index=False)
    from_csv = read_points(_config(write_config, tmp_path, "points.csv").input).table
    from_parquet = read_points(_config(write_config, tmp_path, "points.parquet").input).table
    pd.testing.assert_frame_equal(from_csv, from_parquet)


def test_parquet_numeric_ids_and_null_values(write_config, tmp_path):
    frame = _frame(ROWS)
    frame["uid"] = [7, 3, 7, None]
    frame.loc[1, "lat"] = None
    frame.to_parquet(tmp_path / "points.parquet", index=False)
    config = _config(write_config, tmp_path, "points.parquet", "  on_invalid: drop\n")
    points = read_points(config.input)
    # a null id is an empty user; a null coordinate is not a number
    assert sorted(points.dropped.elements()) == ["empty user", "lat is not a number within ±90"]
    assert points.table["user"].tolist() == ["7", "7"]


def test_parquet_invalid_row_names_file_and_row(write_config, tmp_path):
    rows = [*ROWS[:2], ("c", "2011-06-02T11:00:00", 143.0, 10.4)]
    _frame(rows).to_parquet(tmp_path / "points.parquet", index=False)
    config = _config(write_config, tmp_path, "points.parquet")
    with pytest.raises(InputError, match=r"points.parquet:3: lat is not a number within ±90"):
        read_points(config.input)
    dropped = _config(write_config, tmp_path, "points.parquet", "  on_invalid: drop\n")
    points = read_points(dropped.input)
    assert len(points.table) == 2 and points.dropped == {"lat is not a number within ±90": 1}


def test_not_a_parquet_file(tmp_path):
    (tmp_path / "x.parquet").write_text("user,time\n")
    with pytest.raises(InputError, match="is not a Parquet file"):
        read_header(tmp_path / "x.parquet")


def test_cache_skips_parsing_and_gives_the_same_catalog(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    runner.invoke(main, ["sample", "gps", "--users", "40", "--days", "3", "--out", "g.csv"])
    base = (
        "input:\n  path: g.csv\n  columns: {user: uid, time: datetime, lat: lat, lon: lng}\n"
        "{cache}"
        "select: {points: trip_ends}\n"
        "dataview: {format: presence, dimensions: {grid: [500m]}}\n"
        "attacks: [{attack: unique_location, knowledge: {h: [1, 2]}}]\n"
    )
    (tmp_path / "plain.yaml").write_text(base.replace("{cache}", ""))
    (tmp_path / "c.yaml").write_text(base.replace("{cache}", "  cache: parquet\n"))
    assert runner.invoke(main, ["assess", "plain.yaml", "-q"]).exit_code == 0
    first = runner.invoke(main, ["assess", "c.yaml", "-q", "--out", "first"])
    assert first.exit_code == 0, first.output
    # a second run must not parse the input: make parsing fail loudly
    import prudence_cli.prepare as prepare

    parsed = []

    def no_parsing(*args, **kwargs):
        parsed.append(args)
        raise AssertionError("the input was parsed again")

    monkeypatch.setattr(prepare, "read_points", no_parsing)
    second = runner.invoke(main, ["assess", "c.yaml", "-q", "--out", "second"])
    assert second.exit_code == 0, second.output
    assert not parsed
    manifests = [
        json.loads((tmp_path / f / "catalog.json").read_text()) for f in ("first", "second")
    ]
    assert [m["input_cache"]["used"] for m in manifests] == [False, True]
    assert manifests[0]["input_cache"]["key"] == manifests[1]["input_cache"]["key"]
    assert (tmp_path / ".prudence-cache" / manifests[0]["input_cache"]["key"]).is_dir()
    for folder in ("first", "second"):
        plain = pd.read_csv(tmp_path / "catalog" / "plain" / "irac.csv")
        pd.testing.assert_frame_equal(plain, pd.read_csv(tmp_path / folder / "irac.csv"))
        risks = tmp_path / folder / "risks" / "d1.parquet"
        assert risks.read_bytes() == (tmp_path / "catalog/plain/risks/d1.parquet").read_bytes()
    # another selection, or other data, is another key: parsed again
    (tmp_path / "c.yaml").write_text(
        base.replace("{cache}", "  cache: parquet\n").replace("trip_ends", "all")
    )
    again = runner.invoke(main, ["assess", "c.yaml", "-q", "--out", "third"])
    assert again.exit_code != 0 and parsed  # the CLI may report the AssertionError as a bug


def test_cache_config_errors(write_config, tmp_path):
    (tmp_path / "points.csv").write_text(gps_rows(ROWS))
    with pytest.raises(Exception, match=r"input.cache: 'csv' is not one of"):
        _config(write_config, tmp_path, "points.csv", "  cache: csv\n")
    config = _config(write_config, tmp_path, "points.csv", "  cache: parquet\n  cache_dir: c\n")
    assert config.input.cache == "parquet"
    assert config.input.cache_dir == (tmp_path / "c").resolve()
