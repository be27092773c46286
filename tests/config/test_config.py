"""Config validation: every error names the file and the key path."""

from __future__ import annotations

import pytest

from prudence_cli.config import load_config
from prudence_cli.errors import ConfigError
from prudence_cli.units import format_duration, format_size, parse_duration, parse_size
from tests.conftest import MINIMAL_CONFIG

TRAJECTORY_OF_GPS = MINIMAL_CONFIG.replace(
    "  format: presence\n  dimensions:\n    grid: [500m]\n    frequency: [1]\n",
    "  format: trajectory\n  dimensions: {grid: [500m], time: [1h]}\n",
).replace(
    "  - attack: presence\n    knowledge: {h: [1, 2], visits: [exact]}\n",
    "  - attack: location\n    knowledge: {h: [1]}\n",
)


def test_minimal_config_resolves_paths_against_its_folder(write_config, tmp_path):
    config = load_config(write_config(MINIMAL_CONFIG))
    assert config.input.path == tmp_path / "points.csv"
    assert config.output == tmp_path / "out"
    assert dict(config.dataview.dimensions) == {"grid": (500.0,), "frequency": (1,)}
    assert [lv.label for lv in config.attacks[0].levels] == ["h=1,visits=exact", "h=2,visits=exact"]
    assert config.coverage == "locations" and config.seed == 0


def replace(old: str, new: str) -> str:
    assert old in MINIMAL_CONFIG
    return MINIMAL_CONFIG.replace(old, new)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            replace("grid: [500m]", 'grid: [250m, "500 m"]'),
            'config.yaml: dataview.dimensions.grid[1]: "500 m" is not a size like 500m or 1.5km',
        ),
        (
            replace("grid: [500m]", 'grid: ["-3"]'),
            'dataview.dimensions.grid[0]: "-3" is not a size like 500m or 1.5km',
        ),
        (
            replace("grid: [500m]", "grid: [500]"),
            "dataview.dimensions.grid[0]: 500 is not a size like 500m or 1.5km (write the unit)",
        ),
        (replace("grid: [500m]", "grid: []"), "dataview.dimensions.grid: is empty"),
        (
            replace("grid: [500m]", "grid: [1km, 40000km]"),
            'dataview.dimensions.grid[1]: "40000km" is too large: no two places on Earth',
        ),
        (
            replace("frequency: [1]", "frequency: [0]"),
            "dataview.dimensions.frequency[0]: 0 is not a frequency threshold",
        ),
        (replace("name: tiny", "name: tiny\ncolour: blue"), "colour: unknown key"),
        (
            replace("timezone: Europe/Rome", "timezone: Europe/Rome\n  sep: ';'"),
            "input.sep: unknown key; known keys:",
        ),
        (
            replace("timezone: Europe/Rome", "timezone: Mars/Olympus"),
            "input.timezone: 'Mars/Olympus' is not an IANA time zone",
        ),
        (
            replace("h: [1, 2]", "h: [1, two]"),
            "attacks[0].knowledge.h[1]: 'two' is not a number of known elements",
        ),
        (replace("h: [1, 2]", "h: [1, 1]"), "attacks[0].knowledge.h: repeats a value"),
        (
            replace("visits: [exact]", "visits: [most]"),
            "attacks[0].knowledge.visits[0]: 'most' is not one of: exact, half, none",
        ),
        (replace("visits: [exact]", "visits: []"), "attacks[0].knowledge.visits: is empty"),
        (
            replace("attack: presence", "attack: telepathy"),
            "attacks[0].attack: 'telepathy' is not one of:",
        ),
        (replace("format: presence", "format: movie"), "dataview.format: 'movie' is not one of:"),
        (replace("  path: points.csv\n", ""), "input.path: is required"),
        (replace("output: out", "output: 42"), "output: 42 must be non-empty text"),
        (
            replace("output: out", "coverage: pixels\noutput: out"),
            "coverage: 'pixels' is not one of: locations, visits, records",
        ),
        (replace("output: out", "seed: -1\noutput: out"), "seed: -1 must be at least 0"),
        (replace("output: out", "seed: 1.5\noutput: out"), "seed: 1.5 must be a whole number"),
        (
            replace("output: out", "crs: EPSG:4326\noutput: out"),
            "crs: 'EPSG:4326' is not a projected CRS",
        ),
        (
            replace("output: out", "select: {trips: {max_gap: 20m}}\noutput: out"),
            'select.trips.max_gap: "20m" is not a duration like 30s, 20min, 1h, 1d or 1w',
        ),
        (
            replace("output: out", "select: {points: stops}\noutput: out"),
            "select.points: 'stops' is not one of: all, trip_ends",
        ),
        (
            replace(
                "output: out", "select: {period: {start: 2011-07-01, end: 2011-06-01}}\noutput: out"
            ),
            "select.period: end must be after start",
        ),
        (
            replace("output: out", "select: {area: {bbox: [10, 43, 9, 44]}}\noutput: out"),
            "select.area.bbox: [10.0, 43.0, 9.0, 44.0] is not [min_lon, min_lat, max_lon, max_lat]",
        ),
        (
            replace("output: out", "select: {area: {wkt: 'POINT (1 2)'}}\noutput: out"),
            "select.area.wkt: must be a Polygon or MultiPolygon",
        ),
        (
            replace("output: out", "select: {area: {bbox: [1, 2, 3, 4], wkt: x}}\noutput: out"),
            "select.area: give exactly one of bbox, wkt or geojson",
        ),
        (
            replace("output: out", "engine: {max_instances: 0}\noutput: out"),
            "engine.max_instances: 0 must be at least 1",
        ),
        (
            replace(
                "  format: presence\n  dimensions:\n    grid: [500m]\n",
                "  format: presence\n  dimensions:\n",
            ),
            "dataview.dimensions.grid: a gps input needs a grid size",
        ),
        (
            replace("columns:", "format: cdr\n  columns:"),
            "input.towers: a cdr input needs a towers CSV",
        ),
        (
            replace(
                "attacks:\n  - attack: presence\n    knowledge: {h: [1, 2], visits: [exact]}\n",
                "attacks: []\n",
            ),
            "attacks: must be a non-empty list",
        ),
        (
            replace(
                "output: out",
                "output: out\nattacks:\n  - attack: presence\n"
                "  - attack: presence\n    knowledge: {h: [2], visits: [exact]}",
            ).replace(
                "attacks:\n  - attack: presence\n    knowledge: {h: [1, 2], visits: [exact]}\n", ""
            ),
            "attacks[1]: level h=2,visits=exact is already declared by attacks[0]",
        ),
        ("input: [1, 2]\ndataview: {}\nattacks: []\n", "input: input must be a mapping"),
        ("[1, 2]\n", "config.yaml: the config must be a mapping"),
        ("name: x\n  bad: indentation\n", "config.yaml: not valid YAML at line 2"),
        (MINIMAL_CONFIG + "attacks: []\n", "attacks: is given twice (lines 11 and 15)"),
        (
            replace("output: out", "output: out\nselect: {period: {end: 2011-13-45}}"),
            "select.period.end: '2011-13-45' is not a date or time (month must be in 1..12)",
        ),
        ("seed: " + "[" * 5000 + "]" * 5000, "seed[0][0]…: is nested more than 32 levels deep"),
        (
            MINIMAL_CONFIG + "utility: {measures: [radius, visits]}\n",
            "utility.measures[0]: 'radius' is not one of: radius_of_gyration,",
        ),
        (
            MINIMAL_CONFIG + "utility: {measures: some}\n",
            "utility.measures: 'some' must be all, none or a list of measure names",
        ),
        (
            MINIMAL_CONFIG + "utility: {measures: [visits, visits]}\n",
            "utility.measures[1]: visits is named twice",
        ),
        (MINIMAL_CONFIG + "utility: {measures: []}\n", "utility.measures: [] must be all, none"),
        (
            MINIMAL_CONFIG + "utility: {measures: [flow]}\n",
            "utility.measures[0]: flow needs trips between the places people stay at: a "
            "trajectory dataview of call records, or of GPS points with select.points: "
            "trip_ends (here: presence dataviews of gps input with select.points: all)",
        ),
        (  # GPS points as they move: consecutive visits are cells passed through
            TRAJECTORY_OF_GPS + "utility: {measures: [max_distance]}\n",
            "utility.measures[0]: max_distance needs trips between the places people stay "
            "at: a trajectory dataview of call records, or of GPS points with "
            "select.points: trip_ends (here: trajectory dataviews of gps input with "
            "select.points: all)",
        ),
        (
            MINIMAL_CONFIG + "utility: {thresholds: [0.5, 0]}\n",
            "utility.thresholds[1]: 0 is not a risk in (0, 1] (a number or a fraction",
        ),
        (
            MINIMAL_CONFIG + "utility: {thresholds: [1/0]}\n",
            "utility.thresholds[0]: '1/0' is not a risk in (0, 1]",
        ),
        (MINIMAL_CONFIG + "utility: {thresholds: []}\n", "utility.thresholds: [] must be a non"),
        (
            MINIMAL_CONFIG + "utility: {thresholds: [1/2, 0.5]}\n",
            "utility.thresholds[1]: 0.5 is the threshold 0.5 again",
        ),
    ],
)
def test_config_errors_name_file_and_key(write_config, text, message):
    with pytest.raises(ConfigError) as info:
        load_config(write_config(text))
    assert message in str(info.value)
    assert str(info.value).startswith("config.yaml: ")


def test_mobility_measures_and_thresholds(write_config):
    default = load_config(write_config(MINIMAL_CONFIG)).mobility
    assert default.measures is None and default.thresholds == (1.0, 0.5, 1 / 3, 0.25)
    text = MINIMAL_CONFIG + "utility:\n  measures: [visits, location_entropy]\n"
    chosen = load_config(write_config(text + "  thresholds: [1, 1/3, 0.2]\n")).mobility
    assert chosen.measures == ("visits", "location_entropy")
    assert chosen.thresholds == (1.0, 1 / 3, 0.2)
    off = load_config(write_config(MINIMAL_CONFIG + "utility: {measures: none}\n")).mobility
    assert not off.enabled


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "absent.yaml")


def test_sizes_and_durations():
    assert parse_size("250m") == 250.0
    assert parse_size("1.5km") == 1500.0
    assert format_size(1500.0) == "1500m"
    assert parse_duration("20min") == 1200
    assert parse_duration("1d") == 86400
    assert format_duration(1800) == "30min"
    for bad in ("0m", "m", "5 km", "-3", 3, "1.5ft"):
        with pytest.raises(ValueError):
            parse_size(bad)
    with pytest.raises(ValueError, match="whole number of seconds"):
        parse_duration("0.5s")


@pytest.mark.parametrize(
    ("written", "label"),
    [
        ("250m", "250m"),
        ("12.5m", "12.5m"),
        ("1km", "1000m"),  # sizes below 1,000 km keep the metre labels of earlier catalogs
        ("4.35km", "4350m"),  # decimal, not 4349.999999999999m
        ("123456.7m", "123456.7m"),
        ("1000km", "1000km"),
        ("5000km", "5000km"),  # was 5e+06m, which no command could read back
        ("1234.5km", "1234500m"),
        ("20000km", "20000km"),
    ],
)
def test_size_labels_round_trip(written, label):
    metres = parse_size(written)
    assert format_size(metres) == label
    assert parse_size(label) == metres


def test_sizes_are_bounded_by_the_earth():
    with pytest.raises(ValueError, match="no two places on Earth are more than 20000km apart"):
        parse_size("40000km")
    assert parse_size("5e+06m") == 5_000_000.0  # the label older catalogs wrote


def test_the_input_builds_the_readers_spec(write_config, tmp_path):
    from prudence_cli.io.specs import PointsSpec, SegmentsSpec

    text = MINIMAL_CONFIG.replace(
        "  timezone: Europe/Rome\n",
        "  timezone: Europe/Rome\n  format: segments\n"
        "  segments: {path: streets.csv, columns: {wkt: line}}\n  on_invalid: drop\n",
    )
    config = load_config(write_config(text)).input
    spec = config.spec()
    assert isinstance(spec, PointsSpec)
    assert (spec.path, spec.format, spec.columns) == (config.path, "segments", config.columns)
    assert (spec.timezone, spec.on_invalid, spec.towers) == ("Europe/Rome", "drop", None)
    assert spec.segments == SegmentsSpec(path=tmp_path / "streets.csv", wkt="line")


def test_thresholds_may_be_written_as_text(write_config):
    """A threshold quoted in YAML is read as the number it writes (YAML reads 1/3 as text
    too)."""
    config = load_config(write_config(MINIMAL_CONFIG + "utility: {thresholds: ['0.5', 1/3]}\n"))
    assert config.mobility.thresholds == (0.5, 1 / 3)


def test_trip_measures_are_for_trips_between_stays(write_config):
    """A trajectory of GPS trip ends (where people park) has trips; of all GPS points it
    has cells passed through; of call records, places where people were."""
    ends = TRAJECTORY_OF_GPS.replace("output: out", "select: {points: trip_ends}\noutput: out")
    assert load_config(write_config(ends)).mobility.trips
    assert not load_config(write_config(TRAJECTORY_OF_GPS)).mobility.trips
    assert not load_config(write_config(MINIMAL_CONFIG)).mobility.trips


def test_a_share_never_reads_as_none_nor_as_all_when_it_is_not():
    """0.04 % of the data kept is not "0.0%", 99.96 % is not "100.0%"; a tenth otherwise."""
    from prudence_cli.units import percent

    assert percent(0.0) == "0.0%" and percent(1.0) == "100.0%"
    assert percent(0.0004) == "0.04%" and percent(0.0000123) == "0.0012%"
    assert percent(1 / 3_000_000) == "0.000033%" and percent(1e-9) == "0.0000001%"
    assert percent(0.0009) == "0.09%" and percent(0.000999) == "0.1%"
    assert percent(0.001) == "0.1%" and percent(0.374) == "37.4%"
    assert percent(0.9996) == "99.9%" and percent(0.99999999) == "99.9%"
    assert percent(0.9989) == "99.9%" and percent(0.9994) == "99.9%"


def test_a_policys_coverage_reads_as_the_user_gave_it():
    """min_coverage 0.995 is "99.5%" wherever a policy is told (never "100%" nor "99%"),
    0.07 is "7%", 0.9 "90%"."""
    from prudence_cli.config.policy import ReleasePolicy
    from prudence_cli.units import as_given

    assert as_given(0.995) == "99.5%" and as_given(0.999) == "99.9%"
    assert as_given(0.07) == "7%" and as_given(0.9) == "90%" and as_given(1.0) == "100%"
    assert as_given(0.3333) == "33.33%"
    policy = ReleasePolicy(0.3, ("presence",), (), 0.995)
    assert "keeping at least 99.5% of the data" in policy.describe()
