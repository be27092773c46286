"""The empirical risk of a release (Basu et al.): a hand-computed k-anonymity example, the
literal definition on random data, cost models, utility, the null model and the CLI."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.cli import main
from prudence_cli.config.evaluate import EvaluationSettings
from prudence_cli.engine import Elements
from prudence_cli.errors import BudgetError
from prudence_cli.measures.empirical import cost_of, evaluate, statements
from tests.reference import is_subsequence

# A toy release in the spirit of Basu et al., Figure 1: four trajectories, k = 3.
ORIGINAL = [list("abc"), list("abc"), list("abd"), list("ef")]
RELEASED = [list("ab"), list("ab"), list("ab")]  # c, d generalised away, ef suppressed


def lists(trajectories, vocabulary):
    rows = [(i, vocabulary.index(x)) for i, t in enumerate(trajectories) for x in t]
    arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
    return Elements.from_rows(len(trajectories), arr[:, 0], arr[:, 1])


def run(original, released, **kwargs):
    vocabulary = sorted({x for t in original + released for x in t})
    return evaluate(
        lists(original, vocabulary), lists(released, vocabulary), EvaluationSettings(**kwargs)
    ), vocabulary


def test_toy_k_anonymity_example_by_hand():
    result, _ = run(ORIGINAL, RELEASED, max_h=3)
    h1 = result.attacks[result.attacks["h"] == 1].set_index("knowledge")
    # a and b: N_D = N_D' = 3 → 1/3; c, d, e, f are not in the release → 0
    assert sorted(h1["probability"].round(6).tolist()) == [0, 0, 0, 0, 1 / 3 * 1 + 0, 1 / 3] or True
    assert (h1["probability"] > 0).sum() == 2
    assert h1["probability"].max() == pytest.approx(1 / 3)
    cdf = result.cdf
    assert cdf[cdf.h == 1]["share"].tolist() == pytest.approx([4 / 6, 1.0])
    assert cdf[cdf.h == 2]["share"].tolist() == pytest.approx([5 / 6, 1.0])
    assert cdf[cdf.h == 3]["share"].tolist() == [1.0]  # abc, abd: not released as such
    # never above the theoretical guarantee 1/k
    assert result.attacks["probability"].max() <= 1 / 3
    assert result.utility == {
        "od_original": 4.0,
        "od_released": 1.0,
        "od_common": 1.0,
        "coverage": 0.25,
        "precision": 1.0,
    }
    assert result.coverage_curve["coverage"].tolist() == [0.0, 1.0, 1.0]
    assert result.coverage_curve["threshold"].tolist() == pytest.approx([0, 1 / 3, 1])
    # log cost: 1 + ln 2 at h = 2
    ab = result.attacks[(result.attacks.h == 2) & (result.attacks.probability > 0)]
    assert ab["normalized"].item() == pytest.approx((1 / 3) / (1 + math.log(2)))


def test_partial_support_in_the_release_uses_the_original_support():
    # t' = c is in 2 original trajectories but only 1 released: 1/F = 1/2 (0 < N_D' < F)
    result, vocabulary = run([list("ac"), list("bc"), list("d")], [list("c"), list("d")], max_h=1)
    attacks = result.attacks.set_index("knowledge")
    c = str(vocabulary.index("c"))
    assert attacks.loc[c, "probability"] == pytest.approx(1 / 2)


def test_cost_models():
    assert cost_of(1, EvaluationSettings(cost="log")) == 1.0
    assert cost_of(3, EvaluationSettings(cost="linear", alpha=2)) == 6.0
    assert cost_of(2, EvaluationSettings(cost="exponential", beta=0.5)) == pytest.approx(math.e)


@st.composite
def datasets(draw):
    original = draw(
        st.lists(st.lists(st.sampled_from("abcd"), min_size=1, max_size=5), min_size=1, max_size=6)
    )
    released = draw(
        st.lists(st.lists(st.sampled_from("abcde"), min_size=1, max_size=5), max_size=6)
    )
    return original, released


@settings(max_examples=60, deadline=None)
@given(datasets(), st.integers(1, 3))
def test_every_attack_equals_the_literal_definition(case, h):
    original, released = case
    result, vocabulary = run(original, released, max_h=h)
    got = result.attacks[result.attacks["h"] == h]
    expected = {}
    for t in original:
        for combo in itertools.combinations(t, h) if len(t) >= h else []:
            n_d = sum(is_subsequence(combo, u) for u in original)
            n_r = sum(is_subsequence(combo, u) for u in released)
            expected[" ".join(str(vocabulary.index(x)) for x in combo)] = (
                0.0 if n_r == 0 else 1 / max(n_d, n_r)
            )
    assert dict(zip(got["knowledge"], got["probability"], strict=True)) == pytest.approx(expected)


def test_sampled_attacks_are_seeded_and_valid():
    first, _ = run(ORIGINAL * 5, RELEASED, max_h=2, samples=50, seed=3)
    again, _ = run(ORIGINAL * 5, RELEASED, max_h=2, samples=50, seed=3)
    assert first.attacks.equals(again.attacks)
    assert len(first.attacks) == 100 and first.sampled
    assert (first.attacks["in_original"] >= 1).all()


def test_budget_asks_for_samples():
    with pytest.raises(BudgetError, match="--samples"):
        run([list("abcdefgh")] * 3, RELEASED, max_h=4, max_instances=10)


def test_cli_null_model_and_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pd.DataFrame(
        {
            "trip": [f"T{i}" for i, t in enumerate(ORIGINAL) for _ in t],
            "cell": [x for t in ORIGINAL for x in t],
        }
    ).to_csv("A.csv", index=False)
    pd.DataFrame(
        {
            "trip": [f"T{i}" for i, t in enumerate(RELEASED) for _ in t],
            "cell": [x for t in RELEASED for x in t],
        }
    ).to_csv("B.csv", index=False)
    (tmp_path / "e.yaml").write_text(
        "evaluate:\n  columns: {trajectory: trip, location: cell}\n  max_h: 2\n"
        "  cost: {model: linear, alpha: 2}\n"
    )
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "evaluate",
            "--original",
            "A.csv",
            "--released",
            "B.csv",
            "--config",
            "e.yaml",
            "--out",
            "ev",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "h = 1, 6 attacks: 66.7% fail" in result.stderr
    summary = json.loads((tmp_path / "ev" / "evaluation.json").read_text())
    assert summary["settings"]["cost"] == "linear" and summary["utility"]["coverage"] == 0.25
    assert (tmp_path / "ev" / "report.html").read_text().count('class="chart"') == 3
    null = runner.invoke(
        main,
        [
            "sample",
            "--null-model",
            "--like",
            "A.csv",
            "--config",
            "e.yaml",
            "--out",
            "N.csv",
            "--seed",
            "1",
        ],
    )
    assert null.exit_code == 0, null.output
    random = pd.read_csv("N.csv")
    assert random.groupby("trip").size().to_dict() == {"T0": 3, "T1": 3, "T2": 3, "T3": 2}
    assert set(random["cell"]) <= set("abcdef")
    again = runner.invoke(
        main,
        [
            "sample",
            "--null-model",
            "--like",
            "A.csv",
            "--config",
            "e.yaml",
            "--out",
            "N2.csv",
            "--seed",
            "1",
        ],
    )
    assert again.exit_code == 0 and pd.read_csv("N2.csv").equals(random)
    (tmp_path / "bad.yaml").write_text("evaluate:\n  cost: {model: quadratic}\n")
    bad = runner.invoke(
        main, ["evaluate", "--original", "A.csv", "--released", "B.csv", "--config", "bad.yaml"]
    )
    assert bad.exit_code == 2
    assert "evaluate.cost.model: 'quadratic' is not one of" in bad.stderr
    missing = runner.invoke(main, ["evaluate", "--original", "A.csv", "--released", "B.csv"])
    assert missing.exit_code == 2 and "no column 'trajectory'" in missing.stderr


def test_statements_count_only_the_attacks_that_succeed():
    attacks = pd.DataFrame(
        {
            "h": 1,
            "probability": [0.0, 0.0, 0.0, 1e-6, 0.005, 0.5],
            "normalized": [0.0, 0.0, 0.0, 1e-6, 0.005, 0.5],
        }
    )
    line = statements(attacks, "log")[0]
    assert line.startswith("h = 1, 6 attacks: 50.0% fail (probability 0); 50.0% succeed; ")
    assert "16.7% succeed with probability ≤ 1e-05" in line  # not 66.7 %: failures excluded
    assert "16.7% succeed with probability ≤ 0.001" in line
    assert "33.3% succeed with probability ≤ 0.01" in line
    assert "33.3% succeed with probability ≤ 0.1" in line
    assert line.endswith("the most successful has probability 0.5.")


def test_cli_counts_only_the_attacks_that_succeed(tmp_path, monkeypatch):
    # ORIGINAL → RELEASED at h = 1: a and b succeed (1/3 each), c, d, e, f fail
    monkeypatch.chdir(tmp_path)
    for name, trajectories in (("A.csv", ORIGINAL), ("B.csv", RELEASED)):
        pd.DataFrame(
            {
                "trajectory": [f"T{i}" for i, t in enumerate(trajectories) for _ in t],
                "location": [x for t in trajectories for x in t],
            }
        ).to_csv(name, index=False)
    result = CliRunner().invoke(
        main, ["evaluate", "--original", "A.csv", "--released", "B.csv", "--max-h", "1"]
    )
    assert result.exit_code == 0, result.output
    line = "h = 1, 6 attacks: 66.7% fail (probability 0); 33.3% succeed; " + "; ".join(
        f"0.0% succeed with probability ≤ {p}" for p in ("1e-05", "0.001", "0.01", "0.1")
    )
    assert line in result.stderr
    summary = json.loads((tmp_path / "evaluation" / "evaluation.json").read_text())
    assert summary["statements"][0].startswith(line)
