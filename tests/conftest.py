"""Shared builders: tiny presence views, small CSV inputs, configs written to tmp_path."""

from __future__ import annotations

import tempfile
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from prudence_cli.dataviews.presence import PresenceView
from prudence_cli.engine import jit
from prudence_cli.engine.runner import LocalRunner

# the `pristine` and `catalog` fixtures of one small assessed catalog (tests/assessed.py)
pytest_plugins = ["tests.assessed"]

# Pratesi et al., PRUDEnce, Example 8 (Figure 4), frequency threshold 3, plus "grey", a
# user of U whose locations all fall below the threshold (absent from the dataview).
EXAMPLE_8 = {
    "blue": {"B2": 5, "D2": 4, "C1": 3},
    "pink": {"C2": 3},
    "purple": {"B2": 4, "D2": 3},
    "green": {"D1": 4, "D2": 3},
    "orange": {"C2": 3},
}
EXAMPLE_USERS = ["blue", "pink", "purple", "green", "orange", "grey"]


@pytest.fixture(autouse=True)
def _private_tmpdir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Logs of internal errors (exit 3) go to $TMPDIR when a command has no --out: keep
    them in the test's own temporary folder, not the machine's."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="module", params=["python", "compiled"])
def kernels(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test of a module that uses it runs twice: the counting kernels as Python,
    then compiled by numba (prudence_cli/engine/jit.py), whatever the work."""
    with jit.running(request.param):
        yield request.param


def presence_view(
    data: Mapping[object, Mapping[object, int]],
    users: list[object],
    frequency: int = 1,
    view_id: str = "d1",
) -> PresenceView:
    """A PresenceView from {user: {location: count}} over the universe `users`."""
    locations = sorted({loc for counts in data.values() for loc in counts}, key=str)
    code = {loc: i for i, loc in enumerate(locations)}
    rows = sorted(
        (users.index(u), code[loc], c)
        for u, counts in data.items()
        for loc, c in counts.items()
        if c >= frequency
    )
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return PresenceView(
        id=view_id,
        dimensions=(("frequency", frequency),),
        n_users=len(users),
        user=arr[:, 0].astype(np.int32),
        location=arr[:, 1].astype(np.int32),
        count=arr[:, 2].astype(np.int32),
        locations=pd.DataFrame({"label": [str(x) for x in locations], "lon": 0.0, "lat": 0.0}),
    )


@pytest.fixture
def example_view() -> PresenceView:
    return presence_view(EXAMPLE_8, EXAMPLE_USERS, frequency=3)


GPS_HEADER = "uid,datetime,lat,lng\n"


def gps_rows(rows: list[tuple[str, str, float, float]]) -> str:
    return GPS_HEADER + "".join(f"{u},{t},{lat},{lon}\n" for u, t, lat, lon in rows)


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[..., Path]:
    """Write a YAML config (dedented text) to tmp_path/name and return its path."""

    def write(text: str, name: str = "config.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


MINIMAL_CONFIG = """\
name: tiny
input:
  path: points.csv
  columns: {user: uid, time: datetime, lat: lat, lon: lng}
  timezone: Europe/Rome
dataview:
  format: presence
  dimensions:
    grid: [500m]
    frequency: [1]
attacks:
  - attack: presence
    knowledge: {h: [1, 2], visits: [exact]}
output: out
"""


@pytest.fixture(scope="session")
def sample_gps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small seeded GPS sample (40 people, one week) shared by the end-to-end tests."""
    from prudence_cli.io.writers import write_csv
    from prudence_cli.sample import generate_gps

    path = tmp_path_factory.mktemp("sample") / "gps.csv"
    write_csv(generate_gps(users=40, days=7, seed=3), path)
    return path


def trajectory_view(
    trajectories: Mapping[object, list[tuple[int, int]]], users: list[object], view_id="d1"
):
    """A TrajectoryView from {user: [(location, tbin), ...]} in time order."""
    from prudence_cli.dataviews.trajectory import TrajectoryView

    rows = [(users.index(u), loc, t) for u, visits in trajectories.items() for loc, t in visits]
    rows.sort(key=lambda r: r[0])  # stable: keeps each user's time order
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    n_locations = int(arr[:, 1].max(initial=-1)) + 1
    return TrajectoryView(
        id=view_id,
        dimensions=(("time", 3600), ("frequency", 1)),
        n_users=len(users),
        user=arr[:, 0].astype(np.int32),
        location=arr[:, 1].astype(np.int32),
        locations=pd.DataFrame(
            {"label": [str(i) for i in range(n_locations)], "lon": 0.0, "lat": 0.0}
        ),
        tbin=arr[:, 2],
        granularity=3600,
    )


def probability_view(data, users, frequency=1):
    """A ProbabilityView over the same pairs as presence_view."""
    from prudence_cli.dataviews.presence import ProbabilityView

    view = presence_view(data, users, frequency)
    return ProbabilityView(
        view.id,
        view.dimensions,
        view.n_users,
        view.user,
        view.location,
        view.locations,
        count=view.count,
    )


@pytest.fixture(scope="session")
def sample_gps_150(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A larger seeded GPS sample (150 people, 10 days), for sanitizing."""
    from prudence_cli.io.writers import write_csv
    from prudence_cli.sample import generate_gps

    path = tmp_path_factory.mktemp("sample150") / "gps.csv"
    write_csv(generate_gps(users=150, days=10, seed=5), path)
    return path


class OnWorkers(LocalRunner):
    """A LocalRunner whose items are kept on `workers` workers in turn (`grouped`),
    counting the tasks each kind of function ran as (`kept_on`)."""

    def __init__(self, workers: int) -> None:
        super().__init__()
        self.count, self.ran = workers, {}

    def grouped(self, placed: list) -> list[list[int]]:
        groups = [list(range(w, len(placed), self.count)) for w in range(self.count)]
        return [group for group in groups if group]

    def kept_on(self, kept, task, *args):
        self.ran[task] = self.ran.get(task, 0) + 1
        return super().kept_on(kept, task, *args)


def ranges_number_as_the_whole(view, kind: str, lists: str, bounds: list[int]):
    """The whole view's codes of `kind` (Dataview.numbering) made from its ranges of users
    [bounds[i], bounds[i + 1]); checks that each range given them lists its elements
    (the view's method `lists`) as the whole view does, and returns them."""
    pairs = list(zip(bounds[:-1], bounds[1:], strict=True))
    parts = [view.users(a, b) for a, b in pairs]

    numbering = type(view).numbering(kind)
    told = [getattr(part, numbering.part)() for part in parts]
    codes = numbering.of(told)
    while len(told) > 1:  # joined two by two, as on a cluster (KeptView.codes_of)
        joined = [numbering.joined(a, b) for a, b in zip(told[0::2], told[1::2], strict=False)]
        told = joined + told[len(joined) * 2 :]
    _same_codes(numbering.of(told), codes)
    whole = getattr(view, lists)()
    for a, b in pairs:
        ranged = getattr(view.users(a, b).numbered(kind, codes), lists)()
        lo, hi = whole.offsets[a], whole.offsets[b]
        assert np.array_equal(ranged.offsets, whole.offsets[a : b + 1] - lo)
        assert np.array_equal(ranged.elements, whole.elements[lo:hi])
    return codes


def _same_codes(one, other) -> None:
    """Two numberings (VisitCodes, TripleCodes) with the same fields."""
    import dataclasses

    for field in dataclasses.fields(one):
        a, b = getattr(one, field.name), getattr(other, field.name)
        if isinstance(a, tuple):
            assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)), field.name
        else:
            assert np.array_equal(a, b), field.name
