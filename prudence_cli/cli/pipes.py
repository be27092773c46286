"""Results for pipelines: a table as CSV or JSON text on stdout.

A table is a pandas DataFrame, or the plain `Rows` a catalog's small tables are read
into (catalog/rows.py): the same values give the same text either way. Nothing here
imports pandas or rich, so `--format csv` and `--format json` load neither.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from prudence_cli.catalog.rows import Rows

if TYPE_CHECKING:
    import pandas as pd

Tabular: TypeAlias = "pd.DataFrame | Rows"
_DECIMAL = re.compile(r"[-+]?(\d+\.\d*|\.\d+)([eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+")


def to_csv(table: Tabular, header: bool = True) -> str:
    buffer = io.StringIO()
    if isinstance(table, Rows):
        table.write_csv(buffer, header=header)
    else:
        table.to_csv(buffer, index=False, header=header, lineterminator="\n")
    return buffer.getvalue()


def to_json(table: Tabular, typed: Sequence[str] = ()) -> str:
    """Records as JSON; in the `typed` text columns (dimension and knowledge values),
    numbers written as text (h=2, delta=0.1) are written as numbers."""
    rows = table.records if isinstance(table, Rows) else table.to_dict(orient="records")
    records: list[dict[str, Any]] = [
        {k: _typed(v) if k in typed else _plain(v) for k, v in row.items()} for row in rows
    ]
    return json.dumps(records, indent=2) + "\n"


def typed_values(values: dict[str, Any], typed: Sequence[str] | None = None) -> dict[str, Any]:
    """Dimension or knowledge values as `to_json` writes them: numbers as numbers (in
    the `typed` keys; default every key)."""
    return {k: _typed(v) if typed is None or k in typed else v for k, v in values.items()}


def _typed(value: Any) -> Any:
    """A number written as text (h=2, delta=0.1) as that number; anything else (500m,
    all, exact) as it is."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        return float(value)
    return _plain(value)


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
