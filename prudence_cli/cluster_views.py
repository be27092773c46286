"""Dataviews built where the points are: on a Dask cluster, the selected points stay
on the workers that selected them (cluster_input, `keep`), and each range of users
builds its view — presence and probability views of the (user, location) pairs of its
points, trajectory, segments, profiles and bins views of the points themselves — kept on
the worker's disk (dataviews/on_workers.py holds what the assessing process keeps of
it): the assessing process never receives the points, nor the views' rows.

For a grid, each range first tells which cells its points fall in; the assessing
process numbers the cells of all ranges in the order of their ids and places their
centres (a centre off the projection's map at the point nearest it, found among every
range's) as space.grid_cells does; then each range places its points in those cells and
counts its pairs. For towers or segments, the points' codes are already numbered across
the ranges. A bins view's bins (space × time bin) are numbered as the cells are: each
range tells its first and last time bin, then the bins its points fall in. A person's
points are all in one range, and the ranges are in user order, so the ranges' pairs (or
points), one after the other, are those of a local run, in its order.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from prudence_cli import columns as C
from prudence_cli.arrays import union_sorted
from prudence_cli.cluster_input import Kept, read_and_select
from prudence_cli.cluster_scratch import Scratch, given_back
from prudence_cli.cluster_select import (
    POINT_FORMATS,
    Placed,
    Regions,
    Told,
    ids_path,
    placed_points,
    range_cells,
    range_nearest,
    range_pairs,
    range_points,
    read_back,
)
from prudence_cli.cluster_tasks import pinned, windowed
from prudence_cli.config import Config
from prudence_cli.dataviews.base import Located, Pairs
from prudence_cli.dataviews.profiles import middle
from prudence_cli.io.points import ReadProgress
from prudence_cli.select import Selection
from prudence_cli.space import (
    cell_centres,
    cells_of_keys,
    cells_table,
    unproject,
)

# the dataview formats whose rows are (user, location) pairs and their visits only
PAIR_FORMATS = ("presence", "probability")


def views_on_workers(config: Config) -> bool:
    """Whether the dataviews can be built in ranges of users where their points are:
    presence or probability views (of the pairs alone), trajectory, segments, profiles,
    bins or clusters views (of each person's own points; profiles split at the middle of
    all ranges' times, `middle`; bins numbered across the ranges,
    kept_bins.bin_numbering; clusters made of every range's crossings,
    kept_clusters.py), on grids, towers, segments or regions. The utility aggregate is
    counted in the same ranges (measures/ranges_activity.py)."""
    return config.dataview.format in (*PAIR_FORMATS, *POINT_FORMATS)


def read_on_workers(
    client: Any, config: Config, progress: ReadProgress | None, keep: bool, cached: bool = False
) -> tuple[Selection, dict[str, int], dict[str, tuple[str, int]]]:
    """The Selection read and selected on the workers (cluster_input); when `keep` and
    the dataviews allow it (`views_on_workers`), with its points left there, found
    through `selection.placed` (a PointsOnWorkers, closed by the caller; `cached`: with
    every column, which cluster_cache.store writes into the cache). Also the invalid rows
    dropped and the files fetched from an object store (read_and_select)."""
    keep = keep and views_on_workers(config)
    selection, dropped, kept, fetched = read_and_select(
        client, config, progress, keep, cached and keep
    )
    if kept is not None:
        points_on_workers(selection, kept)
    return selection, dropped, fetched


def points_on_workers(selection: Selection, kept: Kept) -> None:
    """`selection.placed`: the points `kept` on the workers, closed by the caller."""
    placed = PointsOnWorkers(kept, selection.crs, selection.locations, selection.geometry)
    selection.placed = placed
    # a caller that forgets to close it (library use): the files go with the Selection
    weakref.finalize(selection, placed.close)


@dataclass
class PointsOnWorkers:
    """The selected points of a run, kept on the workers: the views of the pairs a grid
    (or the towers) makes of them, built and kept there."""

    kept: Kept
    crs: str
    locations: pd.DataFrame | None  # towers or segments, numbered
    geometry: np.ndarray | None = None  # per segment: its LineString in the CRS
    closed: bool = False
    grid_made: tuple[float | None, ...] = ()  # the grid whose pairs the ranges keep (`views`)
    cells_made: tuple[float, pd.DataFrame, np.ndarray] | None = None  # the last grid's (`space`)

    def views(
        self,
        grid: float | None,
        build: Build,
        name: str,
        regions: tuple[pd.DataFrame, Regions] | None = None,
        bins: Any = None,  # dataviews/bins.BinNumbering
    ) -> tuple[pd.DataFrame, list[Built]]:
        """The locations table of the grid of side `grid` (None: the towers or segments;
        or the `regions`' table, with the regions the ranges place their points in), and
        each range's view, made by `build` of the range's pairs on the worker that
        holds its points and kept on that worker's disk as `name` (what is left of it
        here: `Built`), in user order; a bins view's bins numbered as `bins` numbers
        them (dataviews/kept_bins.bin_numbering). A range's pairs on a grid are made
        once, and kept beside its points for the next view on the same grid."""
        told = self.kept.told
        if self.grid_made and self.grid_made[0] != grid:  # the last grid's pairs go
            made = self.grid_made[0]
            self.remove([(t.worker, f"{t.path}.pairs-{made}") for t in told if t.points])
        self.grid_made = (grid,)
        starts = np.cumsum([0] + [t.users for t in told]).tolist()
        first = {t.k: int(starts[i]) for i, t in enumerate(told)}
        holding = [t for t in told if t.points]
        table, space_keys = self.space(grid, regions)
        client = self.kept.client
        (space,) = client.scatter([(table, space_keys, bins)], broadcast=True, hash=False)

        def submit(i: int) -> Any:
            t = holding[i]
            return self._pinned(
                range_view, t, first[t.k], grid, space, build, self.kept.scratch, name
            )

        found = dict(self._each(holding, submit))
        with contextlib.suppress(Exception):  # what building the views freed goes back
            self.kept.client.run(given_back, on_error="ignore")
        return table, [found[t.k] for t in holding]

    def space(
        self, grid: float | None, regions: tuple[pd.DataFrame, Regions] | None = None
    ) -> tuple[pd.DataFrame, np.ndarray | Regions | None]:
        """The locations table of the grid of side `grid`, the towers or segments (None)
        or the `regions`, and what the ranges place their points by: the cells' keys,
        the regions, or nothing (their codes). A grid's cells are found once for the
        views that follow on the same grid."""
        if regions is not None:
            return regions
        if grid is None:
            if self.locations is None:
                raise ValueError("a dataview without grid needs raw locations (towers, segments)")
            return self.locations, None
        if self.cells_made is None or self.cells_made[0] != grid:
            holding = [t for t in self.kept.told if t.points]
            self.cells_made = (grid, *self._cells(holding, grid))
        return self.cells_made[1], self.cells_made[2]

    def on_ranges(self, task: Any, *args: Any) -> dict[int, Any]:
        """`task(told, *args)` run on the worker holding each range's points (of the
        ranges holding some): the results by range number (a task returns (told.k, its
        result))."""
        return dict(self.each_range(task, *args))

    def each_range(self, task: Any, *args: Any) -> Iterator[tuple[int, Any]]:
        """As `on_ranges`, each (range number, result) as it comes, a few at a time."""
        holding = [t for t in self.kept.told if t.points]

        def submit(i: int) -> Any:
            return self._pinned(task, holding[i], *args)

        return self._each(holding, submit)

    def broadcast(self, value: Any) -> Any:
        """`value` sent to every worker once: a future the ranges' tasks take."""
        (future,) = self.kept.client.scatter([value], broadcast=True, hash=False)
        return future

    def middle(self) -> int:
        """The middle of the points' time span (dataviews/profiles.middle_of), from each
        range's first and last time."""
        told = [t for t in self.kept.told if t.points]

        def span(i: int) -> Any:
            return self._pinned(range_span, told[i])

        found = [s for _, s in self._each(told, span) if s is not None]
        if not found:
            return 0
        return middle(min(s[0] for s in found), max(s[1] for s in found))

    def _cells(self, told: list[Any], side: float) -> tuple[pd.DataFrame, np.ndarray]:
        """The cells of every range's points on the grid of `side`: the table of a local
        run (space.grid_cells) and their keys, sorted."""

        def cells(i: int) -> Any:
            return self._pinned(range_cells, told[i], side)

        # keys sort as the cells' ids: their distinct ones are the cells of a local run,
        # each range's joined in as they come (a fine grid: millions a range)
        keys = np.zeros(0, np.int64)
        for seen in self._each(told, cells):
            keys = union_sorted(keys, seen)
        cx, cy = cells_of_keys(keys)
        lon, lat, off_map = cell_centres(cx, cy, side, self.crs)
        if off_map.any():  # each off the map at its nearest point, of any range
            off = keys[off_map]

            def nearest(i: int) -> Any:
                return self._pinned(range_nearest, told[i], side, off)

            found = {k: rest for k, *rest in self._each(told, nearest)}
            best = np.full(off.size, np.inf)
            x, y = np.zeros(off.size), np.zeros(off.size)
            for t in told:  # in range order: the first point on ties
                codes, distance, near_x, near_y = found[t.k]
                closer = distance < best[codes]
                at = codes[closer]
                best[at], x[at], y[at] = distance[closer], near_x[closer], near_y[closer]
            lon[off_map], lat[off_map] = unproject(x, y, self.crs)
        return cells_table(cx, cy, lon, lat), keys

    def _pinned(self, task: Any, told: Any, *args: Any) -> Any:
        """`task` run on the worker holding the range's points."""
        return pinned(self.kept.client, told.worker, task, told, *args)

    def _each(self, told: list[Any], submit: Any) -> Any:
        """The results of `submit(i)` for each of the ranges `told` (`windowed`)."""
        holders = {t.worker for t in told}
        return windowed(self.kept.client, range(len(told)), submit, holders)

    def remove(self, files: list[tuple[str, str]]) -> None:
        """Each (worker, path) of `files` the run kept removed from that worker's disk."""
        client = self.kept.client

        def submit(i: int) -> Any:
            worker, path = files[i]
            return pinned(client, worker, _removed, path)

        for _ in windowed(client, range(len(files)), submit, {w for w, _ in files}):
            pass

    def close(self) -> None:
        """The points removed from the workers (once; later calls do nothing)."""
        if not self.closed:
            self.closed = True
            self.kept.close()


class Build(Protocol):
    """Builds a range's view (dataviews/on_workers._Builder) from its users' count (the
    range's, numbered from 0), their points as a Selection holds them (user, time,
    [leave]: only when `points`, for a format whose rows are the points) and where they
    are (`Located`: for a format of pairs, its pairs alone)."""

    @property
    def points(self) -> bool: ...

    def __call__(self, n_users: int, points: pd.DataFrame | None, located: Located) -> Any: ...


@dataclass(frozen=True)
class Built:
    """A range's view kept on a worker's disk (`PointsOnWorkers.views`): where, the
    users it holds ([first, last) among all) and where their ids are, and what the
    assessing process keeps of it: a few numbers, and the locations it holds. Its counts
    per user — rows, visits and distinct locations — stay beside it on the worker
    (`counts`, read by `range_counts`), and those that are its rows are named (`as_rows`):
    the assessing process reads them as it needs them (dataviews/range_counts.py)."""

    worker: str
    path: str
    first: int
    last: int
    ids: str  # where the worker keeps its users' ids (cluster_select.ids_path)
    counts: str  # where the worker keeps its counts per user (`range_counts`)
    rows: int  # its rows
    users_in_view: int  # its users with a row
    as_rows: tuple[str, ...]  # the counts that are its rows (kept once, as "rows")
    totals: dict[str, int | None]  # per count ("rows", "visits", "places"), its sum: None
    # when it is not of whole numbers (or the view is not additive)
    used: np.ndarray  # the location codes it holds, as bits (np.packbits; a bins view's
    # locations are millions of bins, most held by every range)


# a range's counts per user, by what they count: "rows", and "visits" and "places" of an
# additive view (each None where it is the rows)
COUNTS = ("rows", "visits", "places")


def range_counts(path: str, field: str, i: int) -> tuple[int, np.ndarray]:
    """Range `i`'s counts `field` (one of COUNTS) per user, kept at `path` on this worker
    (`range_view`)."""
    kept = read_back(path)
    found = kept[field]
    return i, kept["rows"] if found is None else found


def range_view(
    told: Told,
    first: int,
    side: float | None,
    space: tuple[pd.DataFrame, np.ndarray | Regions | None, Any],  # Any: bins.BinNumbering
    build: Build,
    scratch: Scratch,
    name: str,
) -> tuple[int, Built]:
    """Range `told.k`'s view (`PointsOnWorkers.views`), its users numbered from 0."""
    from distributed import get_worker

    table, keys, bins = space
    points = None
    if build.points:
        placed, location, pair_count, found = range_points(told, side, keys, len(table))
        points = _points_frame(placed, first)
        pairs: Pairs | None = None  # in regions: none (build.locate_regions)
        if found is not None:
            pairs = Pairs((found[0] - first).astype(np.int32), found[1], found[2])
        located = Located(location, table, pair_count, pairs, bins)
        del placed, location, pair_count, found
    else:
        made = f"{told.path}.pairs-{side}"
        if os.path.exists(made):
            user, location, count = read_back(made)
        else:
            assert not isinstance(keys, Regions)  # no format of pairs is in regions
            _, user, location, count = range_pairs(told, side, keys, len(table))
            scratch.written(Path(made).name, (user, location, count))
        nothing = np.zeros(0, dtype=np.int64)
        pairs = Pairs((user - first).astype(np.int32), location, count)
        located = Located(nothing.astype(np.int32), table, nothing, pairs)
        del user, location, count
    view = build(told.users, points, located)
    del points, located, pairs
    path = _kept(scratch, f"range-{told.k}.{name}", view, (table, getattr(bins, "table", None)))
    held = np.bincount(view.location, minlength=len(view.locations))
    per_user = np.diff(view.offsets).astype(np.int32)
    additive = view.additive  # a clusters view's coverage needs every range's clusters
    counts: dict[str, np.ndarray | None] = {"rows": per_user, "visits": None, "places": None}
    if additive:
        counts["visits"] = _unless_rows(view.coverage("visits"), per_user)
        counts["places"] = _unless_rows(view.coverage("locations"), per_user)
    built = Built(
        get_worker().address,
        path,
        first,
        first + told.users,
        ids_path(told),
        scratch.written(Path(_counts_path(path)).name, counts),
        int(per_user.sum(dtype=np.int64)),
        int(np.count_nonzero(per_user)),
        tuple(k for k, v in counts.items() if v is None),
        {k: _whole_total(v, per_user) if additive else None for k, v in counts.items()},
        np.packbits(held > 0),
    )
    return told.k, built


def _whole_total(values: np.ndarray | None, rows: np.ndarray) -> int | None:
    """The sum of a range's counts per user (None: its rows), when they are whole
    numbers; None when they are not."""
    found = rows if values is None else values
    if found.dtype.kind in "iu":
        return int(found.sum(dtype=np.int64))
    return None


@dataclass(frozen=True)
class _KeptRange:
    """A range's view as its file holds it: without its locations' rows when they are
    the whole view's (`table`, the path of the worker's one copy; a bins view's are
    millions of bins), with their number."""

    view: Any  # dataviews.base.Dataview
    table: str | None
    locations: int


_writing = threading.Lock()  # the worker's threads writing its copy of a table


def _kept(scratch: Scratch, name: str, view: Any, tables: tuple[Any, ...]) -> str:
    """`view` kept as `name` on this worker (`read_view`): its locations table, when it
    is one of the whole view's `tables` (each range's is), written once on the worker
    beside the ranges (at `name`'s format), not into each range's file."""
    if not any(view.locations is t for t in tables if t is not None):
        return scratch.written(name, _KeptRange(view, None, len(view.locations)))
    shared = _table_name(name)
    with _writing:
        table = scratch.folder() / shared
        if not table.exists():
            scratch.written(shared, view.locations)
    bare = replace(view, locations=view.locations.iloc[:0])
    return scratch.written(name, _KeptRange(bare, str(table), len(view.locations)))


def _table_name(name: str) -> str:
    return "locations." + name.split(".", 1)[1]


def kept_files(path: str) -> list[str]:
    """The files a range's view kept at `path` may take on its worker (`_kept`), and
    its counts (`range_view`)."""
    folder, name = os.path.split(path)
    return [path, _counts_path(path), os.path.join(folder, _table_name(name))]


def _counts_path(path: str) -> str:
    return path + ".counts"


def read_view(path: str) -> Any:
    """The range's view kept at `path` on this worker (`_kept`), whole."""
    kept: _KeptRange = read_back(path)
    if kept.table is None:
        return kept.view
    return replace(kept.view, locations=read_back(kept.table))


def read_bare(path: str) -> tuple[Any, int]:
    """The range's view kept at `path` on this worker without its locations' rows (the
    table's columns, none of its rows), and the number of its locations: what a level
    or a measure reads, never a label."""
    kept: _KeptRange = read_back(path)
    view = kept.view
    if kept.table is None:
        view = replace(view, locations=view.locations.iloc[:0])
    return view, kept.locations


def locations_held(ranges: list[Built]) -> np.ndarray:
    """The location codes some of the `ranges` hold, ascending."""
    bits = np.zeros(max((b.used.size for b in ranges), default=0), dtype=np.uint8)
    for b in ranges:
        bits[: b.used.size] |= b.used
    return np.flatnonzero(np.unpackbits(bits))


def range_span(told: Told) -> tuple[int, tuple[int, int] | None]:
    """The range's number and its points' first and last time (UTC ns; None: none)."""
    placed = placed_points(told)
    assert placed.time is not None  # kept for the formats of points (finish_range)
    if placed.time.shape[0] == 0:
        return told.k, None
    return told.k, (int(placed.time.min()), int(placed.time.max()))


def _points_frame(placed: Placed, first: int) -> pd.DataFrame:
    """The range's points as a Selection's: user (from 0), time [, leave]."""
    assert placed.time is not None  # kept for the formats of points (finish_range)
    columns = {C.USER: (placed.user - first).astype(np.int32), C.TIME: placed.time}
    if placed.leave is not None:
        columns[C.LEAVE] = placed.leave
    return pd.DataFrame(columns, copy=False)


def _unless_rows(values: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
    """A per-user coverage, None where it is each user's rows (kept as those); counts
    (whole numbers below 2^31) as 32-bit integers, which give back the same floats: 4
    bytes a person, read by the assessing process range by range, many times a view."""
    if np.array_equal(values, rows):
        return None
    if values.size and values.min() >= 0 and values.max() < 2**31:
        whole = values.astype(np.int32)
        if np.array_equal(whole, values):
            return whole
    return values


def _removed(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
