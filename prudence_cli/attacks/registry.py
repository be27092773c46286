"""The registry of attacks by name: a new attack is one new module and one line here."""

from __future__ import annotations

from typing import Any

from prudence_cli.attacks.base import Attack, AttackResult
from prudence_cli.attacks.cluster import ClusterAttack
from prudence_cli.attacks.frequency import FrequencyAttack, HomeWorkAttack, UniqueLocationAttack
from prudence_cli.attacks.presence import PresenceAttack
from prudence_cli.attacks.sequence import LocationSequenceAttack, UniqueLocationSequenceAttack
from prudence_cli.attacks.subtrajectory import SubtrajectoryAttack
from prudence_cli.attacks.tolerance import ProbabilityAttack, ProportionAttack
from prudence_cli.attacks.trajectory import LocationAttack, VisitAttack
from prudence_cli.attacks.unicity import UnicityAttack
from prudence_cli.config.knowledge import KnowledgeLevel

__all__ = ["ATTACKS", "Attack", "AttackResult", "KnowledgeLevel"]

ATTACKS: dict[str, Attack[Any]] = {
    a.name: a
    for a in (
        PresenceAttack(),
        LocationAttack(),
        LocationSequenceAttack(),
        VisitAttack(),
        UniqueLocationAttack(),
        UniqueLocationSequenceAttack(),
        FrequencyAttack(),
        HomeWorkAttack(),
        ProbabilityAttack(),
        ProportionAttack(),
        SubtrajectoryAttack(),
        ClusterAttack(),
        UnicityAttack(),
    )
}
