"""Dataviews rebuilt from their catalog files, so that sanitizing needs no raw data."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import shapely

from prudence_cli.config.dimensions import FORMATS
from prudence_cli.dataviews.base import Dataview
from prudence_cli.dataviews.clusters import ClusterView
from prudence_cli.dataviews.presence import PresenceView, ProbabilityView
from prudence_cli.dataviews.profiles import ProfilesView
from prudence_cli.dataviews.segments import SegmentView
from prudence_cli.dataviews.trajectory import TrajectoryView
from prudence_cli.space import project_lines


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
    n_users = len(user_ids)
    if view_format == "clusters":
        if crs is None or "wkt" not in locations:
            raise ValueError("a clusters dataview needs its segments' geometry and CRS")
        seconds = int(dict(dimensions)["window"])
        order = np.argsort(user, kind="stable")
        geometry = project_lines(shapely.from_wkt(locations["wkt"].to_numpy(dtype=object)), crs)
        return ClusterView(
            view_id,
            dimensions,
            n_users,
            user[order].astype(np.int32),
            location[order].astype(np.int32),
            locations,
            window=_bins(table["window"], seconds)[order],
            geometry=geometry,
            window_seconds=seconds,
        )
    if view_format == "segments":
        seconds = int(dict(dimensions)["time"])
        start = _bins(table["t_origin"], seconds)
        end = _bins(table["t_destination"], seconds)
        order = np.lexsort((table["order"].to_numpy(), user))
        return SegmentView(
            view_id,
            dimensions,
            n_users,
            user[order].astype(np.int32),
            location[order].astype(np.int32),
            locations,
            tbin=start[order],
            tbin_end=end[order],
            granularity=seconds,
        )
    if view_format == "trajectory":
        seconds = int(dict(dimensions)["time"])
        tbin = _bins(table["time_bin"], seconds)
        order = np.lexsort((table["order"].to_numpy(), user))
        return TrajectoryView(
            view_id,
            dimensions,
            n_users,
            user[order].astype(np.int32),
            location[order].astype(np.int32),
            locations,
            tbin=tbin[order],
            granularity=seconds,
        )
    order = np.lexsort((location, user))
    extra: dict[str, Any] = {}
    cls: type[PresenceView | ProfilesView] = PresenceView
    if view_format == "profiles":
        cls = ProfilesView
        extra["first"] = table["first"].to_numpy()[order].astype(np.int32)
    elif view_format == "probability":
        cls = ProbabilityView
    return cls(
        view_id,
        dimensions,
        n_users,
        user[order].astype(np.int32),
        location[order].astype(np.int32),
        locations,
        count=table["count"].to_numpy()[order].astype(np.int32),
        **extra,
    )


def _bins(stamps: pd.Series, seconds: int) -> np.ndarray:
    """Bin indexes from the bin starts written in a table (local wall clock)."""
    wall = pd.to_datetime(stamps).to_numpy().astype("datetime64[s]")
    return wall.astype(np.int64) // seconds


def _scalar(text: str) -> Any:
    return int(text) if text.isdigit() else text
