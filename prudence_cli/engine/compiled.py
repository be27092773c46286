"""The compiled kernel modules, imported on first use.

Importing numba and loading the kernels from numba's cache costs most of a second, far
more than counting a small data set. The engine's modules (core, indexes, tasks,
sampling, containment) reach the kernels through this module — `compiled.kernels`,
`compiled.group_kernels`, `compiled.enumeration_kernels` — which imports each kernel
module when it is first named, i.e. when a level is counted. So importing the engine,
for its types or to read a catalog, loads neither numba nor a kernel; and numba then
compiles (or loads from its cache) only the kernels that are called.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prudence_cli.engine import enumeration_kernels, group_kernels, kernels

__all__ = ["enumeration_kernels", "group_kernels", "kernels", "set_threads", "threads"]

_KERNEL_MODULES = ("kernels", "group_kernels", "enumeration_kernels")


def __getattr__(name: str) -> Any:
    if name not in _KERNEL_MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"prudence_cli.engine.{name}")


def set_threads(threads: int) -> None:
    """Let numba's parallel kernels use `threads` threads (at most what numba has)."""
    import numba

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]


def threads() -> int:
    """The threads numba's parallel kernels use now."""
    import numba

    return int(numba.get_num_threads())
