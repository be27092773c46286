"""The projection chooser, its scale error, and grid cells of any size."""

from __future__ import annotations

import numpy as np
import pyproj
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from prudence_cli import projections, space
from prudence_cli.projections import (
    MEASURED_POSITIONS,
    Projection,
    Spread,
    choose_projection,
    scale_errors,
)
from prudence_cli.space import distinct_positions, grid_cells, project, repeated_positions

# the US coasts and Hawaii: Honolulu, Hilo, San Francisco, Los Angeles, Seattle, Miami,
# Portland (Maine), New York, Houston
US_LON = np.array([-157.86, -155.08, -122.42, -118.24, -122.33, -80.19, -70.26, -74.0, -95.37])
US_LAT = np.array([21.31, 19.72, 37.77, 34.05, 47.61, 25.76, 43.66, 40.71, 29.76])


def test_data_in_one_utm_zone_keeps_that_zone():
    """Pisa: the zone of the mean point, as before, with the UTM scale factor 0.9996."""
    chosen = choose_projection(np.array([10.35, 10.45]), np.array([43.65, 43.75]))
    assert (chosen.crs, chosen.rule) == ("EPSG:32632", "utm")
    assert 0.0002 < chosen.scale_error < 0.0004
    assert chosen.warning() is None


# each example asks pyproj's database once (0.12 s): 100 random ones a run, beside the
# edges below, which every run checks
@settings(max_examples=100, deadline=None)
@example(0.0, 0.0, 1.0, 1.0)  # a zone edge and the equator: the database decides
@example(-5.7e-50, 0.0, 0.0, 1.0)
@example(5.999999999, 10.0, 0.0, 1.0)
@example(179.5, 83.5, 0.4, 0.4)
@example(-180.0, -80.0, 1.0, 1.0)
@given(
    st.floats(-180, 180),
    st.floats(-85, 85),
    st.floats(0, 8),
    st.floats(0, 8),
)
def test_utm_zone_by_arithmetic_is_the_databases(lon, lat, width, height):
    """The zone found by arithmetic is the one the projection database gives for the
    mean point, and the points fit it exactly when they fit its area of use."""
    from pyproj.aoi import AreaOfInterest
    from pyproj.database import query_utm_crs_info

    from prudence_cli.projections import utm_zone

    lons = np.clip(np.array([lon, lon + width]), -180, 180)
    lats = np.clip(np.array([lat, lat + height]), -90, 90)
    c_lon, c_lat = float(np.mean(lons)), float(np.mean(lats))
    found = query_utm_crs_info(
        datum_name="WGS 84", area_of_interest=AreaOfInterest(c_lon, c_lat, c_lon, c_lat)
    )
    want = None
    if found and found[0].area_of_use is not None:
        a = found[0].area_of_use
        if (
            lons.min() >= a.west
            and lons.max() <= a.east
            and lats.min() >= a.south
            and lats.max() <= a.north
        ):
            want = f"{found[0].auth_name}:{found[0].code}"
    assert utm_zone(lons, lats) == want


def test_data_beyond_one_zone_gets_a_centred_equal_area_projection():
    """The US coasts with Hawaii: no UTM zone; the chosen projection distorts by about
    2 % at worst (the old zone 15 made a "1 km" cell 0.54 km wide in Hawaii)."""
    chosen = choose_projection(US_LON, US_LAT)
    # wide in longitude, narrow in latitude: the conic on the middle longitude wins
    assert chosen.rule == "conic"
    assert chosen.crs.startswith("+proj=aea +lat_1=24 +lat_2=43 +lat_0=34 +lon_0=-114 ")
    assert 0.01 < chosen.scale_error < 0.03
    hawaii = scale_errors(chosen.crs, US_LON[:2], US_LAT[:2])
    assert hawaii.max() < 0.02
    old = scale_errors("EPSG:32615", US_LON[:1], US_LAT[:1])
    assert old[0] > 0.5
    warning = chosen.warning()
    assert warning is not None and f"{chosen.scale_error:.1%}" in warning
    assert "set crs" in warning and "\n" not in warning


def test_data_across_the_antimeridian_is_centred_on_180():
    chosen = choose_projection(np.array([179.5, -179.5]), np.array([-17.0, -17.1]))
    assert "+lon_0=180 " in chosen.crs
    assert chosen.scale_error < 1e-4
    x, _ = project(np.array([179.5, -179.5]), np.array([-17.0, -17.0]), chosen.crs)
    assert abs(x[1] - x[0]) == pytest.approx(106_500, rel=0.01)  # 1° of longitude at 17° S


@pytest.mark.parametrize(
    ("lon", "lat"),
    [
        (np.linspace(-180, 175, 72), np.full(72, 85.0)),  # round the pole
        (np.array([10.0, 10.2]), np.array([85.0, 85.1])),  # one place, above UTM
        (np.array([0.0, 120.0]), np.array([90.0, 89.0])),  # the pole itself
        (np.array([-60.0, 160.0]), np.array([-75.0, -80.0])),  # Antarctica
    ],
)
def test_polar_data_is_projected(lon, lat):
    chosen = choose_projection(lon, lat)
    assert chosen.rule != "utm"
    assert chosen.scale_error < 0.01
    x, y = project(lon, lat, chosen.crs)
    assert np.isfinite(x).all() and np.isfinite(y).all()


def test_data_round_a_pole_is_centred_on_it():
    chosen = choose_projection(np.linspace(-180, 175, 72), np.full(72, 85.0))
    assert chosen.rule == "polar" and "+lat_0=90 " in chosen.crs


def test_the_configured_crs_is_kept_and_measured():
    chosen = choose_projection(US_LON, US_LAT, "EPSG:32615")
    assert (chosen.crs, chosen.rule) == ("EPSG:32615", "config")
    assert chosen.scale_error > 0.5 and chosen.worst[0] < -150  # at worst in Hawaii
    warning = chosen.warning()
    assert warning is not None and "choose a crs" in warning


def test_scale_error_is_the_worst_tissot_semi_axis():
    """On a sphere, Lambert's azimuthal equal-area projection stretches lengths across
    the radius by 1/cos(c/2) and shrinks them along it by cos(c/2), c being the angular
    distance from its centre: the scale error at c = 40° is 1/cos 20° − 1."""
    sphere = "+proj=laea +lat_0=0 +lon_0=0 +R=6371000 +units=m"
    error = scale_errors(sphere, np.array([0.0, 0.0]), np.array([0.0, 40.0]))
    assert error[0] == pytest.approx(0.0, abs=1e-9)
    assert error[1] == pytest.approx(1 / np.cos(np.radians(20)) - 1, rel=1e-6)


def test_the_scale_error_is_measured_on_a_bounded_sample():
    rng = np.random.default_rng(0)
    lon = rng.uniform(-10, 30, 300_000)
    lat = rng.uniform(35, 60, 300_000)
    chosen = choose_projection(lon, lat)
    assert chosen.rule in ("azimuthal", "conic")
    exact = scale_errors(chosen.crs, lon, lat).max()
    assert chosen.scale_error == pytest.approx(exact, rel=0.05)
    assert MEASURED_POSITIONS <= 100_000


def test_no_warning_at_or_below_one_percent():
    assert Projection("EPSG:32632", "utm", 0.01, (0.0, 0.0)).warning() is None
    assert Projection("EPSG:32632", "utm", 0.011, (0.0, 0.0)).warning() is not None


@pytest.mark.parametrize("side", [1_000.0, 5_000_000.0, 20_000_000.0])
@pytest.mark.parametrize(
    ("lon", "lat"),
    [
        (np.array([10.3, 10.5]), np.array([43.6, 43.8])),
        (np.array([179.5, -179.5]), np.array([-17.0, -17.0])),
        (np.linspace(-180, 175, 72), np.full(72, 85.0)),
        (US_LON, US_LAT),
    ],
)
def test_cells_of_any_size_have_a_place(side, lon, lat):
    """A cell whose centre falls off the projection's map is placed at its point nearest
    that centre: never an infinite coordinate."""
    crs = choose_projection(lon, lat).crs
    x, y = project(lon, lat, crs)
    codes, cells = grid_cells(x, y, side, crs)
    assert np.isfinite(cells[["lon", "lat"]].to_numpy()).all()
    assert codes.max() + 1 == len(cells)


def test_a_1km_cell_in_hawaii_is_about_1km_wide():
    crs = choose_projection(US_LON, US_LAT).crs
    x, y = project(US_LON[:1], US_LAT[:1], crs)
    x0, y0 = np.floor(x[0] / 1000) * 1000, np.floor(y[0] / 1000) * 1000
    to_lonlat = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    corners = [to_lonlat.transform(x0 + dx, y0 + dy) for dx, dy in ((0, 0), (1000, 0), (0, 1000))]
    geod = pyproj.Geod(ellps="WGS84")
    (lon0, lat0), (lon1, lat1), (lon2, lat2) = corners
    width = geod.inv(lon0, lat0, lon1, lat1)[2]
    height = geod.inv(lon0, lat0, lon2, lat2)[2]
    assert width == pytest.approx(1000, rel=0.02) and height == pytest.approx(1000, rel=0.02)


def _unique_positions(lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions as `Spread.positions` gives them, by `np.unique` of one key per point."""
    for step in (0.01, 0.1, 1.0):
        ix = np.round(lon / step).astype(np.int64)
        iy = np.round(lat / step).astype(np.int64)
        key = np.unique(ix * 1_000_000 + iy)
        if key.size <= projections.MEASURED_POSITIONS:
            break
    kx = np.floor_divide(key + 500_000, 1_000_000)
    return kx * step, (key - kx * 1_000_000) * step


@pytest.mark.parametrize("measured", [100_000, 300, 30])
@pytest.mark.parametrize(
    "lon, lat",
    [
        (np.array([10.3, 10.5]), np.array([43.6, 43.8])),  # Pisa: a small table
        (US_LON, US_LAT),  # spread: sorted keys
        (np.array([-179.9, 179.9, 0.0, 10.0]), np.array([-89.0, 89.0, 0.0, -5.0])),
    ],
)
def test_positions_are_the_distinct_rounded_points_in_key_order(lon, lat, measured, monkeypatch):
    """However they are found, at every rounding step."""
    monkeypatch.setattr(projections, "MEASURED_POSITIONS", measured)
    rng = np.random.default_rng(5)
    lon = np.tile(lon, 500) + rng.normal(0, 0.05, 500 * lon.size)
    lat = np.clip(np.tile(lat, 500) + rng.normal(0, 0.05, 500 * lat.size), -90, 90)
    found = Spread.of(lon, lat).positions()
    expected = _unique_positions(lon, lat)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(found, expected, strict=True))
    # the points cut in shares (as ranges of users on a cluster) and their spreads joined
    cuts = np.sort(rng.choice(lon.size, 3, replace=False))
    shares = [
        Spread.of(a, b, every_step=True)
        for a, b in zip(np.split(lon, cuts), np.split(lat, cuts), strict=True)
    ]
    joined = Spread.joined(shares)
    found = joined.positions()
    assert all(a.tobytes() == b.tobytes() for a, b in zip(found, expected, strict=True))
    whole = choose_projection(lon, lat)
    assert projections.projection_of(joined) == whole
    assert joined.count == lon.size and joined.sums == pytest.approx(Spread.of(lon, lat).sums)


@pytest.mark.parametrize("side", [250.0, 1000.0, 5e6])
def test_grid_cells_rank_cells_in_the_order_of_their_ids(side):
    """The table of cells and the sort of their ids (data spread over the world) agree."""
    rng = np.random.default_rng(11)
    for spread in (3e4, 2e7):  # a city (a small table), the world (sorting the ids)
        x, y = rng.normal(0, spread, 20_000), rng.normal(-spread / 3, spread, 20_000)
        codes, cells = grid_cells(x, y, side, "+proj=laea +lat_0=0 +lon_0=0 +datum=WGS84")
        ix, iy = np.floor(x / side).astype(np.int64), np.floor(y / side).astype(np.int64)
        ids, expected = np.unique(ix * (1 << 32) + (iy + (1 << 31)), return_inverse=True)
        assert np.array_equal(codes, expected.astype(np.int32))
        labels = [f"{i // (1 << 32)}_{i % (1 << 32) - (1 << 31)}" for i in ids.tolist()]
        assert cells["label"].tolist() == labels


def test_projecting_in_threads_gives_the_same_bits(monkeypatch):
    monkeypatch.setattr(space, "PARALLEL_POINTS", 1_000)
    rng = np.random.default_rng(2)
    lon, lat = rng.uniform(9, 12, 10_001), rng.uniform(43, 46, 10_001)
    one = project(lon, lat, "EPSG:32632")
    several = project(lon, lat, "EPSG:32632", threads=3)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(one, several, strict=True))


@pytest.mark.parametrize("crs", ["EPSG:32632", "+proj=laea +lat_0=0 +lon_0=0 +datum=WGS84"])
def test_repeated_points_are_projected_to_the_same_bits(crs):
    """A point repeated is projected once and copied; -0.0 and 0.0 are not the same."""
    lon = np.repeat([10.0, 10.0, -0.0, 0.0, 0.0, np.nan, np.nan, 11.0], [5, 1, 2, 3, 1, 2, 1, 4])
    lat = np.repeat([44.0, 44.5, 0.0, 0.0, -0.0, 44.0, 44.0, 45.0], [5, 1, 2, 3, 1, 2, 1, 4])
    x, y = project(lon, lat, crs)
    transformer = pyproj.Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    alone = [transformer.transform(a, b) for a, b in zip(lon.tolist(), lat.tolist(), strict=True)]
    assert x.tobytes() == np.array([p[0] for p in alone]).tobytes()
    assert y.tobytes() == np.array([p[1] for p in alone]).tobytes()


@pytest.mark.parametrize("dense", [True, False])
def test_distinct_positions_give_back_every_point_to_the_bit(dense, monkeypatch):
    """By a table of the pairs or by hashing them; -0.0 and 0.0, and NaNs, apart."""
    if not dense:
        monkeypatch.setattr(space, "DENSE_CELLS", 0)
    rng = np.random.default_rng(4)
    lon = rng.choice([10.0, 10.5, -0.0, 0.0, np.nan, 11.25], 3_000)
    lat = rng.choice([44.0, 44.5, 0.0, -0.0, 43.1], 3_000)
    found = distinct_positions(lon, lat)
    assert found.lon[found.code].tobytes() == lon.tobytes()
    assert found.lat[found.code].tobytes() == lat.tobytes()
    pairs = {
        (a, b)
        for a, b in zip(lon.view(np.int64).tolist(), lat.view(np.int64).tolist(), strict=True)
    }
    assert len(found.lon) == len(pairs)


def test_positions_are_looked_for_only_when_they_repeat(monkeypatch):
    """A sample decides: few distinct positions, and few seen once."""
    monkeypatch.setattr(space, "SAMPLED_POINTS", 1_000)
    rng = np.random.default_rng(6)
    towers = rng.uniform(9, 12, 50), rng.uniform(43, 46, 50)
    at = rng.integers(0, 50, 10_000)
    repeated = repeated_positions(towers[0][at], towers[1][at])
    assert repeated is not None and len(repeated.lon) == 50
    noisy = rng.uniform(9, 12, 10_000), rng.uniform(43, 46, 10_000)
    assert repeated_positions(*noisy) is None
    # most points at a few places, a tenth at places of their own: hashing those would
    # cost more than it saves
    mixed = [
        np.where(rng.random(10_000) < 0.1, n, t[at]) for n, t in zip(noisy, towers, strict=True)
    ]
    assert repeated_positions(*mixed) is None
    assert repeated_positions(towers[0][at[:1_500]], towers[1][at[:1_500]]) is None  # few


def test_the_distinct_positions_choose_the_same_projection():
    rng = np.random.default_rng(8)
    lon, lat = np.round(rng.normal(-100, 20, 5_000), 1), np.round(rng.normal(40, 8, 5_000), 1)
    found = distinct_positions(lon, lat)
    alone = choose_projection(lon, lat)
    assert choose_projection(lon, lat, distinct=(found.lon, found.lat)) == alone
    assert alone.rule != "utm"  # the scale error was measured on the positions
