"""How the kernels run (engine/jit.py): as Python on small work, compiled by numba on
large work or once numba is loaded, as the environment says when it says so; numba's
first compile on a machine is announced once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from prudence_cli.engine import jit

ROOT = Path(__file__).parents[2]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The state of a process that has not chosen yet (restored after the test)."""
    for name, value in (("compiled", False), ("forced", None), ("interpreted", 0)):
        monkeypatch.setattr(jit._state, name, value)
    monkeypatch.setattr(jit._state, "pending", False)
    monkeypatch.delenv("PRUDENCE_KERNELS", raising=False)


def _call_a_kernel() -> None:
    from prudence_cli.engine.group_kernels import scatter_min

    support = np.full(3, 9, dtype=np.int64)
    scatter_min(support, np.array([0, 2, 0]), np.array([4, 1, 2], dtype=np.int64))
    assert support.tolist() == [2, 9, 1]


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize("in_cache", [True, False])
def test_work_past_a_third_of_a_second_compiles_when_numbas_cache_holds_the_kernel(
    monkeypatch, in_cache
):
    monkeypatch.setattr(jit, "_in_cache", lambda dispatcher: in_cache)
    jit.choose(jit.PYTHON_WORK - 1)
    _call_a_kernel()
    assert not jit.is_compiled()
    jit.choose(1)  # the work run as Python adds up: the next kernel called decides
    _call_a_kernel()
    assert jit.is_compiled() is in_cache


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize("in_cache", [True, False])
def test_a_choice_pending_is_made_before_a_task_is_sent(monkeypatch, in_cache):
    """A level counted only in tasks (a ranged level on a cluster) calls no kernel here
    before its tasks are sent: the choice the work left pending is made on numba's cache
    when the engine tells the tasks how to run (Engine.worker), not left as Python."""
    from prudence_cli.engine import Engine

    monkeypatch.setattr(jit, "_in_cache", lambda dispatcher: in_cache)
    jit.choose(jit.PYTHON_WORK + 1)
    assert Engine().worker()[1] is in_cache


@pytest.mark.usefixtures("fresh")
def test_without_the_cache_python_runs_until_compiling_would_pay(monkeypatch):
    monkeypatch.setattr(jit, "_in_cache", lambda dispatcher: False)
    half = jit.COMPILE_WORK // 2
    for work in (half, half - 1):
        jit.choose(work)
        _call_a_kernel()
        assert not jit.is_compiled()
    jit.choose(1)
    assert jit.is_compiled()
    jit.choose(0)
    assert jit.is_compiled()  # numba is loaded: the process stays compiled


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize(
    ("setting", "work", "expected"),
    [("compiled", 0, True), ("python", 10**12, False), ("bogus", 0, False), ("", 0, False)],
)
def test_the_environment_fixes_the_choice(monkeypatch, setting, work, expected):
    monkeypatch.setattr(jit, "_in_cache", lambda dispatcher: False)
    monkeypatch.setenv("PRUDENCE_KERNELS", setting)
    jit.choose(work)
    assert jit.is_compiled() is expected


def test_a_kernel_gives_the_same_answer_both_ways():
    from prudence_cli.engine.group_kernels import runs

    keys = np.array([[1, 2], [1, 2], [1, 3], [4, 0], [4, 0], [4, 0]], dtype=np.int64)
    with jit.running("python"):
        as_python = runs(keys)
    with jit.running("compiled"):
        as_compiled = runs(keys)
    for a, b in zip(as_python, as_compiled, strict=True):
        assert a.tolist() == b.tolist() == a.tolist()
    assert as_python[0].tolist() == [0, 2, 3] and as_python[1].tolist() == [2, 3, 6]


def _assess(config: Path, out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('NUMBA', 'numba' in sys.modules))\n"
        "from prudence_cli.cli import main\n"
        f"main(['assess', {str(config)!r}, '--out', {str(out)!r}, '--force'])\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
        check=False,
    )


def test_the_demo_on_a_new_machine_compiles_nothing(tmp_path):
    """A few hundred people: with numba's cache empty, every level runs as Python and
    nothing is compiled (the first `make demo` waits for no compiler)."""
    cache = tmp_path / "numba"
    cache.mkdir()
    done = _assess(
        ROOT / "configs" / "demo.yaml", tmp_path / "demo", {"NUMBA_CACHE_DIR": str(cache)}
    )
    assert done.returncode == 0, done.stderr
    assert "Compiling" not in done.stderr
    assert not [path for path in cache.rglob("*") if path.is_file()]


def test_a_small_count_loads_no_numba(tmp_path, write_config):
    """Small counts run as Python without even importing numba."""
    done = _assess(_unique_location(write_config), tmp_path / "out", {})
    assert done.returncode == 0, done.stderr
    assert "NUMBA False" in done.stdout


def test_the_first_compile_on_a_machine_is_said_once(tmp_path, write_config):
    """numba compiling into an empty cache is announced on stderr; the next run loads the
    kernels from the cache and says nothing."""
    config = _unique_location(write_config)
    env = {"PRUDENCE_KERNELS": "compiled", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    first = _assess(config, tmp_path / "first", env)
    assert first.returncode == 0, first.stderr
    assert "NUMBA True" in first.stdout
    assert first.stderr.count("Compiling the counting kernels for this machine") == 1
    again = _assess(config, tmp_path / "again", env)
    assert again.returncode == 0, again.stderr
    assert "Compiling" not in again.stderr


def _unique_location(write_config) -> Path:
    """unique_location at h = 1 on the shipped GPS sample (about 400 people)."""
    return write_config(
        f"""
        name: compile
        input:
          path: {ROOT / "sample_data" / "pisa_gps.csv.gz"}
          columns: {{user: uid, time: datetime, lat: lat, lon: lng}}
          timezone: Europe/Rome
        dataview: {{format: presence, dimensions: {{grid: [500m]}}}}
        attacks:
          - attack: unique_location
            knowledge: {{h: [1]}}
        """
    )
