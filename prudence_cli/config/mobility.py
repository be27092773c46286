"""`utility.measures` and `utility.thresholds`: which mobility measures of Pellungrini,
Pappalardo, Pratesi and Monreale, "Analyzing Privacy Risk in Human Mobility Data" (section
2) `prudence assess` computes per dataview, and the risk thresholds t of the
distributions it compares (its section 5.3: the people at risk ≤ t against everyone).
The measures themselves are in measures/mobility.py; docs/mobility.md defines them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prudence_cli.config.reader import Reader
from prudence_cli.errors import shown

PERSON_MEASURES = (
    "radius_of_gyration",
    "mobility_entropy",
    "max_distance",
    "sum_distances",
    "visits",
    "locations",
)
LOCATION_MEASURES = ("location_entropy", "location_density", "flow")
MEASURES = (*PERSON_MEASURES, *LOCATION_MEASURES)
TRAJECTORY_ONLY = ("max_distance", "sum_distances", "flow")
UNITS = {"radius_of_gyration": "m", "max_distance": "m", "sum_distances": "m"}  # else none
# A release keeps a measure when the Kolmogorov–Smirnov statistic between its values on the
# dataview and on the release is at most this: the two cumulative distributions are never
# more than 10 percentage points apart (a small effect, by the usual reading of KS).
KEPT_KS = 0.1
# the paper's D_1, D_0.5, D_0.33, D_0.25: risks are 1/k, so its 0.33 is 1/3
THRESHOLDS = (1.0, 0.5, 1 / 3, 0.25)
ORDERED_FORMATS = ("trajectory", "segments")  # rows are single visits in time order
# formats whose locations are places: the others' are (place, time bin) profiles or clusters
PLACE_FORMATS = (*ORDERED_FORMATS, "presence", "probability")


def trips_between_stays(view_format: str, input_format: str, points: str) -> bool:
    """Whether consecutive visits of a dataview are trips between places people stay at,
    what the trip measures (longest trip, distance travelled, flow) need, as the paper's
    trips are: a trajectory dataview of call records (each event is where the person is)
    or of GPS points with `select.points: trip_ends` (where they park). Of GPS points as
    they move, consecutive visits are the cells they pass through; of segments, the
    streets they drive: not trips."""
    return view_format == "trajectory" and (input_format == "cdr" or points == "trip_ends")


def trips_in(config: Mapping[str, Any]) -> bool:
    """`trips_between_stays` of a config as written (a catalog's manifest keeps it)."""

    def part(key: str) -> Mapping[str, Any]:
        value = config.get(key)
        return value if isinstance(value, Mapping) else {}

    return trips_between_stays(
        str(part("dataview").get("format", "")),
        str(part("input").get("format", "gps")),
        str(part("select").get("points", "all")),
    )


TRIPS_NEEDED = (
    "needs trips between the places people stay at: a trajectory dataview of call "
    "records, or of GPS points with select.points: trip_ends"
)


@dataclass(frozen=True)
class MobilityConfig:
    """What `assess` measures: `measures` (None: every one a dataview's format allows;
    empty: none) at each risk threshold of `thresholds`; `trips`: whether the dataviews'
    visits are trips between stays (`trips_between_stays`)."""

    measures: tuple[str, ...] | None = None
    thresholds: tuple[float, ...] = THRESHOLDS
    trips: bool = False

    @property
    def enabled(self) -> bool:
        return self.measures is None or bool(self.measures)


def parse_mobility(
    r: Reader, data: object, view_format: str, input_format: str, points: str
) -> MobilityConfig:
    """`utility.measures`: a list of measure names, `all` (the default) or `none`;
    `utility.thresholds`: a list of risks in (0, 1] (default 1, 1/2, 1/3, 1/4). A
    measure the dataviews cannot give is an error."""
    trips = trips_between_stays(view_format, input_format, points)
    if not isinstance(data, dict):
        return MobilityConfig(trips=trips)
    measures: tuple[str, ...] | None = None
    if "measures" in data:
        value = data["measures"]
        key = "utility.measures"
        if value == "all":
            measures = None
        elif value == "none":
            measures = ()
        else:
            if not isinstance(value, list) or not value:
                r.fail(key, f"{shown(value)} must be all, none or a list of measure names")
            names = [r.choice(v, f"{key}[{i}]", MEASURES) for i, v in enumerate(value)]
            for i, name in enumerate(names):
                if name in names[:i]:
                    r.fail(f"{key}[{i}]", f"{name} is named twice")
                if name in TRAJECTORY_ONLY and not trips:
                    here = f"{view_format} dataviews of {input_format} input"
                    if input_format == "gps":
                        here += f" with select.points: {points}"
                    r.fail(f"{key}[{i}]", f"{name} {TRIPS_NEEDED} (here: {here})")
            if view_format not in PLACE_FORMATS:
                r.fail(key, f"{view_format} dataviews hold no places to measure; write none")
            measures = tuple(names)
    thresholds: tuple[float, ...] = THRESHOLDS
    if "thresholds" in data:
        value = data["thresholds"]
        key = "utility.thresholds"
        if not isinstance(value, list) or not value:
            r.fail(key, f"{shown(value)} must be a non-empty list of risks in (0, 1]")
        found = []
        for i, v in enumerate(value):
            t = _fraction(v) if isinstance(v, str) else r.number(v, f"{key}[{i}]")
            if t is None or not 0 < t <= 1:
                r.fail(
                    f"{key}[{i}]",
                    f"{shown(v)} is not a risk in (0, 1] (a number or a fraction such as 1/3)",
                )
            found.append(t)
        for i, t in enumerate(found):
            if t in found[:i]:
                r.fail(f"{key}[{i}]", f"{shown(value[i])} is the threshold {t:g} again")
        thresholds = tuple(found)
    return MobilityConfig(measures, thresholds, trips)


def _fraction(text: str) -> float | None:
    """ "1/3" → 1/3 (YAML reads it as text), and a number written as text ("0.5") as
    that number; None otherwise."""
    top, slash, bottom = text.partition("/")
    if not slash:
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    if not top.strip().isdigit() or not bottom.strip().isdigit():
        return None
    return int(top) / int(bottom) if int(bottom) else None
