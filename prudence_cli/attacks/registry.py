"""The registry of attacks by name: a new attack is one new module and one line here."""

from __future__ import annotations

from prudence_cli.attacks.base import Attack, KnowledgeLevel
from prudence_cli.attacks.presence import PresenceAttack

__all__ = ["ATTACKS", "Attack", "KnowledgeLevel"]

ATTACKS: dict[str, Attack] = {a.name: a for a in (PresenceAttack(),)}
