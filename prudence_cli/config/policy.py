"""The release policy of a config (`policy:`): the tolerated risk, which assessed attack
levels count, and the least data a release must keep.

`assess` records it in the catalog; `sanitize`, `check`, `catalog best` and `report` use
it as their default, and their options override it key by key (`--max-risk` /
`--threshold`, `--attack`, `--where`, `--min-coverage`, `--min-irac-u`).

    policy:
      max_risk: 0.3            # tolerated risk R, in (0, 1]
      attacks: [presence]      # the attacks whose levels count (default: every one)
      where: {visits: half}    # knowledge or dimension values of the counted levels
      min_coverage: 0.8        # a release must keep this share of the data
      min_irac_u: 0.5          # i-RAC_U floor of `check`
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from prudence_cli.config.dimensions import FORMATS
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.config.reader import Reader
from prudence_cli.errors import shown
from prudence_cli.units import as_given

POLICY_KEYS = {"max_risk", "attacks", "where", "min_coverage", "min_irac_u"}


class Dataviews(Protocol):
    """What the policy needs of the config's dataview section."""

    @property
    def format(self) -> str: ...

    @property
    def dimensions(self) -> tuple[tuple[str, tuple[Any, ...]], ...]: ...


@dataclass(frozen=True)
class ReleasePolicy:
    max_risk: float | None = None
    attacks: tuple[str, ...] = ()  # empty: every assessed attack
    where: tuple[str, ...] = ()  # KEY=VALUE filters, as --where takes them
    min_coverage: float | None = None
    min_irac_u: float | None = None

    def override(
        self,
        max_risk: float | None = None,
        attacks: Sequence[str] = (),
        where: Sequence[str] = (),
        min_coverage: float | None = None,
        min_irac_u: float | None = None,
    ) -> ReleasePolicy:
        """This policy with every option given on the command line in place of its key:
        `--attack` replaces the attacks, and a `--where KEY=...` replaces the policy's
        filters on that KEY only (the others stay)."""
        given = {item.partition("=")[0].strip() for item in where}
        kept = tuple(w for w in self.where if w.partition("=")[0] not in given)
        return ReleasePolicy(
            max_risk=self.max_risk if max_risk is None else max_risk,
            attacks=tuple(attacks) or self.attacks,
            where=(*kept, *where),
            min_coverage=self.min_coverage if min_coverage is None else min_coverage,
            min_irac_u=self.min_irac_u if min_irac_u is None else min_irac_u,
        )

    def describe(self) -> str:
        """The policy in one line: `max risk 0.3; counting presence, visits=half`."""
        parts = [f"max risk {self.max_risk:g}" if self.max_risk is not None else "no max risk"]
        counted = [*self.attacks, *self.where]
        parts.append(f"counting {', '.join(counted)}" if counted else "counting every level")
        if self.min_coverage is not None:
            parts.append(f"keeping at least {as_given(self.min_coverage)} of the data")
        if self.min_irac_u is not None:
            parts.append(f"i-RAC_U at least {self.min_irac_u:g}")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"attacks": list(self.attacks), "where": list(self.where)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReleasePolicy:
        return cls(
            max_risk=data.get("max_risk"),
            attacks=tuple(data.get("attacks", ())),
            where=tuple(data.get("where", ())),
            min_coverage=data.get("min_coverage"),
            min_irac_u=data.get("min_irac_u"),
        )


def parse_policy(
    r: Reader,
    data: object,
    levels: Sequence[KnowledgeLevel],
    dataview: Dataviews,
) -> ReleasePolicy | None:
    """Validate `policy:` against the configured attack levels and data dimensions (a
    dimension value must be one of the configured ones): it must leave at least one
    level and one dataview counted."""
    spec = FORMATS[dataview.format].dimensions
    dimensions = {
        name: [spec[name].label(value) for value in values] for name, values in dataview.dimensions
    }
    if data is None:
        return None
    m = r.mapping(data, "policy", allowed=POLICY_KEYS)
    shares = {}
    for key in ("max_risk", "min_coverage", "min_irac_u"):
        if key in m:
            value = r.number(m[key], f"policy.{key}")
            low_open = key == "max_risk"
            if not (0 < value <= 1 if low_open else 0 <= value <= 1):
                r.fail(
                    f"policy.{key}", f"{value:g} must be in {'(0, 1]' if low_open else '[0, 1]'}"
                )
            shares[key] = value
    assessed = sorted({level.attack for level in levels})
    attacks = _names(r, m.get("attacks", []), "policy.attacks")
    for i, name in enumerate(attacks):
        if name not in assessed:
            r.fail(
                f"policy.attacks[{i}]",
                f"{shown(name)} is not assessed (attacks: {', '.join(assessed)})",
            )
    knowledge = sorted({k for level in levels for k, _ in level.values})
    filters = r.mapping(m.get("where", {}), "policy.where")
    where = []
    for key, value in filters.items():
        if key not in (*knowledge, *dimensions):
            known = ", ".join([*dimensions, *knowledge])
            r.fail(f"policy.where.{key}", f"not a dimension or knowledge key (known: {known})")
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, (dict, list)) or item is None:
                r.fail(f"policy.where.{key}", "give a value or a list of values")
            if key in dimensions:
                try:
                    written = spec[key].label(spec[key].parse(item))
                except ValueError as exc:
                    r.fail(f"policy.where.{key}", str(exc))
                if written not in dimensions[key]:
                    configured = ", ".join(dimensions[key])
                    r.fail(
                        f"policy.where.{key}",
                        f"{shown(item)} is not one of the configured values ({configured})",
                    )
            where.append(f"{key}={_text(item)}")
    policy = ReleasePolicy(
        max_risk=shares.get("max_risk"),
        attacks=tuple(attacks),
        where=tuple(where),
        min_coverage=shares.get("min_coverage"),
        min_irac_u=shares.get("min_irac_u"),
    )
    if not any(_counts(policy, level, filters) for level in levels):
        r.fail("policy", "counts none of the configured attack levels; widen attacks / where")
    return policy


def _counts(policy: ReleasePolicy, level: KnowledgeLevel, filters: dict[str, Any]) -> bool:
    if policy.attacks and level.attack not in policy.attacks:
        return False
    for key, value in level.values:
        if key in filters:
            accepted = filters[key] if isinstance(filters[key], list) else [filters[key]]
            if _text(value) not in {_text(a) for a in accepted}:
                return False
    return True


def _names(r: Reader, value: object, key: str) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [r.string(item, f"{key}[{i}]") for i, item in enumerate(items)]


def _text(value: object) -> str:
    """A YAML scalar as --where writes it (true → true, 0.5 → 0.5)."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
