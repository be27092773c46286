"""`prudence check` counts each person's data from the stored rows (sanitize/check.py)
with the functions the dataview classes count with (dataviews/coverage.py): checked
against literal counts on random rows, and against the rebuilt views on every shipped
config's catalog (tests/test_golden.py calls `assert_reads_as_rebuilt`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from prudence_cli.catalog import open_catalog
from prudence_cli.catalog.query import assessed_levels
from prudence_cli.config.dimensions import FORMATS
from prudence_cli.config.policy import ReleasePolicy
from prudence_cli.dataviews import coverage as covered
from prudence_cli.dataviews.coverage import COVERAGE_KINDS
from prudence_cli.sanitize.check import from_stored_rows, from_view, stored_coverage

ROWS = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(1, 9)), min_size=0, max_size=40
)


def literal_counted(rows: list[tuple[int, int, int]], n_users: int, kind: str) -> list[float]:
    """Per user: the sum of the counts of their rows (visits), else how many rows."""
    return [
        float(sum(c if kind == "visits" else 1 for u, _, c in rows if u == user))
        for user in range(n_users)
    ]


def literal_per_row(rows: list[tuple[int, int, int]], n_users: int, kind: str) -> list[float]:
    """Per user: how many distinct locations (locations), else how many rows."""
    return [
        float(
            len({loc for u, loc, _ in rows if u == user})
            if kind == "locations"
            else sum(1 for u, _, _ in rows if u == user)
        )
        for user in range(n_users)
    ]


@given(ROWS, st.sampled_from(COVERAGE_KINDS), st.integers(0, 3))
def test_coverage_counts_as_its_definition(rows, kind, extra_users):
    n_users = 6 + extra_users
    user = np.array([u for u, _, _ in rows], dtype=np.int64)
    location = np.array([loc for _, loc, _ in rows], dtype=np.int64)
    count = np.array([c for _, _, c in rows], dtype=np.int32)
    assert covered.counted(user, count, n_users, kind).tolist() == literal_counted(
        rows, n_users, kind
    )
    got = covered.per_row(user, location, n_users, 5, kind)
    assert got.tolist() == literal_per_row(rows, n_users, kind)


@given(st.lists(st.floats(0, 100), min_size=1, max_size=20), st.data())
def test_share_is_the_data_of_the_people_over_the_whole(values, data):
    coverage = np.array(values)
    people = np.array(
        data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)))
    )
    total = sum(values)
    want = sum(v for v, p in zip(values, people, strict=True) if p) / total if total else 0.0
    assert abs(covered.share(coverage, people) - want) <= 1e-12


def assert_reads_as_rebuilt(folder: Path) -> None:
    """On an assessed catalog of per-person risks: every additive view's coverage of
    every kind counted from its stored rows equals the rebuilt view's, and the check's
    measures from the stored rows equal those from the rebuilt view, bit for bit."""
    catalog = open_catalog(folder)
    if catalog.kind != "risks":
        return
    every = assessed_levels(catalog)
    policy = ReleasePolicy(max_risk=0.5)
    for entry in catalog.dataviews:
        if FORMATS[entry.format].stored_coverage is None:
            continue
        view = catalog.view(entry.id)[0]
        for kind in COVERAGE_KINDS:
            got = stored_coverage(catalog, entry, kind)
            assert got is not None
            np.testing.assert_array_equal(got, view.coverage(kind), err_msg=f"{entry.id} {kind}")
        light = from_stored_rows(catalog, entry)
        rebuilt = from_view(catalog, entry, policy, every, every)
        assert light is not None
        for level in every:
            risk = light.risk(level)
            np.testing.assert_array_equal(risk, rebuilt.risk(level))
            assert light.summary(risk) == rebuilt.summary(risk), (entry.id, level.key)
            for threshold in (0.0, 0.25, 0.5, 1.0):
                people = risk <= threshold
                assert light.share_of(people) == rebuilt.share_of(people)


def test_the_demo_catalog_reads_as_rebuilt(pristine: Path):
    assert_reads_as_rebuilt(pristine / "e2e")
