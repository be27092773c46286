"""`prudence sanitize --method randomize`: release every profile of a profiles dataview
with d_χ-private noise (Olivier and Quertier, randomized sanitization mechanisms), with a report of
the mechanism, its parameters, the seed,
the statistician's error and the success of the catalog's attacks on this setting.

The release is Olivier and Quertier's unordered list of noisy profiles: rows are shuffled (the
permutation π) and numbered `r1, r2, ...`; no mapping to the original ids is written,
since linking them is exactly what the attacks try. The folder is written atomically and
recorded in the catalog's release ledger (method, mechanism, ε, recipient, the sha256 of
the released files), as suppressed releases are (see sanitize/ledger.py); the ledger
keeps no copy of the noisy profiles.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli import __version__
from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.catalog import Catalog
from prudence_cli.catalog.release_records import (
    AttackResult,
    MechanismEntry,
    ProfileCounts,
    RandomizedReport,
    UtilityEntry,
)
from prudence_cli.config.mechanisms import DEFAULT_MECHANISM, MECHANISMS, Setting
from prudence_cli.dataviews.profiles import ProfilesView
from prudence_cli.errors import PrudenceError
from prudence_cli.randomized.sweep import (
    STATISTIC,
    Bench,
    SweepOptions,
    bench_for,
    evaluate_setting,
    sample_users,
    sanitize_profiles,
    setting_key,
    setting_rng,
    utility,
)
from prudence_cli.sanitize.ledger import open_ledger
from prudence_cli.sanitize.release import RELEASE_FORMAT, REPORT, is_release

_GZIP = {"method": "gzip", "compresslevel": 6, "mtime": 0}


@dataclass(frozen=True)
class RandomizeRequest:
    epsilon: float
    neighbourhood: int | None = None  # None: every location
    mechanism: str | None = None  # default: by the profile kind
    dataview: str | None = None
    seed: int | None = None  # default: the catalog's seed
    recipient: str | None = None  # who receives it, as recorded in the ledger


def run_randomize(catalog: Catalog, request: RandomizeRequest, out: Path) -> RandomizedReport:
    """Write the release folder; returns its report."""
    if catalog.kind != "profiles":
        raise PrudenceError(
            f"{catalog.path}: --method randomize needs a catalog of profiles dataviews "
            "(dataview.format: profiles and mechanisms: in the config)"
        )
    view_id = _choose_view(catalog, request)
    view, user_ids = catalog.view(view_id)
    assert isinstance(view, ProfilesView)
    mechanism = request.mechanism or DEFAULT_MECHANISM[view.kind]
    if MECHANISMS[mechanism] != view.kind:
        raise PrudenceError(
            f"--mechanism {mechanism} randomizes {MECHANISMS[mechanism]} profiles; dataview "
            f"{view_id} holds {view.kind} profiles"
        )
    try:
        setting = Setting(mechanism, request.epsilon, request.neighbourhood)
    except ValueError as exc:
        raise PrudenceError(f"--epsilon {request.epsilon:g}: {exc}") from None
    seed = int(catalog.record.seed) if request.seed is None else request.seed
    options = _options(catalog, seed)
    view_index = [e.id for e in catalog.dataviews].index(view_id)

    levels = [
        KnowledgeLevel(entry.attack, values.values)
        for entry in catalog.record.attacks
        for values in entry.levels
    ]
    bench = bench_for(view, levels, options, view_index)
    # the release: every profile of the view (the attacks run on the bench's sample)
    truth = view.matrix("all", sample_users(view, None, seed))
    noisy = sanitize_profiles(
        truth, setting, bench.affinity, setting_rng(seed, view_index, 99, *setting_key(setting))
    )
    measured = utility(view.kind, truth, noisy)
    attacks = _attack_rates(bench, setting, levels)

    order = np.random.default_rng([seed, 4, 98]).permutation(noisy.shape[0])
    table = _release_table(noisy[order], view.locations["label"].to_numpy(dtype=object))
    report = RandomizedReport(
        format=RELEASE_FORMAT,
        kind="randomized profiles",
        tool_version=__version__,
        created=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        catalog_name=catalog.record.name,
        catalog_path=catalog.path.resolve().name,
        dataview_id=view_id,
        dataview_format=view.format,
        profile=view.kind,
        mechanism=MechanismEntry(
            name=setting.mechanism,
            epsilon=setting.epsilon,
            p=setting.p,
            chi=setting.chi,
            guarantee=f"d_(chi, epsilon)-privacy of each profile, epsilon = "
            f"{setting.epsilon:g} per unit of l1 distance on chi",
            sampler="numpy PCG64; integer noise from exact discrete draws",
        ),
        seed=seed,
        profiles=ProfileCounts(
            released=int(noisy.shape[0]),
            people_in_universe=len(user_ids),
            locations=view.n_locations,
            rows=len(table),
        ),
        utility=UtilityEntry(
            statistic=STATISTIC[view.kind],
            mean_error=measured.mean_error,
            mean_value=measured.mean_value,
            relative_error=measured.relative_error,
            max_error=options.max_error,
            admissible=measured.admissible(options.max_error),
        ),
        attack_sample="all" if options.users is None else options.users,
        leak={"users": options.leak_users, "locations": options.leak_locations},
        attacks=tuple(attacks),
    )
    record = {
        "recipient": request.recipient,
        "created": report.created,
        "dataview": view_id,
        "format": view.format,
        "dimensions": catalog.dataview_entry(view_id).dimensions,
        "threshold": None,
        "method": "randomize",
        "mechanism": setting.mechanism,
        "epsilon": setting.epsilon,
        "neighbourhood": "all" if request.neighbourhood is None else request.neighbourhood,
        "seed": seed,
        "users": report.profiles.released,
        "pseudonymized": True,  # rows renumbered, no mapping kept
    }
    with open_ledger(catalog) as ledger:
        record = {"id": ledger.next_id(), **record}
        with ledger.release(out, is_release, record, None) as folder:
            table.to_csv(folder / "profiles.csv.gz", index=False, compression=_GZIP)
            view.locations.to_csv(folder / "locations.csv", index=False)
            (folder / "report.md").write_text(render_report(report), encoding="utf-8")
            (folder / REPORT).write_text(
                json.dumps(report.to_json(), indent=2, default=str) + "\n", encoding="utf-8"
            )
    return report


def _choose_view(catalog: Catalog, request: RandomizeRequest) -> str:
    if request.dataview is not None:
        catalog.dataview_entry(request.dataview)  # unknown id: CatalogError
        return request.dataview
    views = catalog.dataviews
    if request.mechanism is not None:
        kind = MECHANISMS[request.mechanism]
        views = [e for e in views if e.dimensions.get("profile", "boolean") == kind]
    if len(views) != 1:
        known = ", ".join(f"{e.id} ({e.show()})" for e in catalog.dataviews)
        raise PrudenceError(
            f"{len(views)} dataviews fit: choose one with --dataview (known: {known})"
        )
    return str(views[0].id)


def _options(catalog: Catalog, seed: int) -> SweepOptions:
    settings = catalog.record.randomize
    if settings is None:
        return SweepOptions(
            users=1000, leak_users=0.5, leak_locations=0.5, max_error=0.1, seed=seed
        )
    users = settings.users
    return SweepOptions(
        users=None if users == "all" else int(users),
        leak_users=settings.leak_users,
        leak_locations=settings.leak_locations,
        max_error=float(settings.max_error),
        seed=seed,
    )


def _attack_rates(
    bench: Bench, setting: Setting, levels: list[KnowledgeLevel]
) -> list[AttackResult]:
    """The catalog's attack levels on this setting, as the assessment runs them."""
    _, rows = evaluate_setting(bench, setting, levels)
    return [
        AttackResult(
            attack=row["level"].attack,
            knowledge={k: str(v) for k, v in row["level"].values},
            measures={k: v for k, v in row.items() if k != "level"},
        )
        for row in rows
    ]


def _release_table(noisy: Any, labels: np.ndarray) -> pd.DataFrame:
    coo = noisy.tocoo()
    order = np.lexsort((coo.col, coo.row))
    width = len(str(max(noisy.shape[0], 1)))
    return pd.DataFrame(
        {
            "profile": [f"r{i + 1:0{width}d}" for i in coo.row[order]],
            "location": labels[coo.col[order]],
            "value": coo.data[order],
        }
    )


def render_report(report: RandomizedReport) -> str:
    """report.md: what was released and what it resists, in words."""
    mech = report.mechanism
    util = report.utility
    profiles = report.profiles
    p = f", flip probability p = {mech.p:.4g}" if mech.p is not None else ""
    lines = [
        f"# Randomized release of dataview {report.dataview_id}",
        "",
        f"Prepared by prudence {report.tool_version} on {report.created} from catalog "
        f"`{report.catalog_name}`.",
        "",
        "## What is released",
        "",
        f"- **{profiles.released:,}** {report.profile} profiles over "
        f"{profiles.locations:,} locations ({profiles.rows:,} non-zero entries), as an "
        "unordered list: rows are shuffled and numbered, original ids are not included.",
        f"- Mechanism **{mech.name}**, ε = **{mech.epsilon:g}**{p}, noise on χ = "
        f"{mech.chi}; random seed {report.seed}.",
        f"- Guarantee: {mech.guarantee}. Locations outside χ are released as they are.",
        "",
        "## Utility",
        "",
        f"The statistic {util.statistic} per location has a mean error of "
        f"{util.mean_error:.4g} against a mean of {util.mean_value:.4g} (relative "
        f"{util.relative_error:.3f}); admissible up to {util.max_error:g}: "
        f"**{'yes' if util.admissible else 'no'}**.",
        "",
        "## Attacks on this setting",
        "",
        f"On a sample of {report.attack_sample} people, with leaked shares {report.leak}:",
        "",
        "| attack | knowledge | success rate |",
        "|---|---|---|",
    ]
    for row in report.attacks:
        knowledge = ", ".join(f"{k}={v}" for k, v in row.knowledge.items())
        lines.append(f"| {row.attack} | {knowledge} | {row.success_rate:.3f} |")
    return "\n".join(lines) + "\n"
