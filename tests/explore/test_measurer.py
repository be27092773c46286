"""How `assess` measures a large dataview (explore/mobility.py, `Measurer`): its mobility
measures in a thread while its attacks run, the same catalog as measured after them; a
failure on either side stops the run and writes nothing. And the points, let go once the
last dataview is built (`Selection.drop_points`)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from prudence_cli import assess as assess_module
from prudence_cli.assess import assess
from prudence_cli.cli import main
from prudence_cli.config import load_config
from prudence_cli.explore import mobility
from prudence_cli.select import Selection
from tests.test_golden import CONFIGS, _compare

MEASURED = ["demo", "trajectory", "segments"]  # formats with places: their views are measured


@pytest.mark.parametrize("name", MEASURED)
def test_measured_in_a_thread_gives_the_same_catalog(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: set[str] = set()
    measure = mobility.view_profile

    def recorded(*args: object) -> object:
        threads.add(threading.current_thread().name)
        return measure(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(mobility, "BACKGROUND_ROWS", 0)  # every view, however small
    monkeypatch.setattr(mobility, "view_profile", recorded)
    out = tmp_path / name
    result = CliRunner().invoke(
        main, ["assess", str(CONFIGS / f"{name}.yaml"), "--out", str(out), "-q"]
    )
    assert result.exit_code == 0, result.output
    assert "prudence-measures" in threads  # the last view's, the points gone
    _compare(name, out)  # the fingerprint of tests/golden/, measured after the attacks


def test_a_failure_while_measuring_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> object:
        raise RuntimeError("the measures failed")

    monkeypatch.setattr(mobility, "BACKGROUND_ROWS", 0)
    monkeypatch.setattr(mobility, "view_profile", broken)
    with pytest.raises(RuntimeError, match="the measures failed"):
        assess(load_config(CONFIGS / "demo.yaml"), tmp_path / "catalog")
    assert not (tmp_path / "catalog").exists()


def test_a_failed_attack_does_not_wait_for_the_measures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    measure = mobility.view_profile

    def slow(*args: object) -> object:
        release.wait(60)
        return measure(*args)  # type: ignore[arg-type]

    def broken(*args: object) -> object:
        raise RuntimeError("the attack failed")

    monkeypatch.setattr(mobility, "BACKGROUND_ROWS", 0)
    monkeypatch.setattr(mobility, "view_profile", slow)
    monkeypatch.setattr(assess_module, "measure_view", broken)
    try:
        with pytest.raises(RuntimeError, match="the attack failed"):
            assess(load_config(CONFIGS / "demo.yaml"), tmp_path / "catalog")
        assert not release.is_set()  # the run ended while the measures still waited
    finally:
        release.set()
    assert not (tmp_path / "catalog").exists()


def test_dropped_points_keep_their_columns() -> None:
    points = pd.DataFrame(
        {"user": np.array([0, 0, 1], dtype=np.int32), "x": [1.0, 2.0, 3.0], "y": [4.0, 5.0, 6.0]}
    )
    selection = Selection(points, np.array(["a", "b"], dtype=object), "EPSG:3003")
    selection.drop_points()
    assert len(selection.points) == 0
    assert selection.points.dtypes.to_dict() == points.dtypes.to_dict()
    assert not np.shares_memory(selection.points["x"].to_numpy(), points["x"].to_numpy())
    assert selection.n_users == 2


@pytest.mark.parametrize(("name", "dropped"), [("demo", True), ("unicity", False)])
def test_points_go_once_the_last_view_is_built(
    name: str, dropped: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """demo has 15 dataviews; unicity declares a utility aggregate, which reads the
    points after the attacks: they stay."""
    built: list[str] = []
    at_drop: list[int] = []
    build = assess_module.build_dataviews

    def counted(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        for view in build(*args, **kwargs):  # type: ignore[arg-type]
            built.append(view.id)
            yield view

    drop = Selection.drop_points

    def recorded(self: Selection) -> None:
        at_drop.append(len(built))
        drop(self)

    monkeypatch.setattr(assess_module, "build_dataviews", counted)
    monkeypatch.setattr(Selection, "drop_points", recorded)
    config = load_config(CONFIGS / f"{name}.yaml")
    assess(config, tmp_path / "catalog")
    views = len(built)
    assert views == assess_module.count_dataviews(config.dataview)
    assert at_drop == ([views] if dropped else [])


SLOW_MEASURES = """
import faulthandler, signal, sys, time
from pathlib import Path
from prudence_cli.explore import mobility

faulthandler.register(signal.SIGUSR1)  # every thread's stack, when the test asks
# Ctrl-C as at a terminal: a suite run as a background job of a non-interactive shell
# hands its children SIGINT ignored (POSIX), and an ignored signal stays ignored
signal.signal(signal.SIGINT, signal.default_int_handler)

STARTED = Path(sys.argv[1])

def slow(*args):
    STARTED.touch()  # the measures have started
    while True:
        time.sleep(0.05)

mobility.BACKGROUND_ROWS = 0
mobility.view_profile = slow
sys.argv = ["prudence", "assess", sys.argv[2], "--out", sys.argv[3], "-q"]
from prudence_cli.cli import main
main()
"""


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_run_exits_at_once_while_measuring(
    signum: int, code: int, tmp_path: Path
) -> None:
    """The measuring thread never ends here; the run stops at once all the same, says
    so, and leaves nothing behind."""
    started, out = tmp_path / "started", tmp_path / "out" / "catalog"
    out.parent.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", SLOW_MEASURES, str(started), str(CONFIGS / "demo.yaml"), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not started.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the measures never started"
            time.sleep(0.05)
        time.sleep(0.3)  # the attacks of the last view are running, or done and waiting
        child.send_signal(signum)
        sent = time.monotonic()
        try:
            _, stderr = child.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGUSR1)  # where it is stuck, for the failure
            time.sleep(1)
            child.kill()
            _, stacks = child.communicate()
            pytest.fail(f"the run did not stop within 30 s of the signal:\n{stacks}")
        waited = time.monotonic() - sent
    finally:
        child.kill()  # when it did not stop: no process outlives the test
        child.wait()
    assert child.returncode == code, stderr
    assert "nothing was written" in stderr
    assert "Traceback" not in stderr
    assert waited < 5
    assert list(out.parent.iterdir()) == []
