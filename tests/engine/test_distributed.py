"""The Dask backend gives the local engine's catalogs bit for bit, on every attack; the
config and CLI paths to it; and the memory budget's partitions."""

from __future__ import annotations

import asyncio
import dataclasses
import filecmp
import gc
import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from prudence_cli.assess import run_assessment
from prudence_cli.catalog import open_catalog
from prudence_cli.cli import main
from prudence_cli.config import load_config
from prudence_cli.engine import CountingProblem, Engine, QuerySpec
from prudence_cli.engine.runner import DaskRunner, LocalRunner
from prudence_cli.errors import BudgetError
from tests.engine.test_engine import MATCH_MODES, random_problem

dask = pytest.importorskip("dask")
pytest.importorskip("distributed")

CONFIGS = Path(__file__).parents[2] / "configs"
# every attack of the risk catalogs: presence, trajectory, vectors, probability,
# segments, clusters and unicity
ASSESSED = [
    "demo",
    "demo_cdr",
    "trajectory",
    "vectors",
    "probability",
    "segments",
    "clusters",
    "unicity",
]


@pytest.fixture(scope="module")
def cluster():
    runner = DaskRunner(workers=2)
    yield runner
    runner.close()


def _small(name: str):
    """The shipped config with the first value of each data dimension (every level)."""
    config = load_config(CONFIGS / f"{name}.yaml")
    dims = tuple((n, values[:1]) for n, values in config.dataview.dimensions)
    return dataclasses.replace(
        config, dataview=dataclasses.replace(config.dataview, dimensions=dims)
    )


def _engine(config, runner=None, **extra):
    settings = config.engine
    engine = Engine(
        max_instances=settings.max_instances,
        sample=settings.sample,
        seed=config.seed,
        worker_threads=1 if runner is not None else None,
        **extra,
    )
    if runner is not None:
        engine.runner = runner
    return engine


def _same_catalog(a: Path, b: Path) -> int:
    """The catalog `b` is `a`, file for file; a per-dataview table that the workers of
    `b` wrote as a folder of parts, row for row (`a` is the local engine's). Returns how
    many tables `b` holds in parts."""
    from prudence_cli.catalog.folder import RISKS_TEXT, VIEW_TEXT
    from prudence_cli.catalog.tables import parts_of, read_table

    irac = pd.read_csv(a / "irac.csv"), pd.read_csv(b / "irac.csv")
    pd.testing.assert_frame_equal(*irac, check_exact=True)
    names = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    folders = {name for name in names if (b / name).is_dir()}
    parted = {p.relative_to(b) for name in folders for p in parts_of(b / name)}
    assert [n for n in names if n not in folders] == sorted(
        p.relative_to(b) for p in b.rglob("*") if p.is_file() and p.relative_to(b) not in parted
    )
    for name in names:
        if name in folders:
            text = VIEW_TEXT if name.parts[0] == "dataviews" else RISKS_TEXT
            pd.testing.assert_frame_equal(
                read_table(a / name, text), read_table(b / name, text), check_exact=True
            )
        elif name.name != "catalog.json":
            assert filecmp.cmp(a / name, b / name, shallow=False), name
    assert all(n.parts[0] in ("dataviews", "risks", "measures") for n in folders)
    return len(folders)


@pytest.mark.parametrize("name", ASSESSED)
def test_dask_catalog_equals_local(name, cluster, tmp_path):
    config = _small(name)
    local = run_assessment(config, tmp_path / "local", _engine(config), None)
    spread = run_assessment(config, tmp_path / "dask", _engine(config, cluster), None)
    assert spread.manifest["engine"]["backend"] == "dask"
    assert spread.manifest["engine"]["workers"] == 2
    parted = _same_catalog(local.output, spread.output)
    # presence, probability, trajectory, segments, bins and clusters views stay on the
    # workers, which write their tables: the dataview's, its risks and its people's measures
    kept = ("presence", "probability", "trajectory", "segments", "bins", "clusters")
    views = spread.manifest["dataviews"]
    tables = sum(2 + (view.get("measures") is not None) for view in views)
    assert parted == (tables if config.dataview.format in kept else 0)
    if parted:  # read back through the catalog, every part checked
        a, b = open_catalog(local.output), open_catalog(spread.output)
        for view in views:
            pd.testing.assert_frame_equal(
                b.dataview_table(view["id"]), a.dataview_table(view["id"])
            )
            pd.testing.assert_frame_equal(b.risks(view["id"]), a.risks(view["id"]))
            if view.get("measures") is not None:
                for x, y in zip(b.measures(view["id"]), a.measures(view["id"]), strict=True):
                    pd.testing.assert_frame_equal(x, y)


# shipped configs cut to one dataview, their attacks at h = 2 and all, and their levels
NEVER_GATHERED = {
    "trajectory": (
        {"[500m, 1km]": "[500m]", "[1h, 1d]": "[1h]", "[1, 3]": "[1]"},
        "  - {attack: location, knowledge: {h: [2, all]}}\n"
        "  - {attack: location_sequence, knowledge: {h: [2]}}\n"
        "  - {attack: visit, knowledge: {h: [1]}}\n",
        4,
    ),
    "segments": (
        {"[30min, 1h, 5h]": "[30min]"},
        "  - {attack: subtrajectory, knowledge: {h: [2, all]}}\n",
        2,
    ),
    # clusters made here of every range's crossings, risks and the data kept at each
    # threshold read in the ranges
    "clusters": (
        {"[2, 3, 5]": "[2, 5]", "[50m, 100m, 200m]": "[100m]"},
        "  - attack: cluster\ncoverage: segments\n",
        2,
    ),
    # bins: unicity's knowledge drawn in the ranges, its classes and EM/KL counted there
    "unicity": (
        {"[district, municipality]": "[district]", "[1h, 6h, 12h, 24h]": "[6h]"},
        "  - attack: unicity\n"
        "    knowledge: {points: [2, 4], draw: [activity, uniform], samples: [all, 40]}\n",
        8,
    ),
}


@pytest.mark.parametrize("name", sorted(NEVER_GATHERED))
def test_a_view_of_trajectories_on_the_workers_is_never_gathered(
    name, cluster, tmp_path, monkeypatch
):
    """Every attack on trajectories makes its levels in the ranges the workers keep:
    `location` too, whose compositions of each target's whole multiset (h = all) are
    counted shard by shard, and `subtrajectory`, each range numbering its triples as the
    whole view does (in blocks, as a trajectory's visits); and `unicity` on bins, its
    knowledge drawn in the ranges from the stream a whole draw reads: the local catalog,
    without the view's rows ever coming here."""
    from prudence_cli.dataviews.on_workers import KeptView
    from prudence_cli.dataviews.segments import TripleCodes
    from prudence_cli.dataviews.trajectory import VisitCodes

    cuts, attacks, levels = NEVER_GATHERED[name]
    text = (CONFIGS / f"{name}.yaml").read_text()
    text = text[: text.index("attacks:")]
    text = text.replace("../sample_data", str(CONFIGS.parent / "sample_data"))
    for old, new in cuts.items():
        text = text.replace(old, new)
    (tmp_path / "t.yaml").write_text(text + "attacks:\n" + attacks)
    config = load_config(tmp_path / "t.yaml")
    local = run_assessment(config, tmp_path / "local", _engine(config), None)

    def gathered(self):
        raise AssertionError("the view was gathered")

    def numbered_here(cls, found):
        raise AssertionError("the view's codes were made in the assessing process")

    monkeypatch.setattr(KeptView, "whole", gathered)
    _per_element_on_workers(monkeypatch)
    for codes in (VisitCodes, TripleCodes):  # made on a worker (KeptView.codes_of)
        monkeypatch.setattr(codes, "of", classmethod(numbered_here))
    shares = _shares_held(monkeypatch)
    numbered: list[object] = []
    if name in ("trajectory", "segments"):  # visits or triples, and vectors, in blocks
        from prudence_cli.dataviews import on_workers

        in_blocks = on_workers.numbered_in_blocks

        def recorded(*args):
            numbered.append(in_blocks(*args))
            return numbered[-1]

        monkeypatch.setattr(on_workers, "numbered_in_blocks", recorded)
        monkeypatch.setattr(cluster, "element_block", 256)
    spread = run_assessment(config, tmp_path / "dask", _engine(config, cluster), None)
    assert all(own is not None for own in numbered)
    assert numbered or name not in ("trajectory", "segments")
    assert len(shares) > 1 and max(shares) == 1  # the risks of one range at a time here
    views = spread.manifest["dataviews"]  # its table, risks [and people's measures]
    tables = sum(2 + (view.get("measures") is not None) for view in views)
    assert _same_catalog(local.output, spread.output) == tables
    risks = pd.read_csv(local.output / "irac.csv")
    assert len(risks) == levels
    assert risks.notna().all().all()


def _shares_held(monkeypatch) -> list[int]:
    """As a view kept on the workers sends each range its share of the risks: how many
    of the shares sent so far are still held here, that one included."""
    import weakref

    from prudence_cli.dataviews.on_workers import KeptView

    held: list[list[weakref.ref]] = []
    counts: list[int] = []
    sent = KeptView.sent

    def counted(self, value, k):
        held.append([weakref.ref(array) for array in value.values()])
        counts.append(sum(any(r() is not None for r in refs) for refs in held))
        return sent(self, value, k)

    monkeypatch.setattr(KeptView, "sent", counted)
    return counts


def _per_element_on_workers(monkeypatch) -> None:
    """A ranged level's rank by rarity and its partitions (found from vectors per
    element) fail if worked out in this process, wherever it calls them from (each name
    they go by in the package's modules loaded by then: the engine's are): on the
    workers, they run as they are. So are a trajectory's visits numbered in blocks."""
    from prudence_cli.dataviews import kept_codes
    from prudence_cli.engine import blocks, indexes, plan, shards

    here = os.getpid()

    def only_there(function):
        def guarded(*args, **kwargs):
            if os.getpid() == here:
                raise AssertionError(f"{function.__name__} ran in the assessing process")
            return function(*args, **kwargs)

        return guarded

    guarded_functions = (
        indexes.rarity_rank,
        plan._partitions,
        shards.reached,
        blocks.in_blocks,
        blocks.extent,
        blocks._cut_block,
        blocks._histogram,
        blocks._ranked_block,
        blocks._held_in_blocks,
        blocks._pieces,
        blocks._read_each,
        blocks._values_at,
        blocks._assembled,
        kept_codes._cut,
        kept_codes._as_codes,
        kept_codes._ranks,
        kept_codes._own_codes,
    )
    for function in guarded_functions:
        guarded = only_there(function)
        for module in [m for name, m in sys.modules.items() if name.startswith("prudence_cli")]:
            for name, value in list(vars(module).items()):
                if value is function:
                    monkeypatch.setattr(module, name, guarded)


@pytest.mark.parametrize("block", [None, 4])
@pytest.mark.parametrize("strategy", ["keyed", "posting"])
@pytest.mark.parametrize(("match", "mode"), MATCH_MODES)
def test_a_ranged_levels_vectors_per_element_stay_where_they_are_added(
    match, mode, strategy, block, cluster, monkeypatch
):
    """A level in ranges on the workers, each strategy and whole records: its holders,
    their rank by rarity and each size's weights per element are added up and kept on
    the workers, the weights in blocks of `block` elements (None: the cluster's, one
    here), which find the partitions and their running sums (`Runner.on`): the local
    supports and instances, with none of those vectors here, and none of them left on
    the cluster once counted (the engine still alive): only the ranges stay."""
    from prudence_cli.engine.ranged import split

    problem = random_problem(np.random.default_rng(7), 120, 10, 3, match=match, mode=mode)
    settings_ = dict(strategy=strategy, partition_instances=15)
    here = Engine(**settings_).min_support(problem)
    _per_element_on_workers(monkeypatch)
    if block is not None:
        monkeypatch.setattr(cluster, "element_block", block)
    before = _futures_left(cluster, set(cluster.client.futures))  # of the tests before
    spread = split(problem, cluster, 4)
    engine = Engine(**settings_, runner=cluster, worker_threads=1)
    there = engine.min_support(spread)
    assert np.array_equal(here.minimum, there.minimum)
    assert here.instances == there.instances
    left = {future.key for future in spread.parts}  # the ranges, as prepared
    assert left <= _futures_left(cluster, before | left) <= before | left and len(left) == 4


@pytest.mark.parametrize("strategy", ["keyed", "posting"])
def test_a_ranged_levels_results_are_read_a_piece_at_a_time(strategy, cluster, monkeypatch):
    """Past `RESULT_PIECE` people, a partition's result (an entry per person of its
    shard at most) comes to the assessing process that many entries at a time, read
    where it is: the local supports, and nothing left on the cluster but the ranges."""
    from prudence_cli.engine import ranged, streams
    from prudence_cli.engine.ranged import split

    problem = random_problem(np.random.default_rng(8), 120, 10, 3, match="contains")
    settings_ = dict(strategy=strategy, partition_instances=15)
    here = Engine(**settings_).min_support(problem)
    read: list[list[int]] = []  # per result, its pieces' sizes
    whole = streams.taken_in_pieces

    def recorded(*args):
        read.append([])
        for piece in whole(*args):
            read[-1].append(len(piece[0]))
            yield piece

    monkeypatch.setattr(streams, "taken_in_pieces", recorded)
    monkeypatch.setattr(ranged, "RESULT_PIECE", 3)
    before = _futures_left(cluster, set(cluster.client.futures))
    spread = split(problem, cluster, 4)
    there = Engine(**settings_, runner=cluster, worker_threads=1).min_support(spread)
    assert np.array_equal(here.minimum, there.minimum) and here.instances == there.instances
    assert max(max(sizes) for sizes in read) == 3
    assert max(len(sizes) for sizes in read) > 1  # some result in several pieces
    left = {future.key for future in spread.parts}
    assert _futures_left(cluster, before | left) <= before | left


def test_a_clusters_view_on_one_worker_is_read_where_it_is_kept(tmp_path, monkeypatch):
    """On a single worker (no ranges to cut for counted levels), the cluster attack still
    reads the clusters view where it is kept: the local catalog, nothing gathered."""
    from prudence_cli.dataviews.on_workers import KeptView

    config = _small("clusters")
    local = run_assessment(config, tmp_path / "local", _engine(config), None)

    def gathered(self):
        raise AssertionError("the view was gathered")

    monkeypatch.setattr(KeptView, "whole", gathered)
    runner = DaskRunner(workers=1)
    try:
        spread = run_assessment(config, tmp_path / "dask", _engine(config, runner), None)
    finally:
        runner.close()
    assert spread.manifest["engine"]["workers"] == 1
    assert _same_catalog(local.output, spread.output) == 2  # its table and risks, in parts


def test_profiles_are_built_on_the_workers_and_swept_as_the_local_ones(
    cluster, tmp_path, monkeypatch
):
    """Profiles dataviews are built where the points are, split at the middle of every
    range's times: the randomized sweep reads the rows of its sample only (drawn from
    the users the ranges have), never the points, with the affinity the ranges' counts
    add up to; the workers write the views' tables — the local catalog."""
    from prudence_cli.cluster_views import PointsOnWorkers
    from prudence_cli.dataviews.on_workers import KeptView

    config = _small("randomize")
    split_at, gathered = [], []
    middle, whole = PointsOnWorkers.middle, KeptView.whole

    def spied(self):
        split_at.append(middle(self))
        return split_at[-1]

    def rows_of(self, users=None):
        view = whole(self, users)
        gathered.append((self.users_in_view, view.users_in_view))
        return view

    monkeypatch.setattr(PointsOnWorkers, "middle", spied)
    monkeypatch.setattr(KeptView, "whole", rows_of)
    local = run_assessment(config, tmp_path / "local", _engine(config), None)
    spread = run_assessment(config, tmp_path / "dask", _engine(config, cluster), None)
    assert split_at  # the points stayed on the workers
    assert gathered == [(gathered[0][0], config.randomize.users)]  # of many, the sample's
    assert gathered[0][0] > config.randomize.users
    assert _same_catalog(local.output, spread.output) == 2  # its table and risks, in parts
    assert spread.manifest["dataviews"] == local.manifest["dataviews"]


@pytest.mark.parametrize("name", ["demo", "vectors", "trajectory", "segments"])
def test_a_sampled_assessment_on_dask_is_the_local_one(name, cluster, tmp_path, monkeypatch):
    """Levels over the budget, sampled: on the workers, in the ranges of the dataviews
    kept there (presence, trajectory) or made from the view (vectors), the same catalog — the same
    lower bounds, instances checked and floors in catalog.json."""
    from prudence_cli.engine import ranged_sampled

    sampled_here = []
    original = ranged_sampled.sampled_support

    def counted(*args, **kwargs):
        sampled_here.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(ranged_sampled, "sampled_support", counted)
    config = _small(name)
    config = dataclasses.replace(
        config, engine=dataclasses.replace(config.engine, max_instances=200, sample=5)
    )
    local = run_assessment(config, tmp_path / "local", _engine(config), None)
    spread = run_assessment(config, tmp_path / "dask", _engine(config, cluster), None)
    assert local.manifest["sampling"] and any(s["sampled"] for s in local.manifest["sampling"])
    assert spread.manifest["sampling"] == local.manifest["sampling"]
    assert sampled_here  # in the ranges, on the workers: never gathered
    _same_catalog(local.output, spread.output)


def test_every_command_reads_a_catalog_the_workers_wrote_in_parts_as_the_local_one(
    cluster, tmp_path
):
    """check, sanitize (the release and its certificate), catalog best and utility, and
    the report read the tables the workers wrote in parts — the dataviews', the risks,
    the people's measures — as the local engine's files: the same answers."""
    import json

    config = load_config(CONFIGS / "demo.yaml")  # its coarsest view, which a release meets
    dims = tuple((n, values[-1:]) for n, values in config.dataview.dimensions)
    config = dataclasses.replace(
        config, dataview=dataclasses.replace(config.dataview, dimensions=dims)
    )
    local = run_assessment(config, tmp_path / "local", _engine(config), None).output
    spread = run_assessment(config, tmp_path / "dask", _engine(config, cluster), None).output
    for table in ("dataviews", "risks", "measures"):
        assert all(p.is_dir() for p in (spread / table).glob("d*[0-9].parquet")), table

    def run(*args: str) -> str:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        assert result.exit_code in (0, 1), result.stderr
        return result.stdout

    for command in (
        ["check", "--threshold", "0.5", "--format", "json"],
        ["catalog", "best", "--format", "json"],
        ["catalog", "utility", "--format", "json"],
        ["catalog", "utility", "--show", "correlation", "--format", "json"],
        ["catalog", "utility", "--threshold", "0.2", "--format", "json"],  # not stored
    ):
        mine = json.loads(run(*command, "--catalog", str(local)))
        theirs = json.loads(run(*command, "--catalog", str(spread)))
        assert _without_paths(theirs, spread) == _without_paths(mine, local), command
    releases = {}
    for name, catalog in (("local", local), ("dask", spread)):
        out = tmp_path / f"release-{name}"
        run("sanitize", "--catalog", str(catalog), "--threshold", "0.5", "--out", str(out))
        releases[name] = out
        run("report", "--catalog", str(catalog), "--out", str(tmp_path / f"{name}.html"))
    released = sorted(p.name for p in releases["local"].iterdir())
    assert sorted(p.name for p in releases["dask"].iterdir()) == released
    for name in released:
        if name.endswith(".csv") or name.endswith(".geojson"):
            assert filecmp.cmp(releases["local"] / name, releases["dask"] / name, shallow=False)
    report = [json.loads((releases[n] / "report.json").read_text()) for n in ("local", "dask")]
    assert report[0]["met"] and report[0]["mobility"]
    for key in ("met", "max_risk_after", "users", "data", "i_rac", "mobility", "levels_assessed"):
        assert report[0][key] == report[1][key], key


def _without_paths(found, catalog: Path):
    """A command's JSON without the catalog's own path in it."""
    import json

    return json.loads(json.dumps(found).replace(str(catalog), "CATALOG"))


def test_a_table_in_parts_is_checked_part_by_part(cluster, tmp_path):
    """A changed, missing or added part of a dataview's table written by the workers is
    refused, as a changed file is."""
    import shutil

    from prudence_cli.catalog.tables import parts_of
    from prudence_cli.errors import CatalogError

    config = _small("demo")
    spread = run_assessment(config, tmp_path / "dask", _engine(config, cluster), None)
    view = spread.manifest["dataviews"][0]["id"]
    table = spread.output / "dataviews" / f"{view}.parquet"
    assert table.is_dir() and parts_of(table)
    assert len(open_catalog(spread.output).dataview_table(view)) > 0
    first = parts_of(table)[0]
    for change in ("added", "missing", "changed"):
        damaged = tmp_path / change
        shutil.copytree(spread.output, damaged)
        part = damaged / first.relative_to(spread.output)
        if change == "added":
            shutil.copy(part, part.with_name("part-99999.parquet"))
        elif change == "missing":
            part.unlink()
        else:
            part.write_bytes(part.read_bytes()[:-1] + b"x")
        with pytest.raises(CatalogError, match="run prudence assess again"):
            open_catalog(damaged).dataview_table(view)


@pytest.mark.parametrize(("match", "mode"), MATCH_MODES)
@pytest.mark.parametrize("strategy", ["keyed", "posting"])
def test_memory_budget_splits_partitions_without_changing_supports(match, mode, strategy, cluster):
    rng = np.random.default_rng(4)
    problem = random_problem(rng, n_users=80, n_elements=8, h=3, match=match, mode=mode)
    plain = Engine(strategy=strategy).min_support(problem).minimum
    memory = _needed(problem) + 4_000
    while True:  # the smallest budget (×1.5 steps) where each partition fits
        try:
            tight = Engine(strategy=strategy, memory=memory).min_support(problem).minimum
            break
        except BudgetError:
            memory = int(memory * 1.5)
    assert np.array_equal(plain, tight)
    spread = Engine(strategy=strategy, memory=memory, runner=cluster, worker_threads=1)
    assert np.array_equal(plain, spread.min_support(problem).minimum)


def _needed(problem: CountingProblem) -> int:
    from prudence_cli.engine import _BYTES_PER_ELEMENT, _BYTES_PER_USER

    return (
        _BYTES_PER_ELEMENT
        * (problem.members.elements.shape[0] + problem.queries.elements.elements.shape[0])
        + _BYTES_PER_USER * problem.n_users
    )


def test_memory_budget_says_when_one_partition_cannot_fit():
    from prudence_cli.engine import Elements

    # 50 people at one place and 30 others: every pair of places starts at one element
    rows = [(u, e) for u in range(50) for e in range(30)]
    user = np.array([r[0] for r in rows])
    element = np.array([r[1] for r in rows], dtype=np.int32)
    lists = Elements.from_rows(50, user, element, np.ones(len(rows)))
    spec = QuerySpec(lists, size_lo=np.full(50, 3), size_hi=np.full(50, 3))
    problem = CountingProblem(lists, spec, match="contains")
    assert problem.self_queries
    with pytest.raises(BudgetError, match="one element alone has .* engine.memory"):
        Engine(memory=_needed(problem) + 20_000).min_support(problem)
    with pytest.raises(BudgetError, match="the data of this level alone"):
        Engine(memory=1000).min_support(problem)


def _small_gps_run(folder: Path, users: int, h: str, engine: str = "") -> CliRunner:
    """In `folder`: `users` people's sample GPS and c.yaml (presence at 1 km,
    `unique_location` at h in `h`, then `engine`), assessed locally into local/."""
    runner = CliRunner()
    runner.invoke(main, ["sample", "gps", "--users", str(users), "--days", "3", "--out", "g.csv"])
    (folder / "c.yaml").write_text(
        "input: {path: g.csv, columns: {user: uid, time: datetime, lat: lat, lon: lng}}\n"
        "dataview: {format: presence, dimensions: {grid: [1km]}}\n"
        f"attacks: [{{attack: unique_location, knowledge: {{h: [{h}]}}}}]\n" + engine
    )
    local = runner.invoke(main, ["assess", "c.yaml", "-q", "--out", "local"])
    assert local.exit_code == 0, local.output
    return runner


def test_cli_engine_dask_and_its_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = _small_gps_run(tmp_path, 40, "1, 2", "engine: {memory: 2GB}\n")
    spread = runner.invoke(main, ["assess", "c.yaml", "-q", "--engine", "dask", "--jobs", "1"])
    assert spread.exit_code == 0, spread.output
    _same_catalog(tmp_path / "local", tmp_path / "catalog" / "c")

    lost = runner.invoke(main, ["assess", "c.yaml", "--scheduler", "tcp://127.0.0.1:9"])
    assert lost.exit_code == 2
    assert "--engine dask" in lost.stderr
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        far = runner.invoke(
            main,
            ["assess", "c.yaml", "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9"]
            + ["--jobs", "3"],
        )
    assert far.exit_code == 2
    assert "cannot reach the Dask scheduler tcp://127.0.0.1:9" in far.stderr
    assert "Warning: --jobs 3 is not used with a scheduler" in far.stderr  # said first

    odd = runner.invoke(main, ["assess", "c.yaml", "--engine", "dask", "--scheduler", "foo://h:1"])
    assert odd.exit_code == 2
    assert "'foo://h:1' is not the address of a Dask scheduler" in odd.stderr
    for address, said in [
        ("tcp://127.0.0.1:99999", "names port 99999"),
        ("tcp://:8786", "is not the"),
    ]:
        started = time.monotonic()  # refused before any connection is tried (30 s)
        bad = runner.invoke(main, ["assess", "c.yaml", "--engine", "dask", "--scheduler", address])
        assert bad.exit_code == 2 and time.monotonic() - started < 10
        assert f"--scheduler: {address!r} {said}" in bad.stderr

    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the extra were missing
    missing = runner.invoke(main, ["assess", "c.yaml", "--engine", "dask"])
    assert missing.exit_code == 2
    assert "pip install 'prudence-cli[dask]'" in missing.stderr


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        ("{backend: spark}", "engine.backend"),
        ("{scheduler: tcp://h:8786}", "engine.scheduler: is the address of a Dask scheduler"),
        ("{memory: 4}", "engine.memory: 4 is not an amount of memory like 512MB or 4GB"),
        ("{memory: 4 parsecs}", "engine.memory"),
        ("{backend: dask, scheduler: tcp://h:8786, memory: 1.5GiB}", None),
        ("{backend: dask, scheduler: '10.0.0.5:8786', memory: 1.5GiB}", None),
        ("{backend: dask, scheduler: not an address}", "'not an address' is not the address"),
        ("{backend: dask, scheduler: 'foo://h:8786'}", "give tcp://HOST:PORT"),
        ("{backend: dask, scheduler: 'tcp://h:99999'}", "names port 99999, and a port is 1-65535"),
        ("{backend: dask, scheduler: 'tcp://h:0'}", "names port 0"),
        ("{backend: dask, scheduler: 'tcp://:8786'}", "is not the address of a Dask scheduler"),
    ],
)
def test_engine_config(tmp_path, engine, message):
    (tmp_path / "g.csv").write_text("user,time,lat,lon\na,2011-06-01T08:00:00,43.7,10.4\n")
    (tmp_path / "c.yaml").write_text(
        "input: {path: g.csv}\n"
        "dataview: {format: presence, dimensions: {grid: [1km]}}\n"
        "attacks: [{attack: unique_location}]\n"
        f"engine: {engine}\n"
    )
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "c.yaml")])
    if message is None:
        assert result.exit_code == 0, result.output
        assert load_config(tmp_path / "c.yaml").engine.memory == int(1.5 * 2**30)
    else:
        assert result.exit_code == 2
        assert message in result.stderr


def _mode_in_worker(worker):
    from prudence_cli.engine import jit
    from prudence_cli.engine.tasks import _as_planned

    _as_planned(worker)
    return jit.is_compiled()


@pytest.mark.parametrize("compiled", [True, False])
def test_a_worker_runs_its_tasks_kernels_as_the_planning_process_does(cluster, compiled):
    """A worker's process has chosen nothing: each task carries how its kernels run
    (Engine.worker), so a large level is not counted as Python on a cluster."""
    from prudence_cli.engine import jit

    with jit.running("compiled" if compiled else "python"):
        planned = Engine(worker_threads=1).worker()
    assert planned == (1, compiled)
    assert cluster.client.submit(_mode_in_worker, planned, pure=False).result() is compiled


def _split_parts(source: Path, folder: Path, broken: dict[int, tuple[str, str]]) -> None:
    """`source` as three parts (CSV, Parquet, gzipped CSV) with some values `broken`:
    {row: (column, value)}."""
    rows = pd.read_csv(source, dtype=str)
    for row, (column, value) in broken.items():
        rows.loc[row, column] = value
    folder.mkdir()
    third = len(rows) // 3
    rows.iloc[:third].to_csv(folder / "a.csv", index=False)
    rows.iloc[third : 2 * third].to_parquet(folder / "b.parquet", index=False)
    rows.iloc[2 * third :].to_csv(folder / "c.csv.gz", index=False)


@pytest.mark.parametrize("ranges", [None, 7])
@pytest.mark.parametrize("name", ["demo_cdr", "segments"])
def test_workers_read_and_select_a_folder_as_the_assessing_process_does(
    name, ranges, cluster, tmp_path, monkeypatch
):
    """Parts read on the workers, split by user, selected where they meet (in one range
    of users per worker, or more): the Selection and the dropped rows of a local read,
    on towers and on map-matched segments."""
    from prudence_cli import cluster_input, cluster_views
    from prudence_cli.prepare import prepare

    if ranges is not None:
        monkeypatch.setattr(cluster_input, "_ranges", lambda client, rows: ranges)
    # the points gathered, even for presence views (tests/engine/test_cluster_views.py)
    monkeypatch.setattr(cluster_views, "views_on_workers", lambda config: False)
    config = load_config(CONFIGS / f"{name}.yaml")
    time_column = config.input.columns.time if name == "demo_cdr" else config.input.columns.enter
    _split_parts(
        config.input.path, tmp_path / "parts", {5: (time_column, "soon"), 9_000: (time_column, "")}
    )
    input_ = dataclasses.replace(config.input, path=tmp_path / "parts", on_invalid="drop")
    config = dataclasses.replace(config, input=input_)
    local = prepare(config)
    spread = prepare(config, client=cluster.client)
    assert spread.dropped == local.dropped and sum(local.dropped.values()) == 2
    a, b = local.selection, spread.selection
    pd.testing.assert_frame_equal(a.points, b.points, check_exact=True)
    assert list(a.user_ids) == list(b.ids) and a.crs == b.crs and a.stats == b.stats
    pd.testing.assert_frame_equal(a.locations, b.locations)
    if a.geometry is not None:
        assert all(x.equals_exact(y, 0) for x, y in zip(a.geometry, b.geometry, strict=True))
    assert _pieces_left(cluster) == []


def _pieces_left(cluster) -> list[str]:
    """Files and folders a run left in the workers' directories for its pieces."""

    def left(dask_worker) -> list[str]:
        return [str(p) for p in Path(dask_worker.local_directory).glob("prudence-*")]

    return [path for paths in cluster.client.run(left).values() for path in paths]


@pytest.mark.parametrize("ranges", [1, 5])
def test_points_the_crs_cannot_place_are_counted_over_every_range(
    ranges, cluster, tmp_path, monkeypatch
):
    """Each range is projected on its worker; the error counts the points of all of them
    and names the first, as a local run does."""
    from prudence_cli import cluster_input
    from prudence_cli.errors import ConfigError
    from prudence_cli.prepare import prepare

    monkeypatch.setattr(cluster_input, "_ranges", lambda client, rows: ranges)
    from prudence_cli.config.schema import SelectConfig

    config = load_config(CONFIGS / "demo.yaml")
    lat, lon = config.input.columns.lat, config.input.columns.lon
    rows = pd.read_csv(config.input.path, dtype=str)
    for row in (10, 60_000):  # the antipodes of Europe, in two ranges of users
        rows.loc[row, [lat, lon]] = ["-52.0", "-170.0"]
    (tmp_path / "parts").mkdir()
    third = len(rows) // 3
    rows.iloc[:third].to_csv(tmp_path / "parts" / "a.csv", index=False)
    rows.iloc[third:].to_parquet(tmp_path / "parts" / "b.parquet", index=False)
    input_ = dataclasses.replace(config.input, path=tmp_path / "parts")
    # every point selected (no area, no trip ends), placed in Europe's equal-area CRS
    config = dataclasses.replace(config, input=input_, select=SelectConfig(), crs="EPSG:3035")
    with pytest.raises(ConfigError) as here:
        prepare(config)
    with pytest.raises(ConfigError) as there:
        prepare(config, client=cluster.client)
    assert "cannot place 2 of the selected points" in str(here.value)
    assert str(there.value) == str(here.value)


def test_a_bad_row_read_on_a_worker_is_named_by_its_file_and_line(cluster, tmp_path):
    from prudence_cli.errors import InputError
    from prudence_cli.prepare import prepare

    config = load_config(CONFIGS / "demo.yaml")
    _split_parts(config.input.path, tmp_path / "parts", {70_000: ("datetime", "yesterday")})
    config = dataclasses.replace(
        config, input=dataclasses.replace(config.input, path=tmp_path / "parts")
    )
    with pytest.raises(InputError) as caught:
        prepare(config, client=cluster.client)
    third = len(pd.read_csv(CONFIGS.parent / "sample_data" / "pisa_gps.csv.gz")) // 3
    row = 70_000 - third + 1  # a Parquet file's rows count from 1 (it has no header)
    assert str(caught.value).startswith(f"{tmp_path / 'parts' / 'b.parquet'}:{row}: time")
    assert _pieces_left(cluster) == []  # the other files' pieces, written, are gone


@pytest.mark.parametrize(("match", "mode"), MATCH_MODES)
def test_sampled_levels_are_checked_on_the_workers_with_the_same_draws(match, mode, cluster):
    """Over the budget, a level made in the assessing process draws its queries there
    (each target's own random numbers) and checks them on the workers: the supports of a
    local run."""
    rng = np.random.default_rng(11)
    problem = random_problem(rng, n_users=120, n_elements=9, h=3, match=match, mode=mode)
    here = Engine(max_instances=0, sample=6, seed=3, partition_instances=40)
    there = Engine(
        max_instances=0, sample=6, seed=3, partition_instances=40, runner=cluster, worker_threads=1
    )
    a, b = here.min_support(problem), there.min_support(problem)
    assert np.array_equal(a.minimum, b.minimum)
    assert a.sampled and (a.instances, a.sampled) == (b.instances, b.sampled)


def test_em_and_kl_are_computed_on_the_workers_to_the_bit(cluster, monkeypatch):
    """EM/KL disclosure in chunks of sampled people, as tasks on the workers: the same
    values, bit for bit, as in the assessing process (the sums added in chunk order)."""
    from prudence_cli.engine import Elements
    from prudence_cli.measures import disclosure as measures
    from prudence_cli.measures import disclosure_sums

    monkeypatch.setattr(disclosure_sums, "EM_KL_CHUNK", 5)
    rng = np.random.default_rng(2)
    lengths = rng.integers(1, 6, 60)
    bins = np.concatenate([np.sort(rng.choice(12, n, replace=False)) for n in lengths])
    records = Elements.from_rows(60, np.repeat(np.arange(60), lengths), bins, np.ones(bins.size))
    known = measures.draw_knowledge(records, 2, True, np.random.default_rng(4))
    here = measures.disclosure(records, known, Engine(), 40, np.random.default_rng(5))
    there = measures.disclosure(
        records, known, Engine(runner=cluster, worker_threads=1), 40, np.random.default_rng(5)
    )
    for name in ("class_size", "sampled", "em_user", "kl_user", "em_attribute", "kl_attribute"):
        assert np.array_equal(getattr(here, name), getattr(there, name)), name


def test_ranges_of_users_fit_a_share_of_the_smallest_workers_limit():
    from prudence_cli.cluster_input import SELECT_BYTES_PER_ROW, SELECT_SHARE, _ranges

    class Scheduler:
        def __init__(self, *limits: int) -> None:
            self.limits = limits

        def scheduler_info(self) -> dict:
            return {"workers": {f"w{k}": {"memory_limit": m} for k, m in enumerate(self.limits)}}

        def nthreads(self) -> dict:
            return {f"w{k}": 1 for k in range(len(self.limits))}

    quarter = SELECT_SHARE * SELECT_BYTES_PER_ROW  # a limit whose share holds one row's
    assert _ranges(Scheduler(1000 * quarter, 2000 * quarter), 1000) == 2  # one per worker
    assert _ranges(Scheduler(1000 * quarter, 2000 * quarter), 10_500) == 11
    assert _ranges(Scheduler(0, 0, 0), 10**9) == 3  # no limit: one per worker


def test_an_address_that_answers_but_not_as_a_scheduler_stops_with_what_to_do(monkeypatch):
    """A dashboard's port, say: the connection is accepted and nothing answers."""
    import socket
    import threading

    from prudence_cli.engine import connect as runners
    from prudence_cli.errors import PrudenceError

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    held = []
    threading.Thread(target=lambda: held.append(server.accept()), daemon=True).start()
    monkeypatch.setattr(runners, "ANSWER_SECONDS", 1.0)
    with (
        dask.config.set({"distributed.comm.timeouts.connect": "2s"}),
        pytest.raises(PrudenceError, match="did not answer as a Dask scheduler within 3 s"),
    ):
        DaskRunner(f"tcp://127.0.0.1:{port}")
    for connection, _ in held:
        connection.close()
    server.close()


def test_a_scheduler_without_workers_stops_with_what_to_do(monkeypatch):
    from distributed import LocalCluster

    from prudence_cli.engine import connect as runners
    from prudence_cli.errors import PrudenceError

    monkeypatch.setattr(runners, "WORKER_SECONDS", 1.0)
    with (
        LocalCluster(n_workers=0, dashboard_address=":0") as empty,
        pytest.raises(PrudenceError, match=r"has no worker .*start workers with `dask worker"),
    ):
        DaskRunner(empty.scheduler_address)


def test_a_scheduler_of_one_worker_makes_the_levels_there_too(tmp_path, monkeypatch):
    """On a scheduler of one worker the levels are made in ranges on that worker (two
    shards at least), as on several: the view is never gathered into the assessing
    process, and the catalog is the local one."""
    from distributed import LocalCluster

    from prudence_cli.dataviews.on_workers import KeptView

    monkeypatch.chdir(tmp_path)
    runner = _small_gps_run(tmp_path, 30, "1, 2")

    def gathered(self, users=None):
        raise AssertionError("the view was gathered")

    monkeypatch.setattr(KeptView, "whole", gathered)
    with LocalCluster(
        n_workers=1, processes=False, protocol="tcp://", dashboard_address=":0"
    ) as one:
        address = one.scheduler_address
        alone = runner.invoke(
            main, ["assess", "c.yaml", "--engine", "dask", "--scheduler", address]
        )
    assert alone.exit_code == 0, alone.output
    manifest = json.loads((tmp_path / "catalog" / "c" / "catalog.json").read_text())
    assert manifest["engine"]["workers"] == 1 and manifest["engine"]["sharded"]
    _same_catalog(tmp_path / "local", tmp_path / "catalog" / "c")


def test_a_scheduler_over_tls_is_reached_with_dasks_tls_configuration():
    """A scheduler at tls:// is reached with the certificates Dask's configuration gives
    (distributed.comm.tls.*), as a dask Client reaches it; without them, the run says
    which keys to set (exit 2), not that the address is no scheduler's."""
    pytest.importorskip("cryptography")  # Security.temporary's certificates (moto's dependency)
    from distributed import LocalCluster
    from distributed.security import Security

    from prudence_cli.engine.connect import connected
    from prudence_cli.errors import PrudenceError

    security = Security.temporary()
    tls = {
        "distributed.comm.tls.ca-file": security.tls_ca_file,
        "distributed.comm.tls.client.cert": security.tls_client_cert,
        "distributed.comm.tls.client.key": security.tls_client_key,
    }
    with LocalCluster(
        n_workers=1, processes=False, protocol="tls://", security=security, dashboard_address=":0"
    ) as secured:
        address = secured.scheduler_address
        assert address.startswith("tls://")
        with pytest.raises(PrudenceError, match=r"no TLS certificate: set distributed.comm.tls"):
            connected(address, "5s")
        with dask.config.set(tls):
            client = connected(address, "5s")
            try:
                assert client.submit(sum, [1, 2]).result() == 3
            finally:
                client.close()


def test_a_worker_lost_during_a_run_is_said_so(cluster):
    from concurrent.futures import CancelledError
    from types import SimpleNamespace

    from distributed.comm import CommClosedError
    from distributed.scheduler import KilledWorker

    killed = KilledWorker("t", SimpleNamespace(address="tcp://10.0.0.7:4001"), 3)
    # a worker restarted while data is sent to it closes the stream of the scatter
    closed = CommClosedError("in <TCP (closed) ConnectionPool.scatter>: Stream is closed")
    for lost in (CancelledError("_keyed_task-1 cancelled"), killed, closed):
        said = str(cluster.explained(lost))
        assert "was lost during the run" in said and "nothing was written" in said
    assert "stopped answering" in str(cluster.explained(TimeoutError("No valid workers found")))
    assert cluster.explained(ValueError("a bug")) is None


def test_the_workers_hash_the_parts_they_read(cluster, tmp_path, monkeypatch):
    """The catalog records each part's sha256 as the worker that read it took it: the
    assessing process reads no part to hash it."""
    import hashlib

    from prudence_cli.io import checksums
    from prudence_cli.prepare import prepare

    config = load_config(CONFIGS / "demo_cdr.yaml")
    _split_parts(config.input.path, tmp_path / "parts", {})
    config = dataclasses.replace(
        config, input=dataclasses.replace(config.input, path=tmp_path / "parts")
    )
    hashed_here: list[Path] = []
    fresh = checksums.sha256_fresh

    def spy(path: Path) -> str:
        hashed_here.append(Path(path).resolve())
        return fresh(path)

    monkeypatch.setattr(checksums, "sha256_fresh", spy)
    placed = prepare(config, client=cluster.client).selection.placed
    if placed is not None:  # the points of presence views, left on the workers
        placed.close()
    parts = config.input.files
    assert len(parts) == 3
    for part in parts:
        assert checksums.sha256_file(part) == hashlib.sha256(part.read_bytes()).hexdigest()
    assert not set(hashed_here) & {p.resolve() for p in parts}


def test_a_part_that_changes_while_a_worker_hashes_it_is_left_to_the_assessing_process(
    tmp_path, monkeypatch
):
    from prudence_cli import cluster_input

    part = tmp_path / "a.csv"
    part.write_text("uid,datetime\n1,2\n")
    fresh = cluster_input.sha256_fresh

    def edited_meanwhile(path: Path) -> str:
        digest = fresh(path)
        path.write_text("uid,datetime\n1,2\n3,4\n")
        return digest

    assert cluster_input._version(part) is not None
    monkeypatch.setattr(cluster_input, "sha256_fresh", edited_meanwhile)
    assert cluster_input._version(part) is None


def test_missing_user_ids_in_parquet_parts_do_not_place_the_ranges(cluster, tmp_path, monkeypatch):
    """Nulls among a Parquet part's ids are rows without a user (dropped here), never the
    bound of a range of ids."""
    from prudence_cli import cluster_input
    from prudence_cli.prepare import prepare

    monkeypatch.setattr(cluster_input, "_ranges", lambda client, rows: 5)
    config = load_config(CONFIGS / "demo_cdr.yaml")
    rows = pd.read_csv(config.input.path, dtype=str)
    user = config.input.columns.user
    rows.loc[rows.sample(frac=0.6, random_state=1).index, user] = None
    (tmp_path / "parts").mkdir()
    half = len(rows) // 2
    rows.iloc[:half].to_parquet(tmp_path / "parts" / "a.parquet", index=False)
    rows.iloc[half:].to_parquet(tmp_path / "parts" / "b.parquet", index=False)
    input_ = dataclasses.replace(config.input, path=tmp_path / "parts", on_invalid="drop")
    config = dataclasses.replace(config, input=input_)
    local, spread = prepare(config), prepare(config, client=cluster.client)
    ids = spread.selection.ids  # kept on the workers with the points (presence views)
    spread.selection.placed.close()
    assert spread.dropped == local.dropped and sum(local.dropped.values()) > 0
    assert list(ids) == list(local.selection.user_ids)
    assert _pieces_left(cluster) == []


def test_of_several_bad_parts_the_first_in_file_order_is_named(cluster, tmp_path):
    """As a local run, which reads the parts in order and stops at the first error."""
    from prudence_cli.errors import InputError
    from prudence_cli.prepare import prepare

    config = load_config(CONFIGS / "demo.yaml")
    rows = pd.read_csv(config.input.path, dtype=str)
    (tmp_path / "parts").mkdir()
    size = -(-len(rows) // 12)
    for k in range(12):
        part = rows.iloc[k * size : (k + 1) * size].copy()
        if k in (0, 10):
            part.iloc[5 if k == 0 else 1, 1] = "yesterday"  # the time column
        part.to_csv(tmp_path / "parts" / f"p{k:02d}.csv", index=False)
    config = dataclasses.replace(
        config, input=dataclasses.replace(config.input, path=tmp_path / "parts")
    )
    with pytest.raises(InputError) as here:
        prepare(config)
    before = _futures_left(cluster, set(cluster.client.futures))
    with pytest.raises(InputError) as there:
        prepare(config, client=cluster.client)
    assert str(there.value) == str(here.value)
    assert str(here.value).startswith(f"{tmp_path / 'parts' / 'p00.csv'}:7:")
    assert _pieces_left(cluster) == []
    # nothing left on the client, the error (and its traceback) still held
    assert _futures_left(cluster, before) <= before


def _glimpse_fails(file, *args):
    if str(file).endswith("p01.csv"):
        raise ValueError("a part could not be glimpsed")
    from prudence_cli.cluster_scratch import glimpsed

    return glimpsed(file, *args)


def test_a_part_that_cannot_be_glimpsed_leaves_no_future_on_the_client(
    cluster, tmp_path, monkeypatch
):
    """The first look at each part (its rows and a sample of its people) failing on a
    worker: the other parts' looks and the scattered towers go with the run."""
    from prudence_cli import cluster_input
    from prudence_cli.prepare import prepare

    config = load_config(CONFIGS / "demo.yaml")
    rows = pd.read_csv(config.input.path, dtype=str)
    (tmp_path / "parts").mkdir()
    size = -(-len(rows) // 4)
    for k in range(4):
        rows.iloc[k * size : (k + 1) * size].to_csv(
            tmp_path / "parts" / f"p{k:02d}.csv", index=False
        )
    config = dataclasses.replace(
        config, input=dataclasses.replace(config.input, path=tmp_path / "parts")
    )
    before = _futures_left(cluster, set(cluster.client.futures))
    monkeypatch.setattr(cluster_input, "glimpsed", _glimpse_fails)
    with pytest.raises(ValueError, match="could not be glimpsed") as failed:
        prepare(config, client=cluster.client)
    assert failed.value is not None and _futures_left(cluster, before) <= before
    assert _pieces_left(cluster) == []


@pytest.mark.parametrize("block", [None, 3])
@pytest.mark.parametrize(("match", "mode"), MATCH_MODES)
def test_a_ranged_level_over_the_budget_is_sampled_on_the_workers(match, mode, block, cluster):
    """A level in ranges of users on the workers, over the budget: its targets draw in
    their ranges, every chunk of queries is counted on each worker against the users it
    holds, and the least supports come back — never the level: a local run's supports
    and instances. Its vectors per element are worked out on the workers (in blocks of
    `block` elements: each range drawing by its own elements' holders), and once it is
    counted (the engine still alive) only its ranges stay on the cluster."""
    from prudence_cli.engine.ranged import split

    rng = np.random.default_rng(12)
    problem = random_problem(rng, n_users=150, n_elements=9, h=3, match=match, mode=mode)
    settings_ = dict(max_instances=0, sample=6, seed=3, partition_instances=40)
    here = Engine(**settings_).min_support(problem)
    engine = Engine(**settings_, runner=cluster, worker_threads=1)
    before = _futures_left(cluster, set(cluster.client.futures))  # of the tests before
    spread = split(problem, cluster, 5)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _per_element_on_workers(monkeypatch)
        if block is not None:
            monkeypatch.setattr(cluster, "element_block", block)
        there = engine.min_support(spread)
    assert np.array_equal(here.minimum, there.minimum)
    assert here.sampled and (here.instances, here.sampled) == (there.instances, there.sampled)
    left = {future.key for future in spread.parts}
    assert left <= _futures_left(cluster, before | left) <= before | left


def _plus(shared: int, k: int) -> int:
    return shared + k


def test_a_partitions_result_comes_back_in_frames_dask_does_not_cut():
    """A partition task's result holds an entry at most per instance of its partition (a
    target with a key or a query there, or a whole record), in two arrays of 4 bytes an
    entry (tasks._compact): each below the frame size over which Dask's TCP comm cuts a
    message and joins it again on receipt, a second copy in the assessing process."""
    import dask
    from dask.utils import parse_bytes

    frame = parse_bytes(dask.config.get("distributed.comm.shard"))
    assert Engine().partition_instances * np.dtype(np.int32).itemsize <= frame


def test_a_run_takes_its_arguments_only_as_it_submits_them(cluster):
    """A few tasks per worker thread at a time: what the arguments' generator makes (a
    sampled level's drawn queries) is never all held in the assessing process."""
    from prudence_cli.engine.streams import IN_FLIGHT

    taken: list[int] = []

    def arguments(n: int):
        for k in range(n):
            taken.append(k)
            yield (k,)

    window = IN_FLIGHT * cluster.threads
    results = cluster.run(_plus, 10, arguments(60))
    first = next(results)
    assert len(taken) <= window + 1
    assert sorted([first, *results]) == [10 + k for k in range(60)] and len(taken) == 60
    taken.clear()
    stopped = cluster.run(_plus, 10, arguments(60))
    next(stopped)
    stopped.close()  # the caller stops early: nothing more is taken or left running
    assert len(taken) <= window + 1


def _timed_task(shared: int, k: int) -> tuple[int, int, str, float, float]:
    import time

    from distributed import get_worker

    started = time.monotonic()
    time.sleep(0.03)
    return shared, k, get_worker().address, started, time.monotonic()


def test_a_worker_holds_one_shard_at_a_time(cluster):
    """More shards than workers: the next shard is cut only when a worker's tasks are
    all read, and goes to that worker; a worker never runs two shards' tasks at once,
    and every task of a shard runs on its one worker."""
    read: list[tuple[int, int, str, float, float]] = []
    read_when_cut: list[int] = []

    def shards():
        for k in range(7):
            read_when_cut.append(len(read))
            yield 100 + k, [(j,) for j in range(3)]

    for result in cluster.run_sharded(_timed_task, shards()):
        read.append(result)
    assert sorted((shard, j) for shard, j, *_ in read) == [
        (100 + k, j) for k in range(7) for j in range(3)
    ]
    workers = cluster.workers
    for k, count in enumerate(read_when_cut):  # shard k waits for k - workers + 1 done
        assert count >= 3 * max(k - workers + 1, 0), (k, count)
    spans: dict[str, list[tuple[float, float]]] = {}
    for shard in range(100, 107):
        tasks = [r for r in read if r[0] == shard]
        assert len({r[2] for r in tasks}) == 1
        spans.setdefault(tasks[0][2], []).append(
            (min(r[3] for r in tasks), max(r[4] for r in tasks))
        )
    for held in spans.values():
        held.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(held)), held
    assert not cluster.watcher.workers  # watched while it ran only: a later leave stops nothing


def test_shards_go_to_the_workers_there_now():
    """A worker Dask restarted since the runner started (past its memory limit) has
    another address: the next sharded run sends its shards, and `place` its items, to
    the workers there now, not to the old address (KeyError before)."""
    runner = DaskRunner(workers=2)
    try:
        live = list(runner.addresses)
        runner.addresses = [live[0], "tcp://127.0.0.1:9"]  # the second one, gone
        shards = ((100 + k, [(j,) for j in range(2)]) for k in range(3))
        read = list(runner.run_sharded(_timed_task, shards))
        assert sorted((shard, j) for shard, j, *_ in read) == [
            (100 + k, j) for k in range(3) for j in range(2)
        ]
        assert {r[2] for r in read} <= set(live) and runner.addresses == live
        runner.addresses = [live[0], "tcp://127.0.0.1:9"]
        placed = runner.place([1, 2])  # items too: each on a worker there
        assert runner.client.gather(placed) == [1, 2] and runner.addresses == live
    finally:
        runner.close()


def _fails_on(shared: int, k: int) -> int:
    if k == 2:
        raise ValueError("a bad partition")
    return shared + k


def _pairs_or_fails(shared: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    if k == 2 and shared == 20:
        raise ValueError("a bad partition")
    return np.arange(shared + k), np.arange(shared + k) * 2


@pytest.mark.parametrize("pieces", [None, 4])
def test_a_shards_task_that_fails_leaves_nothing_on_the_cluster(pieces, cluster):
    before = set(cluster.client.futures)
    task = _fails_on if pieces is None else _pairs_or_fails
    shards = ((10 * k, [(j,) for j in range(4)]) for k in range(5))
    with pytest.raises(ValueError, match="a bad partition"):
        for _ in cluster.run_sharded(task, shards, pieces=pieces):
            pass
    assert _futures_left(cluster, before) <= before and not cluster.watcher.workers


def test_results_read_in_pieces_are_the_results(cluster):
    """Each result (owners, counts) read `pieces` entries at a time: pieces of that many
    at most, one for an empty result, which put together are the results."""
    shards = ((5 * k, [(j,) for j in range(3)]) for k in range(3))
    results: list[list[np.ndarray]] = []
    for owners, counts in cluster.run_sharded(_pairs_or_fails, shards, pieces=4):
        assert len(owners) <= 4 and np.array_equal(counts, owners * 2)
        if not owners.size or owners[0] == 0:  # a result's first piece
            results.append([])
        results[-1].append(owners)
    sizes = []
    for pieces in results:
        joined = np.concatenate(pieces)
        assert np.array_equal(joined, np.arange(joined.size))
        sizes.append(joined.size)
    assert sorted(sizes) == sorted(5 * k + j for k in range(3) for j in range(3))


def _futures_left(cluster, expected: set[str]) -> set[str]:
    """The keys of the futures the client still holds, once those let go are forgotten:
    a future goes from the client on its event loop, a moment after it is let go
    (distributed's Future.release), so this waits a few seconds for no more than
    `expected`."""
    gc.collect()
    deadline = time.monotonic() + 10
    while not (left := set(cluster.client.futures)) <= expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _queries_of(item: int, k: int) -> int:
    return item + k


def _counted_where(queries: int, *held: np.ndarray) -> tuple[int, str]:
    import time

    from distributed import get_worker

    time.sleep(0.02)
    return queries + sum(int(h.sum()) for h in held), get_worker().address


def _folded(queries: int, *counts: tuple[int, str]) -> tuple[int, list[str]]:
    return queries, [where for _, where in counts]


def test_counts_run_where_the_data_they_take_is_even_when_another_worker_is_idle(cluster):
    """A worker's kept data (its ranges) is counted there and only there (`streams.stay`): Dask
    steals a task that only prefers a worker when another is idle, and the data goes
    along (at 10M people a worker then held two workers' ranges, past its memory limit;
    this short run does not make Dask steal, it checks where the counts go)."""
    kept = cluster.place([np.ones(1000)])  # all of it on the first worker
    items = cluster.place([5])
    home = cluster.addresses[0]
    found = list(cluster.checked(_queries_of, ((items[0], (k,)) for k in range(30)),
                                 _counted_where, kept, _folded))  # fmt: skip
    assert sorted(q for q, _ in found) == [5 + k for k in range(30)]
    assert {w for _, where in found for w in where} == {home}
    assert not cluster.watcher.workers
    cluster.unpin()


def _with_own(item: np.ndarray, own: np.ndarray | None, add: int) -> tuple[int, int]:
    return int(item.sum()) + add, -1 if own is None else int(own.sum())


def test_each_items_own_argument_goes_to_its_worker_only(cluster, monkeypatch):
    """`paired` gives the k-th item's task its own argument (a range's people at risk 1
    already): a large array is sent to that item's worker only, not to every worker as
    an argument all the items share; None stays None."""
    from prudence_cli.engine import runner as runner_module

    sent: list[tuple[int, list[str] | None]] = []
    sending = runner_module.sent_to

    def recorded(client, value, workers):
        sent.append((int(value.sum()), workers))
        return sending(client, value, workers)

    placed = cluster.place([np.arange(3) + 10 * k for k in range(4)])
    monkeypatch.setattr(runner_module, "sent_to", recorded)
    monkeypatch.setattr(runner_module, "_SCATTER_FROM", 8)
    own = [np.full(4, 1), None, np.full(2, 7), np.full(9, 1)]  # 32 bytes, -, 16, 72
    found = cluster.each(_with_own, placed, 5, paired=own)
    assert found == [(3 + 30 * k + 5, -1 if a is None else int(a.sum())) for k, a in
                     enumerate(own)]  # fmt: skip
    # the 4-th item's went to its worker, the 1st's and 3rd's likewise; None is no data
    workers = [cluster._where(k) for k in range(4)]
    assert sent == [(4, workers[0]), (14, workers[2]), (9, workers[3])]
    assert found == LocalRunner().each(_with_own, [np.arange(3) + 10 * k for k in
                                                   range(4)], 5, paired=own)  # fmt: skip


@pytest.mark.parametrize(("match", "mode"), MATCH_MODES)
def test_levels_cut_in_more_shards_than_workers_count_as_the_local_engine(
    match, mode, cluster, monkeypatch
):
    """Workers whose memory limit a level's shard would not fit a third of: the level
    is cut in more shards than workers (`shard_limits`), each worker holding one at a
    time, whole or in ranges of users: a local run's supports."""
    from prudence_cli.engine.plan import level_bytes
    from prudence_cli.engine.ranged import split

    rng = np.random.default_rng(21)
    problem = random_problem(rng, n_users=120, n_elements=10, h=3, match=match, mode=mode)
    here = Engine(partition_instances=15).min_support(problem).minimum
    elements = problem.members.elements.shape[0] + problem.queries.elements.elements.shape[0]
    monkeypatch.setattr(cluster, "memory_limit", level_bytes(elements, problem.n_users) // 2)
    cut: list[int] = []  # per run of shards, how many were cut
    run_sharded = cluster.run_sharded

    def counted(task, shards, prepare=None):
        cut.append(0)
        for shared in shards:
            cut[-1] += 1
            yield shared

    monkeypatch.setattr(
        cluster, "run_sharded", lambda t, s, p=None, **kw: run_sharded(t, counted(t, s), p, **kw)
    )
    engine = Engine(partition_instances=15, runner=cluster, worker_threads=1)
    assert np.array_equal(here, engine.min_support(problem).minimum)
    assert cut and max(cut) > cluster.workers
    cut.clear()
    assert np.array_equal(here, engine.min_support(split(problem, cluster, 4)).minimum)
    assert cut and max(cut) > cluster.workers


def test_shards_fit_a_share_of_the_smallest_workers_limit():
    from types import SimpleNamespace

    from prudence_cli.engine.runner import SHARD_SHARE

    def limits(limit: int) -> tuple[int, int]:
        runner = SimpleNamespace(memory_limit=limit, shards=2)
        return DaskRunner.shard_limits(runner)  # type: ignore[arg-type]

    assert limits(0) == (0, 0)  # no limit: a shard per worker, not measured
    assert limits(SHARD_SHARE * 1000) == (1000, SHARD_SHARE * 1000)
    assert limits(SHARD_SHARE * 1000 + 2) == (1000, SHARD_SHARE * 1000 + 2)


def _total(shared: int, values: np.ndarray) -> float:
    return shared + float(values.sum())


def test_a_tasks_own_large_arrays_go_without_dasks_large_graph_advice(cluster):
    """A chunk of drawn queries is a task's own argument, sent once: Dask's warning
    about large graphs (an error under this suite's filterwarnings) is not for it."""
    chunks = [(np.ones(3_000_000),) for _ in range(3)]  # 24 MB each
    assert sorted(cluster.run(_total, 1, iter(chunks))) == [3_000_001.0] * 3


def test_a_bad_row_on_a_local_cluster_is_said_once(tmp_path):
    """The LocalCluster's workers share the user's terminal: the run's message alone,
    not also Dask's "Compute Failed" log with its traceback."""
    import subprocess

    rows = pd.read_csv(CONFIGS.parent / "sample_data" / "pisa_gps.csv.gz", dtype=str)
    rows.loc[500, "datetime"] = "soon"
    rows.to_csv(tmp_path / "bad.csv", index=False)
    text = (CONFIGS / "demo.yaml").read_text(encoding="utf-8")
    text = text.replace("path: ../sample_data/pisa_gps.csv.gz", f"path: {tmp_path / 'bad.csv'}")
    (tmp_path / "bad.yaml").write_text(text, encoding="utf-8")
    prudence = Path(sys.executable).parent / "prudence"
    done = subprocess.run(
        [str(prudence), "assess", str(tmp_path / "bad.yaml"), "--out", str(tmp_path / "c")]
        + ["--engine", "dask", "--jobs", "2", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"Error: {tmp_path / 'bad.csv'}:502: time is not ISO-8601 or epoch seconds (got "
        "'soon'); fix the row, or set input.on_invalid: drop to skip invalid rows"
    ]


@pytest.mark.parametrize("slow_answers", [0, 2])
def test_a_task_pinned_to_a_worker_that_left_stops_the_run(slow_answers):
    """The ranges of a view kept on the workers are read by tasks pinned to the worker
    whose disk holds them (DaskRunner.pinned), and so is every task using their results:
    once that worker leaves, they would wait for it forever. The runner cancels the
    run's futures instead, which a lost worker explains (exit 2, what to do). The
    scheduler failing to answer who its workers are stops none of that watching."""
    import contextlib
    import os
    import threading
    import time
    from concurrent.futures import CancelledError

    runner = DaskRunner(workers=2)
    try:
        answers = runner.client.nthreads
        failing = iter(range(slow_answers))

        def nthreads():
            if next(failing, None) is not None:
                raise TimeoutError("the scheduler did not answer in time")
            return answers()

        runner.client.nthreads = nthreads
        holder = runner.addresses[0]
        (held,) = runner.pinned(time.sleep, [(holder, (60,))])
        using = runner.each_kept(_identity, [held])

        def lose() -> None:
            with contextlib.suppress(Exception):  # the worker dies while it answers
                runner.client.run(os._exit, 1, workers=[holder])

        threading.Timer(1.0, lose).start()
        started = time.monotonic()
        with pytest.raises(CancelledError) as lost:
            using[0].result(timeout=60)  # not forever: TimeoutError
        assert time.monotonic() - started < 30
        assert "was lost during the run" in str(runner.explained(lost.value))
    finally:
        runner.close()


def _identity(value):
    return value


def test_tasks_on_what_a_watched_worker_keeps_run_there_only():
    """A task on an item kept on a worker's disk (DaskRunner.pinned), or on a result of
    such a task, runs on that worker only: Dask steals a task that merely prefers a
    worker when another is idle, and the item goes along (a worker would then hold
    another's ranges). A task on anything else only prefers its worker, watched or not."""
    runner = DaskRunner(workers=2)
    try:
        holder = runner.addresses[1]
        (held,) = runner.pinned(_identity, [(holder, (1,))])
        runner.pinned(_identity, [(runner.addresses[0], (0,))])  # both workers watched
        (using,) = runner.each_kept(_identity, [held])
        (then,) = runner.each_kept(_identity, [using])
        (free,) = runner.each_kept(_identity, [2])
        assert [f.result() for f in (using, then, free)] == [1, 1, 2]
        placed = runner.client.run_on_scheduler(
            _restrictions, keys=[f.key for f in (using, then, free)]
        )
        assert placed == [([holder], False), ([holder], False), ([runner.addresses[0]], True)]
        from prudence_cli.engine.streams import stay

        assert runner.client.submit(_identity, 3, **stay(None)).result() == 3  # anywhere
        runner.unpin()  # the run has ended: no worker watched, no home kept
        (after,) = runner.each_kept(_identity, [using])
        assert after.result() == 1
        assert runner.client.run_on_scheduler(_restrictions, keys=[after.key]) == [
            ([runner.addresses[0]], True)  # the first worker in turn, preferred
        ]
    finally:
        runner.close()


def _restrictions(keys, dask_scheduler=None):
    """Each task's workers and whether it may run elsewhere, as the scheduler holds them."""
    tasks = [dask_scheduler.tasks[key] for key in keys]
    return [(sorted(t.worker_restrictions or ()), bool(t.loose_restrictions)) for t in tasks]


def test_workers_that_do_not_see_the_catalog_folder_send_their_tables(
    cluster, tmp_path, monkeypatch
):
    """Workers on machines that do not share the catalog's folder cannot write into it:
    each part of each table (the dataview's, its risks, its people's measures) is then
    made on its worker, with the ids it keeps, and written here, as one file — the local
    engine's, byte for byte."""
    from prudence_cli.dataviews import on_workers

    assert on_workers._sees(str(tmp_path / "nowhere"), 3) == (3, False)
    monkeypatch.setattr(on_workers.KeptView, "sees", lambda *args: False)
    config = _small("demo")
    local = run_assessment(config, tmp_path / "local", _engine(config), None)
    spread = run_assessment(config, tmp_path / "dask", _engine(config, cluster), None)
    assert _same_catalog(local.output, spread.output) == 0  # every file the same bytes


def test_a_worker_leaving_after_the_run_that_pinned_tasks_to_it_stops_nothing():
    """Once the run whose tasks were pinned to a worker has ended (DaskRunner.unpin),
    that worker may leave: the runner's next work goes on."""
    import contextlib
    import os
    import time

    runner = DaskRunner(workers=2)
    try:
        holder, other = runner.addresses
        (done,) = runner.pinned(_identity, [(holder, (1,))])
        assert done.result() == 1
        runner.unpin()
        later = runner.client.submit(time.sleep, 6, workers=[other], pure=False)
        with contextlib.suppress(Exception):  # the worker dies while it answers
            runner.client.run(os._exit, 1, workers=[holder])
        assert later.result() is None and not later.cancelled()
    finally:
        runner.close()


@pytest.mark.parametrize("ranges", [1, 2, 5])
def test_the_ranges_sums_are_added_on_the_workers_as_here(cluster, ranges):
    """A ranged level's census (its query sizes and counts), its holders per element and
    its partition weights, in blocks of elements or not, are added up on the workers
    (DaskRunner.summed, summed_blocks): the numbers a local run adds up one range after
    the other. Kept where they were added, what is asked of them is worked out there:
    the rank by rarity, and each range's own elements' values."""
    from distributed import Future

    from prudence_cli.engine import blocks
    from prudence_cli.engine.indexes import rarity_rank
    from prudence_cli.engine.per_element import whole_of
    from prudence_cli.engine.ranged import _holder_blocks, census, split
    from prudence_cli.engine.ranged_shards import _first_weights
    from prudence_cli.engine.runner import LocalRunner

    rng = np.random.default_rng(ranges)
    problem = random_problem(rng, 60, 30, 2, match="contains", mode="subsets")
    here, there = LocalRunner(), cluster
    local, spread = split(problem, here, ranges), split(problem, there, ranges)
    a, b = here.summed(census, local.parts), there.summed(census, spread.parts)
    assert np.array_equal(a.sizes, b.sizes)
    assert (a.top, a.whole, a.whole_elements, a.members, a.queries) == (
        b.top, b.whole, b.whole_elements, b.members, b.queries,
    )  # fmt: skip
    n = a.top + 1
    holders = np.bincount(problem.members.elements, minlength=n)
    weights = [r.summed(_first_weights, p.parts, "keyed", 2, n, False).whole() for r, p in
               ((here, local), (there, spread))]  # fmt: skip
    assert weights[0].shape == (n,) and np.array_equal(weights[0], weights[1])
    assert there.summed(census, []) is None and here.summed(census, []) is None
    for block in (None, 7):
        at = blocks.cuts(n, block)
        kept = there.summed_blocks(_holder_blocks, spread.parts, at.shape[0] - 1, at)
        assert all(isinstance(k, Future) for k in kept) and len(kept) == at.shape[0] - 1
        whole = np.concatenate([there.on(k, whole_of) for k in kept])
        assert np.array_equal(whole, holders)
        rank = blocks.ranked(there, kept, at, (None, False))
        assert np.array_equal(np.concatenate([there.on(r, np.array) for r in rank]),
                              rarity_rank(holders))  # fmt: skip
        own = blocks.looked_up(there, kept, at, spread.parts)
        for part, values in zip(local.parts, own, strict=True):
            elements = np.union1d(part.problem.members.elements,
                                  part.problem.queries.elements.elements)  # fmt: skip
            found = there.on(values, lambda v: (v.ids, v.values))
            assert found[0].tolist() == elements.tolist()
            assert found[1].tolist() == holders[elements].tolist()


def test_a_levels_blocks_are_kept_on_the_workers_in_turn_and_looked_up_a_worker_at_a_time(
    cluster,
):
    """The sums of a level's blocks spread evenly over the workers, the b-th on the b-th
    in turn, wherever the ranges' pieces are (on a cluster of a few large workers, a
    level of 160 blocks would otherwise be kept where Dask happens to add them). The
    ranges kept on a worker look the blocks up together (`Runner.grouped`)."""
    from distributed import wait

    from prudence_cli.engine import blocks
    from prudence_cli.engine.ranged import _holder_blocks, census, split

    problem = random_problem(np.random.default_rng(8), 60, 30, 2, match="contains")
    spread = split(problem, cluster, 5)
    at = blocks.cuts(cluster.summed(census, spread.parts).top + 1, 4)
    kept = cluster.summed_blocks(_holder_blocks, spread.parts, at.shape[0] - 1, at)
    wait(kept)
    where = cluster.client.who_has(kept)
    assert len(kept) > 4
    assert [list(where[k.key]) for k in kept] == [
        [cluster.addresses[b % 2]] for b in range(len(kept))
    ]
    assert cluster.grouped(spread.parts) == [[0, 2, 4], [1, 3]]
    homes = [cluster._home(part, k)[0] for k, part in enumerate(spread.parts)]
    assert homes == [[cluster.addresses[k % 2]] for k in range(5)]


def test_a_worker_slow_to_exit_at_close_is_no_failure_of_the_run():
    """LocalCluster.close raises TimeoutError when a worker process, killed by its nanny,
    is not seen to end within a second (a loaded machine): the run is done by then, so
    closing the runner does not fail it. Other errors still go up."""
    from prudence_cli.engine.connect import Watcher

    class Closing:
        def __init__(self, error: BaseException | None) -> None:
            self.error, self.closed = error, False

        def close(self) -> None:
            self.closed = True
            if self.error is not None:
                raise self.error

    for error in (TimeoutError(), asyncio.TimeoutError()):
        runner = object.__new__(DaskRunner)
        runner.watcher, runner.client, runner.cluster = (
            Watcher(None, 1.0),
            Closing(None),
            Closing(error),
        )
        runner.close()
        assert runner.client.closed and runner.cluster.closed and runner.watcher.stopped.is_set()
    runner.cluster = Closing(OSError("the scheduler's port"))
    with pytest.raises(OSError, match="port"):
        runner.close()
