"""The catalog's small tables read without pandas: the same frame as pandas reads (the
reference below is how `Catalog.irac` was read before), and the same CSV and JSON text."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.catalog import open_catalog
from prudence_cli.catalog.folder import EXTRA_MEASURES, IRAC, MEASURE_COLUMNS
from prudence_cli.catalog.rows import read_rows
from prudence_cli.cli.pipes import to_csv, to_json
from tests.assessed import pristine  # noqa: F401  (fixture)


def read_with_pandas(path: Path, numbers: tuple[str, ...], flags: tuple[str, ...]) -> pd.DataFrame:
    """The reference: every column text, `numbers` through pd.to_numeric ("" as NaN),
    `flags` as == "True"."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for column in numbers:
        if column in frame:
            frame[column] = pd.to_numeric(frame[column].replace("", np.nan))
    for column in flags:
        if column in frame:
            frame[column] = frame[column] == "True"
    return frame


def same_everywhere(path: Path, numbers: tuple[str, ...], flags: tuple[str, ...]) -> None:
    rows = read_rows(path, numbers, flags)
    reference = read_with_pandas(path, numbers, flags)
    pd.testing.assert_frame_equal(rows.to_frame(), reference, check_exact=True)
    assert to_csv(rows) == to_csv(reference)
    assert to_csv(rows, header=False) == to_csv(reference, header=False)
    typed = [c for c in rows.columns if rows.kinds[c] == "text"]
    assert to_json(rows, typed) == to_json(reference, typed)
    assert to_json(rows) == to_json(reference)


TEXT = st.text(alphabet='ab7.,"=[]- _\n', max_size=6)
INTEGERS = st.integers(min_value=-(2**63), max_value=2**63 - 1).map(str)
FLOATS = st.floats(allow_nan=False).map(repr)
NUMBER_COLUMNS = st.sampled_from(
    [
        INTEGERS,
        st.one_of(INTEGERS, st.just("")),
        st.one_of(INTEGERS, FLOATS),
        st.one_of(FLOATS, st.just("")),
        st.just(""),
    ]
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]], tuple[str, ...], tuple[str, ...]]:
    """A CSV table's header and rows of text, and which columns are numbers and flags;
    two columns at least, as in every catalog table (pandas skips a line of one blank
    field, where the csv module reads a row)."""
    kinds = draw(st.lists(st.sampled_from(["text", "number", "flag"]), min_size=2, max_size=5))
    n_rows = draw(st.integers(min_value=0, max_value=6))
    header, columns = [], []
    for index, kind in enumerate(kinds):
        header.append(f"{kind}{index}")
        if kind == "number":
            values = st.shared(NUMBER_COLUMNS, key=index).flatmap(lambda v: v)
        elif kind == "flag":
            values = st.sampled_from(["True", "False"])
        else:
            values = TEXT
        columns.append(draw(st.lists(values, min_size=n_rows, max_size=n_rows)))
    rows = [list(row) for row in zip(*columns, strict=True)]
    numbers = tuple(h for h, k in zip(header, kinds, strict=True) if k == "number")
    flags = tuple(h for h, k in zip(header, kinds, strict=True) if k == "flag")
    return header, rows, numbers, flags


@settings(max_examples=200, deadline=None)
@given(tables())
def test_rows_read_and_write_as_pandas_does(tmp_path_factory, table):
    header, rows, numbers, flags = table
    path = tmp_path_factory.mktemp("rows") / "table.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([header, *rows])
    same_everywhere(path, numbers, flags)


def test_the_irac_table_reads_as_with_pandas(pristine: Path):  # noqa: F811
    catalog = open_catalog(pristine / "e2e")
    path = catalog.path / IRAC
    numbers = (*MEASURE_COLUMNS, *EXTRA_MEASURES)
    same_everywhere(path, numbers, ("sampled",))
    reference = read_with_pandas(path, numbers, ("sampled",))
    pd.testing.assert_frame_equal(catalog.irac, reference, check_exact=True)


def test_a_damaged_table_is_a_catalog_error(pristine: Path, tmp_path: Path):  # noqa: F811
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3\n", encoding="utf-8")
    with pytest.raises(ValueError, match="row 2: 1 fields, the header has 2"):
        read_rows(path, ("a",))
    path.write_text("a\n1\nx\n", encoding="utf-8")
    with pytest.raises(ValueError, match="could not convert"):
        read_rows(path, ("a",))


def test_numbers_are_integers_only_when_every_value_is_one(tmp_path: Path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,c,d\n1,1,1,\n2,,2.5,\n", encoding="utf-8")
    rows = read_rows(path, ("a", "b", "c", "d"))
    assert rows.kinds == {"a": "int", "b": "float", "c": "float", "d": "float"}
    assert rows.records[1]["a"] == 2 and math.isnan(rows.records[1]["b"])
    assert to_csv(rows) == "a,b,c,d\n1,1.0,1.0,\n2,,2.5,\n"
