"""The location side of the mobility measures (measures/mobility.py): the distinct
(person, location) pairs of a dataview's visits and its moves, and the measures of
each location — entropy, density, flow — over everyone, or over the people a mask keeps,
taken a chunk of pairs at a time rather than copied."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from prudence_cli.config.mobility import LOCATION_MEASURES, MEASURES, TRAJECTORY_ONLY

_CHUNK = 1 << 20  # pairs of the location measures taken at a time


def measures_for(trips: bool, chosen: Sequence[str] | None = None) -> tuple[str, ...]:
    """The measures of visits (the trip measures need `trips`, see `visits_of`), in the
    order of `chosen` (default: all of them)."""
    wanted = tuple(chosen) if chosen is not None else MEASURES
    unknown = [m for m in wanted if m not in MEASURES]
    if unknown:
        raise ValueError(f"unknown mobility measures: {', '.join(unknown)}")
    return tuple(m for m in wanted if trips or m not in TRAJECTORY_ONLY)


@dataclass(frozen=True)
class Tables:
    """What the location measures need, computed once: the distinct (person, location)
    pairs (sorted by person, then location) with their visits, and the moves (trips
    between two different locations) with their person."""

    pair_person: np.ndarray
    pair_location: np.ndarray
    pair_weight: np.ndarray
    move_person: np.ndarray
    origin: np.ndarray
    destination: np.ndarray
    n_locations: int
    trips: bool  # see Visits

    @classmethod
    def of(
        cls,
        person: np.ndarray,
        location: np.ndarray,
        weight: np.ndarray,
        n_locations: int,
        trips: bool,
    ) -> Tables:
        """The tables of visits: each row's person, location and weight (visits), in
        person order; `trips` as measures/mobility.Visits."""
        pairs = _pairs(person, location, weight, n_locations)
        same = person[1:] == person[:-1]
        here, there = location[:-1][same], location[1:][same]
        moved = here != there
        move_person = person[1:][same][moved]
        return cls(*pairs, move_person, here[moved], there[moved], n_locations, trips)

    def locations(self, chosen: Sequence[str] | None = None) -> pd.DataFrame:
        visited = np.flatnonzero(np.bincount(self.pair_location, minlength=self.n_locations))
        return pd.DataFrame({"location": visited, **self.measured(chosen, visited)})

    def measured(
        self,
        chosen: Sequence[str] | None = None,
        visited: np.ndarray | None = None,
        people: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """Per location measure, its value at each location `visited` (default: every
        location visited by anyone here), as floats; of the pairs and moves of `people`
        only (a mask per person; None: everyone's), taken a chunk of pairs at a time
        rather than copied: the same numbers as of a copy of their tables."""
        names = [m for m in measures_for(self.trips, chosen) if m in LOCATION_MEASURES]
        n = self.n_locations
        members = np.zeros(n, dtype=np.int64)  # the people visiting each location
        for group, _ in self._pairs_of(people):
            members += np.bincount(group, minlength=n)
        if visited is None:
            visited = np.flatnonzero(members)
        out: dict[str, np.ndarray] = {}
        if "location_entropy" in names:
            out["location_entropy"] = self._entropy(people, members)[visited]
        if "location_density" in names:
            tops, top_people = self._tops
            if people is not None:
                tops = tops[people[top_people]]
            out["location_density"] = np.bincount(tops, minlength=n)[visited].astype(float)
        if "flow" in names:
            origin, destination = self.origin, self.destination
            if people is not None:
                moves = people[self.move_person]
                origin, destination = origin[moves], destination[moves]
            flow = np.bincount(origin, minlength=n) + np.bincount(destination, minlength=n)
            out["flow"] = flow[visited].astype(float)
        return out

    def _pairs_of(self, people: np.ndarray | None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The (location, weight) of the pairs of `people` (None: everyone's), in pair
        order, a chunk at a time."""
        for lo in range(0, self.pair_location.shape[0], _CHUNK):
            group = self.pair_location[lo : lo + _CHUNK]
            weight = self.pair_weight[lo : lo + _CHUNK]
            if people is not None:
                kept = people[self.pair_person[lo : lo + _CHUNK]]
                group, weight = group[kept], weight[kept]
            yield group, weight

    def _entropy(self, people: np.ndarray | None, members: np.ndarray) -> np.ndarray:
        """`_normalised_entropy` of the locations over the pairs of `people`, summed in
        pair order a chunk at a time (np.add.at adds in order, as np.bincount does: the
        same sums, bit for bit)."""
        n = self.n_locations
        total = np.zeros(n)
        for group, weight in self._pairs_of(people):
            np.add.at(total, group, weight)
        entropy = np.zeros(n)
        for group, weight in self._pairs_of(people):
            np.add.at(entropy, group, _entropy_terms(weight, np.take(total, group)))
        return _normalised(entropy, members)

    @cached_property
    def _tops(self) -> tuple[np.ndarray, np.ndarray]:
        """Per person with visits, their most visited location; a tie goes to the lowest
        location code (pairs are sorted by person, then location); and those people."""
        person, weight = self.pair_person, self.pair_weight
        if person.size == 0:
            return np.zeros(0, dtype=np.int64), person
        starts = np.flatnonzero(np.r_[True, person[1:] != person[:-1]])
        highest = np.maximum.reduceat(weight, starts)
        at_top = np.flatnonzero(weight == np.repeat(highest, np.diff(np.r_[starts, person.size])))
        first = at_top[np.r_[True, person[at_top][1:] != person[at_top][:-1]]]
        return self.pair_location[first], person[first]

    def _top(self) -> np.ndarray:
        """Per person with visits, their most visited location (`_tops`)."""
        return self._tops[0]


def _pairs(
    person: np.ndarray, location: np.ndarray, weight: np.ndarray, n_locations: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (person, location) pairs sorted by person then location, with their
    summed weight."""
    key = person.astype(np.int64) * max(n_locations, 1) + location.astype(np.int64)
    if (key[1:] > key[:-1]).all():  # distinct and sorted already (a presence view's rows)
        return _codes(person), _codes(location), weight
    pairs, inverse = np.unique(key, return_inverse=True)
    summed = np.bincount(inverse.ravel(), weights=weight, minlength=pairs.shape[0])
    return _codes(pairs // max(n_locations, 1)), _codes(pairs % max(n_locations, 1)), summed


def _codes(values: np.ndarray) -> np.ndarray:
    """Person or location codes in 4 bytes each (both are int32 codes in a dataview)."""
    return values.astype(np.int32, copy=False)


def _normalised_entropy(group: np.ndarray, weight: np.ndarray, n: int) -> np.ndarray:
    """Per group (`group`: one entry per member, with its weight): the Shannon
    entropy of the members' shares over ln(members); 0 with one member, NaN with none."""
    total = np.bincount(group, weights=weight, minlength=n)
    members = np.bincount(group, minlength=n)
    terms = _entropy_terms(weight, np.take(total, group))
    return _normalised(np.bincount(group, weights=terms, minlength=n), members)


def _entropy_terms(weight: np.ndarray, total: np.ndarray) -> np.ndarray:
    """-share · ln(share) of each member, share = weight / its group's `total` (taken
    as the array of shares, in place: two arrays of a float per member)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        share = total.astype(float, copy=False)  # no member: int64 zeros
        np.divide(weight, share, out=share)
        positive = share > 0
        terms = np.zeros_like(share)
        np.log(share, out=terms, where=positive)
        np.multiply(terms, share, out=terms)
        np.negative(terms, out=terms)
        np.copyto(terms, 0.0, where=~positive)  # as -share·ln(share) is taken at 0: +0
    return terms


def _normalised(entropy: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Entropy over ln(members) per group: 0 with one member, NaN with none."""
    with np.errstate(invalid="ignore", divide="ignore"):
        normalised = np.where(members > 1, entropy / np.log(np.maximum(members, 2)), 0.0)
    return np.where(members > 0, normalised, np.nan)
