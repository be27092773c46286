"""`prudence sanitize`: choose a dataview, suppress to the threshold, write the release.

The release folder is written atomically (all or nothing) and holds the sanitized
dataview and its locations (CSV or Parquet), `locations.geojson` where the locations are
places on a map (sanitize/files.py), `report.json` and `report.md`. It is recorded in the catalog's
ledger under the ledger's lock, pending just before the folder is put in place and
complete once it is, so the ledger never under-states what a recipient holds (see
sanitize/ledger.py for kills and concurrent runs).

With a recipient who already holds releases, the view is assessed joined with them, over
their universe: the catalog's U followed by the people only the earlier releases hold
(an earlier assessment may have selected others). If another release to them is
recorded while this one is assessed, it is assessed again, under the lock, with that one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from prudence_cli import __version__
from prudence_cli.attacks.base import Attack, KnowledgeLevel
from prudence_cli.catalog import Catalog, DataviewEntry
from prudence_cli.catalog.query import Levels, counted_levels, dataview_entries, max_risk_over
from prudence_cli.catalog.release_records import (
    CatalogRef,
    DataCounts,
    PassEntry,
    RacEntry,
    ReleasedView,
    ReleaseReport,
    UserCounts,
)
from prudence_cli.dataviews.base import Dataview
from prudence_cli.errors import PrudenceError
from prudence_cli.measures.mobility import release_distortion
from prudence_cli.measures.rac import RacSummary, measure_view
from prudence_cli.sanitize.files import TABLE_FORMATS, write_release_files
from prudence_cli.sanitize.forecast import (
    Suppressed,
    blind_levels,
    catalog_engine,
    every_level,
    suppress_dataview,
)
from prudence_cli.sanitize.ledger import (
    Copy,
    Ledger,
    join_views,
    narrow,
    next_release_id,
    open_ledger,
    released_views,
    widen,
)
from prudence_cli.sanitize.report import render_markdown
from prudence_cli.sanitize.suppress import (
    METHODS,
    Outcome,
    Step,
    sanitize,
)
from prudence_cli.units import percent

RELEASE_FORMAT = "prudence-release"
Work = Callable[[int, int, str], None]  # done of total steps (0: not known), what
REPORT = "report.json"


@dataclass(frozen=True)
class SanitizeRequest:
    threshold: float
    dataview: str | None = None
    attacks: tuple[str, ...] = ()
    where: tuple[str, ...] = ()
    method: str = "suppress-users"
    recipient: str | None = None
    pseudonymize: bool = False
    min_coverage: float | None = None  # the least share of the data the release must keep
    file_format: str = "csv"  # of the released tables: csv or parquet


@dataclass(frozen=True)
class ReleaseResult:
    met: bool  # every released user at or below the threshold, and someone released
    report: ReleaseReport | None  # None when no dataview could be chosen
    folder: Path | None  # None when nothing was written
    choice: str  # which dataview and why


def is_release(folder: Path) -> bool:
    try:
        data = json.loads((Path(folder) / REPORT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == RELEASE_FORMAT


def choose_dataview(
    catalog: Catalog,
    levels: Levels,
    threshold: float,
    where: Sequence[str],
    method: str,
    progress: Work | None = None,
) -> tuple[Suppressed | None, str]:
    """The dataview whose release keeps the most data after suppression to the threshold
    under the counted levels (the same fixpoint as the release, and as `catalog best`),
    with that fixpoint; None when no dataview keeps anyone. And the reason, in words.
    `progress` hears each dataview before its fixpoint is run."""
    best: Suppressed | None = None
    kind = catalog.record.coverage
    entries = dataview_entries(catalog, where)
    for done, entry in enumerate(entries):
        if progress is not None:
            progress(done, len(entries), f"choosing the dataview: suppressing {entry.id}")
        result = suppress_dataview(catalog, entry.id, levels, threshold, method)
        if not result.released.any():
            continue
        key = (result.share_released(kind), int(result.released.sum()))
        if best is None or key > (best.share_released(kind), int(best.released.sum())):
            best = result
    if best is None:
        return None, _no_release(catalog, levels, threshold, entries, method)
    entry = catalog.dataview_entry(best.before.id)
    reason = (
        f"{entry.id} ({entry.show()}): its release keeps the most data of the "
        f"{len(entries)} dataviews after suppression to risk ≤ {threshold:g} under "
        f"{len(levels)} counted attack levels: {percent(best.share_released(kind))} of its {kind}, "
        f"{int(best.released.sum()):,} people"
    )
    return best, reason


def _no_release(
    catalog: Catalog,
    levels: Levels,
    threshold: float,
    entries: Sequence[DataviewEntry],
    method: str,
) -> str:
    """Why nothing can be released, and the best alternatives with their figures."""
    kind = catalog.record.coverage
    # the dataview with the most data held by people at ≤ R before suppression
    start = max(
        entries,
        key=lambda e: _share_at_or_below(catalog, e.id, levels, threshold, kind),
    )
    options = []
    other = None
    if method != "suppress-locations":
        other = suppress_dataview(catalog, start.id, levels, threshold, "suppress-locations")
    if other is not None and other.released.any():
        options.append(
            f"--method suppress-locations keeps {percent(other.share_released(kind))} of the "
            f"{kind} of {start.id}"
        )
    if len(levels) > 1:
        alone = [
            (suppress_dataview(catalog, start.id, [lv], threshold, method), lv[1].key)
            for lv in levels
        ]
        feasible = [(r.share_released(kind), key) for r, key in alone if r.released.any()]
        if feasible:  # the strongest attacker a release can still be safe against
            share, key = min(feasible)
            options.append(
                f"counting only {key} keeps {percent(share)} of the {kind} of {start.id} "
                "(--attack / --where choose the counted levels; the release then names the "
                "levels it does not cover)"
            )
    options.append("a coarser dataview (larger grid, longer time bins) in the config")
    return (
        f"none of the {len(entries)} dataviews keeps anyone after suppression to risk ≤ "
        f"{threshold:g} under the {len(levels)} counted attack levels (removing the people "
        "above it makes others unique, pass after pass). Alternatives: " + "; ".join(options)
    )


def _share_at_or_below(
    catalog: Catalog, view_id: str, levels: Levels, threshold: float, kind: str
) -> float:
    view, _ = catalog.view(view_id)
    risk = max_risk_over(catalog.risks(view_id), levels, view_id)
    return view.share_of(risk <= threshold, kind)


def run_sanitize(
    catalog: Catalog,
    request: SanitizeRequest,
    out: Path,
    progress: Callable[[Step], None] | None = None,
    announce: Callable[[str], None] | None = None,
    work: Work | None = None,
) -> ReleaseResult:
    """Sanitize and, when the threshold is met by a non-empty release, write it.

    `progress` hears each suppression pass; `announce` which dataview was chosen and
    why, before suppression starts; `work` each step of the long computations (the
    choice of the dataview, the re-assessment of the levels not counted)."""
    if catalog.kind == "profiles":
        raise PrudenceError(
            f"{catalog.path} is a catalog of randomized profiles: release one with "
            "--method randomize --epsilon E"
        )
    if not 0 < request.threshold <= 1:
        raise PrudenceError(f"--threshold {request.threshold:g} must be in (0, 1]")
    if request.method not in METHODS:
        raise PrudenceError(f"--method {request.method}: known methods: {', '.join(METHODS)}")
    if request.file_format not in TABLE_FORMATS:
        raise PrudenceError(f"--as {request.file_format}: known: {', '.join(TABLE_FORMATS)}")
    levels = counted_levels(catalog, request.attacks, request.where)
    chosen: Suppressed | None = None
    if request.dataview is not None:
        catalog.dataview_entry(request.dataview)  # unknown id: CatalogError
        view_id = request.dataview
        choice = f"{view_id}: chosen with --dataview"
    else:
        chosen, choice = choose_dataview(
            catalog, levels, request.threshold, request.where, request.method, work
        )
        if chosen is None:
            return ReleaseResult(False, None, None, choice)
        view_id = chosen.before.id
    user_ids = catalog.view(view_id)[1] if chosen is None else chosen.user_ids
    earlier = released_views(catalog, request.recipient, user_ids) if request.recipient else []
    if earlier:
        choice += (
            f" (on its own: {request.recipient} already holds {len(earlier)} release"
            f"{'s' if len(earlier) != 1 else ''}, and this one is assessed together with "
            "them, so it may keep less)"
        )
    if announce is not None:
        announce(choice)
    draft = _draft(catalog, request, levels, view_id, chosen, earlier, progress, work)
    if not draft.met:
        return ReleaseResult(False, draft.report, None, choice)
    with open_ledger(catalog) as ledger:
        if ledger.held_by(request.recipient) - {v.id for v in earlier}:
            # released to them while this release was assessed: assess it with those too
            earlier = released_views(catalog, str(request.recipient), user_ids)
            draft = _draft(catalog, request, levels, view_id, None, earlier, progress, work)
            if not draft.met:
                return ReleaseResult(False, draft.report, None, choice)
        report = _write(ledger, request, draft, out)
    return ReleaseResult(True, report, out, choice)


@dataclass(frozen=True)
class _Draft:
    """A release before it is numbered and written."""

    chosen: Suppressed
    report: ReleaseReport
    met: bool  # every released user at or below the threshold, and someone released


def _draft(
    catalog: Catalog,
    request: SanitizeRequest,
    levels: Levels,
    view_id: str,
    chosen: Suppressed | None,
    earlier: list[Dataview],
    progress: Callable[[Step], None] | None,
    work: Work | None = None,
) -> _Draft:
    """The fixpoint (`chosen`, when already run without earlier releases) and its report."""
    join = (lambda v: join_views(v, earlier)) if earlier else None
    if chosen is not None and join is None and progress is not None:
        for step in chosen.outcome.steps:
            progress(step)
    if join is not None:
        view, user_ids = catalog.view(view_id)
        outcome = sanitize(
            widen(view, earlier),
            levels,
            catalog_engine(catalog),
            request.threshold,
            request.method,
            join,
            progress,
        )
        wide = Suppressed(view, user_ids, outcome)
    elif chosen is None:
        wide = suppress_dataview(
            catalog, view_id, levels, request.threshold, request.method, None, progress
        )
    else:
        wide = chosen
    chosen = _narrow(wide)
    view, outcome = chosen.before, chosen.outcome
    released = chosen.released
    met = bool(released.any()) and bool((outcome.risk <= request.threshold).all())
    if request.min_coverage is not None:
        met = met and chosen.share_released(catalog.record.coverage) >= request.min_coverage
    report = _report(
        catalog,
        request,
        next_release_id(catalog),  # provisional: numbered under the ledger's lock
        view,
        outcome.view,
        levels,
        outcome.steps,
        outcome.initial_risk,
        outcome.risk,
        [v.id for v in earlier],
        bool(outcome.sampled),
        met,
    )
    if met:
        every = every_level(catalog, wide.outcome, levels, request.threshold, join, work)
        notes = blind_levels(catalog, view_id, levels)
        crs = catalog.record.selection.crs
        mobility = tuple(release_distortion(chosen.before, chosen.outcome.view, crs, catalog.trips))
        report = dataclasses.replace(report, levels_assessed=every, notes=notes, mobility=mobility)
    return _Draft(chosen, report, met)


def _narrow(wide: Suppressed) -> Suppressed:
    """The fixpoint on a widened view (see `widen`) back on the view's universe U."""
    n = wide.before.n_users
    o = wide.outcome
    if o.view.n_users == n:
        return wide
    outcome = Outcome(
        narrow(o.view, n),
        o.risk[:n],
        o.initial_risk[:n],
        {key: risk[:n] for key, risk in o.per_level.items()},
        o.steps,
        o.sampled,
    )
    return Suppressed(wide.before, wide.user_ids, outcome)


def _write(ledger: Ledger, request: SanitizeRequest, draft: _Draft, out: Path) -> ReleaseReport:
    """Number the release, write its folder and record it in the ledger."""
    catalog = ledger.catalog
    release_id = ledger.next_id()
    report = dataclasses.replace(draft.report, release=release_id)
    view, user_ids = draft.chosen.outcome.view, draft.chosen.user_ids
    table = view.release_table(user_ids)
    mapping = None
    if request.pseudonymize and "user" in table:  # an aggregate release has no ids
        table, mapping = _pseudonymize(table, catalog, release_id)
    locations = view.used_locations()
    record = {
        "id": release_id,
        "recipient": request.recipient,
        "created": report.created,
        "dataview": report.dataview.id,
        "format": report.dataview.format,
        "dimensions": report.dataview.dimensions,
        "threshold": request.threshold,
        "method": request.method,
        "levels": list(report.levels_counted),
        "users": report.users.released,
        "pseudonymized": request.pseudonymize,
    }
    copy = Copy(view.table(user_ids), locations, mapping)
    crs = catalog.record.selection.crs
    with ledger.release(out, is_release, record, copy) as folder:
        files = write_release_files(folder, table, view, request.file_format, crs)
        report = dataclasses.replace(report, files=files)
        (folder / "report.md").write_text(render_markdown(report), encoding="utf-8")
        (folder / REPORT).write_text(
            json.dumps(report.to_json(), indent=2, default=str) + "\n", encoding="utf-8"
        )
    return report


def _report(
    catalog: Catalog,
    request: SanitizeRequest,
    release_id: str,
    before: Dataview,
    after: Dataview,
    levels: Sequence[tuple[Attack, KnowledgeLevel]],
    steps: list[Step],
    risk_before: np.ndarray,
    risk_after: np.ndarray,
    combined_with: list[str],
    sampled: bool,
    met: bool,
) -> ReleaseReport:
    kind = catalog.record.coverage
    everyone = np.ones(before.n_users, dtype=bool)
    total = before.data_of(everyone, kind)
    released_data = after.data_of(everyone, kind)
    in_before = np.diff(before.offsets) > 0
    in_after = np.diff(after.offsets) > 0
    curve_before, summary_before = measure_view(before, risk_before, kind)
    curve_after, summary_after = measure_view(after, risk_after, kind, total=total)
    manifest = catalog.record
    return ReleaseReport(
        format=RELEASE_FORMAT,
        format_version=1,
        tool="prudence",
        tool_version=__version__,
        created=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        release=release_id,
        recipient=request.recipient,
        met=met,
        threshold=request.threshold,
        method=request.method,
        catalog=CatalogRef(
            name=manifest.name,
            manifest_sha256=hashlib.sha256(
                (catalog.path / "catalog.json").read_bytes()
            ).hexdigest(),
        ),
        dataview=ReleasedView(
            before.id, before.format, catalog.dataview_entry(before.id).dimensions
        ),
        levels_counted=tuple(level.key for _, level in levels),
        combined_with=tuple(combined_with),
        users=UserCounts(
            in_universe=int(before.n_users),
            in_view=int(in_before.sum()),
            released=int(in_after.sum()),
            removed=int((in_before & ~in_after).sum()),
        ),
        data=DataCounts(
            coverage=manifest.coverage,
            before=total,
            released=released_data,
            removed=total - released_data,
            rows_before=int(before.user.shape[0]),
            rows_released=int(after.user.shape[0]),
        ),
        iterations=tuple(PassEntry(**step.__dict__) for step in steps),
        max_risk_after=float(risk_after[in_after].max(initial=0.0)),
        sampled=sampled,
        i_rac_before=_summary(summary_before),
        i_rac_after=_summary(summary_after),
        curves={
            "before": curve_before.to_dict(orient="list"),
            "after": curve_after.to_dict(orient="list"),
        },
        inputs=tuple(i.anonymous() for i in manifest.inputs),
        seed=manifest.seed,
        pseudonymized=request.pseudonymize,
    )


def _summary(summary: RacSummary) -> RacEntry:
    return RacEntry(
        i_rac_u=summary.i_rac_u,
        i_rac_d=summary.i_rac_d,
        mean_risk=summary.mean_risk,
        share_at_risk_1=summary.share_at_risk_1,
    )


def _pseudonymize(
    table: pd.DataFrame, catalog: Catalog, release_id: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fresh ids p0001, ... assigned in a seeded random order; returns the table and the
    mapping (kept in the catalog's ledger, not in the release)."""
    users = pd.unique(table["user"])
    seed = np.random.SeedSequence(int(catalog.record.seed), spawn_key=(int(release_id[1:]),))
    order = np.random.default_rng(seed).permutation(len(users))
    width = len(str(len(users)))
    pseudonyms = np.array([f"p{i + 1:0{width}d}" for i in order], dtype=object)
    mapping = pd.DataFrame({"user": users, "pseudonym": pseudonyms})
    renamed = table.assign(user=table["user"].map(dict(zip(users, pseudonyms, strict=True))))
    return renamed, mapping
