"""The compiled kernel modules, imported on first use.

The engine's modules (core, indexes, tasks, sampling, containment) reach the kernels
through this module — `compiled.kernels`, `compiled.group_kernels`,
`compiled.enumeration_kernels` — which imports each kernel module when it is first
named, i.e. when a level is counted. So importing the engine, for its types or to read a
catalog, loads no kernel module; how the kernels then run, as Python or compiled by
numba, is `jit.py`'s choice.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prudence_cli.engine import enumeration_kernels, group_kernels, kernels

__all__ = ["enumeration_kernels", "group_kernels", "kernels"]

_KERNEL_MODULES = ("kernels", "group_kernels", "enumeration_kernels")


def __getattr__(name: str) -> Any:
    if name not in _KERNEL_MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"prudence_cli.engine.{name}")
