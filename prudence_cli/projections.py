"""Which projected CRS the points are placed in (DESIGN.md section 4).

The CRS, unless the config gives one (`crs:`), is chosen from the data's extent
(`choose_projection`): the UTM zone of the data's mean point when every point lies in
that zone, as Prudence always did; otherwise an equal-area projection, so that every cell
covers its nominal area, centred on the data: the Lambert azimuthal one on the middle of
the data or on the pole of its hemisphere, or the Albers conic one fitted to the data's
latitudes, whichever distorts lengths least over the data. A cluster's ranges of users
each tell their `Spread`, and the spreads joined choose as all the points would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyproj
from pyproj.aoi import AreaOfInterest
from pyproj.database import query_utm_crs_info

from prudence_cli.space import distinct_cells

# the scale error is measured on at most this many distinct positions (see `Spread`)
MEASURED_POSITIONS = 100_000
# a scale error above this is worth a warning: a "1 km" cell more than 10 m off
WARN_ABOVE = 0.01


@dataclass(frozen=True)
class Projection:
    """The projected CRS of the points, the rule that chose it, and its scale error.

    The scale error is the worst |s − 1| over the data's positions and every direction,
    s being the projection's scale factor there (the semi-axes of Tissot's indicatrix):
    a length of 1 km on the grid measures about 1 ± scale_error km on the ground."""

    crs: str
    rule: str  # config | utm | azimuthal | conic | polar
    scale_error: float
    worst: tuple[float, float]  # lon, lat of a position with that error

    def warning(self, above: float = WARN_ABOVE) -> str | None:
        """One line for the user when the scale error exceeds `above`; None otherwise."""
        if self.scale_error <= above:
            return None
        lon, lat = self.worst
        how = (
            f"distorts lengths by up to {self.scale_error:.1%} over the data"
            if np.isfinite(self.scale_error)
            else "cannot measure its distortion everywhere on the data"
        )
        hint = "choose a crs that suits the data" if self.rule == "config" else "set crs"
        return (
            f"warning: the projection {self.crs} {how} (at lon {lon:.2f}, lat {lat:.2f}), "
            f"so cells there are not their nominal size; {hint} in the config to change it"
        )


@dataclass(frozen=True)
class Spread:
    """What choosing a projection needs of the points: their number, the sums and bounds
    of their longitudes and latitudes, and their distinct positions rounded to each of
    ROUNDINGS (None where they are more than MEASURED_POSITIONS, except at the last
    step). The spread of shares of the points, `joined`, is the spread of all of them
    (the sums may differ from a single sum in their last bits)."""

    count: int
    sums: tuple[float, float]  # of lon, of lat
    bounds: tuple[float, float, float, float]  # lon min, lon max, lat min, lat max
    # cells (kx, ky) per step, up to the first with few enough (all of them: every_step)
    rounded: tuple[tuple[np.ndarray, np.ndarray] | None, ...]

    @staticmethod
    def of(
        lon: np.ndarray,
        lat: np.ndarray,
        distinct: tuple[np.ndarray, np.ndarray] | None = None,
        every_step: bool = False,
    ) -> Spread:
        """`distinct`: the distinct positions among the points, when known (faster).
        Positions are rounded to each step until they are few enough, or to every step
        when `every_step` (a share of the points: the shares together may be more)."""
        lon = np.asarray(lon, dtype=float)
        lat = np.asarray(lat, dtype=float)
        if lon.size == 0:
            raise ValueError("no points to choose a projection for")
        at = distinct if distinct is not None else (lon, lat)
        rounded = []
        for step in ROUNDINGS:
            kx, ky, _ = distinct_cells(_rounded(at[0], step), _rounded(at[1], step), inverse=False)
            last = step == ROUNDINGS[-1]  # the last step's are kept however many
            rounded.append((kx, ky) if kx.size <= MEASURED_POSITIONS or last else None)
            if rounded[-1] is not None and not every_step:
                break
        bounds = (float(np.min(lon)), float(np.max(lon)), float(np.min(lat)), float(np.max(lat)))
        sums = (float(np.add.reduce(lon)), float(np.add.reduce(lat)))
        return Spread(lon.size, sums, bounds, tuple(rounded))

    @staticmethod
    def joined(spreads: list[Spread]) -> Spread:
        """The spread of the shares' points together (in the order given)."""
        if not spreads:
            raise ValueError("no points to choose a projection for")
        if any(len(s.rounded) < len(ROUNDINGS) for s in spreads):
            raise ValueError("shares of the points are rounded to every step (every_step)")
        rounded: list[tuple[np.ndarray, np.ndarray] | None] = []
        for k in range(len(ROUNDINGS)):
            cells = [s.rounded[k] for s in spreads]
            if any(c is None for c in cells):
                rounded.append(None)
                continue
            kx = np.concatenate([c[0] for c in cells if c is not None])
            ky = np.concatenate([c[1] for c in cells if c is not None])
            ux, uy, _ = distinct_cells(kx, ky, inverse=False)
            last = k == len(ROUNDINGS) - 1
            rounded.append((ux, uy) if ux.size <= MEASURED_POSITIONS or last else None)
        lon_sum = sum(s.sums[0] for s in spreads)
        lat_sum = sum(s.sums[1] for s in spreads)
        bounds = (
            min(s.bounds[0] for s in spreads),
            max(s.bounds[1] for s in spreads),
            min(s.bounds[2] for s in spreads),
            max(s.bounds[3] for s in spreads),
        )
        return Spread(sum(s.count for s in spreads), (lon_sum, lat_sum), bounds, tuple(rounded))

    def positions(self) -> tuple[np.ndarray, np.ndarray]:
        """The data's distinct positions rounded to 0.01° (about 1 km), or to 0.1° or 1°
        when there are more than MEASURED_POSITIONS of them: the extent and the scale error
        are measured on these, so that they cost little on millions of points. In the
        order of their rounded longitude, then latitude."""
        for step, cells in zip(ROUNDINGS, self.rounded, strict=False):
            if cells is not None:
                return cells[0] * step, cells[1] * step
        raise AssertionError("the last step's positions are always kept")


# the steps, in degrees, of the positions the scale error is measured on (Spread)
ROUNDINGS = (0.01, 0.1, 1.0)


def choose_projection(
    lon: np.ndarray,
    lat: np.ndarray,
    crs: str | None = None,
    distinct: tuple[np.ndarray, np.ndarray] | None = None,
) -> Projection:
    """The given CRS, else the UTM zone of the data when it fits one, else the centred
    equal-area projection that distorts least (see the module docstring); with its scale
    error over the data. `distinct`: the distinct positions among the points, when known:
    the same projection, found faster."""
    return projection_of(Spread.of(lon, lat, distinct), crs)


def projection_of(spread: Spread, crs: str | None = None) -> Projection:
    """`choose_projection` from the points' spread."""
    at = spread.positions()
    if crs is not None:
        return _measured(crs, "config", *at)
    zone = _utm_zone(spread.sums[0] / spread.count, spread.sums[1] / spread.count, spread.bounds)
    if zone is not None:
        return _measured(zone, "utm", *at)
    west, width, south, north = _extent(*at)
    middle = west + width / 2
    candidates: list[tuple[str, str]] = []
    if width <= 180:
        candidates.append((_laea((south + north) / 2, middle), "azimuthal"))
        conic = _albers(south, north, (south + north) / 2, middle)
        if conic is not None:
            candidates.append((conic, "conic"))
    if width > 180 or south >= 0 or north <= 0:  # around a pole, or in one hemisphere
        candidates.append((_laea(90.0 if south + north >= 0 else -90.0, 0.0), "polar"))
    measured = [_measured(c, rule, *at) for c, rule in candidates]
    return min(measured, key=lambda p: p.scale_error)


def utm_zone(lon: np.ndarray, lat: np.ndarray) -> str | None:
    """The WGS 84 UTM zone (as EPSG:xxxxx) of the points' mean, when every point lies in
    that zone's area of use (its 6° of longitude, 80° S to 84° N); None otherwise."""
    bounds = (float(np.min(lon)), float(np.max(lon)), float(np.min(lat)), float(np.max(lat)))
    return _utm_zone(float(np.mean(lon)), float(np.mean(lat)), bounds)


def _utm_zone(c_lon: float, c_lat: float, bounds: tuple[float, float, float, float]) -> str | None:
    """`utm_zone` of points of mean (c_lon, c_lat) within `bounds` (lon min, lon max,
    lat min, lat max)."""
    if not (np.isfinite(c_lon) and np.isfinite(c_lat)):
        return None
    edge = abs(c_lon / 6 - round(c_lon / 6)) < 1e-9 or abs(c_lat) < 1e-9
    if not edge and -180 < c_lon < 180 and -80 < c_lat < 84:
        # inside one zone's area of use: its number and hemisphere by arithmetic (the
        # projection database takes about 0.1 s to say the same); on an edge, ask it
        zone = int((c_lon + 180) // 6) + 1
        west = -180.0 + 6 * (zone - 1)
        south, north = (0.0, 84.0) if c_lat > 0 else (-80.0, 0.0)
        crs, edges = f"EPSG:{(32600 if c_lat > 0 else 32700) + zone}", (west, west + 6)
    else:
        found = query_utm_crs_info(
            datum_name="WGS 84",
            area_of_interest=AreaOfInterest(c_lon, c_lat, c_lon, c_lat),
        )
        if not found or found[0].area_of_use is None:
            return None
        area = found[0].area_of_use
        crs, edges = f"{found[0].auth_name}:{found[0].code}", (area.west, area.east)
        south, north = area.south, area.north
    lon_min, lon_max, lat_min, lat_max = bounds
    inside = lon_min >= edges[0] and lon_max <= edges[1] and lat_min >= south and lat_max <= north
    return crs if inside else None


def scale_errors(crs: str, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """max(|a − 1|, |b − 1|) per position, a and b the semi-axes of Tissot's indicatrix
    (the largest and smallest scale factor there); inf where the CRS cannot say."""
    try:
        factors = pyproj.Proj(crs).get_factors(lon, lat)
    except (pyproj.exceptions.ProjError, pyproj.exceptions.CRSError):
        return np.full(np.shape(lon), np.inf)
    a = np.asarray(factors.tissot_semimajor, dtype=float)
    b = np.asarray(factors.tissot_semiminor, dtype=float)
    with np.errstate(invalid="ignore"):
        error: np.ndarray = np.maximum(np.abs(a - 1), np.abs(b - 1))
    error[~np.isfinite(error)] = np.inf
    return error


def _measured(crs: str, rule: str, lon: np.ndarray, lat: np.ndarray) -> Projection:
    error = scale_errors(crs, lon, lat)
    worst = int(np.argmax(error)) if error.size else 0
    where = (float(lon[worst]), float(lat[worst])) if error.size else (0.0, 0.0)
    return Projection(crs, rule, float(error[worst]) if error.size else 0.0, where)


def _rounded(values: np.ndarray, step: float) -> np.ndarray:
    """`np.round(values / step)` as integers."""
    steps = values / step
    np.round(steps, out=steps)
    return steps.astype(np.int64)


def _extent(lon: np.ndarray, lat: np.ndarray) -> tuple[float, float, float, float]:
    """West end and width of the shortest arc of longitudes holding every point (so data
    across ±180° is an arc across 180°), and the south and north latitudes."""
    seen = np.unique(np.mod(lon + 180.0, 360.0) - 180.0)
    gaps = np.diff(np.append(seen, seen[0] + 360.0))
    k = int(np.argmax(gaps))
    west = float(seen[(k + 1) % seen.size])
    return west, 360.0 - float(gaps[k]), float(np.min(lat)), float(np.max(lat))


def _laea(lat_0: float, lon_0: float) -> str:
    """Lambert azimuthal equal-area on (lat_0, lon_0), rounded to whole degrees so that a
    little more or less data keeps the same grid."""
    return (
        f"+proj=laea +lat_0={_degrees(lat_0)} +lon_0={_degrees(_wrap(lon_0))} "
        "+x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs"
    )


def _albers(south: float, north: float, lat_0: float, lon_0: float) -> str | None:
    """Albers equal-area conic with standard parallels a sixth of the latitudes in from
    each end (the rule of sixths); None where the cone degenerates (parallels symmetric
    about the equator)."""
    span = north - south
    lat_1, lat_2 = round(south + span / 6), round(north - span / 6)
    if lat_1 + lat_2 == 0:
        return None
    crs = (
        f"+proj=aea +lat_1={lat_1} +lat_2={lat_2} +lat_0={_degrees(lat_0)} "
        f"+lon_0={_degrees(_wrap(lon_0))} +x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs"
    )
    try:
        pyproj.CRS.from_user_input(crs)
    except pyproj.exceptions.CRSError:
        return None
    return crs


def _wrap(lon: float) -> float:
    """A longitude in (−180, 180]."""
    return 180.0 - float(np.mod(180.0 - lon, 360.0))


def _degrees(value: float) -> int:
    return int(round(value))


def check_projected_crs(text: object) -> str:
    """The CRS as given if it is a projected CRS in metres; ValueError otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a CRS like EPSG:32632")
    try:
        crs = pyproj.CRS.from_user_input(text)
    except pyproj.exceptions.CRSError:
        raise ValueError(f"{text!r} is not a CRS pyproj knows (e.g. EPSG:32632)") from None
    if not crs.is_projected:
        raise ValueError(f"{text!r} is not a projected CRS; cells need coordinates in metres")
    unit = crs.axis_info[0].unit_name if crs.axis_info else ""
    if unit not in ("metre", "meter"):
        raise ValueError(f"{text!r} has axes in {unit or 'unknown units'}, not metres")
    return text
