"""The assessment pipeline: config → dataviews × attacks × levels → catalog.

DESIGN.md section 3. Risks are computed per dataview and written to the catalog as they
come, so memory holds one dataview's risks at a time. The catalog folder is swapped in
only when everything is written. Profiles dataviews are dispatched once, in
`run_assessment`, to the randomized wing (`prudence_cli.randomized.assess`).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from prudence_cli import __version__
from prudence_cli.attacks.base import AttackResult
from prudence_cli.attacks.ranged import Held
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.catalog import (
    CATALOG_FORMAT,
    CATALOG_VERSION,
    CatalogWriter,
    is_catalog,
)
from prudence_cli.catalog.folder import LEDGER, assessed_from
from prudence_cli.catalog.records import (
    AttackEntry,
    DataviewEntry,
    EngineEntry,
    InputFile,
    InvalidRows,
    LevelEntry,
    Manifest,
    MobilityEntry,
    RandomizeEntry,
    SelectionEntry,
)
from prudence_cli.config import Config
from prudence_cli.config.engine import scheduler_problem
from prudence_cli.config.knowledge import ATTACK_SCHEMAS
from prudence_cli.dataviews.build import build_dataviews, count_dataviews
from prudence_cli.engine import Engine
from prudence_cli.engine.jit import threads
from prudence_cli.engine.runner import DaskRunner, LocalRunner
from prudence_cli.errors import BudgetError, PrudenceError
from prudence_cli.explore.mobility import Measurer
from prudence_cli.io.atomic import atomic_folder, check_replaceable, check_writable
from prudence_cli.io.checksums import sha256_ahead, sha256_file
from prudence_cli.io.spilled import Spilled
from prudence_cli.measures.rac import measure_view
from prudence_cli.measures.utility import aggregate_utility, utility_scores
from prudence_cli.prepare import Prepared, prepare
from prudence_cli.select import Selection


class ProgressCallback(Protocol):
    """What the pipelines report: `done` of `total` (0: not known yet) and what is being
    done; `unit` "bytes" when reading a file (done: bytes read, total: its size)."""

    def __call__(self, done: int, total: int, message: str, unit: str = "") -> None: ...


@dataclass(frozen=True)
class AssessResult:
    output: Path
    irac: pd.DataFrame
    record: Manifest
    warnings: tuple[str, ...] = ()  # one line each, for the user

    @property
    def manifest(self) -> dict[str, Any]:
        """catalog.json as written."""
        return self.record.to_json()


def make_engine(
    config: Config,
    jobs: int | None = None,
    backend: str | None = None,
    scheduler: str | None = None,
) -> Engine:
    """The configured engine; `jobs`, `backend` and `scheduler` override the config. The
    dask backend without a scheduler starts a LocalCluster of `jobs` workers (default: one
    per core), each running its kernels on one thread."""
    settings = config.engine
    backend = backend or settings.backend
    scheduler = scheduler or settings.scheduler
    jobs = settings.jobs if jobs is None else jobs
    runner: LocalRunner | DaskRunner = LocalRunner()
    worker_threads = None
    if backend == "dask":
        problem = scheduler_problem(scheduler) if scheduler else None
        if problem:  # given as --scheduler (the config's is checked as it is read)
            raise PrudenceError(f"--scheduler: {problem}")
        runner = DaskRunner(scheduler, jobs or os.cpu_count() or 1)
        worker_threads = None if scheduler else 1
    elif scheduler:
        raise PrudenceError("--scheduler is the address of a Dask scheduler: add --engine dask")
    return Engine(
        max_instances=settings.max_instances,
        jobs=0 if backend == "dask" else jobs,
        memory=settings.memory,
        runner=runner,
        worker_threads=worker_threads,
        sample=settings.sample,
        seed=config.seed,
    )


def assess(
    config: Config,
    output: Path | None = None,
    jobs: int | None = None,
    progress: ProgressCallback | None = None,
    backend: str | None = None,
    scheduler: str | None = None,
    force: bool = False,
) -> AssessResult:
    """Run the whole assessment and write the catalog; returns the i-RAC table. `force`
    replaces the catalog of another config (see `claim_output`)."""
    engine = make_engine(config, jobs, backend, scheduler)
    try:
        return run_assessment(config, output, engine, progress, force)
    except Exception as exc:
        explained = engine.runner.explained(exc)
        if explained is None:
            raise
        raise explained from exc
    finally:
        engine.runner.close()


def run_assessment(
    config: Config,
    output: Path | None,
    engine: Engine,
    progress: ProgressCallback | None,
    force: bool = False,
) -> AssessResult:
    """`assess` with a given engine (its runner stays open: the caller closes it). The
    steps every assessment shares are here; the dataviews are assessed by the risk
    pipeline, or by the randomized wing for profiles dataviews."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    report = progress or _silent
    out = Path(output) if output is not None else config.output
    inherit, warnings = claim_output(config, out, force)
    client = getattr(engine.runner, "client", None)
    # for the manifest, while the inputs are read; the parts the workers read, they hash
    parts = set(config.input.files) if client is not None else set()
    sha256_ahead([f for f in config.input_files if f not in parts])
    prepared = _prepare(config, report, client)
    selection = prepared.selection
    timings["read_and_select"] = time.perf_counter() - started
    try:  # the points a Dask run left on its workers are removed whatever happens
        with atomic_folder(out, is_catalog) as folder:
            writer = CatalogWriter(folder)
            if config.dataview.format == "profiles":
                stage = _assess_profiles(config, selection, writer, report, timings)
            else:
                stage = _assess_risks(config, selection, engine, writer, report, timings, out)
            if inherit:  # re-assessing must never forget what was released
                from prudence_cli.sanitize.ledger import carry_over  # only then

                carry_over(out, folder)
            timings["total"] = time.perf_counter() - started
            manifest = writer.finish(
                _manifest(config, prepared, stage, engine, timings), stage.irac
            )
    finally:
        if selection.placed is not None:
            selection.placed.close()
            engine.runner.unpin()
    report(stage.steps, stage.steps, "done")
    projection = selection.projection
    warning = projection.warning() if projection is not None else None
    warnings += (warning,) if warning else ()
    return AssessResult(out, stage.result, manifest, warnings)


def claim_output(config: Config, out: Path, force: bool) -> tuple[bool, tuple[str, ...]]:
    """Before any work: whether `out` holds an earlier catalog of this config (same name,
    same config file name), whose ledger then carries over, and the warnings to show.

    A folder that is not a catalog, or cannot be written, is refused; so is the catalog
    of another config unless `force`, and then it is replaced without its ledger: a
    ledger never crosses configs."""
    check_replaceable(out, is_catalog)
    check_writable(out)
    if not is_catalog(out):
        return False, ()
    earlier = assessed_from(out)
    if earlier == (config.name, config.file.name):
        return True, ()
    who = f"config {earlier[0]!r} ({earlier[1]})" if earlier else "a config it does not name"
    if not force:
        raise PrudenceError(
            f"{out} is the catalog of {who}, not of {config.name!r} ({config.file.name}): "
            "choose another output folder, or pass --force to replace it (its ledger of "
            "releases is then discarded, not carried over)"
        )
    ledger = "; its ledger of releases was discarded" if (out / LEDGER).is_dir() else ""
    return False, (f"Replaced the catalog of {who} in {out}{ledger}.",)


@dataclass(frozen=True)
class _Stage:
    """What a pipeline leaves for the catalog's manifest and i-RAC table."""

    views: list[DataviewEntry]  # the manifest's dataview entries
    irac: pd.DataFrame  # i_rac.csv
    result: pd.DataFrame  # the table `assess` returns
    steps: int  # progress steps
    sampling: list[dict[str, Any]] = field(default_factory=list)
    randomize: RandomizeEntry | None = None  # the randomized wing's manifest entry
    mobility: MobilityEntry | None = None  # the mobility measures, when computed


def _silent(done: int, total: int, message: str, unit: str = "") -> None:
    """No progress is shown."""


def _prepare(config: Config, report: ProgressCallback, client: Any = None) -> Prepared:
    """The selection, read and selected here, or on the workers of a Dask `client`."""
    store = config.input.store
    name = store.name if store is not None else config.input.path.name
    report(0, 0, f"reading {name}")

    def heard(done: int, size: int) -> None:
        report(done, size, f"reading {name}", "bytes")

    prepared = prepare(config, heard, client)
    selection = prepared.selection
    if selection.n_users == 0:
        if selection.placed is not None:
            selection.placed.close()
        raise PrudenceError(
            f"{config.file.name}: the selection keeps no user "
            f"({selection.stats.get('rows_valid', 0):,} valid rows read); "
            "check select.area, select.period, select.min_points and select.min_trips"
        )
    return prepared


def _assess_profiles(
    config: Config,
    selection: Selection,
    writer: CatalogWriter,
    report: ProgressCallback,
    timings: dict[str, float],
) -> _Stage:
    """Profiles dataviews: the randomized wing sweeps them; the i-RAC table stays empty.
    (Imported here: the wing's mechanisms and attacks are not needed for risks.)"""
    from prudence_cli.randomized.assess import assess_profiles

    started = time.perf_counter()
    wing = assess_profiles(config, selection, writer, report, _knowledge_names(config))
    timings["attacks"] = time.perf_counter() - started
    irac = _irac_table([], config)
    return _Stage(wing.views, irac, wing.table, wing.steps, randomize=wing.settings)


def _assess_risks(
    config: Config,
    selection: Selection,
    engine: Engine,
    writer: CatalogWriter,
    report: ProgressCallback,
    timings: dict[str, float],
    out: Path,
) -> _Stage:
    """Every dataview × attack level: the risks, RAC curves and i-RAC rows (of the
    catalog `out`, which `writer` writes)."""
    levels = [(ATTACKS[a.attack], level) for a in config.attacks for level in a.levels]
    total = count_dataviews(config.dataview) * len(levels)
    rows: list[dict[str, Any]] = []
    views_meta: list[DataviewEntry] = []
    sampling: list[dict[str, Any]] = []
    done = 0
    mark = time.perf_counter()
    start, end = config.select.start, config.select.end
    period = (None if start is None else start.value, None if end is None else end.value)
    views = build_dataviews(selection, config.dataview, config.input.timezone, period=period)
    last = count_dataviews(config.dataview) - 1
    measurer = Measurer(config.mobility, selection.crs, writer)
    for view_index, view in enumerate(views):
        if view_index == last and config.utility_aggregate is None:
            views.close()  # every view is built: the points placed in cells can go,
            selection.drop_points()  # and the points (the utility aggregate reads them);
            measurer.start(view)  # in their room, its measures while the attacks run
            # (not of a view kept on the workers: see Measurer.start)
        dims = view.labels
        with Spilled(writer.folder / f".risks-{view_index}", out) as risks:
            held = Held(view)
            for level_index, (attack, level) in enumerate(levels):
                report(done, total, f"{view.id} {view.shown} {level.key}")
                lower = attack.lower_level(level)
                known_ones = risks[lower.key] >= 1.0 if lower and lower.key in risks else None
                engine.seed_key = (view_index, level_index)
                try:
                    subject = held.view_for(attack, engine)
                    result = attack.risks(subject, level, engine, known_ones, computed=risks)
                    del subject, known_ones
                except BudgetError as exc:
                    raise BudgetError(f"{view.id} {view.shown} {level.key}: {exc}") from None
                if result.sampled or result.computed_for_floor:
                    sampling.append(_sampling_entry(view.id, level.key, result, engine.sample))
                rac, summary = measure_view(view, result.risk, config.coverage)
                curve = writer.write_curve(view.id, level, rac)
                for name, table in result.tables.items():
                    writer.write_table(name, view.id, level, table)
                rows.append(
                    {
                        "dataview": view.id,
                        **dims,
                        "attack": level.attack,
                        **{k: str(v) for k, v in level.values},
                        **summary.__dict__,
                        **result.measures,
                        "sampled": result.sampled,
                        "curve": curve,
                    }
                )
                # on disk until the view's risks table is written: the risks of one level
                # at a time in memory, whatever the levels
                risks.add(level.key, result.risk)
                del result
                done += 1
            report(done, total, f"{view.id} {view.shown} mobility measures")
            keys = {"dataview": view.id, **{k: str(v) for k, v in dims.items()}}
            with ThreadPoolExecutor(1, thread_name_prefix="prudence-write") as thread:
                # Arrow writes without the GIL, while the measures are compared
                entry = thread.submit(
                    writer.write_view, view, selection.user_ids, risks, view.used_locations()
                )
                measures = measurer.add(view, selection.user_ids, risks, keys)
                views_meta.append(replace(entry.result(), measures=measures))
    mobility = measurer.finish()
    timings["mobility"] = measurer.seconds
    timings["attacks"] = time.perf_counter() - mark - measurer.seconds
    folder = writer.folder
    if config.utility_scores is not None:
        utility_scores(config).to_csv(folder / "utility.csv", index=False)
    elif config.utility_aggregate is not None:
        report(done, total, "utility: the declared aggregate from each profile")
        aggregate_utility(config, selection).to_csv(folder / "utility.csv", index=False)
    irac = _irac_table(rows, config)
    return _Stage(views_meta, irac, irac, total, sampling, mobility=mobility)


def _sampling_entry(
    view: str, level: str, result: AttackResult, per_user: int | None
) -> dict[str, Any]:
    """The manifest's account of a level sampled, or computed to know whether it needed
    sampling."""
    return {
        "dataview": view,
        "level": level,
        "sampled": result.sampled,
        "instances_per_user": per_user,
        "instances": result.instances,
        "floor": list(result.floor),
        "computed_for_floor": {
            key: {"sampled": r.sampled, "instances": r.instances}
            for key, r in result.computed_for_floor.items()
        },
        "statement": "risks are lower bounds from sampled instances, at least the risk at "
        "every smaller h in `floor`"
        if result.sampled
        else "exact; smaller h computed to know whether it needed sampling",
    }


def _knowledge_names(config: Config) -> list[str]:
    knowledge: list[str] = []
    for attack in config.attacks:
        for dim in ATTACK_SCHEMAS[attack.attack].knowledge:
            if dim.name not in knowledge:
                knowledge.append(dim.name)
    return knowledge


def _irac_table(rows: list[dict[str, Any]], config: Config) -> pd.DataFrame:
    knowledge = _knowledge_names(config)
    measures = ["users", "users_in_view", "i_rac_u", "i_rac_d", "mean_risk", "share_at_risk_1"]
    extra = [
        k
        for row in rows
        for k in row
        if k not in measures
        and k
        not in (
            "dataview",
            "attack",
            "sampled",
            "curve",
            *config.dataview.dimension_names,
            *knowledge,
        )
    ]
    columns = (
        ["dataview", *config.dataview.dimension_names, "attack", *knowledge]
        + measures
        + list(dict.fromkeys(extra))
        + ["sampled", "curve"]
    )
    return pd.DataFrame(rows, columns=columns)


def _selection_entry(selection: Selection) -> SelectionEntry:
    """The selection's statistics and projection, its scale error to 4 significant digits
    (None when it cannot be measured)."""
    projection = selection.projection
    if projection is None:
        return SelectionEntry(dict(selection.stats), selection.crs)
    error = projection.scale_error
    rounded = float(f"{error:.4g}") if np.isfinite(error) else None
    return SelectionEntry(dict(selection.stats), selection.crs, projection.rule, rounded)


def _manifest(
    config: Config,
    prepared: Prepared,
    stage: _Stage,
    engine: Engine,
    timings: dict[str, float],
) -> Manifest:
    """The catalog's manifest: what every assessment records, then the pipeline's own
    entries."""
    cache, selection = prepared.cache, prepared.selection
    return Manifest(
        format=CATALOG_FORMAT,
        format_version=CATALOG_VERSION,
        tool="prudence",
        tool_version=__version__,
        created=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        name=config.name,
        config_file=str(config.file.resolve()),
        config=config.raw,
        seed=config.seed,
        inputs=tuple(  # a file fetched from an object store: by its URL, as fetched
            InputFile(url, digest, size) for url, (digest, size) in prepared.fetched.items()
        )
        + tuple(InputFile(str(p), sha256_file(p), p.stat().st_size) for p in config.input_files),
        invalid_rows=InvalidRows(config.input.on_invalid, dict(prepared.dropped)),
        input_cache=cache or {"used": False, "reason": f"input.cache: {config.input.cache}"},
        selection=_selection_entry(selection),
        coverage=config.coverage,
        format_of_dataviews=config.dataview.format,
        dimensions=tuple(config.dataview.dimension_names),
        dataviews=tuple(stage.views),
        attacks=tuple(
            AttackEntry(
                a.attack,
                tuple(d.name for d in ATTACK_SCHEMAS[a.attack].knowledge),
                tuple(LevelEntry(tuple(level.values)) for level in a.levels),
            )
            for a in config.attacks
        ),
        engine=EngineEntry(
            runner=engine.runner.describe(),
            memory=engine.memory,
            max_instances=engine.max_instances,
            sample=engine.sample,
            threads=threads(),
        ),
        sampling=tuple(stage.sampling),
        timings_seconds={k: round(v, 3) for k, v in timings.items()},
        platform={"python": platform.python_version(), "machine": platform.machine()},
        randomize=stage.randomize,
        policy=config.policy,
        mobility=stage.mobility,
    )
