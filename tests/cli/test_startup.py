"""Start-up: the numba kernels load only when a level is counted. Importing the library's
layers, showing a catalog and checking a policy load neither numba nor a kernel module;
an assessment loads them, and only then. Reading a catalog loads no geometry or
projection library either (GEOS and PROJ: a tenth of a second and more).

Showing a catalog reads two small CSV tables and prints them: it loads no pandas, numpy
or Arrow (pandas alone takes longer than the whole command), and rich for a table only.
Checking a policy counts each person's data from the stored rows with Arrow and numpy:
no pandas, no dataview class, no engine, no rich (a minimum coverage rebuilds the views,
as it suppresses to the fixpoint). No command looks its version up among the installed
distributions (importlib.metadata). An assessment loads the geometry library (shapely)
only for an area, regions or road segments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.assessed import catalog, pristine  # noqa: F401  (fixtures)
from tests.randomized.test_randomize import profiles_catalog  # noqa: F401  (fixture)

KERNELS = (
    "numba",
    "prudence_cli.engine.kernels",
    "prudence_cli.engine.group_kernels",
    "prudence_cli.engine.enumeration_kernels",
)
# Runs the command line in a fresh interpreter and, on exit (whatever its code), prints
# which of the modules `kernels` were imported.
PROBE = (
    "import atexit, sys\n"
    "kernels = {kernels!r}\n"
    "atexit.register(lambda: print('LOADED', *sorted(m for m in kernels if m in sys.modules)))\n"
    "from prudence_cli.cli import main\n"
    "main({args!r})\n"
)
# the dataview classes and the counting engine
ENGINE = ("prudence_cli.dataviews.base", "prudence_cli.engine")
# what no command reading a catalog needs
STARTUP = ("importlib.metadata", "prudence_cli.cli.assess", "prudence_cli.cli.report")
# and what showing one does not need either: the i-RAC table is printed from plain rows
TABLES = ("pandas", "numpy", "pyarrow", "prudence_cli.cli.progress", "prudence_cli.dataviews")


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
        ("check", "--catalog", "catalog/e2e", "--max-risk", "0.5"),
        ("check", "--catalog", "catalog/e2e", "--max-risk", "0.5", "--format", "json"),
    ],
)
def test_reading_a_catalog_loads_no_kernel(catalog: Path, args: tuple[str, ...]):  # noqa: F811
    code = PROBE.format(kernels=(*KERNELS, "shapely", "pyproj", "scipy"), args=list(args))
    assert loaded_by(code, cwd=catalog.parents[1]) == []


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_showing_a_catalog_loads_no_pandas(catalog: Path, fmt: str):  # noqa: F811
    args = ["catalog", "show", "--catalog", "catalog/e2e", "--format", fmt, "--where", "h=1"]
    heavy = (*STARTUP, *TABLES, "rich")
    loaded = loaded_by(PROBE.format(kernels=heavy, args=args), cwd=catalog.parents[1])
    assert loaded == (["rich"] if fmt == "table" else [])


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_showing_randomized_profiles_loads_no_pandas(profiles_catalog, fmt: str):  # noqa: F811
    root, folder = profiles_catalog
    args = ["catalog", "show", "--catalog", str(folder), "--format", fmt]
    code = PROBE.format(kernels=(*STARTUP, *TABLES, "rich"), args=args)
    assert loaded_by(code, cwd=root) == (["rich"] if fmt == "table" else [])


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_checking_a_policy_loads_no_pandas(catalog: Path, fmt: str):  # noqa: F811
    """The check counts each person's data from the stored rows with Arrow and numpy
    (sanitize/check.py): no pandas, no dataview class, no engine, no rich."""
    args = ["check", "--catalog", "catalog/e2e", "--max-risk", "0.5", "--format", fmt]
    heavy = (*STARTUP, "rich", "pyarrow.dataset", "pandas", *ENGINE)
    loaded = loaded_by(PROBE.format(kernels=heavy, args=args), cwd=catalog.parents[1])
    assert loaded == []


def test_a_check_with_a_minimum_coverage_rebuilds_the_views(catalog: Path):  # noqa: F811
    """Not blind: a minimum coverage suppresses to the fixpoint, which re-assesses."""
    args = ["check", "--catalog", "catalog/e2e", "--max-risk", "0.5", "--min-coverage", "0.1"]
    heavy = ("rich", "pandas", *ENGINE)
    loaded = loaded_by(PROBE.format(kernels=heavy, args=args), cwd=catalog.parents[1])
    assert loaded == sorted(heavy[1:])


@pytest.mark.parametrize(("config", "geometry"), [("demo_cdr", False), ("segments", True)])
def test_an_assessment_loads_geos_only_for_geometry(config: str, geometry: bool, tmp_path: Path):
    """Towers or GPS points need no geometry library (shapely and GEOS: 15 ms of a small
    run); road segments do."""
    root = Path(__file__).parents[2]
    args = ["assess", str(root / "configs" / f"{config}.yaml"), "--out", str(tmp_path), "-q"]
    code = PROBE.format(kernels=("shapely",), args=args)
    assert loaded_by(code, cwd=tmp_path) == (["shapely"] if geometry else [])


def test_the_version_is_a_constant_that_matches_the_distribution():
    """`prudence --version` says the version pyproject.toml gives the package (read from
    prudence_cli.__version__), without asking importlib.metadata at every start."""
    from importlib.metadata import version

    import prudence_cli

    assert prudence_cli.__version__ == version("prudence-cli")
    code = PROBE.format(kernels=("importlib.metadata", "rich", "pandas"), args=["--version"])
    assert loaded_by(code) == []
