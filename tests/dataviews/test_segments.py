"""Road-segment data: the segments reader, the street-network sample, segment
trajectories and the sub-trajectory linking attack (Pratesi et al., PRUDEnce, section 4.2)."""

from __future__ import annotations

import dataclasses
import io
import itertools

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.catalog import open_catalog
from prudence_cli.cli import main
from prudence_cli.config import load_config
from prudence_cli.config.dimensions import FORMATS
from prudence_cli.dataviews.kept_codes import numbered_in_blocks
from prudence_cli.dataviews.registry import format_classes
from prudence_cli.dataviews.restore import view_from_table
from prudence_cli.dataviews.segments import SegmentView, TripleKeys
from prudence_cli.engine import Engine
from prudence_cli.engine.runner import LocalRunner
from prudence_cli.errors import ConfigError, InputError
from prudence_cli.io.readers import read_points
from prudence_cli.sanitize.ledger import join_views
from tests.conftest import OnWorkers, ranges_number_as_the_whole
from tests.reference import trajectory_attack_risks

CONFIG = """\
name: seg
input:
  path: trips.csv
  format: segments
  columns: {user: uid, trip: trip, segment: segment, enter: entered, leave: left}
  segments: streets.csv
dataview: {format: segments, dimensions: {time: [1h]}}
attacks: [{attack: subtrajectory, knowledge: {h: [1, 2, all]}}]
coverage: segments
"""
STREETS = (
    "segment,wkt\n"
    'A,"LINESTRING (10.40 43.70, 10.41 43.70)"\n'
    'B,"LINESTRING (10.41 43.70, 10.42 43.70)"\n'
    'C,"LINESTRING (10.42 43.70, 10.42 43.71)"\n'
)
TRIPS = [
    ("u1", "t1", "A", "2011-06-01T08:00:00", "2011-06-01T08:01:00"),
    ("u1", "t1", "B", "2011-06-01T08:01:00", "2011-06-01T08:02:00"),
    ("u2", "t1", "A", "2011-06-01T08:10:00", "2011-06-01T08:11:00"),
    ("u2", "t1", "C", "2011-06-01T08:11:00", "2011-06-01T08:12:00"),
    ("u3", "t9", "A", "2011-06-01T08:20:00", "2011-06-01T08:21:00"),
    ("u3", "t9", "B", "2011-06-01T08:21:00", "2011-06-01T08:22:00"),
]


def write(tmp_path, rows, streets=STREETS, config=CONFIG):
    (tmp_path / "streets.csv").write_text(streets)
    lines = ["uid,trip,segment,entered,left", *(",".join(r) for r in rows)]
    (tmp_path / "trips.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "seg.yaml").write_text(config)
    return tmp_path / "seg.yaml"


def test_reads_segment_traversals(tmp_path):
    points = read_points(load_config(write(tmp_path, TRIPS)).input)
    assert points.table["location"].tolist() == ["A", "B", "A", "C", "A", "B"]
    assert (points.table["leave"] >= points.table["time"]).all()
    assert points.segments is not None and len(points.segments) == 3


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            ("u4", "t1", "Z", "2011-06-01T08:00:00", "2011-06-01T08:01:00"),
            "trips.csv:8: segment not in streets.csv (got 'Z')",
        ),
        (
            ("u4", "t1", "A", "2011-06-01T08:05:00", "2011-06-01T08:01:00"),
            "trips.csv:8: time left is before time entered",
        ),
        (("u4", "", "A", "2011-06-01T08:00:00", "2011-06-01T08:01:00"), "trips.csv:8: empty trip"),
        (
            ("u4", "t1", "A", "soon", "2011-06-01T08:01:00"),
            "trips.csv:8: time entered is not ISO-8601",
        ),
    ],
)
def test_invalid_traversals_stop_with_file_and_line(tmp_path, row, message):
    with pytest.raises(InputError) as info:
        read_points(load_config(write(tmp_path, [*TRIPS, row])).input)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("streets", "message"),
    [
        ("segment,wkt\nA,POINT (1 2)\n", "streets.csv:2: wkt is not a LineString"),
        (
            'segment,wkt\nA,"LINESTRING (0 0, 1 1)"\nA,"LINESTRING (0 0, 1 2)"\n',
            "streets.csv:3: segment id listed twice",
        ),
        (
            "segment,start_lat,start_lon,end_lat,end_lon\nA,43.7,10.4,95,10.5\n",
            "streets.csv:2: segment ends are not coordinates",
        ),
        ("id,geometry\n", "no column 'segment'"),
    ],
)
def test_bad_segments_table(tmp_path, streets, message):
    with pytest.raises(InputError) as info:
        read_points(load_config(write(tmp_path, TRIPS, streets=streets)).input)
    assert message in str(info.value)


def test_segments_dataview_needs_segments_input(tmp_path):
    config = CONFIG.replace("  format: segments\n", "  format: gps\n").replace(
        "  segments: streets.csv\n", ""
    )
    with pytest.raises(ConfigError, match="'segments' dataviews need input.format: segments"):
        load_config(write(tmp_path, TRIPS, config=config))


def test_subtrajectory_by_hand_through_the_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, TRIPS)
    assert CliRunner().invoke(main, ["assess", "seg.yaml", "-q"]).exit_code == 0
    catalog = open_catalog(tmp_path / "catalog" / "seg")
    risks = catalog.risks("d1").set_index("user")
    # all in the 08:00 hour: A is held by all three, B by u1 and u3, C by u2 alone
    assert risks["subtrajectory[h=1]"].tolist() == [1 / 2, 1.0, 1 / 2]
    assert risks["subtrajectory[h=2]"].tolist() == [1 / 2, 1.0, 1 / 2]
    table = catalog.dataview_table("d1")
    assert list(table.columns) == ["user", "order", "location", "t_origin", "t_destination"]
    assert catalog.manifest["coverage"] == "segments"


@st.composite
def segment_trajectories(draw):
    n = draw(st.integers(1, 7))
    data = {
        u: draw(
            st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 2)), max_size=6)
        )
        for u in range(n)
    }
    return data, list(range(n))


def segment_view(data, users) -> SegmentView:
    rows = [(u, seg, to, to + dt) for u, visits in data.items() for seg, to, dt in visits]
    arr = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return SegmentView(
        "d1",
        (("time", 3600),),
        len(users),
        arr[:, 0].astype(np.int32),
        arr[:, 1].astype(np.int32),
        pd.DataFrame({"label": list("abcd"), "lon": 0.0, "lat": 0.0}),
        tbin=arr[:, 2],
        tbin_end=arr[:, 3],
    )


ENGINES = [
    Engine(),
    Engine(strategy="keyed"),
    Engine(strategy="posting"),
    # levels made in ranges of users, each numbering its triples as the whole view
    Engine(runner=LocalRunner(shards=3), partition_instances=3),
    Engine(strategy="posting", runner=LocalRunner(shards=2)),
]


@settings(max_examples=60, deadline=None)
@given(
    segment_trajectories(),
    st.sampled_from([1, 2, 3, "all"]),
    st.sampled_from(range(len(ENGINES))),
)
def test_subtrajectory_equals_the_reference(case, h, engine_index):
    data, users = case
    view = segment_view(data, users)
    level = KnowledgeLevel("subtrajectory", (("h", h),))
    got = ATTACKS["subtrajectory"].risks(view, level, ENGINES[engine_index]).risk
    # Definition 10: triples (segment, t_o, t_d) as the elements of a location sequence
    as_sequences = {u: [((s, a, a + b), 0) for s, a, b in v] for u, v in data.items()}
    expected = trajectory_attack_risks(as_sequences, users, "location_sequence", h)
    np.testing.assert_allclose(got, [expected[u] for u in users])


@settings(max_examples=60, deadline=None)
@given(segment_trajectories(), st.data())
def test_ranges_number_triples_as_the_whole_view(case, data):
    """A range of users given the whole view's triple codes (TripleCodes, gathered from
    any cut of the view into parts) numbers its triples as the whole view does."""
    view = segment_view(*case)
    cuts = sorted(data.draw(st.lists(st.integers(0, view.n_users), max_size=3)))
    codes = ranges_number_as_the_whole(view, "triples", "triples", [0, *cuts, view.n_users])
    own = view.numbered("triples").codes
    for mine, theirs in zip((*codes.parts, codes.pairs), (*own.parts, own.pairs), strict=True):
        assert np.array_equal(mine, theirs)
    assert np.array_equal(codes.keys, own.keys)
    assert np.array_equal(np.arange(codes.keys.shape[0]), np.unique(view.triples().elements))
    with pytest.raises(ValueError, match="number no"):
        view.numbered("visits")


def test_a_triple_missing_from_the_codes_is_refused():
    """Ranks are looked up among the whole view's triples: one not there is a bug, never a
    neighbour's code."""
    from prudence_cli.dataviews.segments import TripleCodes

    view = segment_view({0: [(1, 0, 0)], 1: [(2, 1, 1)]}, [0, 1])
    codes = TripleCodes.of([view.users(0, 1).distinct_triples()])
    with pytest.raises(AssertionError, match="not among"):
        view.numbered("triples", codes).triples()


def test_triples_at_the_ends_of_64_bits_are_numbered_as_the_whole_view():
    """Time bins anywhere in int64 and segments near 2^31: no triple is packed whole, so
    none overflows; each range numbers its triples as pandas numbers the whole view's."""
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    rows = [
        (0, 2**31 - 2, low, high),
        (0, 0, high, low),
        (1, 2**31 - 2, low, high),
        (1, 5, 0, 0),
        (2, 0, high, high),
        (2, 0, high, low),
    ]
    user, location, tbin, tbin_end = (np.array(c) for c in zip(*rows, strict=True))
    view = SegmentView(
        "d1",
        (("time", 3600),),
        3,
        user.astype(np.int32),
        location.astype(np.int32),
        pd.DataFrame({"label": ["a"], "lon": 0.0, "lat": 0.0}),
        tbin=tbin.astype(np.int64),
        tbin_end=tbin_end.astype(np.int64),
    )
    codes = ranges_number_as_the_whole(view, "triples", "triples", [0, 1, 2, 3])
    assert view.triples().elements.tolist() == [3, 0, 3, 2, 1, 0]
    assert codes.keys.tolist() == sorted(set(codes.keys.tolist()))
    # nor packed in 64-bit keys to number in blocks: numbered whole (TripleCodes) instead
    told = [view.users(u, u + 1).triple_keys() for u in range(3)]
    assert [t.keys.shape[0] for t in told] == [0, 0, 0]
    assert numbered_in_blocks(OnWorkers(2), TripleKeys, told, 1) is None
    # a frame that packs each range's, but not the whole view's, is refused as well: 2
    # segments × 2^61 + 1 bins × 1 duration packs, 4 segments do not
    wide = [TripleKeys.of_rows(np.array([1]), np.array([t]), np.array([t])) for t in (0, 2**61)]
    assert [t.keys.shape[0] for t in wide] == [1, 1]
    assert TripleKeys.frame_of([t.bounds() for t in wide]) == (0, 2**61 + 1, 0, 1)
    more = TripleKeys.of_rows(np.array([3]), np.array([0]), np.array([0]))
    assert TripleKeys.frame_of([t.bounds() for t in [*wide, more]]) is None


def test_triple_keys_are_packed_in_the_frame_of_the_whole_view_by_hand():
    """Worked by hand: (segment 1, bins 5 → 6) and (0, 7 → 7): t_origin bins 5-7 (span
    3), durations 0-1 (dspan 2): keys (1 × 3 + 0) × 2 + 1 = 7 and (0 × 3 + 2) × 2 + 0 =
    4. In the frame of bins 4-8 (span 5) and durations -1 to 1 (dspan 3): (1 × 5 + 1) ×
    3 + 2 = 20 and (0 × 5 + 3) × 3 + 1 = 10. Their order is the triples' order."""
    keys = TripleKeys.of_rows(np.array([1, 0]), np.array([5, 7]), np.array([6, 7]))
    assert keys.frame == (5, 3, 0, 2) and keys.keys.tolist() == [4, 7]
    assert keys.keys_in((4, 5, -1, 3)).tolist() == [10, 20]
    assert keys.bounds() == (5, 8, 0, 2, 2)
    assert TripleKeys.frame_of([keys.bounds(), (4, 5, -1, 0, 1), (6, 9, 1, 2, 1)]) == (4, 5, -1, 3)
    assert TripleKeys.of_rows(*(np.zeros(0, np.int64),) * 3).bounds() is None


@settings(max_examples=80, deadline=None)
@given(
    segment_trajectories(),
    st.data(),
    st.sampled_from([1, 2, 5, 1000]),
    st.integers(1, 3),
    st.integers(-2, 2),
)
def test_ranges_numbered_in_blocks_number_triples_as_the_whole_view(
    case, data, block, workers, skew
):
    """Each range given its own triples' codes from blocks of about `block` triples
    (TripleKeys, kept_codes.numbered_in_blocks; ranges kept on `workers` workers, some
    users' durations shifted by `skew`, so negative too) numbers its triples as the
    whole view does: their lexicographic rank among the whole view's. A view of `block`
    distinct triples or fewer is numbered whole (None)."""
    view = segment_view(*case)
    view = dataclasses.replace(view, tbin_end=view.tbin_end + skew * (view.user % 2))
    cuts = sorted(data.draw(st.lists(st.integers(0, view.n_users), max_size=3)))
    pairs = list(itertools.pairwise([0, *cuts, view.n_users]))
    parts = [view.users(a, b) for a, b in pairs]
    own = numbered_in_blocks(
        OnWorkers(workers), TripleKeys, [p.triple_keys() for p in parts], block
    )
    whole = view.triples()
    distinct = np.unique(whole.elements).shape[0]
    if distinct <= block:
        assert own is None
        return
    for (a, b), part, codes in zip(pairs, parts, own, strict=True):
        assert codes.total == distinct and codes.numbers is not None
        ranged = part.numbered("triples", codes).triples()
        lo, hi = whole.offsets[a], whole.offsets[b]
        assert np.array_equal(ranged.offsets, whole.offsets[a : b + 1] - lo)
        assert np.array_equal(ranged.elements, whole.elements[lo:hi])


def test_sample_segments_command(tmp_path):
    out, streets = tmp_path / "t.csv", tmp_path / "s.csv"
    result = CliRunner().invoke(
        main,
        [
            "sample",
            "--format",
            "segments",
            "--users",
            "5",
            "--days",
            "2",
            "--out",
            str(out),
            "--segments",
            str(streets),
        ],
    )
    assert result.exit_code == 0, result.output
    trips = pd.read_csv(out)
    assert set(trips["segment"]) <= set(pd.read_csv(streets)["segment"])
    assert (pd.to_datetime(trips["left"]) >= pd.to_datetime(trips["entered"])).all()
    missing = CliRunner().invoke(main, ["sample", "segments", "--out", str(out)])
    assert missing.exit_code == 2 and "--segments FILE" in missing.stderr


def test_every_format_has_one_registered_class():
    assert set(format_classes()) == set(FORMATS)
    for name, cls in format_classes().items():
        assert cls.format == name


def test_segment_view_round_trips_through_its_table():
    users = np.array(["u1", "u2", "u3"], dtype=object)
    view = SegmentView(
        "d1",
        (("time", 3600),),
        3,
        np.array([0, 0, 2, 2, 2], dtype=np.int32),
        np.array([1, 0, 2, 2, 1], dtype=np.int32),
        pd.DataFrame({"label": ["A", "B", "C"], "lon": 0.0, "lat": 0.0}),
        tbin=np.array([5, 5, 7, 8, 9]),
        tbin_end=np.array([5, 6, 8, 8, 10]),
        granularity=3600,
    )
    table = pd.read_csv(
        io.StringIO(view.table(users).to_csv(index=False)),
        dtype={"user": str, "location": str},
        keep_default_na=False,
    )
    back = view_from_table("d1", "segments", view.dimensions, users, table, view.locations)
    assert isinstance(back, SegmentView)
    for name in view.row_fields:
        np.testing.assert_array_equal(getattr(back, name), getattr(view, name))
    assert back.granularity == 3600
    with pytest.raises(ValueError, match="cannot be joined"):
        join_views(back, [view])
