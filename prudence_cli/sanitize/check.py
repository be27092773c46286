"""Holding a catalog to a release policy: the rows `prudence check` reports (Pratesi et
al., PRUDEnce, section 4: a dataview is released only when its risk is acceptable).

A check runs in CI on every assessment, so the common case starts fast: without a
minimum coverage, everything comes from each dataview's per-person risks and its stored
rows as Arrow reads them, counted with the functions the dataview classes count with
(dataviews/coverage.py): no pandas, no dataview class, no counting engine. The view is
rebuilt from its files only where that cannot hold: a view whose data is not a sum over
people (clusters), a catalog of format version 1 (CSV tables), and a minimum coverage,
whose release at R is suppressed to the fixpoint as `sanitize` does (which re-assesses).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from prudence_cli.catalog.folder import Catalog
from prudence_cli.catalog.query import dataview_entries, row_level_key
from prudence_cli.catalog.records import DataviewEntry
from prudence_cli.catalog.tables import locations_name
from prudence_cli.config.dimensions import FORMATS
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.config.policy import ReleasePolicy
from prudence_cli.dataviews import coverage as covered
from prudence_cli.errors import CatalogError, PrudenceError
from prudence_cli.measures.rac import summarize
from prudence_cli.units import as_given, percent

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class CheckRows:
    """One row per (dataview, assessed attack level), counted or not: `dataview`, its
    dimensions, `attack`, its knowledge values, `counted`, `sampled`, `max_risk` (in the
    dataview), `max_risk_released` (among the people the policy releases), `mean_risk`,
    `i_rac_u`, `kept` (the share of data released; NaN for a level not counted),
    `failures` (why a counted level fails the policy; "" when it holds) and `warning`
    (a level not counted that puts someone the policy releases above max_risk). Every
    row has every column, in the order they first appear; a knowledge value a level
    does not have is NaN."""

    columns: tuple[str, ...]
    records: tuple[dict[str, Any], ...]

    def where(self, keep: Callable[[dict[str, Any]], bool]) -> CheckRows:
        return CheckRows(self.columns, tuple(row for row in self.records if keep(row)))

    @property
    def counted(self) -> CheckRows:
        return self.where(lambda row: row["counted"])

    @property
    def failing(self) -> CheckRows:
        return self.where(lambda row: row["failures"] != "")

    @property
    def warned(self) -> CheckRows:
        return self.where(lambda row: row["warning"] != "")

    def __len__(self) -> int:
        return len(self.records)


def check(
    catalog: Catalog,
    policy: ReleasePolicy,
    levels: Sequence[KnowledgeLevel],
    where: Sequence[str] = (),
) -> CheckRows:
    """The policy's verdict on every dataview kept by `where` and every assessed attack
    level, `levels` being the ones the policy counts (see CheckRows).

    Without `min_coverage`, every person must be at or below `max_risk` under the counted
    levels, and the released data is the whole dataview. With it, people above may exist:
    a release suppresses them to the fixpoint (as `sanitize` does) and must keep at least
    that share of the data (`kept`); the levels not counted are then assessed on that
    released data. `min_irac_u` adds a floor on i-RAC_U. Levels not counted never fail.
    """
    from prudence_cli.catalog.query import assessed_levels

    if policy.max_risk is None:
        raise PrudenceError("the policy has no max_risk: give --max-risk R")
    max_risk = policy.max_risk
    kind = catalog.record.coverage
    counted = {level.key for level in levels}
    every = assessed_levels(catalog)
    names = catalog.knowledge_names
    irac = catalog.irac_records
    sampled = {
        (row["dataview"], row_level_key(names, row))
        for row in irac.records
        if "sampled" in irac and row["sampled"]
    }
    out = []
    for entry in dataview_entries(catalog, where):
        measured = _measured(catalog, entry, policy, levels, every)
        for level in every:
            is_counted = level.key in counted
            risk = measured.risk(level)
            mean_risk, i_rac_u = measured.summary(risk)
            released = risk if measured.released is None else measured.released[level.key]
            failures, warning = [], ""
            if is_counted:
                failures = _failures(policy, risk, i_rac_u, measured.released_share, kind)
                kept = (
                    measured.released_share
                    if measured.released_share is not None
                    else measured.share_of(risk <= max_risk)
                )
            else:
                above = int(np.count_nonzero(released > max_risk))
                if above:
                    warning = (
                        f"not counted: {above} people the policy releases are above risk "
                        f"{max_risk:g} under it (highest {released.max():.3g}); not "
                        "covered by this policy"
                    )
                kept = math.nan
            out.append(
                {
                    "dataview": entry.id,
                    **entry.dimensions,
                    "attack": level.attack,
                    **{k: str(v) for k, v in level.values},
                    "counted": is_counted,
                    "sampled": (entry.id, level.key) in sampled,
                    "max_risk": float(risk.max(initial=0)),
                    "max_risk_released": float(released.max(initial=0)),
                    "mean_risk": mean_risk,
                    "i_rac_u": i_rac_u,
                    "kept": kept,
                    "failures": "; ".join(failures),
                    "warning": warning,
                }
            )
    if not out:
        raise PrudenceError("no catalog row matches --attack / --where")
    columns = tuple(dict.fromkeys(key for row in out for key in row))
    return CheckRows(columns, tuple({c: row.get(c, math.nan) for c in columns} for row in out))


@dataclass(frozen=True)
class Measured:
    """What the check needs of one dataview: each level's per-person risks, the i-RAC
    summary and the share of data of a group of people, and, with a minimum coverage,
    the release at R (its share of data; each level's risks on it)."""

    risks: dict[str, np.ndarray]
    summary: Callable[[np.ndarray], tuple[float, float]]  # risk → (mean risk, i-RAC_U)
    share_of: Callable[[np.ndarray], float]  # mask over U → share of the view's data
    released_share: float | None = None
    released: dict[str, np.ndarray] | None = None
    where: str = ""

    def risk(self, level: KnowledgeLevel) -> np.ndarray:
        if level.key not in self.risks:
            raise CatalogError(f"{self.where}: the per-user risks lack {level.key}")
        return self.risks[level.key]


def _measured(
    catalog: Catalog,
    entry: DataviewEntry,
    policy: ReleasePolicy,
    levels: Sequence[KnowledgeLevel],
    every: Sequence[KnowledgeLevel],
) -> Measured:
    if policy.min_coverage is None and FORMATS[entry.format].stored_coverage is not None:
        light = from_stored_rows(catalog, entry)
        if light is not None:
            return light
    return from_view(catalog, entry, policy, levels, every)


def from_stored_rows(catalog: Catalog, entry: DataviewEntry) -> Measured | None:
    """The measures of an additive view from its Parquet files; None in a catalog of
    format version 1."""
    risks = catalog.read_arrow(entry.risks)  # first, as rebuilding the view reads them
    catalog.require_files(entry)
    if risks is None:
        return None
    coverage = stored_coverage(catalog, entry, catalog.record.coverage, risks)
    if coverage is None:
        return None
    columns = {
        name: _numpy(risks.column(name)).astype(float)
        for name in risks.column_names
        if name != "user"
    }

    def summary(risk: np.ndarray) -> tuple[float, float]:
        found = summarize(risk, coverage)
        return found.mean_risk, found.i_rac_u

    return Measured(
        columns, summary, lambda people: covered.share(coverage, people), where=entry.id
    )


def stored_coverage(
    catalog: Catalog, entry: DataviewEntry, kind: str, risks: pa.Table | None = None
) -> np.ndarray | None:
    """c({u}, D) per person of U (the rows of the risks table `risks`, read when not
    given) for the coverage `kind`, counted from the view's stored rows as its class
    counts them (`FormatSpec.stored_coverage`); None in a catalog of format version 1."""
    import pyarrow.compute as pc

    how = FORMATS[entry.format].stored_coverage
    if how is None:
        raise ValueError(f"{entry.format} views are not additive: rebuild the view")
    risks = catalog.read_arrow(entry.risks) if risks is None else risks
    catalog.file(locations_name(entry.file))  # checked, in the order rebuilding the view
    rows = catalog.read_arrow(entry.file)  # checks its files
    if risks is None or rows is None:
        return None
    universe = _text(risks, "user", entry.risks, catalog)
    user = pc.index_in(_text(rows, "user", entry.file, catalog), value_set=universe)
    if user.null_count:
        missing = rows.column("user")[pc.index(pc.is_null(user), True).as_py()]
        raise CatalogError(
            f"{catalog.path}: dataview {entry.id} is inconsistent: user {missing.as_py()!r} "
            "is not in U"
        )
    codes = _numpy(user).astype(np.int64)
    if how == "counted":
        count = _numbers(rows, "count", entry.file, catalog).astype(np.int32)
        return covered.counted(codes, count, len(universe), kind)
    places = pc.dictionary_encode(_text(rows, "location", entry.file, catalog)).combine_chunks()
    location = _numpy(places.indices).astype(np.int64)
    return covered.per_row(codes, location, len(universe), len(places.dictionary), kind)


def _text(table: pa.Table, column: str, name: str, catalog: Catalog) -> pa.ChunkedArray:
    import pyarrow as pa

    if column not in table.column_names:
        raise CatalogError(
            f"{catalog.path / name}: no column {column!r}; run prudence assess again"
        )
    return table.column(column).cast(pa.string())


def _numbers(table: pa.Table, column: str, name: str, catalog: Catalog) -> np.ndarray:
    if column not in table.column_names:
        raise CatalogError(
            f"{catalog.path / name}: no column {column!r}; run prudence assess again"
        )
    return _numpy(table.column(column))


def _numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A column of numbers without missing values as a numpy array, through DLPack
    (Arrow's own `to_numpy` imports pandas)."""
    if hasattr(values, "combine_chunks"):
        values = values.combine_chunks()
    if values.null_count or not hasattr(values, "__dlpack__"):  # Arrow before 15
        return np.asarray(values.to_numpy(zero_copy_only=False))
    return np.from_dlpack(values)


def from_view(
    catalog: Catalog,
    entry: DataviewEntry,
    policy: ReleasePolicy,
    levels: Sequence[KnowledgeLevel],
    every: Sequence[KnowledgeLevel],
) -> Measured:
    """The measures from the dataview rebuilt from its files (and, with a minimum
    coverage, its release at R)."""
    from prudence_cli.measures.rac import summarize_view

    kind = catalog.record.coverage
    table = catalog.risks(entry.id)
    view = catalog.view(entry.id, table)[0]
    risks = {
        level.key: table[level.key].to_numpy(dtype=float) for level in every if level.key in table
    }

    def summary(risk: np.ndarray) -> tuple[float, float]:
        found = summarize_view(view, risk, kind)
        return found.mean_risk, found.i_rac_u

    share, released = _released(catalog, entry.id, policy, levels, every)
    return Measured(
        risks, summary, lambda people: view.share_of(people, kind), share, released, entry.id
    )


def _released(
    catalog: Catalog,
    view_id: str,
    policy: ReleasePolicy,
    levels: Sequence[KnowledgeLevel],
    every: Sequence[KnowledgeLevel],
) -> tuple[float | None, dict[str, np.ndarray] | None]:
    """With a minimum coverage: the share of data the release at `max_risk` keeps and,
    per assessed level, the risks of the released people on the released data (0 for
    the people suppressed). (None, None) without one (the release is the whole view)."""
    if policy.min_coverage is None or policy.max_risk is None:
        return None, None
    from prudence_cli.attacks.registry import ATTACKS
    from prudence_cli.sanitize.forecast import catalog_engine, suppress_dataview
    from prudence_cli.sanitize.suppress import assess_levels

    counted = [(ATTACKS[level.attack], level) for level in levels]
    result = suppress_dataview(catalog, view_id, counted, policy.max_risk)
    per_level = dict(result.outcome.per_level)
    others = [(ATTACKS[lv.attack], lv) for lv in every if lv.key not in per_level]
    if others and result.released.any():
        _, more, _ = assess_levels(result.outcome.view, others, catalog_engine(catalog))
        per_level.update(more)
    for _, level in others:
        per_level.setdefault(level.key, np.zeros(result.before.n_users))
    return result.share_released(catalog.record.coverage), per_level


def _failures(
    policy: ReleasePolicy,
    risk: np.ndarray,
    i_rac_u: float,
    released_share: float | None,
    kind: str,
) -> list[str]:
    assert policy.max_risk is not None
    failures = []
    if released_share is None and risk.max(initial=0) > policy.max_risk:
        above = int(np.count_nonzero(risk > policy.max_risk))
        failures.append(f"{above} people above risk {policy.max_risk:g} (highest {risk.max():.3g})")
    if (
        released_share is not None
        and policy.min_coverage is not None
        and released_share < policy.min_coverage
    ):
        failures.append(
            f"a release at risk ≤ {policy.max_risk:g} keeps {percent(released_share)} of the "
            f"{kind} (after suppression to the fixpoint), below "
            f"{as_given(policy.min_coverage)}"
        )
    if policy.min_irac_u is not None and i_rac_u < policy.min_irac_u:
        failures.append(f"i-RAC_U {i_rac_u:.3f} below {policy.min_irac_u:g}")
    return failures
