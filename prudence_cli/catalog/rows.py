"""The catalog's small tables (irac.csv, randomized.csv) as plain rows, without pandas.

Showing a catalog reads a table of a few hundred rows and prints it: importing pandas to
do so would take longer than the rest of the command. `read_rows` reads such a table
with the csv module and types its columns as the pandas reading did (`Catalog.irac`
remains that DataFrame, made by `Rows.to_frame`): every column text, "" included; the
number columns as integers when every value is one (none missing), else as floats with
NaN for ""; the flag columns as `value == "True"`. `Rows.write_csv` writes the text
pandas' `to_csv` writes for the same values (a float by its shortest repr, NaN as "").
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

if TYPE_CHECKING:
    import pandas as pd

Kind = Literal["text", "int", "float", "bool"]
_INTEGER = re.compile(r"[-+]?[0-9]+")
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class Rows:
    """A table as its column names, each column's kind, and one dict per row (column →
    str, int, float or bool, by the column's kind)."""

    columns: tuple[str, ...]
    kinds: dict[str, Kind]
    records: tuple[dict[str, Any], ...]

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, column: object) -> bool:
        return column in self.kinds

    @property
    def empty(self) -> bool:
        return not self.records

    def column(self, name: str) -> list[Any]:
        return [row[name] for row in self.records]

    def keep(self, wanted: Callable[[dict[str, Any]], bool]) -> Rows:
        """The rows for which `wanted(row)` is true, in their order; the same columns."""
        return Rows(self.columns, self.kinds, tuple(row for row in self.records if wanted(row)))

    def write_csv(self, out: TextIO, header: bool = True) -> None:
        """The rows as CSV, as pandas' `to_csv(index=False, lineterminator="\\n")`
        writes them."""
        writer = csv.writer(out, lineterminator="\n")
        if header:
            writer.writerow(self.columns)
        writer.writerows([_csv_text(row[c]) for c in self.columns] for row in self.records)

    def to_frame(self) -> pd.DataFrame:
        """The rows as a DataFrame: text columns of pandas' text dtype, numbers as int64
        or float64, flags as bool."""
        import numpy as np
        import pandas as pd

        dtypes = {"text": str, "int": np.int64, "float": np.float64, "bool": bool}
        return pd.DataFrame(
            {c: pd.Series(self.column(c), dtype=dtypes[self.kinds[c]]) for c in self.columns},
            columns=list(self.columns),
        )


def read_rows(path: Path, numbers: Collection[str] = (), flags: Collection[str] = ()) -> Rows:
    """The CSV table at `path` (written by pandas), the columns `numbers` as numbers and
    `flags` as booleans (see the module docstring). Raises OSError, UnicodeDecodeError,
    csv.Error, or ValueError for a value that is not a number in a number column."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        columns = tuple(next(reader, ()))
        cells = [row for row in reader if row]  # pandas skips blank lines too
    for number, row in enumerate(cells, start=1):
        if len(row) != len(columns):
            raise ValueError(f"row {number}: {len(row)} fields, the header has {len(columns)}")
    kinds: dict[str, Kind] = {}
    values: list[list[Any]] = []
    for index, name in enumerate(columns):
        text = [row[index] for row in cells]
        if name in numbers:
            kind, typed = _numbers(text)
        elif name in flags:
            kind, typed = "bool", [value == "True" for value in text]
        else:
            kind, typed = "text", text
        kinds[name] = kind
        values.append(typed)
    records = tuple(dict(zip(columns, row, strict=True)) for row in zip(*values, strict=True))
    return Rows(columns, kinds, records)


def _numbers(text: Sequence[str]) -> tuple[Kind, list[Any]]:
    """Integers when every value is one (as pandas' `to_numeric` makes int64), else
    floats, "" as NaN."""
    if all(_INTEGER.fullmatch(value) for value in text):
        whole = [int(value) for value in text]
        if all(_INT64[0] <= value <= _INT64[1] for value in whole):
            return "int", whole
    return "float", [float(value) if value != "" else math.nan for value in text]


def _csv_text(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return ""
    return repr(value) if isinstance(value, float) else str(value)
