"""The registry of attacks by name: a new attack is one new module and one line here.

An attack's module is imported when the attack is first asked for, so that reading a
catalog, or assessing with one attack, loads neither the others nor what they need
(scipy for the cluster attack, the disclosure measures for unicity).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from prudence_cli.attacks.base import Attack, AttackResult
from prudence_cli.config.knowledge import KnowledgeLevel

__all__ = ["ATTACKS", "Attack", "AttackResult", "KnowledgeLevel"]

# attack name -> "module:Class" in prudence_cli.attacks
_CLASSES = {
    "presence": "presence:PresenceAttack",
    "location": "trajectory:LocationAttack",
    "location_sequence": "sequence:LocationSequenceAttack",
    "visit": "trajectory:VisitAttack",
    "unique_location": "frequency:UniqueLocationAttack",
    "unique_location_sequence": "sequence:UniqueLocationSequenceAttack",
    "frequency": "frequency:FrequencyAttack",
    "home_work": "frequency:HomeWorkAttack",
    "probability": "tolerance:ProbabilityAttack",
    "proportion": "tolerance:ProportionAttack",
    "subtrajectory": "subtrajectory:SubtrajectoryAttack",
    "cluster": "cluster:ClusterAttack",
    "unicity": "unicity:UnicityAttack",
}


@cache
def _attack(name: str) -> Attack[Any]:
    module, _, class_name = _CLASSES[name].partition(":")
    cls = getattr(importlib.import_module(f"prudence_cli.attacks.{module}"), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Attack) and cls.name == name):
        raise TypeError(f"_CLASSES[{name!r}] = {_CLASSES[name]!r} is not its Attack")
    return cls()


class _Registry(Mapping[str, Attack[Any]]):
    """Attacks by name; each is built on first access (KeyError for an unknown name)."""

    def __getitem__(self, name: str) -> Attack[Any]:
        return _attack(name)

    def __contains__(self, name: object) -> bool:
        return name in _CLASSES

    def __iter__(self) -> Iterator[str]:
        return iter(_CLASSES)

    def __len__(self) -> int:
        return len(_CLASSES)


ATTACKS: Mapping[str, Attack[Any]] = _Registry()
