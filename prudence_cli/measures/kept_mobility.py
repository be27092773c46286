"""The mobility measures (measures/mobility.py) of a dataview kept on the Dask workers
(dataviews/on_workers.py), computed and compared there: the assessing process receives
per-place values and a few numbers per measure and risk threshold, never the view's
rows nor a person's measures.

- A person's measures are of their rows alone: each range of users is measured on the
  worker whose disk holds it, and kept there; the ranges' tables, one after the other,
  are the people's table of a local run. They are compared with the people kept at
  each risk threshold, and correlated with risk, on the workers too
  (measures/kept_compare.py).
- A place's entropy sums over the people visiting it: the (person, location) pairs are
  sent to shards by location (a location's pairs all to one shard, in person order), and
  each shard sums its locations' pairs in the order a local run sums them (places.Tables,
  whose sums run in pair order): the same numbers, to the bit. Each person's most
  visited place (for the density) is found in their range. A trajectory's flow through
  a place counts the moves from and to it: each move's two ends go to the shards of
  their places with the mover, and each shard counts those of the people kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from prudence_cli.config.mobility import (
    LOCATION_MEASURES,
    ORDERED_FORMATS,
    PERSON_MEASURES,
    THRESHOLDS,
)
from prudence_cli.measures.distributions import finite_sorted
from prudence_cli.measures.kept_compare import KeptPeople, RangeSample, range_samples
from prudence_cli.measures.mobility import (
    COMPARED,
    Visits,
    person_measures,
    place_rows,
    places_xy,
)
from prudence_cli.measures.places import Tables, measures_for

if TYPE_CHECKING:
    from prudence_cli.dataviews.on_workers import KeptView


def kept_profile(
    view: KeptView, crs: str, chosen: Sequence[str] | None = None, trips: bool = False
) -> KeptProfile | None:
    """The profile of a view kept on the workers (None when its locations are not
    places); `trips` as measures/mobility.visits_of: whether a trajectory's consecutive
    visits are trips between stays."""
    from prudence_cli.cluster_tasks import pinned, windowed  # Dask's: only then

    xy = places_xy(view.format, view.locations, crs)
    if xy is None:
        return None
    client = view.placed.kept.client
    ranges = view.ranges
    holders = {b.worker for b in ranges}
    workers = sorted(client.nthreads())
    n_locations = len(view.locations)
    ordered = view.format in ORDERED_FORMATS
    trips = ordered and trips
    (places,) = client.scatter([xy], broadcast=True, hash=False)
    measured = [
        pinned(
            client,
            b.worker,
            _range_measured,
            b.path,
            b.first,
            places,
            chosen,
            len(workers),
            (ordered, trips),
        )
        for b in ranges
    ]
    frames = [
        pinned(client, b.worker, _part_of, m, 0) for b, m in zip(ranges, measured, strict=True)
    ]
    tops = [pinned(client, b.worker, _part_of, m, 1) for b, m in zip(ranges, measured, strict=True)]

    def small(i: int) -> Any:
        return pinned(client, ranges[i].worker, _small, measured[i], i)

    found = dict(windowed(client, range(len(ranges)), small, holders))
    samples = [found[i] for i in range(len(ranges))]
    shards = [
        client.submit(
            _shard,
            n_locations,
            *(
                pinned(client, b.worker, _piece, m, j)
                for b, m in zip(ranges, measured, strict=True)
            ),
            pure=False,
            workers=[worker],
            allow_other_workers=True,
        )
        for j, worker in enumerate(workers)
    ]
    measured.clear()  # each range's pieces go once joined in their shards
    columns = [m for m in measures_for(trips, chosen) if m in PERSON_MEASURES]
    first = np.array([b.first for b in ranges] + [view.n_users], dtype=np.int64)
    if not ranges:  # nobody: no range to keep them
        first = np.array([0, view.n_users], dtype=np.int64)
        nobody = person_measures(_no_visits(view.n_users, xy, ordered, trips), chosen)
        frames = [client.scatter(nobody, hash=False)]
        samples = [range_samples(nobody)]
    workers_of = [b.worker for b in ranges] if ranges else None
    people = KeptPeople(client, frames, first, samples, columns, holders, None, workers_of)
    tables = KeptPlaces(
        client, shards, tops, first, workers_of or [], n_locations, holders | set(workers), trips
    )
    return KeptProfile(people, tables, chosen)


class KeptProfile:
    """A Profile (measures/mobility.py) whose people's measures stay on the workers:
    compared there (`KeptPeople`), the places' side as a local Profile's."""

    def __init__(self, people: KeptPeople, tables: KeptPlaces, chosen: Sequence[str] | None):
        self.kept_people = people
        self.tables = tables
        self.chosen = chosen
        self.places = tables.locations(chosen)
        self._sorted = {  # each place measure's full distribution, sorted once
            ("location", n): finite_sorted(self.places[n].to_numpy(dtype=float))
            for n in self.places.columns
            if n != "location"
        }
        self._place_rows: dict[bytes, list[dict[str, Any]]] = {}

    def compared(
        self, risks: Sequence[np.ndarray], thresholds: Sequence[float] = THRESHOLDS
    ) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
        """Profile.compared: the same tables."""
        people, correlation = self.kept_people.compared(risks, thresholds)
        frames = []
        for risk, rows in zip(risks, people, strict=True):
            found = [
                {"threshold": t, **row}
                for t, person_rows in zip(thresholds, rows, strict=True)
                for row in person_rows + self._places_kept(risk <= t)
            ]
            frames.append(pd.DataFrame(found, columns=["threshold", *COMPARED]))
        return frames, correlation

    def _places_kept(self, people: np.ndarray) -> list[dict[str, Any]]:
        """The place measures' rows for the people where `people` is True (each mask of
        people measured once)."""
        key = np.packbits(people).tobytes()
        if key not in self._place_rows:
            measured = self.tables.measured(self.chosen, people=people)
            self._place_rows[key] = place_rows(self._sorted, measured)
        return self._place_rows[key]


@dataclass
class KeptPlaces:
    """The places' side of a Profile (mobility.Places) from the shards of a view kept
    on the workers: location l's pairs are in shard l mod the number of shards."""

    client: Any
    shards: list[Any]  # futures of places.Tables
    tops: list[Any]  # per range, futures of its people's most visited places (`_part_of`)
    first: np.ndarray  # the first person of each range, and the last person + 1 at the end
    workers: list[str]  # the worker holding each range's
    n_locations: int
    holders: set[str]  # the workers the shards are made from and on
    trips: bool = False  # the view's visits are trips between stays (its moves flow)

    def locations(self, chosen: Sequence[str] | None = None) -> pd.DataFrame:
        visited, measured = self._measured(chosen, None, None)
        return pd.DataFrame({"location": visited, **measured})

    def measured(
        self,
        chosen: Sequence[str] | None = None,
        visited: np.ndarray | None = None,
        people: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """As places.Tables.measured: the same numbers."""
        return self._measured(chosen, visited, people)[1]

    def _density(self, people: np.ndarray | None) -> Callable[[int], Any]:
        """Submits range i's `_density` of the people where `people` is set (or all)."""
        from prudence_cli.cluster_tasks import pinned  # Dask's: only here

        def submit(i: int) -> Any:
            a, b = int(self.first[i]), int(self.first[i + 1])
            packed = None if people is None else np.packbits(people[a:b])
            return pinned(
                self.client,
                self.workers[i],
                _density,
                self.tops[i],
                self.n_locations,
                packed,
                b - a,
            )

        return submit

    def _measured(
        self, chosen: Sequence[str] | None, visited: np.ndarray | None, people: np.ndarray | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        from prudence_cli.cluster_tasks import windowed  # Dask's: only here

        names = [m for m in measures_for(self.trips, chosen) if m in LOCATION_MEASURES]
        entropy = "location_entropy" in names
        flow = "flow" in names
        packed = None if people is None else np.packbits(people)
        count = 0 if people is None else int(people.shape[0])
        shards = self.shards

        def submit(j: int) -> Any:
            return self.client.submit(
                _shard_measured, shards[j], packed, count, entropy, flow, j, pure=False
            )

        found = dict(windowed(self.client, range(len(shards)), submit, self.holders))
        n = self.n_locations
        members = np.zeros(n, dtype=np.int64)
        for j in range(len(shards)):
            members += found[j][0]
        if visited is None:
            visited = np.flatnonzero(members)
        out: dict[str, np.ndarray] = {}
        if entropy:
            values = np.empty(n)
            for j in range(len(shards)):  # each location's from its own shard
                own = np.arange(j, n, len(shards))
                values[own] = found[j][1][own]
            out["location_entropy"] = values[visited]
        if "location_density" in names:  # counts: the ranges' sums are exact in any order
            density = np.zeros(n, dtype=np.int64)
            for found_in in windowed(
                self.client, range(len(self.tops)), self._density(people), self.holders
            ):
                density += found_in
            out["location_density"] = density[visited].astype(float)
        if flow:  # counts: the shards' sums are exact in any order
            through = np.zeros(n, dtype=np.int64)
            for j in range(len(shards)):
                through += found[j][2]
            out["flow"] = through[visited].astype(float)
        return visited, out


def _no_visits(
    n_users: int, xy: tuple[np.ndarray, np.ndarray], ordered: bool = False, trips: bool = False
) -> Visits:
    offsets = np.zeros(n_users + 1, dtype=np.int64)
    nothing = np.zeros(0, dtype=np.int32)
    return Visits(offsets, nothing, nothing.astype(float), xy[0], xy[1], ordered, trips)


def _range_measured(
    path: str,
    first: int,
    xy: tuple[np.ndarray, np.ndarray],
    chosen: Any,
    shards: int,
    kind: tuple[bool, bool],
) -> tuple[pd.DataFrame, tuple[np.ndarray, np.ndarray], list[tuple[np.ndarray, ...]]]:
    """A range's people measures, each person's most visited place (persons among all),
    and its pairs cut into the shards of their locations (in pair order), with its moves'
    ends (mover, place) cut the same way. `kind`: whether the view's rows are single
    visits in time order, and trips between stays (measures/mobility.visits_of)."""
    from prudence_cli.cluster_views import read_bare

    ordered, trips = kind
    view, _ = read_bare(path)
    count = getattr(view, "count", None)
    if count is not None and not ordered:
        weight = np.asarray(count, dtype=float)
    else:
        weight = np.ones(view.location.shape[0])
    visits = Visits(view.offsets, view.location, weight, xy[0], xy[1], ordered, trips)
    n_locations = xy[0].shape[0]
    tables = Tables.of(visits.person, view.location, weight, n_locations, trips)
    del view
    pairs = (tables.pair_person, tables.pair_location, tables.pair_weight)
    people = person_measures(visits, chosen, pairs)
    top, top_person = tables._tops
    person = tables.pair_person.astype(np.int32) + np.int32(first)
    shard = tables.pair_location % shards
    mover = np.zeros(0, dtype=np.int32)
    end = np.zeros(0, dtype=np.int32)
    if trips:  # only trips between stays flow (a presence view's rows are no moves)
        mover = np.tile(tables.move_person.astype(np.int32) + np.int32(first), 2)
        end = np.concatenate([tables.origin, tables.destination]).astype(np.int32)
    end_shard = end % shards
    pieces: list[tuple[np.ndarray, ...]] = []
    for j in range(shards):
        at, ends = shard == j, end_shard == j
        pieces.append(
            (person[at], tables.pair_location[at], tables.pair_weight[at], mover[ends], end[ends])
        )
    return people, (top, top_person), pieces


def _part_of(measured: tuple[Any, ...], k: int) -> Any:
    """Part k of a range's `_range_measured`, kept on its worker: its people measures (0),
    or its people's most visited places and who (1, numbered in the range)."""
    return measured[k]


def _density(
    tops: tuple[np.ndarray, np.ndarray], n_locations: int, packed: np.ndarray | None, count: int
) -> np.ndarray:
    """Per place, the people of a range whose most visited place it is, of those where
    `packed` (np.packbits of a bool per person of the range) is set, or all."""
    top, person = tops
    if packed is not None:
        top = top[np.unpackbits(packed, count=count).astype(bool)[person]]
    return np.bincount(top, minlength=n_locations).astype(np.int64)


def _small(measured: tuple[pd.DataFrame, Any, Any], i: int) -> tuple[int, dict[str, RangeSample]]:
    """What the assessing process hears of a range's measures: a sample of each person
    measure."""
    return i, range_samples(measured[0])


def _piece(
    measured: tuple[Any, Any, list[tuple[np.ndarray, ...]]], j: int
) -> tuple[np.ndarray, ...]:
    return measured[2][j]


def _shard(n_locations: int, *pieces: tuple[np.ndarray, ...]) -> Tables:
    """A shard's pairs: the ranges' pieces one after the other (in person order); and
    the ends of their moves at its places, as the moves' (mover, origin) — each end
    counts once in its place's flow (`_shard_measured`)."""
    codes = np.zeros(0, np.int32)
    empty = (codes, codes, np.zeros(0), codes, codes)
    person, location, weight, mover, end = (
        np.concatenate([piece[i] for piece in pieces]) if pieces else empty[i] for i in range(5)
    )
    nothing = np.zeros(0, dtype=np.int32)
    return Tables(person, location, weight, mover, end, nothing, n_locations, False)


def _shard_measured(
    shard: Tables, packed: np.ndarray | None, count: int, entropy: bool, flow: bool, j: int
) -> tuple[int, tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]:
    """A shard's visitors per location, its locations' entropy (places.Tables), and the
    moves' ends at each (their flow)."""
    people = None if packed is None else np.unpackbits(packed, count=count).astype(bool)
    n = shard.n_locations
    members = np.zeros(n, dtype=np.int64)
    for group, _ in shard._pairs_of(people):
        members += np.bincount(group, minlength=n)
    through = None
    if flow:
        ends = shard.origin if people is None else shard.origin[people[shard.move_person]]
        through = np.bincount(ends, minlength=n)
    return j, (members, shard._entropy(people, members) if entropy else None, through)
