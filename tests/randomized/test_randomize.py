"""Randomized profiles (Olivier and Quertier): Propositions 7 and 9 checked on sampled outputs, the
attacks on hand-made profiles, literal references, seeded reproducibility, and the sweep
from the config to the catalog, the report and a release."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import sparse

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.cli import main
from prudence_cli.config.mechanisms import Setting, flip_range
from prudence_cli.dataviews.profiles import ProfilesView, profile_rows
from prudence_cli.randomized.attacks import (
    PROFILE_ATTACKS,
    Attempt,
    Scenario,
    discard_inconsistencies,
    epsilon_mle,
    l1_distances,
)
from prudence_cli.randomized.mechanisms import (
    affinity,
    neighbourhoods,
    noise_log_pmf,
    noisy,
    randomize,
)
from prudence_cli.randomized.sweep import SweepOptions, sweep, utility
from tests.reference import literal_neighbourhood, literal_reidentification

Z = 4.5  # sampling-error margin, in standard errors


def _log_ratio_bound(count_a: int, count_b: int) -> float:
    """A Z-sigma upper margin on |log(P_a/P_b)| estimated from two counts (delta method)."""
    return Z * math.sqrt(1 / count_a + 1 / count_b)


# --- Proposition 7: randomized response ---------------------------------------------------


def _rr_output_frequencies(profile, p, draws, seed):
    """Literal randomized response with any p (Setting refuses p outside Proposition 7)."""
    rng = np.random.default_rng(seed)
    out = np.where(rng.random((draws, len(profile))) < p, 1 - np.array(profile), profile)
    codes = out @ (1 << np.arange(len(profile)))
    return np.bincount(codes, minlength=1 << len(profile))


@pytest.mark.parametrize("epsilon", [0.5, 1.5])
def test_proposition_7_ratio_bound_holds_on_sampled_outputs(epsilon):
    b = [1, 0, 1]
    b_prime = [0, 0, 1]  # d(b, b') = 1
    low, high = flip_range(epsilon)
    for p in (low, 0.5, high):
        setting = Setting("randomized_response", epsilon, flip=p)
        draws = 400_000
        rng = np.random.default_rng(3)
        out_a = noisy(np.tile(b, (draws, 1)), setting, rng) @ np.array([1, 2, 4])
        out_b = noisy(np.tile(b_prime, (draws, 1)), setting, rng) @ np.array([1, 2, 4])
        fa = np.bincount(out_a, minlength=8)
        fb = np.bincount(out_b, minlength=8)
        for z in range(8):
            ratio = abs(math.log(fa[z] / fb[z]))
            assert ratio <= epsilon * 1 + _log_ratio_bound(fa[z], fb[z]), (p, z)


def test_a_flip_probability_outside_proposition_7_breaks_the_bound():
    epsilon = 1.0
    low, _ = flip_range(epsilon)
    with pytest.raises(ValueError, match="range of Proposition 7"):
        Setting("randomized_response", epsilon, flip=low / 2)
    # the sampled ratio at p = low / 2 is visibly above e^ε: the check above can fail
    fa = _rr_output_frequencies([1], low / 2, 400_000, 1)
    fb = _rr_output_frequencies([0], low / 2, 400_000, 2)
    assert math.log(fa[1] / fb[1]) > epsilon + _log_ratio_bound(fa[1], fb[1])


def test_default_flip_is_the_lower_end():
    assert Setting("randomized_response", 2.0).p == pytest.approx(1 / (1 + math.e**2))
    assert Setting("laplace", 2.0).p is None


# --- Proposition 9: Laplace (rounded, clamped) and geometric --------------------------------


@pytest.mark.parametrize("mechanism", ["laplace", "geometric"])
@pytest.mark.parametrize("epsilon", [0.4, 1.2])
def test_proposition_9_ratio_bound_holds_on_sampled_outputs(mechanism, epsilon):
    setting = Setting(mechanism, epsilon)
    draws = 400_000
    rng = np.random.default_rng(11)
    c, c_prime = 2, 3  # d = 1 on the one coordinate; 0 is reached (clamping) by both
    out_a = noisy(np.full(draws, c), setting, rng)
    out_b = noisy(np.full(draws, c_prime), setting, rng)
    top = int(max(out_a.max(), out_b.max())) + 1
    fa = np.bincount(out_a, minlength=top)
    fb = np.bincount(out_b, minlength=top)
    checked = 0
    for y in range(top):
        if fa[y] >= 500 and fb[y] >= 500:
            checked += 1
            assert abs(math.log(fa[y] / fb[y])) <= epsilon + _log_ratio_bound(fa[y], fb[y])
    assert checked >= 3


@pytest.mark.parametrize("mechanism", ["laplace", "geometric"])
def test_integer_noise_follows_its_exact_law(mechanism):
    """The sampler draws the law that noise_log_pmf states (and the MLE assumes); the
    rounded Laplace noise is centred (no downward bias of a floor)."""
    epsilon = 0.7
    setting = Setting(mechanism, epsilon)
    draws = 300_000
    k = noisy(np.full(draws, 1000), setting, np.random.default_rng(5)) - 1000
    values, counts = np.unique(k, return_counts=True)
    expected = np.exp(noise_log_pmf(mechanism, epsilon, values)) * draws
    big = expected > 200
    assert np.all(np.abs(counts[big] - expected[big]) <= Z * np.sqrt(expected[big]))
    assert abs(k.mean()) < Z * k.std() / math.sqrt(draws)
    total = np.exp(noise_log_pmf(mechanism, epsilon, np.arange(-200, 201))).sum()
    assert total == pytest.approx(1.0, abs=1e-9)


# --- χ, neighbourhoods and the literal definitions ------------------------------------------


@st.composite
def boolean_profiles(draw):
    n = draw(st.integers(1, 7))
    m = draw(st.integers(1, 8))
    cells = draw(st.lists(st.booleans(), min_size=n * m, max_size=n * m))
    return np.array(cells, dtype=np.int64).reshape(n, m)


@settings(max_examples=80, deadline=None)
@given(boolean_profiles(), st.integers(0, 4))
@example(  # the 6th person's locations 1 and 5 both score 7/7; as floats, 1 - 2^-53 and 1
    b=np.array(
        [
            [1, 1, 1, 1, 0, 1],
            [1, 0, 0, 0, 0, 0],
            [0, 1, 1, 1, 1, 1],
            [0, 1, 0, 0, 1, 0],
            [0, 0, 1, 0, 0, 1],
            [1, 0, 1, 1, 1, 0],
            [1, 0, 1, 0, 0, 0],
        ]
    ),
    n_i=1,
)
def test_neighbourhoods_equal_definition_8(b, n_i):
    """χ_i of Definition 8, Aff added exactly: a tie of affinities goes to the smaller
    location (sums of the floats count / n need not tie where the counts do)."""
    aff = affinity(sparse.csr_matrix(b))
    fast = neighbourhoods(sparse.csr_matrix(b), aff, n_i).toarray()
    literal = literal_neighbourhood(b, b.T @ b, n_i)  # Aff × n: added exactly
    assert np.array_equal(fast, literal)


@settings(max_examples=80, deadline=None)
@given(boolean_profiles(), st.lists(st.integers(0, 7), max_size=4), st.integers(0, 10_000))
def test_affinity_and_sample_of_ranges_of_people_are_the_whole_views(b, cuts, seed):
    """A profiles view kept in ranges of people (the Dask engine): the ranges' counts of
    people who visited both of two locations, added up, are the whole view's affinity
    counts, exactly (Aff x n, against the literal B^T B), and the sample drawn from the
    ranges' present people is the one drawn from the whole view."""
    from prudence_cli.dataviews.profiles import visited_together
    from prudence_cli.randomized.sweep import sample_users, sampled

    n, m = b.shape
    bounds = sorted({0, n, *(min(c, n) for c in cuts)})
    total = None
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        part = visited_together(sparse.csr_matrix(b[lo:hi]))
        total = part if total is None else total + part
    whole = affinity(sparse.csr_matrix(b)).counts
    assert np.array_equal(total.toarray(), (b.T @ b).astype(float))
    assert np.array_equal(total.toarray(), whole.toarray())
    user, location = np.nonzero(b)
    view = ProfilesView(
        "d0", (("profile", "boolean"),), n, user.astype(np.int32), location.astype(np.int32),
        pd.DataFrame({"label": [str(j) for j in range(m)]}), np.ones(user.size, np.int64),
    )  # fmt: skip
    ranges = zip(bounds[:-1], bounds[1:], strict=True)
    present = np.concatenate([np.unique(user[(user >= lo) & (user < hi)]) for lo, hi in ranges])
    for size in (None, 1, 2, n):
        assert np.array_equal(sampled(present, size, seed), sample_users(view, size, seed))


@settings(max_examples=60, deadline=None)
@given(boolean_profiles(), st.integers(0, 3), st.integers(0, 10_000))
def test_noise_stays_inside_chi(b, n_i, seed):
    counts = b * np.arange(1, b.shape[1] + 1)
    profiles = sparse.csr_matrix(counts)
    aff = affinity(profiles)
    chi = neighbourhoods(profiles, aff, n_i)
    for mechanism in ("laplace", "geometric"):
        out = randomize(profiles, Setting(mechanism, 0.3, n_i), np.random.default_rng(seed), chi)
        outside = ~chi.toarray()
        assert np.array_equal(out.toarray()[outside], counts[outside])
        assert (out.toarray() >= 0).all()
    rr = randomize(
        sparse.csr_matrix(b),
        Setting("randomized_response", 0.3, n_i),
        np.random.default_rng(seed),
        chi,
    )
    assert np.array_equal(rr.toarray()[~chi.toarray()], b[~chi.toarray()])


@settings(max_examples=60, deadline=None)
@given(boolean_profiles(), boolean_profiles())
def test_l1_distances_equal_numpy(a, b):
    m = min(a.shape[1], b.shape[1])
    a, b = a[:, :m] * 3, b[:, :m] * np.arange(1, m + 1)
    fast = l1_distances(sparse.csr_matrix(a), sparse.csr_matrix(b))
    assert np.array_equal(fast, np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2))


@settings(max_examples=60, deadline=None)
@given(boolean_profiles(), st.integers(0, 10_000), st.integers(0, 3), st.integers(1, 3))
def test_reidentification_equals_algorithm_11(b, seed, delta, m_max):
    rng = np.random.default_rng(seed)
    n = b.shape[0]
    noisy_b = np.where(rng.random(b.shape) < 0.2, 1 - b, b)
    leaked = np.sort(rng.choice(n, size=max(1, n // 2), replace=False))
    leaked_row = np.full(n, -1)
    leaked_row[leaked] = np.arange(leaked.shape[0])
    scenario = Scenario(
        "2.2", sparse.csr_matrix(b), sparse.csr_matrix(b[leaked]), leaked_row, np.arange(b.shape[1])
    )
    attempt = Attempt(
        scenario,
        sparse.csr_matrix(noisy_b),
        Setting("randomized_response", 1.0),
        affinity(sparse.csr_matrix(b)).matrix,
    )
    level = KnowledgeLevel(
        "reidentification", (("scenario", "2.2"), ("delta", delta), ("M", m_max))
    )
    found = PROFILE_ATTACKS["reidentification"].success(attempt, level)["success_rate"]
    assert found == pytest.approx(literal_reidentification(b, noisy_b, list(leaked), delta, m_max))


# --- the attacks on hand-made profiles ------------------------------------------------------

TRUE = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]])
NOISY = np.array([[1, 1, 0, 0], [0, 1, 1, 1], [1, 0, 0, 1]])


def _attempt(true, seen, setting=None):
    """Every true profile leaked (scenario 2.2 with a leak share of 1)."""
    n = true.shape[0]
    scenario = Scenario(
        "2.2", sparse.csr_matrix(true), sparse.csr_matrix(true), np.arange(n), np.arange(4)
    )
    setting = setting or Setting("randomized_response", 1.0)
    aff = affinity(sparse.csr_matrix(true)).matrix
    return Attempt(scenario, sparse.csr_matrix(seen), setting, aff)


def _level(attack, **values):
    return KnowledgeLevel(attack, tuple(values.items()))


def test_reidentification_by_hand():
    # ã_0 = a_0 → guess {0}; ã_1 is at distance 1 from a_1 and a_2 → guess {1, 2};
    # ã_2 is at distance 2 from a_0 and a_2, beyond δ = 1 → empty guess
    attack = PROFILE_ATTACKS["reidentification"]
    one = attack.success(
        _attempt(TRUE, NOISY), _level("reidentification", scenario="2.2", delta=1, M=1)
    )
    two = attack.success(
        _attempt(TRUE, NOISY), _level("reidentification", scenario="2.2", delta=1, M=2)
    )
    wide = attack.success(
        _attempt(TRUE, NOISY), _level("reidentification", scenario="2.2", delta=2, M=3)
    )
    assert (one["success_rate"], two["success_rate"], wide["success_rate"]) == (1 / 3, 2 / 3, 1.0)
    assert one["targets"] == 3
    # δ as a share of the noisy profile's norm: 50 % of |ã_1| = 1.5 → guess {1, 2}
    share = attack.success(
        _attempt(TRUE, NOISY), _level("reidentification", scenario="2.2", delta="50%", M=2)
    )
    assert share["success_rate"] == pytest.approx(2 / 3)


def test_an_affinity_is_its_count_over_n_rounded_once():
    """Aff = 17 / 1700 is τ = 0.01 exactly, not below it (17 × fl(1/1700) is)."""
    from prudence_cli.randomized.mechanisms import Affinity

    aff = Affinity(sparse.csr_matrix(np.array([[1700.0, 17.0], [17.0, 1700.0]])), 1700)
    assert aff.matrix.toarray().tolist() == [[1.0, 0.01], [0.01, 1.0]]
    seen = sparse.csr_matrix(np.array([[1, 1]]))  # two locations at Aff = τ: consistent
    assert discard_inconsistencies(seen, aff.matrix, 0.01, 1).toarray().tolist() == [[1, 1]]


def test_discard_inconsistencies_by_hand():
    aff = sparse.csr_matrix(
        np.array(
            [
                [0.5, 0.4, 0.3, 0.0],
                [0.4, 0.5, 0.3, 0.0],
                [0.3, 0.3, 0.5, 0.001],
                [0.0, 0.0, 0.001, 0.1],
            ]
        )
    )
    seen = sparse.csr_matrix(np.array([[1, 1, 1, 1], [1, 0, 0, 1]]))
    # location 3 has affinity < 0.01 with 3 others in row 0 (≥ N = 2): dropped; in row 1
    # only with 1 other: kept, and so is location 0 (one low pair only)
    cleaned = discard_inconsistencies(seen, aff, 0.01, 2).toarray()
    assert cleaned.tolist() == [[1, 1, 1, 0], [1, 0, 0, 1]]
    attempt = _attempt(TRUE, NOISY)
    level = _level("consistent_reidentification", scenario="2.2", delta=1, M=1, tau=0.01, N=1)
    # Aff from TRUE: location 3 never with 0 → in ã_2 = {0, 3} both are inconsistent
    # (one low pair each, N = 1) and dropped: ã_2 becomes empty, at distance 2 from all
    assert PROFILE_ATTACKS["consistent_reidentification"].success(attempt, level)[
        "success_rate"
    ] == pytest.approx(1 / 3)


def test_noise_estimate_by_hand():
    truth = np.array([[1, 1, 0, 0]] * 3)
    seen = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1]])  # 1, 0 and 4 of 4 flipped
    attempt = _attempt(truth, seen, setting=Setting("randomized_response", 2.0, flip=0.25))
    found = PROFILE_ATTACKS["noise_estimate"].success(
        attempt, _level("noise_estimate", scenario="2.2", within=0.1)
    )
    # p̃ = 0.25, 0 and 1 against p = 0.25: one within 10 %
    assert found["success_rate"] == pytest.approx(1 / 3)
    assert found["mean_relative_error"] == pytest.approx((0 + 1 + 3) / 3)


@pytest.mark.parametrize("mechanism", ["laplace", "geometric"])
def test_epsilon_mle_recovers_the_parameter(mechanism):
    rng = np.random.default_rng(9)
    truth = rng.integers(0, 5, size=(3, 20_000))
    estimates = []
    for epsilon in (0.3, 1.0, 2.5):
        seen = noisy(truth, Setting(mechanism, epsilon), rng)
        estimates.append(epsilon_mle(mechanism, truth, seen))
    for epsilon, found in zip((0.3, 1.0, 2.5), estimates, strict=True):
        assert np.all(np.abs(found - epsilon) / epsilon < 0.05)


def test_significant_poi_by_hand():
    true = np.array([[5, 1, 0, 0], [0, 2, 6, 0], [0, 0, 1, 4]])
    seen = np.array([[4, 2, 0, 0], [0, 3, 3, 0], [1, 0, 0, 4]])
    attempt = _attempt(true, seen, setting=Setting("laplace", 1.0))
    level = _level("significant_poi", scenario="2.2", delta=2)
    # row 0: noisy max {0}, candidates {a_0} (d = 2) with max {0} → {0} ∋ true max 0: hit
    # row 1: noisy max {1, 2}; candidate a_1 (d = 4 > 2)? no candidate → guess {1, 2} ∋ 2: hit
    # row 2: noisy max {3}; candidates {a_2} (d = 2) → {3} ∋ 3: hit
    assert PROFILE_ATTACKS["significant_poi"].success(attempt, level)["success_rate"] == 1.0
    seen_wrong = np.array([[1, 4, 0, 0], [0, 3, 3, 0], [1, 0, 0, 4]])
    wrong = _attempt(true, seen_wrong, setting=Setting("laplace", 1.0))
    assert PROFILE_ATTACKS["significant_poi"].success(wrong, level)["success_rate"] == 2 / 3


def test_utility_mean_errors():
    true = sparse.csr_matrix(np.array([[1, 0, 2], [3, 0, 0]]))
    seen = sparse.csr_matrix(np.array([[1, 1, 2], [0, 0, 0]]))
    # f2 = mean visits: true (2, 0, 1), noisy (0.5, 0.5, 1) → mean error (1.5 + 0.5) / 3
    count = utility("count", true, seen)
    assert count.mean_error == pytest.approx(2 / 3)
    assert count.mean_value == pytest.approx(1.0)
    # f1 = visitors: true (2, 0, 1), noisy (1, 1, 1) → (1 + 1 + 0) / 3
    assert utility("boolean", true, seen).mean_error == pytest.approx(2 / 3)


# --- the sweep: reproducible, and into the catalog -----------------------------------------


def _view(kind, seed=1, n=120, m=25):
    rng = np.random.default_rng(seed)
    user = rng.integers(0, n, 3000)
    location = (user * 3 + rng.integers(0, 5, 3000)) % m
    time = rng.integers(0, 100, 3000)
    u, loc, count, first = profile_rows(user, location, time, 50, m)
    labels = pd.DataFrame({"label": [f"L{j}" for j in range(m)]})
    return ProfilesView(
        "d1", (("profile", kind),), n, u, loc, labels, count=count, first=first, split=50
    )


def _levels():
    out = []
    for attack in PROFILE_ATTACKS.values():
        values = {d.name: d.default for d in attack.knowledge}
        values["scenario"] = ("1", "2.1", "2.2")
        out += attack.levels(values)
    return out


def test_sweep_is_seeded():
    view = _view("count")
    settings_ = [Setting("laplace", 1.0), Setting("geometric", 2.0, 2)]
    options = SweepOptions(60, 0.5, 0.5, 0.1, seed=3)
    first = pd.DataFrame(sweep(view, settings_, _levels(), options))
    again = pd.DataFrame(sweep(view, settings_[::-1], _levels(), options))
    key = ["mechanism", "epsilon", "neighbourhood", "attack", "scenario"]
    pd.testing.assert_frame_equal(
        first.sort_values(key).reset_index(drop=True),
        again.sort_values(key).reset_index(drop=True),
    )
    other = pd.DataFrame(sweep(view, settings_, _levels(), SweepOptions(60, 0.5, 0.5, 0.1, 4)))
    assert not first.equals(other)
    assert set(first["attack"]) == set(PROFILE_ATTACKS)


CONFIG = """
seed: 5
input: {path: e.csv, format: cdr, towers: t.csv,
        columns: {user: caller, time: timestamp, tower: cell}}
dataview: {format: profiles, dimensions: {profile: [boolean, count]}}
mechanisms:
  - {mechanism: randomized_response, epsilon: [0.5, 4], neighbourhood: [all, 3]}
  - {mechanism: laplace, epsilon: [0.5, 4]}
randomize: {users: 40, leak: {users: 0.5, locations: 0.5}, max_error: 0.2}
attacks:
  - {attack: reidentification, knowledge: {scenario: ["1", "2.2"], delta: [2], M: [1, 2]}}
  - {attack: noise_estimate, knowledge: {scenario: ["2.2"]}}
  - {attack: significant_poi, knowledge: {scenario: ["2.1"], delta: [30%]}}
"""


@pytest.fixture(scope="module")
def profiles_catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("profiles")
    runner = CliRunner()
    runner.invoke(
        main,
        ["sample", "cdr", "--users", "50", "--days", "4"]
        + ["--out", str(root / "e.csv"), "--towers", str(root / "t.csv")],
    )
    (root / "p.yaml").write_text(CONFIG)
    result = runner.invoke(main, ["assess", str(root / "p.yaml"), "-q"])
    assert result.exit_code == 0, result.output
    return root, root / "catalog" / "p"


def test_sweep_lands_in_the_catalog(profiles_catalog):
    _, catalog = profiles_catalog
    table = pd.read_csv(catalog / "randomized.csv")
    # boolean: 4 settings × 5 levels (no significant_poi); count: 2 settings × 6 levels
    assert len(table) == 4 * 5 + 2 * 6
    assert set(table["mechanism"]) == {"randomized_response", "laplace"}
    assert table["success_rate"].between(0, 1).all()
    manifest = json.loads((catalog / "catalog.json").read_text())
    assert manifest["randomize"]["users"] == 40
    assert len(manifest["randomize"]["settings"]) == 6
    assert manifest["seed"] == 5
    runner = CliRunner()
    shown = runner.invoke(
        main,
        ["catalog", "show", "--catalog", str(catalog), "--where", "epsilon=4", "--format", "csv"],
    )
    assert shown.exit_code == 0, shown.output
    assert set(pd.read_csv(io.StringIO(shown.output))["epsilon"]) == {4.0}
    best = runner.invoke(
        main, ["catalog", "best", "--catalog", str(catalog), "--max-risk", "1", "--format", "csv"]
    )
    assert best.exit_code == 0, best.output
    choice = pd.read_csv(io.StringIO(best.output))
    assert len(choice) == 6
    # with R = 1 every setting is safe: the choice is the largest admissible ε of its group
    for _, group in choice.groupby(["dataview", "mechanism", "neighbourhood"]):
        admissible = group[group["admissible"]]
        assert group["choice"].sum() == (1 if len(admissible) else 0)
        if len(admissible):
            assert group.loc[group["choice"], "epsilon"].item() == admissible["epsilon"].max()


def test_sweep_lands_in_the_report(profiles_catalog, tmp_path):
    _, catalog = profiles_catalog
    runner = CliRunner()
    out = tmp_path / "r.html"
    result = runner.invoke(main, ["report", "--catalog", str(catalog), "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "Choosing ε" in page and "Chosen ε" in page
    assert page.count("<img") == 3  # boolean × {all, 3}, count × {all}


def test_randomized_release(profiles_catalog, tmp_path):
    _, catalog = profiles_catalog
    runner = CliRunner()
    out = tmp_path / "release"
    args = ["sanitize", "--catalog", str(catalog), "--method", "randomize", "--out", str(out)]
    result = runner.invoke(main, [*args, "--epsilon", "4", "--dataview", "d2"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["mechanism"]["name"] == "laplace"
    assert report["seed"] == 5
    released = pd.read_csv(out / "profiles.csv.gz")
    assert list(released.columns) == ["profile", "location", "value"]
    assert (released["value"] > 0).all()
    # every profile of the view is released (an all-zero noisy profile has no rows)
    assert report["profiles"]["released"] >= released["profile"].nunique()
    # at a swept ε the report's attack rates are the catalog's rows for that setting
    table = pd.read_csv(catalog / "randomized.csv", dtype={"delta": str, "M": str})
    rows = table[(table["dataview"] == "d2") & (table["epsilon"] == 4.0)]
    assert sorted(r["success_rate"] for r in report["attacks"]["results"]) == sorted(
        rows["success_rate"]
    )
    assert "| reidentification |" in (out / "report.md").read_text()
    again = tmp_path / "again"
    runner.invoke(main, [*args[:-1], str(again), "--epsilon", "4", "--dataview", "d2"])
    assert (again / "profiles.csv.gz").read_bytes() == (out / "profiles.csv.gz").read_bytes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--epsilon", "1"], "2 dataviews fit: choose one with --dataview"),
        (["--dataview", "d1"], "needs --epsilon"),
        (["--epsilon", "1", "--dataview", "d1", "--mechanism", "laplace"], "randomizes count"),
        (["--epsilon", "-1", "--dataview", "d1"], "positive"),
        (["--epsilon", "1", "--dataview", "d1", "--neighbourhood", "x"], "whole number or all"),
        (["--epsilon", "1", "--dataview", "d1", "--pseudonymize"], "--pseudonymize is for the"),
    ],
)
def test_randomized_release_errors(profiles_catalog, tmp_path, args, message):
    _, catalog = profiles_catalog
    result = CliRunner().invoke(
        main,
        [
            "sanitize",
            "--catalog",
            str(catalog),
            "--method",
            "randomize",
            "--out",
            str(tmp_path / "x"),
        ]
        + args,
    )
    assert result.exit_code == 2
    assert message in result.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("mechanism: laplace, epsilon: [0.5, 4]", None),
        ("mechanism: laplace, epsilon: [0, 4]", "mechanisms[1].epsilon[0]: 0 is not a positive"),
        ("mechanism: blur, epsilon: [1]", "mechanisms[1].mechanism"),
        ("mechanism: laplace, epsilon: [1], p: 0.3", "mechanisms[1].p: is the flip probability"),
    ],
)
def test_mechanism_config_errors(profiles_catalog, change, message):
    here, _ = profiles_catalog
    text = CONFIG.replace("mechanism: laplace, epsilon: [0.5, 4]", change)
    (here / "bad.yaml").write_text(text)
    result = CliRunner().invoke(main, ["validate", str(here / "bad.yaml")])
    if message is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2
        assert message in result.stderr


def test_randomized_response_needs_boolean_profiles(profiles_catalog):
    here, _ = profiles_catalog
    text = CONFIG.replace("profile: [boolean, count]", "profile: [count]")
    (here / "kinds.yaml").write_text(text)
    result = CliRunner().invoke(main, ["validate", str(here / "kinds.yaml")])
    assert result.exit_code == 2
    assert "mechanisms[0].mechanism: 'randomized_response' randomizes boolean profiles" in (
        result.stderr
    )
