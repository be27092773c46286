"""The house: which package may import which (README, Development), no circles, no
oversized rooms, and a CSV reader that never loads the engine."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "prudence_cli"

# bottom to top; a module may import its own floor and the floors below it
FLOORS: list[tuple[str, ...]] = [
    # the ground floor
    ("errors", "units", "columns", "arrays", "heap", "space", "projections", "config", "io"),
    ("engine",),
    (
        "select",
        "cluster_select",
        "cluster_ranges",
        "cluster_scratch",
        "cluster_tasks",
        "cluster_input",
    ),
    ("cluster_views", "cluster_cache", "prepare"),
    ("dataviews",),
    ("attacks",),
    ("measures",),
    ("catalog",),
    ("sanitize",),
    ("explore",),
    ("randomized",),
    ("assess", "evaluation", "sample", "sample_network", "warm"),
    ("report",),
    ("cli",),
]
MAX_UPWARD = 4
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module → the package's modules it imports (at the top or inside functions)."""
    modules = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                # `from package import module` imports that module; else the named module
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target not in (name, "prudence_cli"):
                    edges[name].add(target)
    return edges


def floor_of(module: str) -> int:
    top = module.split(".")[1]
    for i, names in enumerate(FLOORS):
        if top in names:
            return i
    raise AssertionError(f"{module} is on no floor of FLOORS: add it")


def upward_imports() -> list[tuple[str, str]]:
    return sorted(
        (a, b)
        for a, targets in import_graph().items()
        for b in targets
        if floor_of(b) > floor_of(a)
    )


def cycles() -> list[list[str]]:
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in _modules():
        if module not in index:
            visit(module)
    return found


def test_every_module_stands_on_a_floor():
    for module in _modules():
        if module != "prudence_cli":
            floor_of(module)


def test_no_import_circle():
    assert cycles() == []


def test_few_imports_run_back_up_a_floor():
    upward = upward_imports()
    assert len(upward) <= MAX_UPWARD, upward


def test_the_ground_floor_imports_nothing_above_it():
    ground = [(a, b) for a, b in upward_imports() if floor_of(a) == 0]
    assert ground == []


def test_no_module_is_oversized():
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines())
        for name, path in _modules().items()
    }
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_graph_sees_an_upward_import(tmp_path, monkeypatch):
    """The checks are not blind: an import from the ground floor up is seen."""
    fake = tmp_path / "prudence_cli"
    (fake / "config").mkdir(parents=True)
    (fake / "engine").mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "config" / "__init__.py").write_text("from prudence_cli.engine import x\n")
    (fake / "engine" / "__init__.py").write_text("from prudence_cli.config import y\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert upward_imports() == [("prudence_cli.config", "prudence_cli.engine")]
    assert cycles() == [["prudence_cli.config", "prudence_cli.engine"]]


def test_reading_a_csv_loads_no_kernel():
    code = "import sys, prudence_cli.io.readers; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
