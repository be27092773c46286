"""Commands that only read a catalog start fast: they load neither numba nor the counting
engine (its kernels take seconds to import)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("numba", "prudence_cli.engine", "prudence_cli.attacks", "prudence_cli.dataviews")

PROBE = """
import json, sys
{body}
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def loaded(body: str) -> list[str]:
    """The modules of HEAVY in sys.modules after running `body` in a fresh interpreter."""
    code = PROBE.format(body=body, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    result: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def command(*args: str) -> str:
    """`body` running the prudence command `args` as the console script does."""
    return (
        "from prudence_cli.cli import main\n"
        f"try:\n    main({list(args)!r})\n"
        "except SystemExit as exit:\n"
        "    assert exit.code in (0, 1, None), exit.code\n"
    )


def test_reading_a_catalog_through_its_package_loads_no_engine(pristine: Path):
    catalog = str(pristine / "e2e")
    body = (
        "from prudence_cli.catalog import open_catalog\n"
        "from prudence_cli.catalog.query import catalog_policy, irac_rows, numeric_columns\n"
        f"opened = open_catalog({catalog!r})\n"
        "irac_rows(opened, ['h=2']); numeric_columns(opened); catalog_policy(opened, 0.3)\n"
        "opened.risks('d1'); opened.dataview_table('d1')\n"
    )
    assert loaded(body) == []


def test_the_probe_sees_the_engine(pristine: Path):
    """Not blind: rebuilding a dataview does load the dataview classes and the engine."""
    body = (
        "from prudence_cli.catalog import open_catalog\n"
        f"open_catalog({str(pristine / 'e2e')!r}).view('d1')\n"
    )
    assert {"prudence_cli.engine", "prudence_cli.dataviews"} <= set(loaded(body))


def test_catalog_show_loads_no_engine(pristine: Path):
    """Showing a catalog reads its tables only: no engine package, no dataview classes
    (the kernels: tests/cli/test_startup.py)."""
    assert loaded(command("catalog", "show", "--catalog", str(pristine / "e2e"))) == []
