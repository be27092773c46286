"""Rendering of results for the terminal (rich) and for pipelines (CSV, JSON)."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table

from prudence_cli.catalog import Catalog

MEASURES = {
    "i_rac_u": "i-RAC\nU",
    "i_rac_d": "i-RAC\nD",
    "mean_risk": "mean\nrisk",
    "share_at_risk_1": "at\nrisk 1",
}


def irac_table(catalog: Catalog, rows: pd.DataFrame) -> Table:
    """The i-RAC table: one line per (dataview, attack, level); the best i-RAC_D of each
    attack level in bold."""
    dims = catalog.dimension_names
    knowledge = catalog.knowledge_names
    manifest = catalog.manifest
    selection = manifest.get("selection", {})
    attacks = sorted(set(rows["attack"]))
    # one attack: named in the title rather than repeated on every line
    labels = ["dataview", *dims, *(["attack"] if len(attacks) > 1 else []), *knowledge]
    only = f", attack = {attacks[0]}" if len(attacks) == 1 else ""
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        title_justify="left",
        caption_justify="left",
        title=f"{manifest.get('name', '')}: {selection.get('users', '?'):,} users, "
        f"coverage = {manifest.get('coverage')}{only}",
        caption="i-RAC U/D: area under RAC_U/RAC_D (1 = nobody at risk, all data kept).\n"
        "Bold: the best i-RAC_D for that attack and knowledge level.",
    )
    for column in labels:
        table.add_column(column, justify="left", no_wrap=True)
    table.add_column("users\nin view", justify="right", no_wrap=True)
    for label in MEASURES.values():
        table.add_column(label, justify="right", no_wrap=True)
    level_columns = ["attack", *knowledge]
    best = rows.groupby(level_columns, sort=False)["i_rac_d"].transform("max")
    for index, row in rows.iterrows():
        style = "bold" if row["i_rac_d"] == best[index] else None
        table.add_row(
            *[str(row[c]) for c in labels],
            f"{int(row['users_in_view']):,}",
            *[_number(row[m], percent=m == "share_at_risk_1") for m in MEASURES],
            style=style,
        )
    return table


def to_csv(frame: pd.DataFrame, header: bool = True) -> str:
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, header=header, lineterminator="\n")
    return buffer.getvalue()


def to_json(frame: pd.DataFrame, typed: Sequence[str] = ()) -> str:
    """Records as JSON; in the `typed` text columns (dimension and knowledge values),
    whole numbers are written as numbers."""
    records: list[dict[str, Any]] = [
        {k: _typed(v) if k in typed else _plain(v) for k, v in row.items()}
        for row in frame.to_dict(orient="records")
    ]
    return json.dumps(records, indent=2) + "\n"


def print_table(table: Table) -> None:
    Console().print(table)


def _number(value: float, percent: bool = False) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "—"
    return f"{value:.1%}" if percent else f"{value:.3f}"


def _typed(value: Any) -> Any:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return _plain(value)


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def releases_table(frame: pd.DataFrame) -> Table:
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        title="Release ledger",
        title_justify="left",
    )
    for column in ("id", "recipient", "created (UTC)", "dataview", "R", "method", "people"):
        table.add_column(column, no_wrap=True, min_width=len(column))
    for _, row in frame.iterrows():
        table.add_row(
            str(row["id"]),
            str(row["recipient"] or "—"),
            str(row["created"])[:16].replace("T", " "),
            str(row["dataview"]),
            f"{row['threshold']:g}",
            str(row["method"]),
            f"{int(row['users']):,}",
        )
    return table
