"""Selection (period, trips, trip ends, area, activity) and the grid."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from prudence_cli import space
from prudence_cli.config import DataviewConfig, load_config
from prudence_cli.dataviews.build import build_dataviews
from prudence_cli.errors import ConfigError
from prudence_cli.io.readers import RawPoints
from prudence_cli.projections import utm_zone
from prudence_cli.select import _by_user_and_time, _factorized, _sorted_codes, select
from prudence_cli.space import grid_cells, project
from tests.conftest import MINIMAL_CONFIG

T0 = pd.Timestamp("2011-06-01T06:00:00Z").value
MIN = 60 * 10**9


def raw(rows: list[tuple[str, int, float, float]]) -> RawPoints:
    table = pd.DataFrame(rows, columns=["user", "time", "lat", "lon"])
    return RawPoints(table=table, rows_read=len(rows))


def config_with(write_config, select_block: str):
    text = MINIMAL_CONFIG.replace("output: out", f"select:\n{select_block}\noutput: out")
    return load_config(write_config(text))


# user a: trip 1 (3 fixes), 30 min parked, trip 2 (2 fixes); user b: one fix outside Pisa
ROWS = [
    ("a", T0, 43.70, 10.40),
    ("a", T0 + 2 * MIN, 43.71, 10.41),
    ("a", T0 + 4 * MIN, 43.72, 10.42),
    ("a", T0 + 34 * MIN, 43.73, 10.43),
    ("a", T0 + 36 * MIN, 43.74, 10.44),
    ("b", T0 + 5 * MIN, 45.46, 9.19),
]


def test_trip_ends_keep_the_last_fix_of_each_trip(write_config):
    config = config_with(write_config, "  points: trip_ends\n  trips: {max_gap: 20min}")
    selection = select(raw(ROWS), config)
    assert selection.user_ids.tolist() == ["a", "b"]
    assert selection.points["time"].tolist() == [T0 + 4 * MIN, T0 + 36 * MIN, T0 + 5 * MIN]


def test_area_period_and_activity_filters(write_config):
    config = config_with(
        write_config,
        "  area: {bbox: [10.33, 43.66, 10.48, 43.75]}\n"
        "  period: {start: '2011-06-01T08:01:00', end: '2011-06-01T08:35:00'}\n"
        "  min_points: 2",
    )
    selection = select(raw(ROWS), config)
    # b is outside the area; a keeps the fixes of 08:02, 08:04, 08:34 (local time)
    assert selection.user_ids.tolist() == ["a"]
    assert selection.points["time"].tolist() == [T0 + 2 * MIN, T0 + 4 * MIN, T0 + 34 * MIN]
    assert selection.stats["users"] == 1


def test_min_trips_counts_trips(write_config):
    config = config_with(write_config, "  min_trips: 2")
    assert select(raw(ROWS), config).user_ids.tolist() == ["a"]


def test_geojson_and_wkt_areas(write_config, tmp_path):
    square = [[10.33, 43.66], [10.48, 43.66], [10.48, 43.75], [10.33, 43.75], [10.33, 43.66]]
    (tmp_path / "pisa.geojson").write_text(
        json.dumps(
            {
                "type": "FeatureCollection",
                "features": [
                    {
                        "type": "Feature",
                        "properties": {},
                        "geometry": {"type": "Polygon", "coordinates": [square]},
                    }
                ],
            }
        )
    )
    for block in (
        "  area: {geojson: pisa.geojson}",
        "  area: {wkt: 'POLYGON ((10.33 43.66, 10.48 43.66, 10.48 43.75, "
        "10.33 43.75, 10.33 43.66))'}",
    ):
        selection = select(raw(ROWS), config_with(write_config, block))
        assert selection.user_ids.tolist() == ["a"]


def test_utm_zone_of_the_centroid():
    assert utm_zone(np.array([10.4]), np.array([43.7])) == "EPSG:32632"
    assert utm_zone(np.array([-58.4]), np.array([-34.6])) == "EPSG:32721"


def test_grid_cells_do_not_depend_on_other_points():
    """A cell's label is fixed by the CRS and the side: adding far-away points does not
    change it (cells are aligned on the CRS origin)."""
    crs = "EPSG:32632"
    x, y = project(np.array([10.40, 10.401]), np.array([43.70, 43.7001]), crs)
    _, alone = grid_cells(x, y, 500.0, crs)
    x2, y2 = project(np.array([10.40, 10.401, 9.0]), np.array([43.70, 43.7001, 45.0]), crs)
    codes, together = grid_cells(x2, y2, 500.0, crs)
    assert set(alone["label"]) <= set(together["label"])
    assert codes[0] == codes[1]  # 100 m apart, same 500 m cell
    ix, iy = (int(v) for v in alone["label"][0].split("_"))
    assert ix == int(np.floor(x[0] / 500)) and iy == int(np.floor(y[0] / 500))


def test_cell_centres_round_trip():
    crs = "EPSG:32632"
    x, y = project(np.array([10.40]), np.array([43.70]), crs)
    _, cells = grid_cells(x, y, 250.0, crs)
    cx, cy = project(cells["lon"].to_numpy(), cells["lat"].to_numpy(), crs)
    assert abs(cx[0] - x[0]) <= 125 + 1e-6 and abs(cy[0] - y[0]) <= 125 + 1e-6


@pytest.mark.parametrize("side", [250.0, 1000.0])
def test_presence_counts_per_cell(write_config, side):
    config = config_with(write_config, "  points: all")
    selection = select(raw(ROWS), config)
    dims = DataviewConfig("presence", (("grid", (side,)), ("frequency", (1, 2))))
    every, frequent = build_dataviews(selection, dims)
    assert (every.id, frequent.id) == ("d1", "d2")
    assert every.count.sum() == len(ROWS)
    assert (frequent.count >= 2).all()
    assert every.n_users == frequent.n_users == 2


def test_trajectory_bins_are_local_and_repeats_collapse(write_config):
    config = config_with(write_config, "  points: all")
    selection = select(raw(ROWS), config)
    dims = DataviewConfig(
        "trajectory", (("grid", (50_000.0,)), ("time", (3600, 86400)), ("frequency", (1,)))
    )
    hourly, daily = build_dataviews(selection, dims, timezone="Europe/Rome")
    # one 50 km cell: a's five fixes fall in the 08:00 and 08:00-08:36 local hours
    table = hourly.table(selection.user_ids)
    assert table["time_bin"].tolist() == ["2011-06-01T08:00:00", "2011-06-01T08:00:00"]
    assert table["user"].tolist() == ["a", "b"]
    assert len(daily.table(selection.user_ids)) == 2
    assert hourly.coverage("records").tolist() == [1, 1]


def _reference_order(index: np.ndarray, codes: np.ndarray, time: np.ndarray) -> np.ndarray:
    """The order `_by_user_and_time` must give: by user, then time, then index."""
    return index[np.lexsort((time[index], codes[index]))]


@pytest.mark.parametrize("times", ["sorted", "seconds", "nanoseconds", "ties", "huge_span"])
@pytest.mark.parametrize("subset", [False, True])
def test_sorting_by_user_and_time_is_a_stable_lexsort(times, subset):
    """Every path of `_by_user_and_time` (time-ordered rows, one packed key, a sort by
    time then user) gives the order of a stable lexsort, with or without a period."""
    rng = np.random.default_rng(7)
    n = 5_000
    codes = rng.integers(0, 300, n).astype(np.int32)
    time = {
        "sorted": np.sort(rng.integers(0, 10**6, n)) * 10**9,
        "seconds": rng.integers(0, 10**6, n) * 10**9,
        "nanoseconds": rng.integers(0, 10**15, n),
        "ties": rng.integers(0, 5, n) * 10**9,
        "huge_span": rng.integers(-(2**62), 2**62, n),  # beyond one 64-bit key
    }[times].astype(np.int64)
    index = np.flatnonzero(rng.random(n) < 0.7) if subset else np.arange(n)
    expected = _reference_order(index, codes, time)
    before = time.copy()
    keep = np.isin(np.arange(n), index) if subset else None
    assert np.array_equal(_by_user_and_time(index if subset else None, codes, time), expected)
    assert np.array_equal(_sorted_codes(codes, keep, 300), codes[expected])
    assert np.array_equal(time, before)  # the table's own times are left alone


@pytest.mark.parametrize("sort", [True, False])
def test_users_as_a_categorical_are_numbered_in_label_order(sort):
    """Sorted categories (as the reader gives) are the numbering; others are sorted."""
    labels = ["b", "é", "a", "ab"]
    categories = sorted(labels) if sort else labels
    column = pd.Series(pd.Categorical(["é", "a", "b", "é"], categories=categories))
    column = column.cat.set_categories(pd.Index(categories, dtype="str"))
    codes, ids = _factorized(column)
    assert [ids[c] for c in codes] == ["é", "a", "b", "é"]
    assert list(ids) == sorted(ids)


@pytest.mark.parametrize(
    "block",
    [
        "  points: all",
        "  points: trip_ends\n  trips: {max_gap: 20min}",
        "  area: {bbox: [10.33, 43.66, 10.48, 43.75]}\n"
        "  period: {start: '2011-06-01T08:01:00', end: '2011-06-02T08:35:00'}\n"
        "  min_points: 3",
    ],
)
@pytest.mark.parametrize("in_time_order", [True, False])
def test_points_of_a_few_places_are_selected_alike_by_their_distinct_positions(
    write_config, monkeypatch, block, in_time_order
):
    """Projecting each distinct position once gives the same selection, to the bit."""
    rng = np.random.default_rng(3)
    n = 6_000
    places = np.round(rng.uniform(10.3, 10.5, 40), 5), np.round(rng.uniform(43.6, 43.8, 40), 5)
    at = rng.integers(0, 40, n)
    time = T0 + rng.integers(0, 2 * 24 * 60, n) * MIN
    if in_time_order:
        time = np.sort(time)
    rows = [
        (f"u{u:03d}", int(t), float(places[1][a]), float(places[0][a]))
        for u, t, a in zip(
            rng.integers(0, 300, n).tolist(), time.tolist(), at.tolist(), strict=True
        )
    ]
    config = config_with(write_config, block)
    monkeypatch.setattr(space, "SAMPLED_POINTS", 100)
    found = select(raw(rows), config)
    monkeypatch.setattr(space, "DISTINCT_WORTH_HASHING", -1.0)
    projected = select(raw(rows), config)
    assert found.user_ids.tolist() == projected.user_ids.tolist()
    assert (found.crs, found.projection, found.stats) == (
        projected.crs,
        projected.projection,
        projected.stats,
    )
    pd.testing.assert_frame_equal(found.points, projected.points, check_exact=True)
    assert found.points[["x", "y"]].to_numpy().tobytes() == (
        projected.points[["x", "y"]].to_numpy().tobytes()
    )


@pytest.mark.parametrize("found", [False, True])
def test_a_point_the_crs_cannot_place_is_named(write_config, monkeypatch, found):
    """With the distinct positions or without, the error names the first lost point."""
    text = MINIMAL_CONFIG.replace("output: out", "crs: EPSG:3035\noutput: out")
    config = load_config(write_config(text))
    if found:
        monkeypatch.setattr(space, "SAMPLED_POINTS", 2)
        monkeypatch.setattr(space, "DISTINCT_WORTH_HASHING", 1.0)
        monkeypatch.setattr(space, "SEEN_ONCE", 1.0)
    rows = ROWS + [("c", T0, -52.0, -170.0), ("c", T0 + MIN, -52.0, -170.0)]  # antipodes
    with pytest.raises(ConfigError, match="cannot place 2 of the selected points, e.g. lon -170"):
        select(raw(rows), config)
