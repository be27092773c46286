"""The C heap of a large assessment (prudence_cli/heap.py): glibc's malloc keeps freed
memory for the next arrays, unless the user tunes malloc themselves; `assess` asks for it
only when the input is large."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from prudence_cli import heap
from prudence_cli.assess import assess
from prudence_cli.cli import main
from prudence_cli.config import load_config

ROOT = Path(__file__).parent.parent
GLIBC = sys.platform.startswith("linux") and heap._is_glibc()


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
def test_the_command_asks_only_for_a_large_input(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, worth_it: int, asked: int
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(heap, "WORTH_IT", worth_it)
    monkeypatch.setattr(heap, "retain_freed_memory", lambda: calls.append(1) or True)
    config = ROOT / "configs" / "demo.yaml"
    result = CliRunner().invoke(main, ["assess", str(config), "--out", str(tmp_path / "c"), "-q"])
    assert result.exit_code == 0, result.output
    assert len(calls) == asked


def test_not_when_dask_workers_read_the_input(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import prudence_cli.assess as pipeline
    from prudence_cli.errors import PrudenceError

    def stop(*args: object) -> None:
        raise PrudenceError("stopped before assessing")

    calls: list[int] = []
    monkeypatch.setattr(heap, "WORTH_IT", 0)
    monkeypatch.setattr(heap, "retain_freed_memory", lambda: calls.append(1) or True)
    monkeypatch.setattr(pipeline, "assess", stop)
    config = str(ROOT / "configs" / "demo.yaml")
    result = CliRunner().invoke(main, ["assess", config, "--engine", "dask", "-q"])
    assert "stopped before assessing" in result.output
    assert calls == []


def test_a_library_call_leaves_malloc_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(heap, "WORTH_IT", 0)
    monkeypatch.setattr(heap, "retain_freed_memory", lambda: pytest.fail("tuned malloc"))
    assess(load_config(ROOT / "configs" / "demo.yaml"), tmp_path / "catalog")


MALLINFO = """
import ctypes, json, sys
from prudence_cli import heap

class Info(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = (ctypes.c_void_p,)
tuned = heap.retain_freed_memory() if sys.argv[1] == "tuned" else False
before = libc.mallinfo2()
block = libc.malloc(2 << 20)  # above glibc's first mmap threshold, below heap.MMAP_THRESHOLD
during = libc.mallinfo2()
libc.free(block)
after = libc.mallinfo2()
print(json.dumps({"tuned": tuned, "mapped": during.hblkhd - before.hblkhd,
                  "heap_after_free": after.arena}))
"""


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
@pytest.mark.parametrize("mode", ["tuned", "as is"])
def test_malloc_keeps_freed_memory_and_maps_only_large_blocks(mode: str) -> None:
    """In a process of its own (mallopt's settings last): after `retain_freed_memory`, an
    2 MB block comes from the heap, not a mapping of its own, and once freed the heap
    keeps at least the pad; as glibc starts, the block is mapped alone."""
    env = {k: v for k, v in os.environ.items() if k not in (*heap._USER_TUNING, "GLIBC_TUNABLES")}
    done = subprocess.run(
        [sys.executable, "-c", MALLINFO, mode], capture_output=True, text=True, env=env, check=True
    )
    seen = json.loads(done.stdout)
    if mode == "tuned":
        assert seen["tuned"] is True
        assert seen["mapped"] == 0
        assert seen["heap_after_free"] >= heap.PAD
    else:
        assert seen["mapped"] >= 2 << 20
        assert seen["heap_after_free"] < heap.PAD


GIVE_BACK = """
import json, os
from prudence_cli import heap

def resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

blocks = [bytearray(60_000) for _ in range(4_000)]  # on the heap: below mmap's threshold
kept = blocks[1::2]  # every other block stays: the freed ones are holes, not the top
del blocks
before = resident()
gave = heap.give_back()
print(json.dumps({"gave": gave, "freed": before - resident()}))
"""


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_freed_memory_is_given_back_to_the_system() -> None:
    """Holes of freed blocks between kept ones (120 MB here) stay in the process until
    `give_back`, as between the steps of a Dask worker's run."""
    env = {k: v for k, v in os.environ.items() if k not in (*heap._USER_TUNING, "GLIBC_TUNABLES")}
    done = subprocess.run(
        [sys.executable, "-c", GIVE_BACK], capture_output=True, text=True, env=env, check=True
    )
    seen = json.loads(done.stdout)
    assert seen["gave"] is True and seen["freed"] > 80_000_000
