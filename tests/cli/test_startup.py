"""Start-up: the numba kernels load only when a level is counted. Importing the library's
layers, showing a catalog and checking a policy load neither numba nor a kernel module;
an assessment loads them, and only then. Reading a catalog loads no geometry or
projection library either (GEOS and PROJ: a tenth of a second and more)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.assessed import catalog, pristine  # noqa: F401  (fixtures)

KERNELS = (
    "numba",
    "prudence_cli.engine.kernels",
    "prudence_cli.engine.group_kernels",
    "prudence_cli.engine.enumeration_kernels",
)
# Runs the command line in a fresh interpreter and, on exit (whatever its code), prints
# the kernel modules that were imported.
PROBE = (
    "import atexit, sys\n"
    "kernels = {kernels!r}\n"
    "atexit.register(lambda: print('LOADED', *sorted(m for m in kernels if m in sys.modules)))\n"
    "from prudence_cli.cli import main\n"
    "main({args!r})\n"
)


def loaded_by(code: str, cwd: Path | None = None) -> list[str]:
    """The kernel modules named on the last `LOADED` line that `code` prints."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, check=False
    )
    lines = [row for row in done.stdout.splitlines() if row.startswith("LOADED")]
    assert lines, done.stderr[-2000:]
    return lines[-1].split()[1:]


def test_importing_the_layers_and_the_engine_loads_no_kernel():
    code = (
        "import sys\n"
        "import prudence_cli.attacks.base, prudence_cli.dataviews.base\n"
        "import prudence_cli.attacks.registry, prudence_cli.dataviews.build\n"
        "from prudence_cli.engine import CountingProblem, Engine, Support\n"
        "from prudence_cli.assess import make_engine, run_assessment\n"
        f"print('LOADED', *sorted(m for m in {KERNELS!r} if m in sys.modules))\n"
    )
    assert loaded_by(code) == []


def test_an_attack_loads_the_kernels_when_it_counts():
    code = (
        "import sys\n"
        "from prudence_cli.attacks.registry import ATTACKS\n"
        "from prudence_cli.engine import Engine\n"
        "from tests.conftest import presence_view\n"
        "before = [m for m in ('numba',) if m in sys.modules]\n"
        "view = presence_view({0: {1: 2, 2: 1}, 1: {1: 1}}, [0, 1])\n"
        "attack = ATTACKS['unique_location']\n"
        "level = attack.levels({'h': (1,)})[0]\n"
        "risk = attack.risks(view, level, Engine()).risk\n"
        "assert before == [] and list(risk) == [1.0, 0.5], (before, risk)\n"
        f"print('LOADED', *sorted(m for m in {KERNELS!r} if m in sys.modules))\n"
    )
    root = Path(__file__).parents[2]
    assert "prudence_cli.engine.group_kernels" in loaded_by(code, cwd=root)


@pytest.mark.parametrize(
    "args",
    [
        ("catalog", "show", "--catalog", "catalog/e2e", "--format", "table"),
        ("catalog", "show", "--catalog", "catalog/e2e", "--format", "json"),
        ("check", "--catalog", "catalog/e2e"),
    ],
)
def test_reading_a_catalog_loads_no_kernel(catalog: Path, args: tuple[str, ...]):  # noqa: F811
    code = PROBE.format(kernels=(*KERNELS, "shapely", "pyproj", "scipy"), args=list(args))
    assert loaded_by(code, cwd=catalog.parents[1]) == []
