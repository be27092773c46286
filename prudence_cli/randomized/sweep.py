"""Utility and attack success of randomized profiles, per privacy setting (Olivier and Quertier,
randomized sanitization mechanisms).

The statistician (section II.C) compares a statistic per location on the true and the
noisy profiles: f1(j) = Σ_i b_ij, the visitors of j, on boolean profiles; f2(j) =
(1/n) Σ_i c_ij, the mean visits to j, on count profiles. The mean error is
(1/m) Σ_j |f(true, j) − f(noisy, j)| (section VI.B); a setting is admissible when the mean
error is at most `max_error` times the mean of f over the locations.

`sweep` runs every setting on a seeded sample of users (Olivier and Quertier's n) and every
attack level on it, one row per (setting, attack level).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from prudence_cli.arrays import distinct
from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.config.mechanisms import MECHANISMS, Setting
from prudence_cli.dataviews.profiles import ProfilesView
from prudence_cli.randomized.attacks import PROFILE_ATTACKS, Attempt, Scenario, build_scenarios
from prudence_cli.randomized.mechanisms import Affinity, affinity, neighbourhoods, randomize

STATISTIC = {"boolean": "f1", "count": "f2"}


@dataclass(frozen=True)
class Utility:
    statistic: str  # f1 or f2
    mean_error: float
    mean_value: float

    @property
    def relative_error(self) -> float:
        return self.mean_error / self.mean_value if self.mean_value else math.inf

    def admissible(self, max_error: float) -> bool:
        return self.relative_error <= max_error


def statistic(kind: str, profiles: sparse.csr_matrix) -> np.ndarray:
    """f1 (visitors per location) or f2 (mean visits per location)."""
    if kind == "boolean":
        return np.asarray((profiles > 0).sum(axis=0), dtype=float).ravel()
    n = max(profiles.shape[0], 1)
    return np.asarray(profiles.sum(axis=0), dtype=float).ravel() / n


def utility(kind: str, true: sparse.csr_matrix, noisy: sparse.csr_matrix) -> Utility:
    f_true = statistic(kind, true)
    f_noisy = statistic(kind, noisy)
    return Utility(
        STATISTIC[kind],
        float(np.abs(f_true - f_noisy).mean()) if f_true.size else 0.0,
        float(f_true.mean()) if f_true.size else 0.0,
    )


@dataclass(frozen=True)
class SweepOptions:
    users: int | None  # sample size n; None: every user in the view
    leak_users: float  # scenario 2.2: share of users whose true profile leaked
    leak_locations: float  # scenario 2.1: share of locations J
    max_error: float  # admissible relative error of the statistic
    seed: int


def sample_users(view: ProfilesView, size: int | None, seed: int) -> np.ndarray:
    """The sampled user codes (sorted): users with at least one visit in the view."""
    return sampled(distinct(view.user), size, seed)


def sampled(present: np.ndarray, size: int | None, seed: int) -> np.ndarray:
    """`sample_users` of the users `present` (sorted codes of those with a visit)."""
    if size is None or size >= present.shape[0]:
        return present
    rng = np.random.default_rng([seed, 4, 0])
    return np.sort(rng.choice(present, size=size, replace=False))


def sanitize_profiles(
    profiles: sparse.csr_matrix,
    setting: Setting,
    aff: Affinity,
    rng: np.random.Generator,
) -> sparse.csr_matrix:
    """M(a_i) for every row, with χ_i from the setting's neighbourhood."""
    chi = None
    if setting.neighbourhood is not None:
        chi = neighbourhoods(profiles, aff, setting.neighbourhood)
    return randomize(profiles, setting, rng, chi)


def setting_rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 4, *key])))


def setting_key(setting: Setting) -> tuple[int, int, int]:
    """Integers naming a setting, so that its random streams do not depend on which other
    settings are swept (a release at a swept ε reproduces the catalog's rows)."""
    return (
        list(MECHANISMS).index(setting.mechanism),
        round(setting.epsilon * 1_000_000),
        0 if setting.neighbourhood is None else setting.neighbourhood + 1,
    )


@dataclass(frozen=True)
class Bench:
    """What every setting of one view is measured against, built once per view: the
    sample, the affinity, the true profiles and the attacker's leaks (seeded per view,
    so every setting faces the same leak)."""

    view: ProfilesView
    view_index: int
    users: np.ndarray
    affinity: Affinity
    truth: sparse.csr_matrix  # the sample's profiles over the whole period
    scenarios: dict[str, Scenario]
    options: SweepOptions


def bench_for(
    view: ProfilesView,
    levels: Sequence[KnowledgeLevel],
    options: SweepOptions,
    view_index: int = 0,
    taken: tuple[np.ndarray, Affinity] | None = None,
) -> Bench:
    """The bench of `view`; `taken`: its sample and its affinity, made elsewhere (a view
    kept on Dask workers, of which `view` holds the sample's rows only)."""
    if taken is None:
        users = sample_users(view, options.users, options.seed)
        aff = affinity(view.matrix("all"))
    else:
        users, aff = taken
    scenarios = build_scenarios(
        view,
        users,
        {str(level["scenario"]) for level in levels},
        options.leak_users,
        options.leak_locations,
        setting_rng(options.seed, view_index, 0),
    )
    truth = view.matrix("all", users)
    return Bench(view, view_index, users, aff, truth, scenarios, options)


def evaluate_setting(
    bench: Bench, setting: Setting, levels: Sequence[KnowledgeLevel]
) -> tuple[Utility, list[dict[str, Any]]]:
    """Utility of one setting on the sample and the success of every attack level."""
    seed, aff = bench.options.seed, bench.affinity
    key = (bench.view_index, *setting_key(setting))
    released = sanitize_profiles(bench.truth, setting, aff, setting_rng(seed, *key, 1))
    measured = utility(bench.view.kind, bench.truth, released)
    attempts: dict[str, Attempt] = {}
    rows = []
    for level in levels:
        attack = PROFILE_ATTACKS[level.attack]
        if bench.view.kind not in attack.kinds:
            continue
        name = str(level["scenario"])
        if name not in attempts:
            scenario = bench.scenarios[name]
            # scenarios 2.x publish the whole period; scenario 1 only its second part
            noisy = (
                released
                if name != "1"
                else sanitize_profiles(scenario.release, setting, aff, setting_rng(seed, *key, 2))
            )
            attempts[name] = Attempt(scenario, noisy, setting, aff.matrix)
        rows.append({"level": level, **attack.success(attempts[name], level)})
    return measured, rows


def sweep(
    view: ProfilesView,
    settings: Sequence[Setting],
    levels: Sequence[KnowledgeLevel],
    options: SweepOptions,
    view_index: int = 0,
    progress: Callable[[str], None] | None = None,
    taken: tuple[np.ndarray, Affinity] | None = None,
) -> list[dict[str, Any]]:
    """One row per (setting, attack level) for the settings whose mechanism fits the
    view's profile kind (`taken`: as `bench_for`)."""
    bench = bench_for(view, levels, options, view_index, taken)
    out = []
    for setting in settings:
        if setting.kind != view.kind:
            continue
        if progress is not None:
            progress(f"{setting.mechanism} ε={setting.epsilon:g} χ={setting.chi}")
        measured, results = evaluate_setting(bench, setting, levels)
        for result in results:
            level = result.pop("level")
            out.append(
                {
                    "mechanism": setting.mechanism,
                    "epsilon": setting.epsilon,
                    "neighbourhood": "all"
                    if setting.neighbourhood is None
                    else str(setting.neighbourhood),
                    "p": setting.p,
                    "users": int(bench.users.shape[0]),
                    "statistic": measured.statistic,
                    "mean_error": measured.mean_error,
                    "mean_value": measured.mean_value,
                    "relative_error": measured.relative_error,
                    "admissible": measured.admissible(options.max_error),
                    "attack": level.attack,
                    **{k: str(v) for k, v in level.values},
                    **result,
                }
            )
    return out
