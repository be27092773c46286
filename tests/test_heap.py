"""The C heap of a large assessment (prudence_cli/heap.py): glibc's malloc keeps freed
memory for the next arrays, unless the user tunes malloc themselves; `assess` asks for it
only when the input is large."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from prudence_cli import heap
from prudence_cli.assess import assess
from prudence_cli.config import load_config

ROOT = Path(__file__).parent.parent
GLIBC = sys.platform.startswith("linux") and heap._is_glibc()


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_glibc_keeps_freed_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*heap._USER_TUNING, "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    assert heap.retain_freed_memory() is True


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MALLOC_TOP_PAD_", "0"),
        ("MALLOC_TRIM_THRESHOLD_", "131072"),
        ("MALLOC_MMAP_THRESHOLD_", "131072"),
        ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072"),
    ],
)
def test_the_users_own_tuning_stands(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert heap.retain_freed_memory() is False


def test_another_c_library_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_is_glibc", lambda: False)
    assert heap.retain_freed_memory() is False


@pytest.mark.parametrize(("worth_it", "asked"), [(1 << 40, 0), (0, 1)])
def test_assess_asks_only_for_a_large_input(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, worth_it: int, asked: int
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(heap, "WORTH_IT", worth_it)
    monkeypatch.setattr(heap, "retain_freed_memory", lambda: calls.append(1) or True)
    assess(load_config(ROOT / "configs" / "demo.yaml"), tmp_path / "catalog")
    assert len(calls) == asked
