"""Dataviews rebuilt from their catalog files, so that sanitizing needs no raw data."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from prudence_cli.config.dimensions import FORMATS
from prudence_cli.dataviews.base import Dataview, StoredTable
from prudence_cli.dataviews.registry import format_class


def parse_dimensions(view_format: str, labels: dict[str, str]) -> tuple[tuple[str, Any], ...]:
    """Dimension values from their printed labels (as in catalog.json)."""
    dims = FORMATS[view_format].dimensions
    return tuple((name, dims[name].parse(_scalar(text))) for name, text in labels.items())


def view_from_table(
    view_id: str,
    view_format: str,
    dimensions: tuple[tuple[str, Any], ...],
    user_ids: np.ndarray,
    table: pd.DataFrame,
    locations: pd.DataFrame,
    crs: str | None = None,
) -> Dataview:
    """A dataview over the universe `user_ids` from its shared table (see Dataview.table).

    Unknown users or locations raise ValueError: the table and its universe disagree.
    """
    user = pd.Index(user_ids).get_indexer(table["user"].astype(str))
    location = pd.Index(locations["label"].astype(str)).get_indexer(table["location"].astype(str))
    if (user < 0).any():
        raise ValueError(f"user {table['user'].iloc[int(np.argmax(user < 0))]!r} is not in U")
    if (location < 0).any():
        raise ValueError("a location of the dataview is missing from its locations table")
    stored = StoredTable(view_id, dimensions, len(user_ids), user, location, table, locations, crs)
    return format_class(view_format).from_table(stored)


def _scalar(text: str) -> Any:
    return int(text) if text.isdigit() else text
