"""Dataviews kept where their people's points are. On a Dask cluster whose workers keep
the selected points (cluster_views.PointsOnWorkers), the view of each range of users is
built on the worker that holds the range's points and kept on that worker's disk; the
assessing process holds a `KeptView`: a few numbers per range and a vector per place
(the locations the view holds), never the view's rows; each range's counts per person
stay on its worker (dataviews/range_counts.py), read from there as they are asked for,
and kept here only for a small view (`KEPT_COUNTS`).

Attacks whose levels are made in ranges of users (attacks/ranged.py) make them in these
ranges. The catalog's per-person tables — the dataview's rows, the risks, the mobility
measures — are made range by range on the workers, with the ids each keeps
(cluster_select.KeptIds), and written there as a folder of parts when the workers see
the catalog's folder (`sees`), else here, part after part. What needs the whole view (an
attack whose levels are not made in ranges) gathers it (`whole`): the view a local run
builds, row for row."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from prudence_cli.cluster_select import POINT_FORMATS, Regions, read_ids
from prudence_cli.cluster_tasks import pinned, windowed
from prudence_cli.cluster_views import (
    Built,
    PointsOnWorkers,
    kept_files,
    locations_held,
    range_counts,
    read_bare,
    read_view,
)
from prudence_cli.dataviews.base import (
    BuildSettings,
    Dataview,
    Dimensions,
    Located,
    ViewRange,
)
from prudence_cli.dataviews.kept_bins import bin_numbering
from prudence_cli.dataviews.kept_codes import numbered_in_blocks
from prudence_cli.dataviews.range_counts import RangeCounts
from prudence_cli.engine.connect import sent_to
from prudence_cli.engine.streams import two_by_two
from prudence_cli.io.atomic import writes_as_its_owner
from prudence_cli.io.readers import read_region_layer
from prudence_cli.space import regions_table

if TYPE_CHECKING:
    from prudence_cli.select import Selection


# the bytes of a view's counts per person (`KeptView.counts_of`) kept in the assessing
# process: those of a view of a million people or so (8 bytes a person, a count)
KEPT_COUNTS = 1 << 24

# writes a view's table, with the ids of its users, to a path (catalog/writer.py)
Write = Callable[[Dataview, np.ndarray, str], None]
# makes a range's part of a per-person table: (its users' ids, *arguments) -> the part
Make = Callable[..., pd.DataFrame]
Arguments = Callable[[int], tuple[Any, ...]]  # range k's arguments to a `Make`
# writes a part of a per-person table to a path (catalog/writer.py)
WriteFrame = Callable[[pd.DataFrame, str], None]


@dataclass(frozen=True)
class _Range:
    """What a format's `build` reads of the Selection, for one range: how many users,
    and (for a format of points) their points."""

    n_users: int
    points: pd.DataFrame | None
    geometry: None = None  # a clusters view's: the whole view's (kept_clusters.py)


@dataclass(frozen=True)
class _Builder:
    """A view of the format `view_class` of one range's pairs, or points
    (cluster_views.Build)."""

    view_class: type[Dataview]
    view_id: str
    dimensions: Dimensions
    settings: BuildSettings

    @property
    def points(self) -> bool:
        return self.view_class.format in POINT_FORMATS

    def __call__(self, n_users: int, points: pd.DataFrame | None, located: Located) -> Dataview:
        selection = cast("Selection", _Range(n_users, points))
        return self.view_class.build(
            selection, located, self.view_id, self.dimensions, self.settings
        )


def kept_view(
    placed: PointsOnWorkers,
    n_users: int,
    grid: float | None,
    view_class: type[Dataview],
    view_id: str,
    dimensions: Dimensions,
    settings: BuildSettings,
    regions: Path | None = None,
    kept_class: type[KeptView] | None = None,  # KeptView's, or a format's own
) -> KeptView:
    """The view `view_id` of the points `placed` on the grid of side `grid` (None: their
    towers or segments; or in the regions of the GeoJSON layer `regions`), built in
    ranges on the workers and kept there. A bins view's bins are numbered across the
    ranges first (`bin_numbering`): its locations are those bins."""
    build = _Builder(view_class, view_id, dimensions, settings)
    layer = None
    if regions is not None:  # read here, placed there (build.locate_regions)
        table = read_region_layer(regions)
        labels, polygons = table["label"].tolist(), table["geometry"].tolist()
        layer = (regions_table(labels, polygons), Regions(polygons, placed.crs))
    bins = None
    if view_class.format == "bins":
        seconds = int(dict(dimensions)["time"])
        bins = bin_numbering(placed, grid, layer, seconds, settings)
    locations, built = placed.views(grid, build, view_id, layer, bins)
    if bins is not None:
        locations = bins.table
    kept_class = kept_class or KeptView
    return kept_class(view_id, dimensions, view_class, n_users, locations, built, placed)


@dataclass(eq=False)
class KeptView(RangeCounts):
    """A view whose rows are on the workers, a range of users on each worker's disk
    (`Built`); as a Dataview for what reads a view's people (its
    coverage, who is in it), the locations it holds, and its ranges."""

    id: str
    dimensions: Dimensions
    view_class: type[Dataview]
    n_users: int  # |U|
    locations: pd.DataFrame
    built: list[Built]
    placed: PointsOnWorkers
    _seen: dict[str, bool] = field(default_factory=dict, repr=False)  # `sees`, by folder
    _numbered: dict[str, Any] = field(default_factory=dict, repr=False)  # `codes_of`, by kind
    _counts: dict[str, list[np.ndarray]] = field(default_factory=dict, repr=False)  # `counts_of`

    on_workers = True
    labels = Dataview.labels
    shown = Dataview.shown
    data_of = Dataview.data_of
    share_of = Dataview.share_of
    used_locations = Dataview.used_locations
    n_locations_used = Dataview.n_locations_used

    @property
    def format(self) -> str:
        return self.view_class.format

    @property
    def additive(self) -> bool:
        return self.view_class.additive

    @property
    def ranges(self) -> list[Built]:
        return self.built

    @cached_property
    def _used(self) -> np.ndarray:
        return locations_held(self.ranges)

    def kept_ranges(
        self, runner: Any, numbering: str | None = None
    ) -> tuple[np.ndarray, list[Any]]:
        """The first user of each range (and |U| last), and each range's rows as a
        ViewRange, loaded on the worker whose disk holds them: futures of `runner`. With
        a `numbering` (Dataview.numberings), each range numbers its elements of that kind
        as the whole view does (`numbered`)."""
        held = [b.last > b.first for b in self.ranges]
        codes: list[Any] = [None] * len(self.ranges)  # each range's, with its own elements
        if numbering is not None and any(held):
            codes = self.codes_of(numbering, runner)
        kept = [(b, own) for b, own, used in zip(self.ranges, codes, held, strict=True) if used]
        first = np.array([b.first for b, _ in kept] + [self.n_users], dtype=np.int64)
        calls = [(b.worker, (b.path, b.first, b.last, numbering, own)) for b, own in kept]
        return first, runner.pinned(_range_of, calls)

    def codes_of(self, kind: str, runner: Any) -> list[Any]:
        """The numbering `kind` of the whole view (Dataview.numbering), made on the
        workers from what each range tells of its rows, once per view and kind: what
        each range of `ranges` is numbered by, a future each (the codes, a number per
        distinct element, never come here). Past a block of them, a range is given its
        own elements' codes (kept_codes); else codes are joined two by two, fetched whole."""
        if kind not in self._numbered:
            codes = self.view_class.numbering(kind)
            blocked = self.view_class.blocked_codes if runner.element_block else None
            numbered, told = None, list[Any]()
            if blocked is not None:
                told = self._told(runner, blocked.part)
                numbered = numbered_in_blocks(runner, blocked, told, runner.element_block)
            if numbered is None:
                told = told if blocked is codes else self._told(runner, codes.part)
                client = self.placed.kept.client
                joined = two_by_two(client, codes.joined, told)
                parts = [] if joined is None else [joined]
                whole = client.submit(_numbered_of, codes, parts, pure=False)
                numbered = [whole] * len(self.ranges)
            self._numbered[kind] = numbered
        return self._numbered[kind]

    def _told(self, runner: Any, part: str) -> list[Any]:
        """What each range tells of its elements (`part`), kept where it is."""
        return runner.pinned(_range_told, [(b.worker, (b.path, part)) for b in self.ranges])

    def called(self, method: str, arguments: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Each range's `method(*arguments[k])`, on the worker holding it, in order."""
        found = dict(self.each_called(method, arguments))
        return [found[i] for i in range(len(self.ranges))]

    def each_called(
        self, method: str, arguments: Sequence[tuple[Any, ...]]
    ) -> Iterator[tuple[int, Any]]:
        """`called`, as they come (a few ranges at a time): (k, range k's result)."""
        client = self.placed.kept.client
        held = self.ranges

        def submit(i: int) -> Any:
            b = held[i]
            return pinned(client, b.worker, _range_call, b.path, method, arguments[i], i)

        yield from windowed(client, range(len(held)), submit, _holders(held))

    def counts_of(
        self, field: str, which: Sequence[int] | None = None
    ) -> Iterator[tuple[Built, np.ndarray]]:
        """RangeCounts.counts_of: each range's read on the worker keeping it (a few at a
        time). A small view's (at most KEPT_COUNTS bytes of them) are kept here once read
        whole: a view is asked for them a few times a level, and each asking costs a
        round of tasks, more than the counts themselves for a view of a city."""
        held = self.ranges
        asked = range(len(held)) if which is None else which
        if all(field in b.as_rows for b in held):
            field = "rows"  # read and kept once
        if field in self._counts:
            found = self._counts[field]
            yield from ((held[i], found[i]) for i in asked)
            return
        client = self.placed.kept.client

        def submit(i: int) -> Any:
            return pinned(client, held[i].worker, range_counts, held[i].counts, field, i)

        room = sum(v.nbytes for kept in self._counts.values() for v in kept)
        keep: dict[int, np.ndarray] | None = None
        if which is None and room + 8 * self.n_users <= KEPT_COUNTS:
            keep = {}
        for i, values in windowed(client, asked, submit, _holders(held)):
            if keep is not None:
                values.setflags(write=False)  # kept: given out again, never changed
                keep[i] = values
            yield held[i], values
        if keep is not None:  # (read whole: the reading was not left midway)
            self._counts[field] = [keep[i] for i in range(len(held))]

    def table_parts(self, rows: int) -> Iterator[pd.DataFrame]:
        """The view's table (`Dataview.table_parts`) in parts of whole users, about `rows`
        rows each, each made on the worker holding its users, with their ids there (a
        few at a time, in order)."""
        each: dict[str, list[tuple[Built, int, int]]] = {}  # by range, as they come
        for b, per_user in self.counts_of("rows"):
            offsets = np.r_[0, np.cumsum(per_user, dtype=np.int64)]
            inner = np.searchsorted(offsets, np.arange(rows, int(offsets[-1]), rows))
            bounds = np.unique(np.r_[0, inner, b.last - b.first]).tolist()
            each[b.path] = [(b, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        cuts = [cut for b in self.ranges for cut in each[b.path]]
        client = self.placed.kept.client

        def submit(i: int) -> Any:
            b, lo, hi = cuts[i]
            return pinned(client, b.worker, _range_table, b.path, b.ids, lo, hi, i)

        yield from _in_order(windowed(client, range(len(cuts)), submit, _holders(self.ranges)))

    def sees(self, folder: Path) -> bool:
        """Whether every worker holding the view's people sees `folder` (a shared file
        system) and writes there as this user: a probe file written there, and each
        asked (once per folder; io.atomic.writes_as_its_owner)."""
        key = str(folder)
        if key not in self._seen:
            client, holders = self.placed.kept.client, _holders(self.ranges)
            workers, probe = sorted(holders), folder / f".probe-{uuid.uuid4().hex}"
            probe.touch()

            def seen(i: int) -> Any:
                return pinned(client, workers[i], _sees, str(probe), i)

            try:
                found = dict(windowed(client, range(len(workers)), seen, holders))
            finally:
                probe.unlink()
            self._seen[key] = all(found.values())
        return self._seen[key]

    def written(self, target: Path, part: str, write: Write) -> None:
        """The view's table written by the workers (which must see its folder, `sees`) as
        the folder `target` of parts: the k-th range's by `write(view of its rows, their
        user ids, path)` at `part.format(k)`."""
        client = self.placed.kept.client
        held = self.ranges
        target.mkdir()

        def submit(i: int) -> Any:
            b, path = held[i], str(target / part.format(i))
            return pinned(client, b.worker, _range_written, b.path, b.ids, path, write, i)

        for _ in windowed(client, range(len(held)), submit, _holders(held)):
            pass

    def sent(self, value: Any, k: int) -> Any:
        """`value` sent to the worker holding range k (the range's own part of a
        per-person vector): its future (CancelledError when that worker has left)."""
        return sent_to(self.placed.kept.client, value, [self.ranges[k].worker])

    def people_parts(self, make: Make, arguments: Arguments) -> Iterator[pd.DataFrame]:
        """A per-person table of the view's users in parts, one per range in user order:
        range k's made on its worker by `make(its users' ids, *arguments(k))`, a few at a
        time (the arguments made as its task is submitted)."""
        client = self.placed.kept.client
        held = self.ranges

        def submit(i: int) -> Any:
            return pinned(client, held[i].worker, _made, held[i].ids, make, arguments(i), i)

        yield from _in_order(windowed(client, range(len(held)), submit, _holders(held)))

    def people_written(
        self,
        target: Path,
        part: str,
        write: WriteFrame,
        make: Make,
        arguments: Arguments,
    ) -> None:
        """`people_parts` written by the workers (which must see the folder of `target`,
        `sees`) as the folder `target` of parts: range k's by `write(part, path)` at
        `part.format(k)`."""
        client = self.placed.kept.client
        held = self.ranges
        target.mkdir()

        def submit(i: int) -> Any:
            b, path = held[i], str(target / part.format(i))
            return pinned(
                client, b.worker, _made_written, b.ids, make, arguments(i), write, path, i
            )

        for _ in windowed(client, range(len(held)), submit, _holders(held)):
            pass

    def close(self) -> None:
        """The view's ranges removed from the workers' disks (the run's folder goes at its
        end in any case: this keeps a run of many views from filling the disks)."""
        self._counts.clear()
        self._numbered.clear()  # the codes' futures: released on their worker
        kept = [(b.worker, path) for b in self.ranges for path in kept_files(b.path)]
        self.placed.remove(list(dict.fromkeys(kept)))

    def whole(self, users: np.ndarray | None = None) -> Dataview:
        """The view gathered here: the view a local run builds, row for row; or only the
        rows of `users` (sorted codes of U), the view a local run builds without the
        others' rows (its users still U)."""
        client = self.placed.kept.client
        held = self.ranges
        chosen: list[np.ndarray | None] = [None] * len(held)
        if users is not None:
            cuts = np.searchsorted(users, [b.first for b in held] + [self.n_users])
            chosen = [
                users[lo:hi] - b.first for b, lo, hi in zip(held, cuts[:-1], cuts[1:], strict=True)
            ]

        def submit(i: int) -> Any:
            return pinned(client, held[i].worker, _range_whole, held[i].path, i, chosen[i])

        found = dict(windowed(client, range(len(held)), submit, _holders(held)))
        parts = [found[i] for i in range(len(held))]
        first = parts[0]
        rows: dict[str, np.ndarray] = {}
        for name in first.row_fields:
            if getattr(first, name) is None:
                continue
            values = [getattr(p, name) for p in parts]
            if name == "user":
                values = [v + b.first for v, b in zip(values, held, strict=True)]
            rows[name] = np.concatenate(values).astype(getattr(first, name).dtype, copy=False)
        return replace(first, n_users=self.n_users, locations=self.locations, **rows)


def _holders(ranges: list[Built]) -> set[str]:
    return {b.worker for b in ranges}


_loaded = threading.local()  # the range view and ids a worker's thread read last


def _view_at(path: str, ids: str) -> tuple[Dataview, np.ndarray]:
    """The range view kept at `path` on this worker, and its users' ids kept at `ids`,
    read once for the tasks that follow on the same range (a table written part after
    part)."""
    last = getattr(_loaded, "last", None)
    if last is None or last[0] != path:
        _loaded.last = None  # the previous one goes before the next is read
        _loaded.last = (path, read_view(path), read_ids(ids))
    return _loaded.last[1], _loaded.last[2]


def _forget() -> None:
    _loaded.last = None


def _in_order(found: Iterable[tuple[int, pd.DataFrame]]) -> Iterator[pd.DataFrame]:
    """The parts numbered 0, 1, ... as they come, in their order."""
    waiting: dict[int, pd.DataFrame] = {}
    following = 0
    for i, part in found:
        waiting[i] = part
        while following in waiting:
            yield waiting.pop(following)
            following += 1


def _range_of(
    path: str, first: int, last: int, numbering: str | None = None, codes: Any = None
) -> ViewRange:
    """A kept range as a level reads it: its locations table only as long (no level
    reads a label; a bins view's is every bin, as many as its rows)."""
    view, locations = read_bare(path)
    view = replace(view, locations=pd.DataFrame(index=pd.RangeIndex(locations)))
    return ViewRange(view if numbering is None else view.numbered(numbering, codes), first, last)


def _range_call(path: str, method: str, args: tuple[Any, ...], i: int) -> tuple[int, Any]:
    """The kept range's `method(*args)` (Dataview.numbering's parts)."""
    view = read_view(path)
    return i, getattr(view, method)(*args)


def _range_told(path: str, method: str) -> Any:
    """What the kept range tells for a numbering (KeptView.codes_of)."""
    return getattr(read_view(path), method)()


def _numbered_of(codes: Any, told: list[Any]) -> Any:
    """The whole view's codes (KeptView.codes_of), from what its ranges told, joined."""
    return codes.of(told)


def _range_table(path: str, ids: str, lo: int, hi: int, i: int) -> tuple[int, Any]:
    view, user_ids = _view_at(path, ids)
    table = view.users(lo, hi).table(user_ids[lo:hi])
    if hi == view.n_users:
        _forget()
    return i, table


def _range_whole(path: str, i: int, users: np.ndarray | None = None) -> tuple[int, Dataview]:
    """The kept range's view, without its locations table (the whole view's, kept here
    once: KeptView.whole); only the rows of `users` (sorted codes in the range), if given."""
    view = read_bare(path)[0]
    if users is None:
        return i, view
    chosen = np.zeros(view.n_users, dtype=bool)
    chosen[users] = True
    return i, view.keep(chosen[view.user])


def _sees(path: str, i: int) -> tuple[int, bool]:
    return i, writes_as_its_owner(path, f"{os.path.basename(path)}-{i}")


def _range_written(path: str, ids: str, target: str, write: Write, i: int) -> tuple[int, None]:
    write(read_view(path), read_ids(ids), target)
    return i, None


def _made(ids: str, make: Make, arguments: tuple[Any, ...], i: int) -> tuple[int, pd.DataFrame]:
    return i, make(read_ids(ids), *arguments)


def _made_written(
    ids: str, make: Make, arguments: tuple[Any, ...], write: WriteFrame, target: str, i: int
) -> tuple[int, None]:
    write(make(read_ids(ids), *arguments), target)
    return i, None
