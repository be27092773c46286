"""The counting engine: exact support of knowledge instances (DESIGN.md section 6).

Domain-free: the problem is stated in `problem.py`, the `Engine` (strategy choice,
partitions) is in `core.py`, work planning and instance counts in `plan.py`, whole-record
queries in `whole.py`, sampled levels in `sampling.py`, partition tasks in `tasks.py`,
indexes and enumeration helpers in `indexes.py`, containment of explicit keys in
`containment.py`, where tasks run in `runner.py`, and the kernels in
`kernels.py`, `enumeration_kernels.py` and `group_kernels.py`; a level held in ranges of
users on a cluster's workers is planned and counted from them in `ranged.py` (its shard
side in `ranged_shards.py`). This module only re-exports the public API.

Importing the engine loads no kernel: the problem's types and the plan are plain numpy,
and every module that calls a kernel imports it when it first counts (see `compiled.py`),
so that reading a catalog or validating a config never loads a kernel or numba. The
kernels run as Python on small counts and compiled by numba on large ones (`jit.py`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from prudence_cli.engine.plan import _BYTES_PER_ELEMENT as _BYTES_PER_ELEMENT
from prudence_cli.engine.plan import _BYTES_PER_USER as _BYTES_PER_USER
from prudence_cli.engine.plan import STRATEGIES, SizePlan
from prudence_cli.engine.plan import _partitions as _partitions
from prudence_cli.engine.problem import CountingProblem, Elements, QuerySpec

if TYPE_CHECKING:
    from prudence_cli.engine.containment import (
        containment_counts,
        distinct_subsequences,
        max_over_containing,
    )
    from prudence_cli.engine.core import Engine, Support
    from prudence_cli.engine.indexes import _key_order as _key_order

__all__ = [
    "CountingProblem",
    "Elements",
    "Engine",
    "QuerySpec",
    "SizePlan",
    "Support",
    "STRATEGIES",
    "containment_counts",
    "distinct_subsequences",
    "max_over_containing",
]

# name -> the engine module that defines it, imported on first access
_LAZY = {
    "Engine": "core",
    "Support": "core",
    "containment_counts": "containment",
    "distinct_subsequences": "containment",
    "max_over_containing": "containment",
    "_key_order": "indexes",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
