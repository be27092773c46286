"""Seeded synthetic mobility data over Pisa, for the demo and the tests.

The population: each person lives in one of a dozen neighbourhoods (denser in the
centre), most work at a building in one of a few employment hubs, and return to 2-10
favourite places (shops, gyms, bars; shared between people, with Zipf popularity), which
they prefer with heavy-tailed weights. Day by day, over several weeks: commutes on
working days, errands to favourite places, more errands at weekends.

- `gps`: car-like GPS fixes only while driving, every 1-3 minutes along the way, each trip
  ending at a parking spot near the destination (as the OctoTelematics data of Pratesi et al.,
  PRUDEnce);
  naive local times (Europe/Rome) in ISO-8601.
- `cdr`: network events (calls, texts, data) while people stay at places, each on the
  nearest tower (sometimes the second nearest), times as epoch seconds; plus the tower
  table.

Everything derives from one `numpy.random.Generator` seeded by the caller.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

CENTRE_LON = 10.4017
CENTRE_LAT = 43.7160
TIMEZONE = "Europe/Rome"
_M_PER_DEG_LAT = 110_540.0
_M_PER_DEG_LON = 111_320.0 * np.cos(np.radians(CENTRE_LAT))
HALF_WIDTH = 6_000.0  # metres east-west of the centre
HALF_HEIGHT = 5_000.0


@dataclass(frozen=True)
class Person:
    home: np.ndarray  # (2,) metres from the centre
    work: np.ndarray | None
    favourites: np.ndarray  # (k, 2)
    preference: np.ndarray  # (k,) sums to 1
    activity: float


@dataclass(frozen=True)
class Stay:
    place: np.ndarray  # (2,) metres
    start: float  # seconds since the first midnight (local)
    end: float


def to_lonlat(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return CENTRE_LON + xy[..., 0] / _M_PER_DEG_LON, CENTRE_LAT + xy[..., 1] / _M_PER_DEG_LAT


def population(users: int, rng: np.random.Generator) -> list[Person]:
    hood_centres = rng.normal(0, [2_200, 1_800], size=(12, 2))
    hood_weights = np.exp(-np.linalg.norm(hood_centres, axis=1) / 2_500)
    hood_weights /= hood_weights.sum()
    hubs = np.array(
        [[0, 0], [-1_800, 900], [1_200, -1_500], [3_800, -2_600], [-3_200, -2_800], [2_600, 2_200]],
        dtype=float,
    )
    hub_weights = np.array([0.35, 0.2, 0.15, 0.12, 0.1, 0.08])
    pois = hood_centres[rng.integers(0, 12, 160)] + rng.normal(0, 700, size=(160, 2))
    popularity = 1.0 / np.arange(1, 161) ** 1.1
    people = []
    for _ in range(users):
        home = hood_centres[rng.choice(12, p=hood_weights)] + rng.normal(0, 550, 2)
        work = None
        if rng.random() < 0.85:
            work = hubs[rng.choice(len(hubs), p=hub_weights)] + rng.normal(0, 350, 2)
        k = min(2 + rng.geometric(0.35), 10)
        near = popularity * np.exp(-np.linalg.norm(pois - home, axis=1) / 2_500)
        chosen = rng.choice(160, size=k, replace=False, p=near / near.sum())
        preference = 1.0 / np.arange(1, k + 1) ** 1.5
        people.append(
            Person(
                home,
                work,
                pois[chosen],
                preference / preference.sum(),
                float(rng.lognormal(0, 0.4)),
            )
        )
    return people


def stays_of(person: Person, days: int, start: dt.date, rng: np.random.Generator) -> list[Stay]:
    """The person's stays, in order; consecutive stays are separated by a drive."""
    stays: list[Stay] = []
    here, since = person.home, 0.0

    def go(place: np.ndarray, depart: float, arrive: float) -> None:
        nonlocal here, since
        stays.append(Stay(here, since, depart))
        here, since = place, arrive

    for day in range(days):
        midnight = day * 86_400.0
        weekend = (start + dt.timedelta(days=day)).weekday() >= 5
        clock = midnight + 7 * 3600 + rng.uniform(0, 2 * 3600)
        plan: list[np.ndarray] = []
        if person.work is not None and not weekend and rng.random() < 0.92:
            plan.append(person.work)
            if rng.random() < 0.3:
                plan.append(_favourite(person, rng))
            plan.append(person.home)
        errands = rng.poisson((1.6 if weekend else 0.6) * person.activity)
        for _ in range(errands):
            plan += [_favourite(person, rng), person.home]
        if not plan:
            continue
        if person.work is None or weekend:
            clock = midnight + 9.5 * 3600 + rng.uniform(0, 2 * 3600)
        for place in plan:
            if clock > midnight + 22.5 * 3600:
                break
            drive = np.linalg.norm(place - here) / rng.uniform(7, 11) + rng.uniform(240, 600)
            go(place, clock, clock + drive)
            if place is person.work:
                dwell = rng.uniform(7.5, 9.5) * 3600
            elif place is person.home:
                dwell = rng.uniform(0.6, 3.0) * 3600
            else:
                dwell = rng.uniform(0.5, 2.0) * 3600
            clock += drive + dwell
    stays.append(Stay(here, since, days * 86_400.0))
    return stays


def _favourite(person: Person, rng: np.random.Generator) -> np.ndarray:
    return person.favourites[rng.choice(len(person.preference), p=person.preference)]


def local_start(start: dt.date) -> pd.Timestamp:
    return pd.Timestamp(start.isoformat()).tz_localize(ZoneInfo(TIMEZONE))


Progress = Callable[[int, int, str], None]  # people made so far, of how many, what


def people(
    users: int, rng: np.random.Generator, progress: Progress | None
) -> Iterator[tuple[int, Person]]:
    """(index, person) of the population; `progress` hears each before it is made."""
    for index, person in enumerate(population(users, rng)):
        if progress is not None:
            progress(index, users, "making the sample's people")
        yield index, person


def generate_gps(
    users: int,
    days: int,
    seed: int,
    start: dt.date = dt.date(2011, 6, 1),
    progress: Progress | None = None,
) -> pd.DataFrame:
    """GPS fixes while driving: uid, datetime (naive, Europe/Rome), lat, lng."""
    rng = np.random.default_rng(seed)
    t0 = local_start(start)
    rows_user, rows_t, rows_xy = [], [], []
    for index, person in people(users, rng, progress):
        stays = stays_of(person, days, start, rng)
        for before, after in zip(stays, stays[1:], strict=False):
            depart, arrive = before.end, after.start
            steps = np.arange(depart, arrive, rng.uniform(60, 180))[1:]
            times = np.append(steps, arrive)
            share = (times - depart) / (arrive - depart)
            park = after.place + rng.normal(0, 35, 2)
            path = before.place + share[:, None] * (park - before.place)
            path[:-1] += rng.normal(0, 60, size=(len(times) - 1, 2))
            rows_user.append(np.full(len(times), index))
            rows_t.append(times)
            rows_xy.append(path)
    user = np.concatenate(rows_user)
    seconds = np.concatenate(rows_t)
    lon, lat = to_lonlat(np.concatenate(rows_xy))
    local = (t0 + pd.to_timedelta(np.round(seconds), unit="s")).tz_localize(None)
    return pd.DataFrame(
        {
            "uid": [f"u{u:04d}" for u in user],
            "datetime": local.strftime("%Y-%m-%dT%H:%M:%S"),
            "lat": np.round(lat, 5),
            "lng": np.round(lon, 5),
        }
    )


def generate_towers(seed: int, spacing: float = 750.0) -> pd.DataFrame:
    """Towers on a jittered lattice over the area: tower, lat, lon."""
    rng = np.random.default_rng([seed, 1])
    xs = np.arange(-HALF_WIDTH - spacing, HALF_WIDTH + spacing, spacing)
    ys = np.arange(-HALF_HEIGHT - spacing, HALF_HEIGHT + spacing, spacing * 0.87)
    grid = np.array([(x + (spacing / 2 if j % 2 else 0), y) for j, y in enumerate(ys) for x in xs])
    grid += rng.normal(0, spacing * 0.15, size=grid.shape)
    lon, lat = to_lonlat(grid)
    return pd.DataFrame(
        {
            "tower": [f"T{i:03d}" for i in range(len(grid))],
            "lat": np.round(lat, 5),
            "lon": np.round(lon, 5),
        }
    )


def generate_cdr(
    users: int,
    days: int,
    seed: int,
    start: dt.date = dt.date(2011, 6, 1),
    progress: Progress | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Network events at places (user, timestamp in epoch seconds, cell) and the towers."""
    towers = generate_towers(seed)
    tower_xy = np.column_stack(
        [
            (towers["lon"].to_numpy() - CENTRE_LON) * _M_PER_DEG_LON,
            (towers["lat"].to_numpy() - CENTRE_LAT) * _M_PER_DEG_LAT,
        ]
    )
    rng = np.random.default_rng(seed)
    t0 = local_start(start).timestamp()
    rows_user, rows_t, rows_tower = [], [], []
    for index, person in people(users, rng, progress):
        for stay in stays_of(person, days, start, rng):
            awake = _awake_seconds(stay.start, stay.end)
            n = rng.poisson(awake / 3600 * 0.35 * person.activity)
            if n == 0:
                continue
            times = np.sort(_awake_sample(stay.start, stay.end, n, rng))
            ranked = np.argsort(np.linalg.norm(tower_xy - stay.place, axis=1))[:2]
            pick = np.where(rng.random(n) < 0.8, ranked[0], ranked[1])
            rows_user.append(np.full(n, index))
            rows_t.append(times)
            rows_tower.append(pick)
    user = np.concatenate(rows_user)
    events = pd.DataFrame(
        {
            "caller": [f"c{u:04d}" for u in user],
            "timestamp": (t0 + np.round(np.concatenate(rows_t))).astype(np.int64),
            "cell": towers["tower"].to_numpy()[np.concatenate(rows_tower)],
        }
    )
    return events.sort_values(["timestamp", "caller"], ignore_index=True), towers


def _awake_seconds(start: float, end: float) -> float:
    """Seconds of [start, end) between 08:00 and 23:00 local."""
    total = 0.0
    for day in range(int(start // 86_400), int(end // 86_400) + 1):
        lo = max(start, day * 86_400 + 8 * 3600)
        hi = min(end, day * 86_400 + 23 * 3600)
        total += max(0.0, hi - lo)
    return total


def _awake_sample(start: float, end: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n uniform times in the awake part of [start, end)."""
    out = np.empty(0)
    while out.shape[0] < n:
        draw = rng.uniform(start, end, size=4 * n)
        hour = (draw % 86_400) / 3600
        out = np.concatenate([out, draw[(hour >= 8) & (hour < 23)]])
    return out[:n]
