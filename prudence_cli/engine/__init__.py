"""The counting engine: exact support of knowledge instances (DESIGN.md section 6).

Domain-free: the problem is stated in `problem.py`, the `Engine` (strategy choice,
partitions) is in `core.py`, work planning and instance counts in `plan.py`, whole-record
queries in `whole.py`, sampled levels in `sampling.py`, partition tasks in `tasks.py`,
indexes and enumeration helpers in `indexes.py`, containment of explicit keys in
`containment.py`, where tasks run in `runner.py`, and the compiled kernels in
`kernels.py`, `enumeration_kernels.py` and `group_kernels.py`. This module only re-exports
the public API.
"""

from __future__ import annotations

from prudence_cli.engine.containment import (
    containment_counts,
    distinct_subsequences,
    max_over_containing,
)
from prudence_cli.engine.core import Engine, Support
from prudence_cli.engine.indexes import _key_order as _key_order
from prudence_cli.engine.plan import _BYTES_PER_ELEMENT as _BYTES_PER_ELEMENT
from prudence_cli.engine.plan import _BYTES_PER_USER as _BYTES_PER_USER
from prudence_cli.engine.plan import STRATEGIES, SizePlan
from prudence_cli.engine.plan import _partitions as _partitions
from prudence_cli.engine.problem import CountingProblem, Elements, QuerySpec

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
