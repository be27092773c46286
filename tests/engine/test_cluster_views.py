"""Dataviews built where the points are: with the Dask engine the selected points stay
on the workers, which count each grid's (or the towers') pairs, or place the points of
trajectories and segments; the views and the cells are a local run's, to the bit
(cluster_views.py)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from prudence_cli.config import load_config

pytest.importorskip("distributed")

from prudence_cli.dataviews import on_workers  # noqa: E402
from prudence_cli.engine.runner import DaskRunner  # noqa: E402

CONFIGS = Path(__file__).parents[2] / "configs"


@pytest.fixture(scope="module")
def cluster():
    runner = DaskRunner(workers=2)
    yield runner
    runner.close()


def _parts(source: Path, folder: Path) -> None:
    """`source` as a CSV and a Parquet part."""
    rows = pd.read_csv(source, dtype=str)
    folder.mkdir()
    half = len(rows) // 2
    rows.iloc[:half].to_csv(folder / "a.csv", index=False)
    rows.iloc[half:].to_parquet(folder / "b.parquet", index=False)


def _files(cluster) -> list[str]:
    """The names of the files the run keeps on the workers' disks."""

    def held(dask_worker) -> list[str]:
        folders = Path(dask_worker.local_directory).glob("prudence-*")
        return [p.name for folder in folders for p in folder.iterdir()]

    return [name for names in cluster.client.run(held).values() for name in names]


def _not_read(*_):
    raise AssertionError("read from the workers, not from what is kept")


def _people_as_local(kept, local, rng) -> None:
    """What a kept view tells of its people (dataviews/range_counts.py): the local view's."""
    assert np.array_equal(kept.offsets, local.offsets) and kept.rows == local.rows
    # what the attacks and unicity read instead of the offsets (a byte a person)
    assert np.array_equal(kept.in_view, local.in_view)
    users = np.unique(np.r_[0, rng.integers(0, local.n_users + 1, 6), local.n_users])
    assert np.array_equal(kept.rows_before(users), local.rows_before(users))
    for kind in ("locations", "visits", "records", "segments"):
        x, y = kept.coverage(kind), local.coverage(kind)
        assert x.dtype == y.dtype and np.array_equal(x, y), kind
        pieced = np.zeros(local.n_users)  # what the measures read, piece by piece
        for first, values in kept.coverage_pieces(kind)():
            pieced[first : first + values.shape[0]] = values
        assert np.array_equal(pieced, y), kind
        # c(U, D) added up range by range: the vector's float sum, to the bit
        assert kept.coverage_total(kind) == local.coverage_total(kind) == y.sum(), kind
    assert kept.users_in_view == local.users_in_view


def _kept_ranges(view_id: str, dask_worker=None) -> list[tuple[int, int, bool]]:
    """Of each range of the view kept on this worker: the locations' rows in its file,
    the view's locations, and whether its table is the worker's one copy (which exists)."""
    found = []
    for folder in Path(dask_worker.local_directory).glob("prudence-*"):
        for path in folder.glob(f"range-*.{view_id}"):
            kept = pickle.loads(path.read_bytes())
            shared = kept.table is not None
            assert not shared or Path(kept.table) == folder / f"locations.{view_id}"
            assert not shared or Path(kept.table).exists()
            found.append((len(kept.view.locations), kept.locations, shared))
    return found


def _left(cluster) -> list[str]:
    def left(dask_worker) -> list[str]:
        return [str(p) for p in Path(dask_worker.local_directory).glob("prudence-*")]

    return [path for paths in cluster.client.run(left).values() for path in paths]


# each case in 6 ranges; one range (a worker holding none) for pairs, points, bins, clusters
KEPT = [
    ("demo", [250.0, 750.0, 4e7]),  # 40,000 km: a cell whose centre is off the map
    ("demo_cdr", [None, 1000.0]),  # the towers, and a grid over them
    ("probability", None),  # its own dimensions
    ("trajectory", [500.0, 4e7]),  # of the points, with their times
    ("segments", None),  # of the points, with their leave times, on the segments
    ("clusters", None),  # crossings of the segments, clustered of every range's
    ("randomize", None),  # profiles of the points, split at the middle of all times
    ("randomize", "regions"),  # in regions, placed there (points outside some)
    ("unicity", None),  # bins in regions, numbered across the ranges
    ("unicity", [500.0, 4e7]),  # bins on a grid
    ("unicity", "towers"),  # bins of the towers
]
ONE_RANGE = [KEPT[0], KEPT[3], KEPT[5], KEPT[8]]


@pytest.mark.parametrize(
    ("name", "grids", "ranges"), [(*case, 6) for case in KEPT] + [(*c, 1) for c in ONE_RANGE]
)
def test_views_kept_on_the_workers_are_the_local_ones(
    name, grids, ranges, cluster, tmp_path, monkeypatch
):
    """Each view built in ranges where the points stayed (dataviews/on_workers.py) is a
    local run's: gathered row for row, its coverage, locations, offsets and table (made
    part by part on the workers), and its ranges are the rows of their users."""
    from prudence_cli import cluster_input
    from prudence_cli.dataviews.build import build_dataviews
    from prudence_cli.prepare import prepare

    monkeypatch.setattr(cluster_input, "_ranges", lambda client, rows: ranges)
    config = load_config(CONFIGS / f"{name}.yaml")
    _parts(config.input.path, tmp_path / "parts")
    dims = config.dataview.dimensions
    if name == "unicity":  # bins alone (the aggregate has a test of its own)
        config = dataclasses.replace(config, utility_aggregate=None)
        times = ("time", dict(dims)["time"][:2])
        if grids == "towers":
            dims, grids = (times,), None
        elif grids is not None:
            dims = (("grid", tuple(grids)), times)
    if grids == "regions":  # the unicity config's layers, and a few of its districts
        layers = load_config(CONFIGS / "unicity.yaml").dataview.layers
        districts = json.loads(dict(layers)["district"].read_text())
        districts["features"] = districts["features"][:4]  # most points outside
        (tmp_path / "few.geojson").write_text(json.dumps(districts))
        layers = (*layers, ("few", tmp_path / "few.geojson"))
        regions = ("regions", tuple(name for name, _ in layers))
        config = dataclasses.replace(
            config, dataview=dataclasses.replace(config.dataview, layers=layers)
        )
        dims, grids = (regions, *dims), None
    if grids is not None:
        dims = tuple((n, grids if n == "grid" else v) for n, v in dims)
    config = dataclasses.replace(
        config,
        input=dataclasses.replace(config.input, path=tmp_path / "parts"),
        dataview=dataclasses.replace(config.dataview, dimensions=dims),
    )
    here = prepare(config).selection
    there = prepare(config, client=cluster.client).selection
    try:
        assert there.placed is not None and len(there.points) == 0  # the points stayed there
        assert list(there.ids) == list(here.user_ids) and there.stats == here.stats
        ids = here.user_ids
        views = build_dataviews(here, config.dataview), build_dataviews(there, config.dataview)
        rng = np.random.default_rng(3)
        for local, kept in zip(*views, strict=True):
            assert kept.on_workers and not local.on_workers
            whole = kept.whole()
            assert type(whole) is type(local) and whole.n_users == local.n_users
            pd.testing.assert_frame_equal(whole.locations, local.locations, check_exact=True)
            for field in local.row_fields:
                x, y = getattr(local, field), getattr(whole, field)
                assert (x is None) == (y is None), field
                if x is not None:
                    assert x.dtype == y.dtype and np.array_equal(x, y), (local.id, field)
            # its people, as the ranges' counts tell them: read from the workers each
            # time, then as a small view's are kept here once read (KEPT_COUNTS)
            with monkeypatch.context() as each_time:
                each_time.setattr(on_workers, "KEPT_COUNTS", 0)
                _people_as_local(kept, local, rng)
                assert not kept._counts
            _people_as_local(kept, local, rng)
            assert kept._counts  # and counts that are the rows, read and kept as those:
            apart = {c for b in kept.ranges for c in ("visits", "places") if c not in b.as_rows}
            assert {*kept._counts} == {"rows", *apart} or not kept.additive
            with monkeypatch.context() as kept_here:  # the third time, nothing is read there
                kept_here.setattr(on_workers, "range_counts", _not_read)
                _people_as_local(kept, local, rng)
            # and the rest: ids, dimensions, a trajectory's clock, profiles' split
            held = {*local.row_fields, "locations", "codes"}
            for name in (f.name for f in dataclasses.fields(local) if f.name not in held):
                x, y = getattr(whole, name), getattr(local, name)
                assert np.array_equal(x, y) if isinstance(y, np.ndarray) else x == y, name
            # what the assessing process keeps of a range: numbers, and bits per location
            for b in kept.ranges:
                arrays = [
                    f.name for f in dataclasses.fields(b) if hasattr(getattr(b, f.name), "shape")
                ]
                assert arrays == ["used"] and b.used.size * 8 < len(local.locations) + 8
            if local.format == "clusters":  # made here of what the ranges tell, never gathered
                _same_clusters(kept, local)
            assert kept.additive == local.additive
            pd.testing.assert_frame_equal(kept.used_locations(), local.used_locations())
            for rows in (500, 1 << 20):
                parts = list(kept.table_parts(rows))  # the ids of the workers
                assert all(len(part) > 0 for part in parts[:-1])
                pd.testing.assert_frame_equal(
                    pd.concat(parts, ignore_index=True), local.table(ids), check_exact=True
                )
            first, futures = kept.kept_ranges(cluster)
            assert first[0] == 0 and first[-1] == local.n_users
            for (a, b), future in zip(
                zip(first[:-1], first[1:], strict=True), futures, strict=True
            ):
                piece = future.result()
                assert (piece.first, piece.last) == (a, b)
                assert np.array_equal(piece.view.location, local.users(a, b).location)
                assert np.array_equal(piece.view.user, local.users(a, b).user)
            # a trajectory's visits, a segments view's triples, numbered as the whole's;
            # also in blocks of 16, each range given its own elements' codes
            for kind, block in [(k, b) for k in local.numberings for b in (None, 16)]:
                lists = {"visits": "visit_sets", "triples": "triples"}[kind]
                whole_sets = getattr(local, lists)()
                kept._numbered.clear()
                with monkeypatch.context() as blocks:
                    if block is not None:
                        blocks.setattr(cluster, "element_block", block)
                    first, futures = kept.kept_ranges(cluster, kind)
                own = [future.result().view.codes for future in futures]
                assert all(getattr(c, "numbers", None) is None for c in own) == (block is None)
                for a, b, future in zip(first[:-1], first[1:], futures, strict=True):
                    sets = getattr(future.result().view, lists)()
                    lo, hi = whole_sets.offsets[a], whole_sets.offsets[b]
                    assert np.array_equal(sets.elements, whole_sets.elements[lo:hi])
                    assert np.array_equal(sets.offsets, whole_sets.offsets[a : b + 1] - lo)
            # beside the points and ids, only this view's ranges and its grid's pairs are kept
            grid = dict(kept.dimensions).get("grid")
            kinds = {"pickle", "pickle.placed", "pickle.ids", kept.id, f"{kept.id}.counts"}
            if kept.format in ("presence", "probability"):  # a grid's pairs, kept for the next
                kinds.add(f"pickle.pairs-{grid}")
            assert {name.split(".", 1)[1] for name in _files(cluster)} <= kinds
            # the whole view's locations (a bins view's are every bin) kept once a worker,
            # beside its ranges, not in each range's file
            ranges = cluster.client.run(_kept_ranges, kept.id)
            assert sum(len(found) for found in ranges.values()) == len(first) - 1
            for found in ranges.values():
                for rows, locations, shared in found:
                    assert locations == len(local.locations)
                    assert rows == 0 if shared else rows == locations
                    assert shared or kept.format != "bins"
        if grids is not None and 4e7 in grids:  # the off-map cell was placed at a point
            assert np.isfinite(local.locations[["lon", "lat"]].to_numpy()).all()
    finally:
        if there.placed is not None:
            there.placed.close()
    assert _left(cluster) == []


def _same_clusters(kept, local) -> None:
    for name in ("window", "segment", "cluster", "cluster_window", "mu"):
        assert np.array_equal(getattr(kept.clusters, name), getattr(local.clusters, name))
    assert len(local.clusters.mu) > 0
    risk, moves = local.cluster_risks()
    there, moved = kept.cluster_risks()
    assert np.array_equal(there, risk) and moved == moves
    points = np.unique(np.r_[0.0, 1.0, risk])
    expected = [local.data_of(risk <= r, "segments") for r in points]
    assert kept.data_at(risk, points, "segments").tolist() == expected
    people = np.arange(local.n_users) % 3 > 0
    assert kept.data_of(people, "segments") == local.data_of(people, "segments")
    everyone = np.ones(local.n_users, dtype=bool)
    assert kept.data_of(everyone, "segments") == local.data_of(everyone, "segments")


@pytest.mark.parametrize(
    ("name", "trips"),
    [("demo", False), ("trajectory", True), ("trajectory", False), ("segments", True)],
)
def test_mobility_measured_on_the_workers_is_the_local_one(
    name, trips, cluster, tmp_path, monkeypatch
):
    """People measured in their ranges and places in shards of locations give a local
    run's profile, to the bit: every measure (a trajectory's trip measures and flows
    too), at every mask of people."""
    from prudence_cli import cluster_input
    from prudence_cli.dataviews.build import build_dataviews
    from prudence_cli.explore.mobility import view_profile
    from prudence_cli.prepare import prepare

    monkeypatch.setattr(cluster_input, "_ranges", lambda client, rows: 5)
    config = load_config(CONFIGS / f"{name}.yaml")
    _parts(config.input.path, tmp_path / "parts")
    config = dataclasses.replace(
        config, input=dataclasses.replace(config.input, path=tmp_path / "parts")
    )
    here = prepare(config).selection
    there = prepare(config, client=cluster.client).selection
    rng = np.random.default_rng(5)
    try:
        local = next(build_dataviews(here, config.dataview))
        kept = next(build_dataviews(there, config.dataview))
        a = view_profile(local, here.crs, trips)
        b = view_profile(kept, there.crs, trips)
        assert a is not None and b is not None
        assert ("flow" in a.places) == trips and ("max_distance" in a.people) == trips
        frames = b.kept_people.frames  # a range's people measures on each range's worker
        assert len(frames) == 5
        people = pd.concat([f.result() for f in frames], ignore_index=True)
        pd.testing.assert_frame_equal(a.people, people, check_exact=True)
        pd.testing.assert_frame_equal(a.places, b.places, check_exact=True)
        risks = []
        for share in (0.0, 0.3, 0.9, 1.0):
            people = rng.random(local.n_users) < share
            x, y = a.tables.measured(people=people), b.tables.measured(people=people)
            assert x.keys() == y.keys()
            for measure in x:
                assert np.array_equal(x[measure], y[measure], equal_nan=True), measure
            risks.append(np.where(people, rng.random(local.n_users), 1.0))
        risks.append(np.round(rng.random(local.n_users), 1))  # ties
        for x, y in zip(a.compared(risks), b.compared(risks), strict=True):
            for frame, same in zip(x, y, strict=True):
                pd.testing.assert_frame_equal(frame, same, check_exact=True)
    finally:
        there.placed.close()
    assert _left(cluster) == []


@pytest.mark.parametrize(
    ("target", "grids"),
    [("district", None), (1000.0, None), ("municipality", [500.0, 3000.0])],
)
def test_the_utility_aggregate_counted_on_the_workers_is_the_local_one(
    target, grids, cluster, tmp_path, monkeypatch
):
    """The declared aggregate's error of each bins profile, from the ranges' counts of
    the points kept on the workers, is a local run's, to the bit: in regions (points
    outside some) or on a grid, for profiles in regions or on grids."""
    from prudence_cli import cluster_input
    from prudence_cli.measures.utility import aggregate_utility
    from prudence_cli.prepare import prepare

    monkeypatch.setattr(cluster_input, "_ranges", lambda client, rows: 5)
    config = load_config(CONFIGS / "unicity.yaml")
    _parts(config.input.path, tmp_path / "parts")
    assert config.utility_aggregate is not None
    aggregate = config.utility_aggregate
    if isinstance(target, float):
        aggregate = dataclasses.replace(aggregate, grid=target, layer=None, seconds=7200)
    else:
        aggregate = dataclasses.replace(aggregate, layer=target)
    dims = config.dataview.dimensions
    if grids is not None:
        dims = (("grid", tuple(grids)), *(d for d in dims if d[0] != "regions"))
    config = dataclasses.replace(
        config,
        input=dataclasses.replace(config.input, path=tmp_path / "parts"),
        dataview=dataclasses.replace(config.dataview, dimensions=dims),
        utility_aggregate=aggregate,
    )
    here = prepare(config).selection
    there = prepare(config, client=cluster.client).selection
    try:
        assert there.placed is not None and len(there.points) == 0  # the points stayed there
        local = aggregate_utility(config, here)
        assert len(local) == len(list(itertools.product(*(v for _, v in dims))))
        assert (local["aggregate_error"] > 0).any()
        pd.testing.assert_frame_equal(aggregate_utility(config, there), local, check_exact=True)
    finally:
        there.placed.close()
    assert _left(cluster) == []


@pytest.mark.parametrize("name", ["demo", "trajectory", "segments", "clusters"])
def test_the_cache_takes_the_points_from_the_workers_and_gives_them_back(
    name, cluster, tmp_path, monkeypatch
):
    """`input.cache: parquet` with the Dask engine: the points kept on the workers go
    into the cache range by range, and back onto the workers from it; the assessing
    process never holds them. Either engine reads a cache either wrote: the points and
    ids a local run selects, and on the workers the same views as from the input."""
    from prudence_cli import cluster_input
    from prudence_cli import prepare as prepared
    from prudence_cli.dataviews.build import build_dataviews

    monkeypatch.setattr(cluster_input, "_ranges", lambda client, rows: 5)
    monkeypatch.setattr(prepared, "PART_POINTS", 700)  # a local run's parts: several
    config = load_config(CONFIGS / f"{name}.yaml")
    _parts(config.input.path, tmp_path / "parts")
    dims = tuple((n, values[:1]) for n, values in config.dataview.dimensions)
    config = dataclasses.replace(
        config,
        input=dataclasses.replace(config.input, path=tmp_path / "parts", cache="parquet"),
        dataview=dataclasses.replace(config.dataview, dimensions=dims),
    )
    uncached = dataclasses.replace(config.input, cache="none")
    here = prepared.prepare(dataclasses.replace(config, input=uncached)).selection

    def cached(engine: str, client=None):
        by = dataclasses.replace(config.input, cache_dir=tmp_path / f"by-{engine}")
        return prepared.prepare(dataclasses.replace(config, input=by), client=client)

    for engine in ("dask", "local"):  # who writes it: each reads it
        written = cached(engine, cluster.client if engine == "dask" else None)
        assert written.cache["used"] is False
        if written.selection.placed is not None:
            assert len(written.selection.points) == 0  # nothing came back to store
            written.selection.placed.close()
        local = cached(engine)
        assert local.cache["used"] is True and local.selection.placed is None
        pd.testing.assert_frame_equal(local.selection.points, here.points, check_exact=True)
        assert list(local.selection.user_ids) == list(here.user_ids)
        assert local.selection.stats == here.stats
        there = cached(engine, cluster.client)
        assert there.cache["used"] is True
        selection = there.selection
        try:
            assert selection.placed is not None and len(selection.points) == 0
            assert list(selection.ids) == list(here.user_ids)
            views = (
                build_dataviews(here, config.dataview),
                build_dataviews(selection, config.dataview),
            )
            for view, kept in zip(*views, strict=True):
                whole = kept.whole()
                for field in view.row_fields:
                    x, y = getattr(view, field), getattr(whole, field)
                    assert (x is None) == (y is None), field
                    assert x is None or np.array_equal(x, y), (engine, view.id, field)
                assert np.array_equal(kept.offsets, view.offsets)
        finally:
            selection.placed.close()
    assert _left(cluster) == []


def test_a_damaged_cache_part_is_read_again_from_the_input(cluster, tmp_path):
    """A part of the cache that cannot be read (truncated) makes the cache unused, on
    either engine: the input is read again and the cache written anew; nothing is left
    on the workers of the attempt."""
    from prudence_cli.prepare import prepare

    config = load_config(CONFIGS / "demo.yaml")
    config = dataclasses.replace(
        config,
        input=dataclasses.replace(config.input, cache="parquet", cache_dir=tmp_path / "c"),
    )
    assert prepare(config).cache["used"] is False
    (part,) = (tmp_path / "c").glob("*/points/part-00000.parquet")
    part.write_bytes(part.read_bytes()[:100])
    again = prepare(config, client=cluster.client)
    try:
        assert again.cache["used"] is False and again.selection.placed is not None
    finally:
        again.selection.placed.close()
    assert prepare(config).cache["used"] is True  # written anew, whole
    assert _left(cluster) == []


def test_a_worker_that_read_no_part_selects_a_range(cluster, tmp_path):
    """The run's folder is made where a range is selected, not only where a part was
    read (one part, two workers: the other one may select)."""
    import uuid

    from prudence_cli.cluster_input import _cut
    from prudence_cli.cluster_scratch import Scratch
    from prudence_cli.cluster_select import select_range
    from prudence_cli.io.points import read_file

    config = load_config(CONFIGS / "demo.yaml")
    (piece,) = _cut(read_file(config.input.spec(), None, None, None, alone=True).table, [])
    scratch = Scratch(uuid.uuid4().hex)
    try:
        for worker in cluster.addresses:  # no part was read in this run on either
            told = cluster.client.submit(
                select_range, [piece], config, 0, scratch, workers=[worker], pure=False
            ).result()
            assert told.worker == worker and told.points > 0
            assert cluster.client.submit(Path(told.path).exists, workers=[worker]).result()
    finally:
        cluster.client.run(scratch.remove)
    assert _left(cluster) == []


def _slowly(numbered, seconds: float):
    """`numbered` (the whole view's codes from what its ranges told), after a while."""

    def joined(codes, told):
        import time

        time.sleep(seconds)
        return numbered(codes, told)

    return joined


def test_a_worker_lost_while_a_views_codes_are_joined_stops_the_run(tmp_path, monkeypatch):
    """A trajectory's distinct visits are numbered on the workers from what each range
    tells, joined two by two (KeptView.codes_of), then fetched by each range as it is
    numbered: a worker lost while they are joined (its ranges' files on its disk) stops
    the run as a lost worker (exit 2 with what to do), within seconds, never waiting
    for it."""
    import contextlib
    import os
    import threading
    import time
    from concurrent.futures import CancelledError

    from prudence_cli.dataviews.build import build_dataviews
    from prudence_cli.prepare import prepare

    config = load_config(CONFIGS / "trajectory.yaml")
    _parts(config.input.path, tmp_path / "parts")
    dims = tuple((n, values[:1]) for n, values in config.dataview.dimensions)
    config = dataclasses.replace(
        config,
        input=dataclasses.replace(config.input, path=tmp_path / "parts"),
        dataview=dataclasses.replace(config.dataview, dimensions=dims),
    )
    runner = DaskRunner(workers=2)
    try:
        selection = prepare(config, client=runner.client).selection
        (kept,) = build_dataviews(selection, config.dataview)
        assert kept.on_workers and kept.view_class.numberings == ("visits",)
        holder = kept.ranges[0].worker
        monkeypatch.setattr(on_workers, "_numbered_of", _slowly(on_workers._numbered_of, 8))

        def lose() -> None:
            with contextlib.suppress(Exception):  # the worker dies while it answers
                runner.client.run(os._exit, 1, workers=[holder])

        started = time.monotonic()
        first, futures = kept.kept_ranges(runner, "visits")  # joined while this waits
        threading.Timer(1.0, lose).start()
        with pytest.raises(CancelledError) as lost:
            for future in futures:
                future.result(timeout=60)  # not forever: TimeoutError
        assert time.monotonic() - started < 30
        assert "was lost during the run" in str(runner.explained(lost.value))
    finally:
        runner.close()


def test_a_worker_lost_while_its_files_are_needed_stops_the_run():
    """Tasks pinned to the worker that holds a run's files wait forever for it once it is
    gone (Dask restarts a worker past its memory limit with another address): the run
    stops instead, as a lost worker (exit 2 with what to do, DaskRunner.explained)."""
    import contextlib
    import os
    import threading
    import time
    from concurrent.futures import CancelledError

    from distributed import Client, LocalCluster

    from prudence_cli.cluster_tasks import windowed

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as local,
        Client(local) as client,
    ):
        holder = sorted(client.scheduler_info()["workers"])[0]

        def submit(k: int):
            return client.submit(
                time.sleep, 60, workers=[holder], allow_other_workers=False, pure=False
            )

        def lose() -> None:
            with contextlib.suppress(Exception):  # the worker dies while it answers
                client.run(os._exit, 1, workers=[holder])

        threading.Timer(1.0, lose).start()
        started = time.monotonic()
        with pytest.raises(CancelledError, match="left"):
            next(windowed(client, [0], submit, {holder}))
        assert time.monotonic() - started < 30


def _fails_at(k: int, bad: int) -> int:
    if k == bad:
        raise ValueError("a bad range")
    return k


def test_a_windowed_run_that_fails_leaves_no_future_on_the_client(cluster):
    """The error is kept by Dask with its traceback, which holds the run's frame: the
    futures still running are let go of all the same."""
    from prudence_cli.cluster_tasks import windowed
    from tests.engine.test_distributed import _futures_left

    client = cluster.client
    before = set(client.futures)

    def submit(k: int):
        return client.submit(_fails_at, k, 2, pure=False)

    with pytest.raises(ValueError, match="a bad range") as failed:
        for _ in windowed(client, range(12), submit, set()):
            pass
    assert failed.value is not None and _futures_left(cluster, before) <= before


def test_data_sent_to_a_worker_that_left_is_a_lost_worker():
    """A range's share of the risks (or a cache part, a range's risks to compare with, a
    shard) is sent to the worker holding the range as its task is submitted: when that worker
    has left, the scheduler's KeyError of its address becomes a lost worker (exit 2 with
    what to do), not an error the user cannot read."""
    import contextlib
    import os
    import time
    from concurrent.futures import CancelledError

    from distributed import Client, LocalCluster

    from prudence_cli.engine.connect import cluster_failure, sent_to
    from prudence_cli.engine.runner import DaskRunner

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as local,
        Client(local) as client,
    ):
        there, holder = sorted(client.nthreads())
        assert sent_to(client, np.arange(3), [there]).result().tolist() == [0, 1, 2]
        with contextlib.suppress(Exception):  # the worker dies while it answers
            client.run(os._exit, 1, workers=[holder])
        deadline = time.monotonic() + 30
        while holder in client.nthreads() and time.monotonic() < deadline:
            time.sleep(0.1)
        with pytest.raises(CancelledError, match="left") as lost:
            sent_to(client, {"risk": np.zeros(4)}, [holder])
        assert holder in str(lost.value)
        assert cluster_failure(lost.value, "tcp://x:1") is not None
        runner = DaskRunner(local.scheduler_address)  # a shard or a range sent there
        try:
            with pytest.raises(CancelledError, match="left"):
                runner._scattered(np.zeros(4), [holder])
        finally:
            runner.close()


def test_workers_give_back_the_memory_of_reading_when_the_points_stay(
    cluster, tmp_path, monkeypatch
):
    """The run's files stay for the dataviews; what reading freed goes back to the system
    before the levels arrive (heap.give_back on each worker)."""
    from prudence_cli.prepare import prepare

    asked = []
    run = cluster.client.run

    def spy(function, *args, **kwargs):
        asked.append(getattr(function, "__name__", ""))
        return run(function, *args, **kwargs)

    monkeypatch.setattr(cluster.client, "run", spy)
    config = load_config(CONFIGS / "demo_cdr.yaml")
    selection = prepare(config, client=cluster.client).selection
    assert selection.placed is not None and asked == ["given_back"]
    selection.placed.close()
    assert asked == ["given_back", "remove"]
    monkeypatch.undo()
    assert _left(cluster) == []


def test_a_task_still_running_when_the_run_ends_leaves_nothing(cluster):
    """Dask does not stop a running task: one that writes after the run's files were
    removed (Ctrl-C, a failure elsewhere) removes what it wrote and stops."""
    import uuid
    from concurrent.futures import CancelledError

    from prudence_cli.cluster_input import _cut
    from prudence_cli.cluster_scratch import Scratch
    from prudence_cli.cluster_select import select_range
    from prudence_cli.io.points import read_file

    config = load_config(CONFIGS / "demo.yaml")
    (piece,) = _cut(read_file(config.input.spec(), None, None, None, alone=True).table, [])
    scratch = Scratch(uuid.uuid4().hex)
    cluster.client.run(scratch.remove)  # the run ended everywhere
    future = cluster.client.submit(select_range, [piece], config, 0, scratch, pure=False)
    with pytest.raises(CancelledError, match="has ended"):
        future.result()
    assert _left(cluster) == []


def test_points_left_on_the_workers_go_with_a_forgotten_selection(cluster, tmp_path):
    """Library use: a Selection whose points stayed on the workers, never closed, takes
    them with it when it is collected."""
    import gc

    from prudence_cli.prepare import prepare

    selection = prepare(load_config(CONFIGS / "demo_cdr.yaml"), client=cluster.client).selection
    assert selection.placed is not None and _left(cluster) != []
    del selection
    gc.collect()
    assert _left(cluster) == []


def test_every_worker_counts_when_scheduler_info_describes_only_five():
    """Some versions of distributed describe at most five workers in scheduler_info:
    a sixth is not taken for lost."""
    from concurrent.futures import CancelledError

    from prudence_cli.cluster_tasks import still_there

    class Capped:
        def nthreads(self) -> dict:
            return {f"tcp://w{k}": 1 for k in range(7)}

        def scheduler_info(self) -> dict:
            return {"workers": {f"tcp://w{k}": {} for k in range(5)}}

    still_there(Capped(), {f"tcp://w{k}" for k in range(7)})
    with pytest.raises(CancelledError, match="tcp://w9 left"):
        still_there(Capped(), {"tcp://w1", "tcp://w9"})


def test_a_worker_restarted_on_its_address_is_said_lost(cluster, tmp_path):
    """A worker restarted on the same address (a fixed --worker-port) holds none of the
    run's files it wrote: the tasks pinned there say the worker was lost (exit 2, what
    to do), not that a file is missing."""
    from concurrent.futures import CancelledError

    from prudence_cli.dataviews.build import build_dataviews
    from prudence_cli.prepare import prepare

    config = load_config(CONFIGS / "demo.yaml")
    _parts(config.input.path, tmp_path / "parts")
    config = dataclasses.replace(
        config, input=dataclasses.replace(config.input, path=tmp_path / "parts")
    )

    def restarted(dask_worker) -> None:  # what a new process finds: an empty directory
        import shutil

        for run in Path(dask_worker.local_directory).glob("prudence-*"):
            shutil.rmtree(run)

    for when in ("building the views", "reading a view kept there"):
        there = prepare(config, client=cluster.client).selection
        try:
            views = build_dataviews(there, config.dataview)
            kept = next(views) if when != "building the views" else None
            cluster.client.run(restarted)
            gone = "no longer holds the files of this run"
            with pytest.raises(CancelledError, match=gone) as lost:
                _ = next(views) if kept is None else kept.whole()
            if kept is not None:  # and its table, made on the workers
                with pytest.raises(CancelledError, match=gone):
                    next(iter(kept.table_parts(100)))
            explained = cluster.explained(lost.value)
            assert explained is not None and "was lost during the run" in str(explained), when
        finally:
            there.placed.close()
        assert _left(cluster) == []


def test_the_ranges_of_a_single_file_are_selected_on_every_worker(cluster, monkeypatch):
    """One file is read by one worker; its ranges are still selected (and kept) round
    the workers, not all where the file was read."""
    from prudence_cli import cluster_input
    from prudence_cli.prepare import prepare

    monkeypatch.setattr(cluster_input, "_ranges", lambda client, rows: 4)
    config = load_config(CONFIGS / "demo.yaml")  # one gzipped CSV
    there = prepare(config, client=cluster.client).selection
    try:
        told = there.placed.kept.told
        assert len(told) == 4
        assert {t.worker for t in told} == set(cluster.client.nthreads())
    finally:
        there.placed.close()
    assert _left(cluster) == []


def test_a_range_keeps_its_coverage_counts_in_32_bits_and_fractions_as_they_are():
    """What the assessing process holds of a range a person: its visits (or places) as
    its rows where they are the same, as 32-bit integers where they are counts, else as
    floats; each gives back the same floats."""
    from prudence_cli.cluster_views import _unless_rows

    rows = np.array([1, 2, 0], dtype=np.int32)
    assert _unless_rows(np.array([1.0, 2.0, 0.0]), rows) is None
    for values, dtype in (
        ([3.0, 2.0, 0.0], np.int32),
        ([3.5, 2.0, 0.0], np.float64),
        ([2.0**31, 2.0, 0.0], np.float64),
        ([np.nan, 2.0, 0.0], np.float64),
    ):
        kept = _unless_rows(np.array(values), rows)
        assert kept is not None and kept.dtype == dtype
        assert np.array_equal(kept.astype(float), np.array(values), equal_nan=True)
