"""`prudence catalog utility` and `catalog best --utility ks:MEASURE`: the mobility
measures of Pellungrini et al. on the people at risk ≤ t, checked against a direct
computation from the catalog's own tables."""

from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prudence_cli.catalog import open_catalog
from tests.assessed import catalog, pristine, run  # noqa: F401  (fixtures)


def csv(*args: str) -> pd.DataFrame:
    result = run(*args)
    assert result.exit_code == 0, result.output
    return pd.read_csv(io.StringIO(result.stdout))


def test_distortion_by_threshold_from_the_catalog(catalog):  # noqa: F811
    frame = csv("catalog", "utility", "--format", "csv")
    assert list(frame["threshold"].drop_duplicates()) == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4])
    assert (frame.loc[frame["threshold"] == 1, "ks"] == 0).all()
    # the dataview and level that keep the most people at 1/4 but not everyone
    visits_rows = frame[(frame["measure"] == "visits") & np.isclose(frame["threshold"], 0.25)]
    some = visits_rows[visits_rows["n_kept"] < visits_rows["n_full"]]
    chosen = some.sort_values("n_kept").iloc[-1]
    view_id, level = chosen["dataview"], chosen["level"]
    assert chosen["n_kept"] >= 5

    # visits per person on D_t, straight from the catalog's dataview table and risks
    opened = open_catalog(catalog)
    visits = opened.dataview_table(view_id).groupby("user")["count"].sum()
    risks = opened.risks(view_id)
    risk = risks.set_index(risks["user"].astype(str))[level]
    visits.index = visits.index.astype(str)
    mine = frame[(frame["dataview"] == view_id) & (frame["level"] == level)]
    for t in (0.5, 0.25):
        row = mine[(mine["measure"] == "visits") & np.isclose(mine["threshold"], t)]
        kept = visits[risk.reindex(visits.index) <= t]
        assert row["n_kept"].item() == len(kept) and row["n_full"].item() == len(visits)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = stats.ks_2samp(visits, kept, method="asymp").statistic
        assert row["ks"].item() == pytest.approx(want)
        assert row["q50"].item() == pytest.approx(np.median(kept))


def test_correlation_and_formats(catalog):  # noqa: F811
    where = ("--where", "dataview=d1", "--where", "h=1", "--where", "visits=exact")
    rows = json.loads(
        run("catalog", "utility", *where, "--show", "correlation", "--format", "json").stdout
    )
    assert {r["measure"] for r in rows} == {
        "radius_of_gyration",
        "mobility_entropy",
        "visits",
        "locations",
    }
    opened = open_catalog(catalog)
    table = opened.dataview_table("d1")
    visits = table.groupby("user")["count"].sum()
    visits.index = visits.index.astype(str)
    risks = opened.risks("d1")
    risk = risks.set_index(risks["user"].astype(str))["presence[h=1,visits=exact]"]
    row = next(r for r in rows if r["measure"] == "visits")
    x, y = visits.to_numpy(float), risk.reindex(visits.index).to_numpy(float)
    assert row["pearson"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert row["spearman"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert row["frequency"] == 1  # dimension values typed, as in the other commands
    shown = run("catalog", "utility", *where, "--format", "table").stdout
    assert "presence[h=1,visits=exact]" in shown and "KS at" in shown


def test_best_by_distortion_on_the_command_line(catalog):  # noqa: F811
    """The ranking itself is checked against scipy in tests/explore/test_explore.py."""
    args = ("catalog", "best", "--max-risk", "0.5", "--utility", "ks:visits")
    frame = csv(*args, "--where", "visits=none", "--format", "csv")
    released = frame[frame["users_released"] > 0]
    assert len(released) and released["ks:visits"].is_monotonic_increasing
    assert frame.loc[frame["users_released"] == 0, "ks:visits"].isna().all()
    table = run(*args, "--where", "visits=none", "--format", "table").stdout
    assert "ks" in table and "visits" in table
    # every level counted: no release keeps anyone, so there is nothing to measure
    nothing = run(*args, "--format", "csv")
    assert nothing.exit_code == 2
    assert "nothing to measure: no dataview keeps anyone after suppression" in nothing.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("catalog", "utility", "--threshold", "0"), "--threshold 0 must be in (0, 1]"),
        (("catalog", "utility", "--measure", "speed"), "--measure speed: known: radius_of"),
        (
            ("catalog", "best", "--max-risk", "0.5", "--utility", "ks:speed"),
            "a distortion is STATISTIC:MEASURE",
        ),
        (("catalog", "best", "--max-risk", "0.5", "--utility", "mean"), "--utility mean: known"),
        (("catalog", "utility", "--where", "h=9"), "no assessed attack level is left"),
        (
            ("catalog", "utility", "--measure", "max_distance"),
            "max_distance: trip measures, which only",
        ),
        (
            ("catalog", "utility", "--show", "correlation", "--measure", "location_entropy"),
            "--show correlation needs a per-person measure",
        ),
        (
            ("catalog", "utility", "--show", "correlation", "--threshold", "0.5"),
            "--threshold is for --show distortion",
        ),
        (
            (
                "catalog",
                "best",
                "--max-risk",
                "0.5",
                "--where",
                "visits=none",
                "--utility",
                "ks:flow",
            ),
            "flow needs trips between the places people stay at",
        ),
    ],
)
def test_hostile_options_exit_2(catalog, args, message):  # noqa: F811
    result = run(*args)
    assert result.exit_code == 2 and message in result.stderr, result.output


def test_places_only_measures(catalog):  # noqa: F811
    """A choice without any per-person measure still compares the places."""
    frame = csv("catalog", "utility", "--measure", "location_entropy", "--format", "csv")
    assert set(frame["measure"]) == {"location_entropy"} and set(frame["kind"]) == {"location"}


def test_assess_stores_the_measures_and_the_tables(catalog):  # noqa: F811
    """`assess` writes each dataview's measures and the tables `catalog utility` prints;
    computing them again from the dataview's files gives the same numbers."""
    import prudence_cli.explore.mobility as explore
    from prudence_cli.catalog.query import counted_levels
    from prudence_cli.measures.mobility import Profile, visits_of

    opened = open_catalog(catalog)
    entry = opened.record.mobility
    assert entry is not None and entry.measures is None
    assert entry.thresholds == pytest.approx((1, 1 / 2, 1 / 3, 1 / 4))
    view_id = opened.dataviews[0].id
    people, places = opened.measures(view_id)
    assert list(people["user"]) == list(opened.risks(view_id)["user"])
    profile = Profile(visits_of(opened.view(view_id)[0], opened.record.selection.crs, opened.trips))
    assert np.allclose(
        people["radius_of_gyration"], profile.people["radius_of_gyration"], equal_nan=True
    )
    assert len(places) == len(profile.places) and places["location"].str.len().min() > 0

    levels = counted_levels(opened)
    for thresholds, measures in (
        (entry.thresholds, None),
        ((0.25, 1.0), ["visits", "location_entropy", "radius_of_gyration"]),
    ):
        stored = explore.catalog_mobility(opened, levels, (), thresholds, measures)
        computed = explore.catalog_mobility(
            open_catalog(catalog), levels, (), thresholds, measures, stored_tables=False
        )
        for a, b in (
            (stored.distortion, computed.distortion),
            (stored.correlation, computed.correlation),
        ):
            assert len(a) > 0
            pd.testing.assert_frame_equal(a, b, check_dtype=False)
    # a threshold the catalog did not measure is computed
    other = explore.catalog_mobility(opened, levels, (), (0.2,), ["visits"])
    assert set(other.distortion["threshold"]) == {0.2}


def test_the_configs_choice_is_what_catalog_utility_shows(catalog, tmp_path):  # noqa: F811
    config = (tmp_path / "demo.yaml").read_text()
    chosen = "utility:\n  measures: [visits, location_entropy]\n  thresholds: [0.5, 1/10]\n"
    (tmp_path / "chosen.yaml").write_text(config + chosen)
    result = run("assess", "chosen.yaml", "--out", "catalog/chosen", "--quiet")
    assert result.exit_code == 0, result.output
    frame = csv("catalog", "utility", "--catalog", "catalog/chosen", "--format", "csv")
    assert sorted(set(frame["threshold"])) == pytest.approx([0.1, 0.5])
    assert set(frame["measure"]) == {"visits", "location_entropy"}
    # a fraction on the command line is that fraction, not 0.33
    third = csv(
        "catalog", "utility", "--threshold", "1/3", "--measure", "visits", "--format", "csv"
    )
    assert set(third["threshold"]) == {1 / 3}
    bad = run("catalog", "utility", "--threshold", "1/x")
    assert bad.exit_code == 2 and "'1/x' is not a number or a fraction like 1/3" in bad.stderr


def test_measures_none_stores_nothing_and_commands_still_measure(catalog, tmp_path):  # noqa: F811
    config = (tmp_path / "demo.yaml").read_text()
    (tmp_path / "none.yaml").write_text(config + "utility:\n  measures: none\n")
    result = run("assess", "none.yaml", "--out", "catalog/none", "--quiet")
    assert result.exit_code == 0, result.output
    opened = open_catalog(tmp_path / "catalog" / "none")
    assert opened.record.mobility is None
    assert not (tmp_path / "catalog" / "none" / "measures").exists()
    frame = csv("catalog", "utility", "--catalog", "catalog/none", "--format", "csv")
    assert sorted(set(frame["threshold"])) == pytest.approx([1 / 4, 1 / 3, 1 / 2, 1])


def test_a_narrow_terminal_never_shortens_a_value(catalog, monkeypatch):  # noqa: F811
    """Tables wider than the terminal are printed whole (the terminal wraps their
    lines): rich would otherwise cut `0.017` to `0.…`."""
    monkeypatch.setenv("COLUMNS", "60")
    for args, whole in (
        (("catalog", "utility"), "radius_of_gyration"),
        (("catalog", "best", "--max-risk", "0.5"), "nobody released"),
    ):
        shown = run(*args, "--format", "table").stdout
        assert whole in shown and "…" not in shown
