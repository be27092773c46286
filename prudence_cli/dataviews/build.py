"""Build every dataview of a config: one per combination of dimension values."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from prudence_cli.config import DataviewConfig
from prudence_cli.dataviews.presence import PresenceView, build_presence_views
from prudence_cli.select import Selection


def count_dataviews(config: DataviewConfig) -> int:
    return math.prod(len(values) for _, values in config.dimensions)


def view_ids(config: DataviewConfig) -> Iterator[str]:
    """d1, d2, ... zero-padded to the number of views (d01 ... d15)."""
    total = count_dataviews(config)
    width = len(str(total))
    return (f"d{i:0{width}d}" for i in itertools.count(1))


def build_dataviews(selection: Selection, config: DataviewConfig) -> Iterator[PresenceView]:
    """Views in catalog order: the first dimension varies slowest.

    The visit counts of one grid are computed once and filtered per frequency threshold.
    """
    dims = dict(config.dimensions)
    ids = view_ids(config)
    grids = dims.get("grid", (None,))
    for grid in grids:
        prefix = {"grid": grid} if "grid" in dims else {}
        yield from build_presence_views(selection, grid, dims["frequency"], ids, prefix)
