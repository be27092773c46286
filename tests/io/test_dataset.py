"""An input of several files (io.dataset): a folder or a glob pattern of CSV, gzipped CSV
and Parquet parts reads as the one file they were split from, and its errors name the
part and its line."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prudence_cli.config import load_config
from prudence_cli.errors import InputError
from prudence_cli.io.dataset import data_files
from prudence_cli.io.readers import PointsSpec, check_inputs, read_points
from prudence_cli.io.specs import ColumnMap, TowersSpec

GPS = ColumnMap(user="uid", time="datetime", lat="lat", lon="lng")
HEADER = ["uid", "datetime", "lat", "lng"]


def _rows(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "uid": [f"u{k}" for k in rng.integers(0, max(n // 3, 1), n)],
            "datetime": [f"2011-06-{1 + k % 20:02d}T{k % 24:02d}:00:00" for k in range(n)],
            "lat": np.round(43.7 + rng.random(n) / 10, 5).astype(str),
            "lng": np.round(10.4 + rng.random(n) / 10, 5).astype(str),
        }
    )


def _write(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".parquet":
        frame.to_parquet(path, index=False)
    elif path.suffix.lower() == ".gz":
        with gzip.open(path, "wt", encoding="utf-8", newline="") as handle:
            frame.to_csv(handle, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def _same_points(got, want) -> None:
    assert got.rows_read == want.rows_read
    assert dict(got.dropped) == dict(want.dropped)
    assert list(got.table.columns) == list(want.table.columns)
    for name in want.table.columns:
        a, b = got.table[name], want.table[name]
        if isinstance(b.dtype, pd.CategoricalDtype):
            assert list(a.cat.categories) == list(b.cat.categories)
            np.testing.assert_array_equal(a.cat.codes.to_numpy(), b.cat.codes.to_numpy())
        else:
            np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())


def test_a_folder_is_its_data_files_in_path_order_without_bookkeeping(tmp_path):
    rows = _rows(6)
    _write(rows, tmp_path / "day=2/part-0.parquet")
    _write(rows, tmp_path / "day=1/part-1.csv.gz")
    _write(rows, tmp_path / "day=1/part-0.csv")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / "day=1" / ".part-0.csv.crc").write_text("x")
    _write(rows, tmp_path / "_temporary" / "part-9.csv")  # a writer's unfinished output
    (tmp_path / "README.txt").write_text("not data")
    assert [p.relative_to(tmp_path).as_posix() for p in data_files(tmp_path)] == [
        "day=1/part-0.csv",
        "day=1/part-1.csv.gz",
        "day=2/part-0.parquet",
    ]
    pattern = tmp_path / "day=1" / "*.csv*"
    assert [p.name for p in data_files(pattern)] == ["part-0.csv", "part-1.csv.gz"]
    assert data_files(tmp_path / "day=1" / "part-0.csv") == (tmp_path / "day=1/part-0.csv",)


def test_a_folder_or_pattern_that_names_no_data_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "_SUCCESS").write_text("")
    with pytest.raises(InputError, match="folder with no data file in it"):
        data_files(tmp_path / "empty")
    with pytest.raises(InputError, match=r"\*\.csv: matches no file"):
        data_files(tmp_path / "*.csv")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(1, 40),
    cuts=st.lists(st.integers(0, 40), max_size=4),
    kinds=st.lists(  # Windows exports name them in capitals too
        st.sampled_from([".csv", ".csv.gz", ".parquet", ".CSV", ".CSV.GZ", ".csv.Gz", ".PARQUET"]),
        min_size=5,
        max_size=5,
    ),
    seed=st.integers(0, 3),
)
def test_parts_read_as_the_file_they_were_split_from(tmp_path_factory, n, cuts, kinds, seed):
    """Any split of a file into consecutive parts of any kinds (empty parts too) reads as
    the whole file: the same users numbered the same way, the same points in order."""
    folder = tmp_path_factory.mktemp("split")
    rows = _rows(n, seed)
    whole = _write(rows, folder / "whole.csv")
    bounds = [0, *sorted(min(c, n) for c in cuts), n]
    for k, (start, stop) in enumerate(zip(bounds, bounds[1:], strict=False)):
        _write(rows.iloc[start:stop], folder / "parts" / f"part-{k:02d}{kinds[k]}")
    spec = PointsSpec(whole, columns=GPS, timezone="Europe/Rome")
    _same_points(
        read_points(PointsSpec(folder / "parts", columns=GPS, timezone="Europe/Rome")),
        read_points(spec),
    )


def test_dropped_rows_are_counted_over_every_part(tmp_path):
    rows = _rows(30)
    rows.loc[3, "lat"] = "north"
    rows.loc[20, "datetime"] = "yesterday"
    whole = _write(rows, tmp_path / "whole.csv")
    _write(rows.iloc[:10], tmp_path / "parts" / "a.csv")
    _write(rows.iloc[10:], tmp_path / "parts" / "b.parquet")
    drop = {"columns": GPS, "timezone": "Europe/Rome", "on_invalid": "drop"}
    got = read_points(PointsSpec(tmp_path / "parts", **drop))
    _same_points(got, read_points(PointsSpec(whole, **drop)))
    assert sum(got.dropped.values()) == 2


def test_a_bad_row_is_named_by_its_part_and_line(tmp_path):
    rows = _rows(12)
    rows.loc[7, "datetime"] = "yesterday"  # line 4 of part b (its header is line 1)
    _write(rows.iloc[:5], tmp_path / "parts" / "a.csv")
    _write(rows.iloc[5:], tmp_path / "parts" / "b.csv")
    with pytest.raises(InputError) as caught:
        read_points(PointsSpec(tmp_path / "parts", columns=GPS, timezone="Europe/Rome"))
    assert str(caught.value).startswith(str(tmp_path / "parts" / "b.csv:4: time is not"))
    assert "'yesterday'" in str(caught.value)


def test_a_part_without_a_column_is_named(tmp_path):
    rows = _rows(6)
    _write(rows, tmp_path / "parts" / "a.csv")
    _write(rows.drop(columns="lng"), tmp_path / "parts" / "b.parquet")
    spec = PointsSpec(tmp_path / "parts", columns=GPS)
    for read in (read_points, check_inputs):
        with pytest.raises(InputError, match=r"b\.parquet.*lng"):
            read(spec)


def test_parts_with_no_rows_at_all_are_an_error(tmp_path):
    _write(_rows(3).iloc[:0], tmp_path / "parts" / "a.csv")
    _write(_rows(3).iloc[:0], tmp_path / "parts" / "b.csv")
    with pytest.raises(InputError, match="no data rows in any of its 2 files"):
        read_points(PointsSpec(tmp_path / "parts", columns=GPS))


def test_cdr_parts_number_towers_as_one_file(tmp_path):
    towers = tmp_path / "towers.csv"
    towers.write_text("tower,lat,lon\nT1,43.7,10.4\nT2,43.71,10.41\nT3,43.72,10.42\n")
    calls = pd.DataFrame(
        {
            "user": ["b", "a", "c", "a", "b"],
            "time": [f"2011-06-01T0{k}:00:00" for k in range(5)],
            "tower": ["T3", "T1", "T2", "T2", "T1"],
        }
    )
    whole = _write(calls, tmp_path / "calls.csv")
    _write(calls.iloc[:2], tmp_path / "parts" / "1.csv")
    _write(calls.iloc[2:], tmp_path / "parts" / "2.parquet")
    spec = {"format": "cdr", "towers": TowersSpec(towers)}
    _same_points(
        read_points(PointsSpec(tmp_path / "parts", **spec)), read_points(PointsSpec(whole, **spec))
    )


def test_the_config_checks_and_records_every_part(write_config, tmp_path):
    rows = _rows(9)
    _write(rows.iloc[:4], tmp_path / "exports" / "2011-06-01.csv")
    _write(rows.iloc[4:], tmp_path / "exports" / "2011-06-02.parquet")
    config = load_config(
        write_config(
            "name: tiny\n"
            "input:\n"
            "  path: exports\n"
            "  columns: {user: uid, time: datetime, lat: lat, lon: lng}\n"
            "dataview: {format: presence, dimensions: {grid: [500m], frequency: [1]}}\n"
            "attacks: [{attack: presence, knowledge: {h: [1], visits: [exact]}}]\n"
        )
    )
    assert config.input.files == (
        tmp_path / "exports" / "2011-06-01.csv",
        tmp_path / "exports" / "2011-06-02.parquet",
    )
    assert config.point_files == config.input.files
    (checked,) = check_inputs(config.input)
    assert (
        checked.found
        == "2 files (1 CSV, 1 Parquet), columns uid, datetime, lat, lng present in each"
    )


def test_a_glob_leaves_out_bookkeeping_below_its_fixed_part_unless_it_names_it(tmp_path):
    rows = _rows(4)
    _write(rows, tmp_path / "spark" / "part-0.parquet")
    _write(rows, tmp_path / "spark" / "_temporary" / "0" / "task_1" / "part-1.parquet")
    _write(rows, tmp_path / "spark" / ".spark-staging" / "part-2.parquet")
    _write(rows, tmp_path / "_staging" / "part-3.parquet")
    found = data_files(tmp_path / "spark" / "**" / "*.parquet")
    assert [p.relative_to(tmp_path).as_posix() for p in found] == ["spark/part-0.parquet"]
    named = data_files(tmp_path / "_staging" / "*.parquet")  # below a fixed `_` folder
    assert [p.name for p in named] == ["part-3.parquet"]
    asked = data_files(tmp_path / "spark" / "_temporary" / "**" / "*.parquet")
    assert [p.name for p in asked] == ["part-1.parquet"]


def test_a_folder_follows_linked_folders_once(tmp_path):
    rows = _rows(4)
    _write(rows, tmp_path / "elsewhere" / "part-0.csv")
    parts = tmp_path / "parts"
    _write(rows, parts / "day=1" / "part-0.csv")
    (parts / "day=2").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (parts / "day=1" / "loop").symlink_to(parts, target_is_directory=True)
    found = data_files(parts)
    assert [p.relative_to(parts).as_posix() for p in found] == [
        "day=1/part-0.csv",
        "day=2/part-0.csv",
    ]


def test_an_empty_part_is_a_part_without_rows(tmp_path):
    """Some exporters write an empty partition as an empty file, header included."""
    rows = _rows(6)
    _write(rows, tmp_path / "parts" / "a.csv")
    (tmp_path / "parts" / "b.csv").write_bytes(b"")
    spec = PointsSpec(tmp_path / "parts", columns=GPS, timezone="Europe/Rome")
    _same_points(
        read_points(spec),
        read_points(PointsSpec(tmp_path / "parts" / "a.csv", columns=GPS, timezone="Europe/Rome")),
    )
    (checked,) = check_inputs(spec)
    assert checked.found.endswith("present in each (1 file empty: no rows)")
    with pytest.raises(InputError, match="is empty"):  # named alone, it is still an error
        read_points(PointsSpec(tmp_path / "parts" / "b.csv", columns=GPS))
