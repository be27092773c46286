"""The per-dataview table files: typed Parquet columns, the same bytes for the same
table, the same frame back as from the CSV of a version-1 catalog."""

from __future__ import annotations

import errno
import hashlib

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.catalog import tables
from prudence_cli.catalog.tables import TableFileError, locations_name, read_table, write_table

VIEW = pd.DataFrame(
    {
        "user": np.array(["007", "12", "alice", "12"], dtype=object),
        "location": ["1_2", "0010", "1.50", "1_2"],
        "count": np.array([3, 1, 2, 5], dtype=np.int32),
        "share": [0.1, 1 / 3, 0.5, 2e-17],
        "t_origin": ["2024-01-01T08:00:00", "", "2024-01-02T09:00:00", "x"],
    }
)
TEXT = ("user", "location")


def test_columns_are_typed(tmp_path):
    path = tmp_path / "d1.parquet"
    write_table(VIEW, path, TEXT)
    schema = pq.read_schema(path)
    assert [str(schema.field(c).type) for c in VIEW.columns] == [
        "string",
        "string",
        "int64",
        "double",
        "string",
    ]
    assert schema.metadata is None or b"pandas" not in schema.metadata
    assert pq.read_metadata(path).row_group(0).column(0).compression == "ZSTD"


def test_numbers_given_as_ids_are_written_as_text(tmp_path):
    path = tmp_path / "r.parquet"
    write_table(pd.DataFrame({"user": [7, 12], "risk": [1, 0.5]}), path, ("user",))
    back = read_table(path, ("user",))
    assert back["user"].tolist() == ["7", "12"]
    assert back["risk"].dtype == np.float64


def test_the_same_table_gives_the_same_bytes(tmp_path):
    digests = set()
    for name in ("a.parquet", "b.parquet"):
        write_table(VIEW.copy(), tmp_path / name, TEXT)
        digests.add(hashlib.sha256((tmp_path / name).read_bytes()).hexdigest())
    assert len(digests) == 1
    changed = VIEW.assign(share=VIEW["share"].where(VIEW.index != 1, 0.3333333))
    write_table(changed, tmp_path / "c.parquet", TEXT)
    assert hashlib.sha256((tmp_path / "c.parquet").read_bytes()).hexdigest() not in digests


def test_parquet_reads_back_as_the_csv_of_version_1_did(tmp_path):
    write_table(VIEW, tmp_path / "d1.parquet", TEXT)
    VIEW.to_csv(tmp_path / "d1.csv.gz", index=False, compression="gzip")
    from_parquet = read_table(tmp_path / "d1.parquet", TEXT)
    from_csv = read_table(tmp_path / "d1.csv.gz", TEXT)
    pd.testing.assert_frame_equal(from_parquet, from_csv, check_exact=True)
    assert from_parquet["user"].tolist() == ["007", "12", "alice", "12"]
    assert from_parquet["location"].tolist() == ["1_2", "0010", "1.50", "1_2"]
    assert from_parquet["count"].dtype == np.int64


def test_missing_text_is_empty_as_in_a_csv(tmp_path):
    frame = pd.DataFrame({"label": ["a", None], "wkt": [None, "POINT (1 2)"], "lon": [1.0, None]})
    write_table(frame, tmp_path / "l.parquet", ("label",))
    back = read_table(tmp_path / "l.parquet", ("label",))
    assert back["label"].tolist() == ["a", ""]
    assert back["wkt"].tolist() == ["", "POINT (1 2)"]
    assert back["lon"].iloc[0] == 1.0 and np.isnan(back["lon"].iloc[1])


@pytest.mark.parametrize("name", ["d1.parquet", "d1.csv.gz"])
def test_a_damaged_file_is_a_table_file_error(tmp_path, name):
    path = tmp_path / name
    if name.endswith(".parquet"):
        write_table(VIEW, path, TEXT)
    else:
        VIEW.to_csv(path, index=False, compression="gzip")
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(TableFileError):
        read_table(path, TEXT)


def test_locations_name_follows_the_dataview_file():
    assert locations_name("dataviews/d1.parquet") == "dataviews/d1.locations.parquet"
    assert locations_name("dataviews/d1.csv.gz") == "dataviews/d1.locations.csv"
    with pytest.raises(TableFileError, match="not a dataview file name"):
        locations_name("dataviews/d1.txt")


def test_a_failed_write_names_the_file(tmp_path):
    path = tmp_path / "gone" / "d1.parquet"
    with pytest.raises(OSError) as raised:
        write_table(VIEW, path, TEXT)
    assert (raised.value.errno, raised.value.filename) == (errno.ENOENT, str(path))


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(0, 60),
    cuts=st.lists(st.integers(0, 60), max_size=6),
    group=st.sampled_from([1, 7, 10, 1000]),
    seed=st.integers(0, 1000),
)
def test_a_table_written_in_parts_is_the_table_written_whole(
    rows, cuts, group, seed, tmp_path_factory
):
    """The same bytes, wherever the parts are cut: row groups are cut where a whole
    table's are (tables.ROW_GROUP)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables, "ROW_GROUP", group)
        _same_bytes_in_parts(rows, cuts, seed, tmp_path_factory.mktemp("parts"))


def _same_bytes_in_parts(rows, cuts, seed, folder):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "user": np.char.add("u", rng.integers(0, 9, rows).astype(str)),
            "location": rng.integers(0, 5, rows),  # numbers, written as text
            "count": rng.integers(1, 9, rows),
            "share": rng.random(rows),
        }
    )
    write_table(frame, folder / "whole.parquet", ("user", "location"))
    bounds = sorted({0, rows, *(c for c in cuts if c <= rows)})
    parts = [frame.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)] or [frame]
    tables.write_parts(iter(parts), folder / "parts.parquet", ("user", "location"))
    assert (folder / "parts.parquet").read_bytes() == (folder / "whole.parquet").read_bytes()


@pytest.mark.parametrize("rows", [1, 2, 3, 100])
def test_a_dataviews_table_in_parts_is_its_table(rows):
    from tests.conftest import presence_view, probability_view, trajectory_view

    counts = {"a": {0: 5, 1: 2}, "b": {0: 3, 1: 3, 2: 1}, "c": {}, "d": {0: 5, 3: 1}}
    people = ["a", "b", "c", "d", "e"]
    ids = np.array(people, dtype=object)
    trips = {"a": [(0, 8), (1, 9), (0, 10)], "b": [(2, 8)], "d": [(1, 8), (0, 9)]}
    for view in (
        presence_view(counts, people),
        probability_view(counts, people),  # shares of each person's visits
        trajectory_view(trips, people),  # order within each person
    ):
        parts = list(view.table_parts(ids, rows))
        assert len(parts) >= min(3, 8 // rows)
        joined = pd.concat(parts, ignore_index=True)
        pd.testing.assert_frame_equal(joined, view.table(ids))
