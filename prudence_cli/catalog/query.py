"""Queries over an open catalog: `--where KEY=VALUE` filters, the counted attack levels,
i-RAC rows, per-user risks."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from prudence_cli.catalog.folder import Catalog
from prudence_cli.catalog.records import DataviewEntry
from prudence_cli.catalog.rows import Rows
from prudence_cli.config.dimensions import FORMATS
from prudence_cli.config.knowledge import ATTACK_SCHEMAS, KnowledgeLevel
from prudence_cli.config.loader import load_yaml
from prudence_cli.config.policy import ReleasePolicy
from prudence_cli.errors import CatalogError, PrudenceError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    # the attacks load the counting engine: only `counted_levels` needs them
    from prudence_cli.attacks.base import Attack


def parse_where(catalog: Catalog, where: Sequence[str]) -> dict[str, set[str]]:
    """KEY=VALUE filters → column → accepted values, in the catalog's own spelling.

    Values are read like YAML scalars and normalised by the dimension's parser, so
    grid=0.5km matches 500m and h=2 matches 2. Repeating a key accepts any of its values.
    """
    columns = ["dataview", *catalog.dimension_names, "attack", *catalog.knowledge_names]
    if catalog.kind == "profiles":
        columns += list(SETTING_COLUMNS)
    filters: dict[str, set[str]] = {}
    for item in where:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise PrudenceError(f"--where {item!r}: write KEY=VALUE, e.g. grid=500m or h=2")
        if key not in columns:
            raise PrudenceError(
                f"--where {item!r}: unknown key {key!r}; known: {', '.join(columns)}"
            )
        filters.setdefault(key, set()).add(_normalise(catalog, key, text.strip()))
    return filters


Levels: TypeAlias = "Sequence[tuple[Attack[Any], KnowledgeLevel]]"


def counted_levels(
    catalog: Catalog, attacks: Sequence[str] = (), where: Sequence[str] = ()
) -> list[tuple[Attack[Any], KnowledgeLevel]]:
    """The assessed attack levels kept by `attacks` (names) and `where` (knowledge and
    attack filters), with their attacks; all of them by default."""
    from prudence_cli.attacks.registry import ATTACKS

    return [(ATTACKS[level.attack], level) for level in assessed_levels(catalog, attacks, where)]


def assessed_levels(
    catalog: Catalog, attacks: Sequence[str] = (), where: Sequence[str] = ()
) -> list[KnowledgeLevel]:
    """`counted_levels` without the attacks (which load the counting engine)."""
    filters = parse_where(catalog, where)
    known = {a.attack for a in catalog.record.attacks}
    for name in attacks:
        if name not in known:
            raise PrudenceError(
                f"--attack {name}: not assessed in this catalog (assessed: "
                f"{', '.join(sorted(known))})"
            )
    levels = []
    for entry in catalog.record.attacks:
        if attacks and entry.attack not in attacks:
            continue
        if "attack" in filters and entry.attack not in filters["attack"]:
            continue
        for values in entry.levels:
            if any(k in filters and str(v) not in filters[k] for k, v in values.values):
                continue
            levels.append(KnowledgeLevel(entry.attack, values.values))
    if not levels:
        raise PrudenceError("no assessed attack level is left by --attack / --where")
    return levels


def max_risk_over(risks: pd.DataFrame, levels: Levels, where: str) -> np.ndarray:
    """Per user: the maximum of the risk columns of `levels`."""
    import numpy as np

    missing = [level.key for _, level in levels if level.key not in risks]
    if missing:
        raise CatalogError(f"{where}: the per-user risks lack {', '.join(missing)}")
    columns = [risks[level.key].to_numpy(dtype=float) for _, level in levels]
    highest: np.ndarray = np.max(columns, axis=0)
    return highest


def dataview_entries(catalog: Catalog, where: Sequence[str] = ()) -> list[DataviewEntry]:
    """The catalog's dataview entries kept by the dimension / dataview filters of `where`."""
    filters = parse_where(catalog, where)
    kept = []
    for entry in catalog.dataviews:
        if any(k in filters and str(v) not in filters[k] for k, v in entry.dimensions.items()):
            continue
        if "dataview" in filters and entry.id not in filters["dataview"]:
            continue
        kept.append(entry)
    if not kept:
        raise PrudenceError("no dataview of the catalog matches --where")
    return kept


def irac_level_keys(catalog: Catalog, rows: pd.DataFrame | None = None) -> pd.Series:
    """Per row of the i-RAC table (or of `rows`, some of its rows), the key of its attack
    level (`attack[h=2,visits=half]`), as in the per-user risk columns."""
    import pandas as pd

    irac = catalog.irac if rows is None else rows
    if irac.empty:
        return pd.Series([], dtype=object, index=irac.index)
    names = catalog.knowledge_names
    columns = irac[["attack", *names]].to_dict(orient="records")
    return pd.Series([row_level_key(names, row) for row in columns], index=irac.index)


def row_level_key(knowledge_names: Sequence[str], row: dict[str, Any]) -> str:
    """The key of the attack level of one i-RAC row (`attack[h=2,visits=half]`): its
    knowledge columns that hold a value."""
    values = ",".join(f"{k}={row[k]}" for k in knowledge_names if row[k] != "")
    return f"{row['attack']}[{values}]"


def sampled_level_keys(catalog: Catalog, view_id: str) -> set[str]:
    """The attack levels of dataview `view_id` assessed on sampled knowledge instances:
    their per-user risks are lower bounds (the exact attacker singles out at least as
    many people)."""
    irac = catalog.irac_records
    if "sampled" not in irac:
        return set()
    names = catalog.knowledge_names
    return {
        row_level_key(names, row)
        for row in irac.records
        if row["dataview"] == view_id and row["sampled"]
    }


def catalog_policy(
    catalog: Catalog,
    max_risk: float | None = None,
    attacks: Sequence[str] = (),
    where: Sequence[str] = (),
    min_coverage: float | None = None,
    min_irac_u: float | None = None,
    default_max_risk: float | None = None,
) -> tuple[ReleasePolicy, str]:
    """The release policy a command applies: the catalog's (the config's `policy:`) with
    every option given in its place; and where it came from, in words."""
    recorded = catalog.record.policy
    policy = (recorded or ReleasePolicy()).override(
        max_risk, attacks, where, min_coverage, min_irac_u
    )
    if policy.max_risk is None:
        if default_max_risk is None:
            raise PrudenceError(
                "no tolerated risk: give --max-risk R (or --threshold R), or declare "
                "policy.max_risk in the config and assess again"
            )
        policy = dataclasses.replace(policy, max_risk=default_max_risk)
    given = any(v is not None for v in (max_risk, min_coverage, min_irac_u)) or attacks or where
    if recorded is None:
        source = "options" if given else "defaults"
    else:
        source = "the config's policy" + (", overridden by options" if given else "")
    return policy, source


def numeric_columns(catalog: Catalog) -> list[str]:
    """Dimension and knowledge columns whose digit-only values are numbers (h=2, 500m is
    not digits anyway), for typed JSON; knowledge that is named (a scenario) stays text."""
    named = {d.name for a in ATTACK_SCHEMAS.values() for d in a.knowledge if d.names}
    return [c for c in (*catalog.dimension_names, *catalog.knowledge_names) if c not in named]


def irac_rows(catalog: Catalog, where: Sequence[str] = ()) -> Rows:
    """The i-RAC table rows that match every filter (`.to_frame()`: as a DataFrame)."""
    filters = parse_where(catalog, where).items()
    return catalog.irac_records.keep(lambda row: all(row[c] in ok for c, ok in filters))


SETTING_COLUMNS = ("mechanism", "epsilon", "neighbourhood")


def randomized_rows(catalog: Catalog, where: Sequence[str] = ()) -> Rows:
    """The rows of a profiles catalog's randomized.csv that match every filter
    (`.to_frame()`: as a DataFrame). ε is compared as a number; the other columns a
    filter names are text."""
    filters = [
        (column, {float(v) for v in accepted} if column == "epsilon" else accepted)
        for column, accepted in parse_where(catalog, where).items()
    ]
    return catalog.randomized_records.keep(lambda row: all(row[c] in ok for c, ok in filters))


def risk_rows(catalog: Catalog, where: Sequence[str] = ()) -> Iterator[pd.DataFrame]:
    """Per-user risks in long form, one frame per dataview: dataview, dimension columns,
    attack, knowledge columns, user (original id), risk, and whether it is a lower bound
    (the level was assessed on sampled knowledge instances)."""
    import pandas as pd

    rows = irac_rows(catalog, where).to_frame()
    key_columns = ["dataview", *catalog.dimension_names, "attack", *catalog.knowledge_names]
    knowledge_of = {a.attack: a.knowledge for a in catalog.record.attacks}
    for view_id, group in rows.groupby("dataview", sort=False):
        risks = catalog.risks(str(view_id))
        sampled = sampled_level_keys(catalog, str(view_id))
        for _, row in group.iterrows():
            label = ",".join(f"{k}={row[k]}" for k in knowledge_of[row["attack"]])
            column = f"{row['attack']}[{label}]"
            frame = pd.DataFrame(
                {"user": risks["user"], "risk": risks[column], "lower_bound": column in sampled}
            )
            for key in reversed(key_columns):
                frame.insert(0, key, row[key])
            yield frame


def _normalise(catalog: Catalog, key: str, text: str) -> str:
    value = load_yaml(text, Path("--where")) if text else text
    view_format = catalog.record.format_of_dataviews
    dims = FORMATS[view_format].dimensions
    try:
        if key == "epsilon":
            return str(float(str(value)))
        if key in dims:
            return dims[key].label(dims[key].parse(value))
        for attack in ATTACK_SCHEMAS.values():
            for dim in attack.knowledge:
                if dim.name == key:
                    return str(dim.parse(value))
    except ValueError as exc:
        raise PrudenceError(f"--where {key}={text}: {exc}") from None
    return text
