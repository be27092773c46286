"""What a release still tells an analyst: the mobility measures of Pellungrini, Pappalardo,
Pratesi and Monreale, "Analyzing Privacy Risk in Human Mobility Data" (section 2), per
person and per location, and how removing the risky people distorts their distributions
(section 5).

The measures are computed on a dataview's rows, vectorized over all people at once:
`Visits` holds, per person, rows of (location, visits) — one row per visit in time order
for a trajectory, one row per (person, location) with its count otherwise. Distances are
Euclidean on the projected coordinates (metres) of the locations.

Per person:

- `radius_of_gyration` √(Σ_v w_v |r_v − r_cm|² / Σ_v w_v), r_cm the visit-weighted centre
  of mass of the person's locations (González, Hidalgo, Barabási, "Understanding
  individual human mobility patterns");
- `mobility_entropy` the Shannon entropy of the person's visits over their locations,
  −Σ_l p_l ln p_l with p_l their share of the person's visits, divided by ln of the number
  of distinct locations (1: every place visited as often; 0: one place) (Eagle and
  Pentland, "Reality mining");
- `max_distance` and `sum_distances` (trajectories only): the longest and the total length
  of the person's trips, a trip being two consecutive visits;
- `visits` and `locations`: the person's visits and distinct locations.

Per location:

- `location_entropy` the entropy of who visits it, −Σ_u q_u ln q_u with q_u the share of
  its visits made by person u, divided by ln of its number of visitors (0 with one);
- `location_density` the number of people whose most visited location it is (a tie goes
  to the first of the tied locations in the table's order);
- `flow` (trajectories only): the trips with it as origin or as destination, a trip being
  two consecutive visits of a person to different locations.

Distortion: each measure's distribution on the people (or locations) left after removing
those above a risk threshold, against the full dataview's, by the Kolmogorov–Smirnov
statistic and the 1-Wasserstein distance, with quantiles; and the Pearson and Spearman
correlation of each per-person measure with risk (the paper's Table 1). The statistics
are in measures/distributions.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

from prudence_cli.config.mobility import (
    ORDERED_FORMATS,
    PERSON_MEASURES,
    PLACE_FORMATS,
    THRESHOLDS,
)
from prudence_cli.measures.distributions import (
    QUANTILES,
    RankMemo,
    compare_sorted,
    compare_subset,
    finite_sorted,
    risk_correlation,
    sorted_quantiles,
)
from prudence_cli.measures.places import Tables, _normalised_entropy, _pairs, measures_for

if TYPE_CHECKING:
    from prudence_cli.dataviews.base import Dataview


class Places(Protocol):
    """What a Profile reads of the places (measures/places.Tables, or the same computed
    on the workers)."""

    def locations(self, chosen: Sequence[str] | None = None) -> pd.DataFrame: ...

    def measured(
        self,
        chosen: Sequence[str] | None = None,
        visited: np.ndarray | None = None,
        people: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]: ...


class Measured(Protocol):
    """A dataview's measures as `assess` compares and stores them: a Profile, or the
    same kept on the Dask workers (measures/kept_mobility.KeptProfile)."""

    places: pd.DataFrame  # per location visited: its code, then its measures

    def compared(
        self, risks: Sequence[np.ndarray], thresholds: Sequence[float] = THRESHOLDS
    ) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]: ...


# the columns of a comparison (Profile.compare), per measure
COMPARED = (
    "kind",
    "measure",
    "ks",
    "wasserstein",
    "n_full",
    "n_kept",
    "median_full",
    *(f"q{round(q * 100)}" for q in QUANTILES),
)


@dataclass(frozen=True)
class Visits:
    """Per person, the rows of their visits: person p's rows are [offsets[p],
    offsets[p + 1]); `location` codes index `x` and `y` (metres)."""

    offsets: np.ndarray  # int64, people + 1
    location: np.ndarray  # int per row
    weight: np.ndarray  # visits per row (1 per row for a trajectory)
    x: np.ndarray  # per location
    y: np.ndarray  # per location
    ordered: bool  # rows are single visits in time order (a trajectory)
    trips: bool = False  # consecutive rows are trips between stays (trips_between_stays)

    @property
    def people(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def person(self) -> np.ndarray:
        """The person of each row."""
        return np.repeat(np.arange(self.people), np.diff(self.offsets))


def visits_of(view: Dataview, crs: str, trips: bool) -> Visits | None:
    """The visits of a dataview, its locations projected to `crs`; None for a format
    whose locations are not places. `trips`: whether its consecutive visits are trips
    between stays (config/mobility.py, `trips_between_stays`: a trajectory of call
    records or of trip ends), which the trip measures need."""
    places = places_xy(view.format, view.locations, crs)
    if places is None:
        return None
    x, y = places
    ordered = view.format in ORDERED_FORMATS
    count = getattr(view, "count", None)
    weight = (
        np.asarray(count, dtype=float)
        if count is not None and not ordered
        else np.ones(view.location.shape[0])
    )
    return Visits(view.offsets, view.location, weight, x, y, ordered, ordered and trips)


def places_xy(
    view_format: str, locations: pd.DataFrame, crs: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """The locations of a dataview of `view_format` projected to `crs` (metres); None
    for a format whose locations are not places, or locations without coordinates."""
    if view_format not in PLACE_FORMATS or not {"lon", "lat"} <= set(locations.columns):
        return None
    lon = locations["lon"].to_numpy(dtype=float)
    lat = locations["lat"].to_numpy(dtype=float)
    if np.isnan(lon).any() or np.isnan(lat).any():
        return None
    from prudence_cli.space import project  # pyproj: only when something is measured

    x, y = project(lon, lat, crs)
    return x, y


def person_measures(
    visits: Visits,
    chosen: Sequence[str] | None = None,
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> pd.DataFrame:
    """One row per person (NaN for a person without visits), one column per measure;
    `pairs`: the visits' (person, location) pairs (`_pairs`), when already known."""
    names = [m for m in measures_for(visits.trips, chosen) if m in PERSON_MEASURES]
    person = visits.person
    n = visits.people
    w = visits.weight.astype(float)
    total = np.bincount(person, weights=w, minlength=n)
    present = total > 0
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        if "radius_of_gyration" in names:
            x, y = visits.x[visits.location], visits.y[visits.location]
            cx = np.bincount(person, weights=w * x, minlength=n) / total
            cy = np.bincount(person, weights=w * y, minlength=n) / total
            spread = w * ((x - cx[person]) ** 2 + (y - cy[person]) ** 2)
            out["radius_of_gyration"] = np.sqrt(
                np.maximum(np.bincount(person, weights=spread, minlength=n) / total, 0.0)
            )
        if {"mobility_entropy", "locations"} & set(names):
            pair_person, _, pair_weight = pairs or _pairs(
                person, visits.location, w, visits.x.shape[0]
            )
            distinct = np.bincount(pair_person, minlength=n)
            if "mobility_entropy" in names:
                out["mobility_entropy"] = _normalised_entropy(pair_person, pair_weight, n)
            if "locations" in names:
                out["locations"] = np.where(present, distinct, np.nan)
        if "visits" in names:
            out["visits"] = np.where(present, total, np.nan)
        if {"max_distance", "sum_distances"} & set(names):
            trip, length = _trips(visits, person)
            if "max_distance" in names:
                longest = np.zeros(n)
                if trip.size:  # trips are sorted by person
                    starts = np.flatnonzero(np.r_[True, trip[1:] != trip[:-1]])
                    longest[trip[starts]] = np.maximum.reduceat(length, starts)
                out["max_distance"] = np.where(present, longest, np.nan)
            if "sum_distances" in names:
                summed = np.bincount(trip, weights=length, minlength=n)
                out["sum_distances"] = np.where(present, summed, np.nan)
    # one row per person even when no person measure is chosen
    return pd.DataFrame({name: out[name] for name in names}, index=pd.RangeIndex(n))


def location_measures(visits: Visits, chosen: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per location visited by anyone (column `location`: its code), one column
    per location measure."""
    return _tables(visits).locations(chosen)


def _tables(visits: Visits) -> Tables:
    """The (person, location) pairs and the moves of `visits` (measures/places.py)."""
    weight = visits.weight.astype(float)
    return Tables.of(visits.person, visits.location, weight, visits.x.shape[0], visits.trips)


def _trips(visits: Visits, person: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per trip (two consecutive visits of a person, `person` the person of each row):
    its person and its length."""
    same = person[1:] == person[:-1]
    here, there = visits.location[:-1][same], visits.location[1:][same]
    length = np.hypot(visits.x[there] - visits.x[here], visits.y[there] - visits.y[here])
    return person[1:][same], length


class Profile:
    """A dataview's measures, computed once, to compare with what is left after removing
    people: by risk threshold (`by_threshold`) or as a release keeps them (`against`)."""

    def __init__(self, visits: Visits, chosen: Sequence[str] | None = None) -> None:
        tables = _tables(visits)
        pairs = (tables.pair_person, tables.pair_location, tables.pair_weight)
        self._measured(tables, person_measures(visits, chosen, pairs), chosen)

    @classmethod
    def of(cls, tables: Places, people: pd.DataFrame, chosen: Sequence[str] | None) -> Profile:
        """The profile of measures computed elsewhere: `people` (`person_measures`) and
        the places' `tables` (measures/kept_mobility.py: on the workers)."""
        profile = cls.__new__(cls)
        profile._measured(tables, people, chosen)
        return profile

    def _measured(self, tables: Places, people: pd.DataFrame, chosen: Sequence[str] | None) -> None:
        self.chosen = chosen
        self.tables = tables
        self.people = people
        self.places = tables.locations(chosen)
        self._kept: dict[bytes, list[dict[str, Any]]] = {}
        self._columns = {name: self.people[name].to_numpy(dtype=float) for name in self.people}
        # per person measure, the people with a value in the order of their values
        self._order = {
            name: np.argsort(values, kind="stable")[: np.count_nonzero(~np.isnan(values))]
            for name, values in self._columns.items()
        }
        self._sorted = {  # each full distribution sorted once, without NaN
            **{("person", n): self._columns[n][order] for n, order in self._order.items()},
            **{
                ("location", n): finite_sorted(self.places[n].to_numpy(dtype=float))
                for n in self.places.columns
                if n != "location"
            },
        }
        self._ranks = RankMemo()
        for name, order in self._order.items():  # Spearman ranks each measure's values
            present = ~np.isnan(self._columns[name])  # without NaN: their order is known
            self._ranks.remember(self._columns[name][present], (np.cumsum(present) - 1)[order])

    def kept(self, people: np.ndarray) -> pd.DataFrame:
        """Per measure, the distribution on the people where `people` is True (and the
        locations as they visit them) against the full one: KS, Wasserstein, counts and
        quantiles. A person's measures are theirs alone, so theirs are the full ones."""
        return pd.DataFrame(self._kept_rows(people), columns=COMPARED)

    def _kept_rows(self, people: np.ndarray) -> list[dict[str, Any]]:
        """`kept`'s rows; the same people (often, at two thresholds or two attack levels)
        are compared once."""
        key = np.packbits(people).tobytes()
        if key not in self._kept:
            self._kept[key] = self._compared(people)
        return self._kept[key]

    def _compared(self, people: np.ndarray) -> list[dict[str, Any]]:
        """The kept people's measures are a part of everyone's: compared in one pass over
        the sorted values (compare_subset); the places' are measured again."""
        rows = []
        for name, order in self._order.items():
            full = self._sorted["person", name]
            kept = people[order]
            rows.append(
                {
                    "kind": "person",
                    "measure": name,
                    **compare_subset(full, kept),
                    **sorted_quantiles(full[kept]),
                }
            )
        return rows + place_rows(self._sorted, self.tables.measured(self.chosen, people=people))

    def values_at(self, people: np.ndarray) -> dict[str, np.ndarray]:
        """Each measure's values on the people where `people` is True, the location
        measures as they visit the locations."""
        kept = {name: values[people] for name, values in self._columns.items()}
        return {**kept, **self.tables.measured(self.chosen, people=people)}

    def against(self, released: Visits) -> pd.DataFrame:
        """The same comparison with the measures recomputed on a release's visits (a
        release may also have removed locations of the people it keeps)."""
        return self.compare(*self.measures_of(released))

    def measures_of(self, visits: Visits) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The person and location measures of other visits, as chosen here."""
        return person_measures(visits, self.chosen), location_measures(visits, self.chosen)

    def by_threshold(
        self, risk: np.ndarray, thresholds: Sequence[float] = THRESHOLDS
    ) -> pd.DataFrame:
        """`kept` for D_t, the people at risk ≤ t, per threshold t (the paper's section
        5.3), with a `threshold` column first."""
        rows = [{"threshold": t, **row} for t in thresholds for row in self._kept_rows(risk <= t)]
        return pd.DataFrame(rows, columns=["threshold", *COMPARED])

    def correlation(self, risk: np.ndarray) -> pd.DataFrame:
        return risk_correlation(self._columns, risk, self._ranks)

    def compared(
        self, risks: Sequence[np.ndarray], thresholds: Sequence[float] = THRESHOLDS
    ) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
        """`by_threshold` and `correlation` under each of `risks`."""
        return (
            [self.by_threshold(risk, thresholds) for risk in risks],
            [self.correlation(risk) for risk in risks],
        )

    def compare(self, people: pd.DataFrame, places: pd.DataFrame) -> pd.DataFrame:
        """Per measure, these people's and places' distribution against the full one."""
        return pd.DataFrame(
            self._rows(_arrays(people), _arrays(places.drop(columns="location"))),
            columns=COMPARED,
        )

    def _rows(
        self, people: dict[str, np.ndarray], places: dict[str, np.ndarray]
    ) -> list[dict[str, Any]]:
        return _compared_rows(self._sorted, "person", people) + place_rows(self._sorted, places)


def place_rows(
    full: Mapping[tuple[str, str], np.ndarray], places: Mapping[str, np.ndarray]
) -> list[dict[str, Any]]:
    """Per location measure of `places`, its distribution against the full one (`full`,
    sorted, by ("location", measure))."""
    return _compared_rows(full, "location", places)


def _compared_rows(
    full: Mapping[tuple[str, str], np.ndarray], kind: str, columns: Mapping[str, np.ndarray]
) -> list[dict[str, Any]]:
    rows = []
    for name, values in columns.items():
        left = finite_sorted(values)
        rows.append(
            {
                "kind": kind,
                "measure": name,
                **compare_sorted(full[kind, name], left),
                **sorted_quantiles(left),
            }
        )
    return rows


def _arrays(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    return {name: frame[name].to_numpy(dtype=float) for name in frame.columns}


def by_threshold(
    visits: Visits,
    risk: np.ndarray,
    thresholds: Sequence[float] = THRESHOLDS,
    chosen: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per threshold t and measure: the distribution on D_t (the people at risk ≤ t, and
    the locations as they visit them) against the full dataview's — KS, Wasserstein,
    counts and quantiles (the paper's section 5.3)."""
    return Profile(visits, chosen).by_threshold(risk, thresholds)


def release_distortion(
    before: Dataview,
    after: Dataview,
    crs: str | None,
    trips: bool,
    chosen: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Per mobility measure the dataview allows (of `chosen`, default all; `trips`: see
    `visits_of`): its distribution on the dataview `before` and on its release `after`
    (KS, Wasserstein, counts and medians), as a release report records it; empty for a
    format without places."""
    full = visits_of(before, crs, trips) if crs else None
    released = visits_of(after, crs, trips) if crs else None
    if full is None or released is None:
        return []
    table = Profile(full, chosen).against(released)
    return [
        {
            "measure": row["measure"],
            "of": "people" if row["kind"] == "person" else "places",
            "ks": _number(row["ks"]),
            "wasserstein": _number(row["wasserstein"]),
            "count_before": int(row["n_full"]),
            "count_released": int(row["n_kept"]),
            "median_before": _number(row["median_full"]),
            "median_released": _number(row["q50"]),
        }
        for _, row in table.iterrows()
    ]


def _number(value: float) -> float | None:
    return None if value is None or np.isnan(value) else float(value)
