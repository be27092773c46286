"""The registry of attacks by name: a new attack is one new module and one line here."""

from __future__ import annotations

from prudence_cli.attacks.base import Attack, AttackResult, AttackSpec, KnowledgeLevel
from prudence_cli.attacks.cluster import ClusterAttack
from prudence_cli.attacks.frequency import FrequencyAttack, HomeWorkAttack, UniqueLocationAttack
from prudence_cli.attacks.presence import PresenceAttack
from prudence_cli.attacks.sequence import LocationSequenceAttack, UniqueLocationSequenceAttack
from prudence_cli.attacks.subtrajectory import SubtrajectoryAttack
from prudence_cli.attacks.tolerance import ProbabilityAttack, ProportionAttack
from prudence_cli.attacks.trajectory import LocationAttack, VisitAttack
from prudence_cli.attacks.unicity import UnicityAttack
from prudence_cli.randomized.attacks import PROFILE_ATTACKS

__all__ = ["ALL_ATTACKS", "ATTACKS", "PROFILE_ATTACKS", "Attack", "AttackResult", "KnowledgeLevel"]

ATTACKS: dict[str, Attack] = {
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

# every attack by name: those that score each person's risk, and those on noisy profiles
ALL_ATTACKS: dict[str, AttackSpec] = {**ATTACKS, **PROFILE_ATTACKS}
