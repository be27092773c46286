"""The unicity attack end to end: Table 4.1 of the thesis on disclosure analysis of
high-dimensional mobile-phone data, built as call records with real timestamps and
assessed with `prudence assess`, so that the dimensionality d comes from the bins dataview
as it is built (not injected by hand, as in tests/measures/test_disclosure.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from prudence_cli.attacks.base import KnowledgeLevel
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.catalog import open_catalog
from prudence_cli.cli import main
from prudence_cli.engine import Engine

REGIONS = ["r1", "r2", "r3", "r4", "r5"]
# Table 4.1: user → {region: calls}. X_ij = 1 where user i called from region j between
# 08:00 and 09:00; the bin the thesis's adversary knows carries 1000 calls and the others
# one, so that the knowledge drawn in proportion to activity is that bin (each other bin is
# drawn instead with probability 1/1001; the seeded draw is checked through |E_i| below).
# A_4 = {2}: E_4 = {4} as with the thesis's A_4 = {2, 4}, since only user 4 is in bin 2.
HEAVY = 1000
TABLE_4_1 = {
    "u1": {"r1": 1, "r3": HEAVY},  # A_1 = {3}
    "u2": {"r1": HEAVY, "r3": 1, "r4": 1},  # A_2 = {1}
    "u3": {"r3": 1, "r4": HEAVY},  # A_3 = {4}
    "u4": {"r2": HEAVY, "r4": 1},  # A_4 = {2}
}
KNOWLEDGE = "{points: [1], draw: [activity], samples: [all]}"
ROW = "d1__unicity__points=1,draw=activity,samples=all"
LN2, LN3 = math.log(2), math.log(3)


def _square(name: str, west: float) -> dict[str, object]:
    ring = [[west, 43.70], [west + 0.02, 43.70], [west + 0.02, 43.72], [west, 43.72]]
    return {
        "type": "Feature",
        "properties": {"name": name},
        "geometry": {"type": "Polygon", "coordinates": [[*ring, ring[0]]]},
    }


def _write_table_4_1(folder: Path, select: str = "") -> Path:
    """calls.csv, towers.csv (one tower in each region), regions.geojson (5 squares) and
    t41.yaml in `folder`; every call on 5 March 2024 between 08:00 and 09:00, Rome time."""
    west = {name: 10.30 + 0.02 * k for k, name in enumerate(REGIONS)}
    (folder / "regions.geojson").write_text(
        json.dumps(
            {
                "type": "FeatureCollection",
                "features": [_square(name, w) for name, w in west.items()],
            }
        )
    )
    towers = [f"t{name},43.71,{w + 0.01:.2f}" for name, w in west.items()]
    (folder / "towers.csv").write_text("tower,lat,lon\n" + "\n".join(towers) + "\n")
    calls = ["caller,timestamp,cell"]
    for user, activity in TABLE_4_1.items():
        for region, n in activity.items():
            calls += [
                f"{user},2024-03-05T08:{k % 60:02d}:{k // 60 % 60:02d},t{region}" for k in range(n)
            ]
    (folder / "calls.csv").write_text("\n".join(calls) + "\n")
    config = folder / "t41.yaml"
    config.write_text(
        "name: t41\n"
        "seed: 1\n"
        "input: {path: calls.csv, format: cdr, towers: towers.csv, timezone: Europe/Rome,\n"
        "        columns: {user: caller, time: timestamp, tower: cell}}\n"
        f"{select}"
        "dataview: {format: bins, layers: {regions: regions.geojson},\n"
        "           dimensions: {regions: [regions], time: [1h]}}\n"
        f"attacks: [{{attack: unicity, knowledge: {KNOWLEDGE}}}]\n"
    )
    return config


def _assess(config: Path, out: Path) -> pd.Series:
    result = CliRunner().invoke(main, ["assess", str(config), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    irac = pd.read_csv(out / "irac.csv")
    assert len(irac) == 1
    return irac.iloc[0]


def test_table_4_1_as_call_records(tmp_path: Path) -> None:
    """n = 4 people, d = 5 regions × 1 hour (region 5 is empty but counts), prior
    P(X_j = 1) = |D_j|/n = (1/2, 1/4, 3/4, 3/4, 0). Classes E_1 = {1,2,3}, E_2 = {1,2},
    E_3 = {2,3,4}, E_4 = {4}, so the risks 1/|E_i| are 1/3, 1/2, 1/3, 1:

    - unicity = 1/4; k-disclosure = (1/3 + 1/2 + 1/3 + 1)/4 = 13/24 ≈ 0.5417;
    - posteriors |E_ij|/|E_i|: user 1 (2/3, 0, 1, 2/3, 0), user 2 (1, 0, 1, 1/2, 0),
      user 3 (1/3, 1/3, 2/3, 1, 0), user 4 (0, 1, 0, 1, 0); EM_ij = |posterior − prior|
      sums to 9/12, 15/12, 7/12 and 27/12 per user (EM_2 = 1/4, as in the thesis), so
      EM = (58/12)/(n·d) = 58/240 ≈ 0.2417;
    - KL_ij = kl(posterior, prior) of two Bernoulli laws; with α = ln(4/3),
      β = kl(2/3, 1/2) = 5/3 ln 2 − ln 3 and γ = kl(2/3, 3/4) = 8/3 ln 2 − 5/3 ln 3 the
      users sum to β + 2α + γ, ln 2 + 5α/2, β + α + 2γ and 5 ln 2 + α, so
      KL = (2β + 3γ + 13α/2 + 6 ln 2)/20 = (182 ln 2 − 81 ln 3)/120 ≈ 0.3097;
    - per bin (the mean over the 4 people): EM_j = 1/3, 1/3, 1/3, 5/24 and
      KL_j = (β + ln 2)/2, (2α + γ + 2 ln 2)/4 (twice), (5α/2 + γ)/4 for the regions 1-4;
      region 5 (nobody called from it: EM_5 = KL_5 = 0) has no row.
    When d counted the hours since 1970 (d = 5 × 474,897), EM came out as 5.1e-7 and KL
    as 6.5e-7 here.
    """
    row = _assess(_write_table_4_1(tmp_path), tmp_path / "catalog")
    risks = open_catalog(tmp_path / "catalog").risks("d1").set_index("user")
    assert risks.iloc[:, 0].to_dict() == pytest.approx(
        {"u1": 1 / 3, "u2": 1 / 2, "u3": 1 / 3, "u4": 1.0}
    )
    assert row["unicity"] == 0.25
    assert row["k_disclosure"] == pytest.approx(13 / 24)
    assert row["mean_risk"] == pytest.approx(13 / 24)
    assert row["sampled_people"] == 4
    assert row["em"] == pytest.approx(58 / 240)
    kl = (182 * LN2 - 81 * LN3) / 120
    assert kl == pytest.approx(0.3097, abs=5e-5)
    assert row["kl"] == pytest.approx(kl)

    alpha = math.log(4 / 3)
    beta = 5 / 3 * LN2 - LN3
    gamma = 8 / 3 * LN2 - 5 / 3 * LN3
    per_bin = pd.read_csv(tmp_path / "catalog" / "disclosure" / f"{ROW}.csv")
    assert per_bin["bin"].tolist() == [f"{r}@2024-03-05T08:00" for r in REGIONS[:4]]
    assert per_bin["em"].tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, 5 / 24])
    assert per_bin["kl"].tolist() == pytest.approx(
        [
            (beta + LN2) / 2,
            (2 * alpha + gamma + 2 * LN2) / 4,
            (2 * alpha + gamma + 2 * LN2) / 4,
            (5 * alpha / 2 + gamma) / 4,
        ]
    )
    # the overall measures are the per-bin ones averaged over all d = 5 bins
    assert per_bin["em"].sum() / 5 == pytest.approx(row["em"])
    assert per_bin["kl"].sum() / 5 == pytest.approx(row["kl"])


def test_empty_hours_between_the_first_and_the_last_call_count_in_d(tmp_path: Path) -> None:
    """A fifth person calling from region 5 at 10:30 makes the data span 3 hours (08:00,
    09:00 with no call, 10:00): d = 5 × 3 = 15, and EM = (1/d) Σ_j EM_j over the bins of
    the per-bin file (the others add 0); the fifth person is alone in their bin."""
    config = _write_table_4_1(tmp_path)
    calls = tmp_path / "calls.csv"
    calls.write_text(calls.read_text() + "u5,2024-03-05T10:30:00,tr5\n")
    row = _assess(config, tmp_path / "catalog")
    per_bin = pd.read_csv(tmp_path / "catalog" / "disclosure" / f"{ROW}.csv")
    assert per_bin["bin"].iloc[-1] == "r5@2024-03-05T10:00"
    assert row["unicity"] == pytest.approx(2 / 5)
    assert row["em"] == pytest.approx(per_bin["em"].sum() / 15)
    assert row["kl"] == pytest.approx(per_bin["kl"].sum() / 15)


def test_a_bins_view_read_back_from_the_catalog_is_assessed_without_d(tmp_path: Path) -> None:
    """Sanitizing and `catalog best` re-assess the view read back from the catalog (a
    presence view of its bins; d is not stored): the same risks, and EM and KL averaged
    over the 4 bins someone is active in, EM = (58/12)/(4 · 4) = 58/192."""
    _assess(_write_table_4_1(tmp_path), tmp_path / "catalog")
    view, users = open_catalog(tmp_path / "catalog").view("d1")
    assert list(users) == sorted(TABLE_4_1)
    level = KnowledgeLevel("unicity", (("points", 1), ("draw", "activity"), ("samples", "all")))
    result = ATTACKS["unicity"].risks(view, level, Engine(seed=1))
    assert result.risk.tolist() == pytest.approx([1 / 3, 1 / 2, 1 / 3, 1])
    assert result.measures["em"] == pytest.approx(58 / 192)


def test_a_configured_period_counts_its_empty_hours(tmp_path: Path) -> None:
    """The period 08:00-10:00 holds two 1-hour bins, the second empty: d = 5 × 2 = 10, so
    EM = 58/480 and KL = (182 ln 2 − 81 ln 3)/240, half of Table 4.1's."""
    period = "select: {period: {start: 2024-03-05T08:00, end: 2024-03-05T10:00}}\n"
    row = _assess(_write_table_4_1(tmp_path, period), tmp_path / "catalog")
    assert row["em"] == pytest.approx(58 / 480)
    assert row["kl"] == pytest.approx((182 * LN2 - 81 * LN3) / 240)
