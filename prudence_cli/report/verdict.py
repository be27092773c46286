"""The report's first section: can this data be shared? The policy, whether each
dataview meets it, the recommended dataview with what a release keeps (the figures of the
suppression fixpoint that `sanitize` runs), and what the release does not cover."""

from __future__ import annotations

import html
import shlex
from dataclasses import dataclass

import numpy as np

from prudence_cli.catalog import Catalog
from prudence_cli.catalog.query import Levels
from prudence_cli.catalog.release_records import LevelRisk
from prudence_cli.config.policy import ReleasePolicy
from prudence_cli.explore.scores import Scores
from prudence_cli.sanitize.forecast import (
    Suppressed,
    blind_levels,
    every_level,
    suppress_dataview,
)
from prudence_cli.units import as_given, percent


@dataclass(frozen=True)
class Verdict:
    policy: ReleasePolicy
    source: str  # where the policy came from, in words
    scores: Scores
    levels: Levels
    chosen: Suppressed | None  # the recommended dataview's release, if any keeps anyone
    coverage: tuple[LevelRisk, ...]  # every assessed level on that release
    notes: tuple[str, ...] = ()  # counted levels that cannot single anyone out there

    @property
    def threshold(self) -> float:
        return self.scores.max_risk

    @property
    def not_covered(self) -> list[LevelRisk]:
        return [lv for lv in self.coverage if not lv.covered]


def verdict(
    catalog: Catalog, scores: Scores, levels: Levels, policy: ReleasePolicy, source: str
) -> Verdict:
    """The recommended dataview (the first of `scores` whose release keeps anyone) and
    its release re-assessed by every level of the catalog."""
    table = scores.table
    eligible = table[table["users_released"] > 0]
    if eligible.empty:
        return Verdict(policy, source, scores, levels, None, ())
    best = eligible.sort_values("released", ascending=False, kind="stable")
    view_id = str(best["dataview"].iloc[0])
    chosen = suppress_dataview(catalog, view_id, levels, scores.max_risk)
    coverage = every_level(catalog, chosen.outcome, levels, scores.max_risk)
    notes = blind_levels(catalog, view_id, levels)
    return Verdict(policy, source, scores, levels, chosen, coverage, notes)


def render_verdict(catalog: Catalog, v: Verdict) -> str:
    """The verdict box and the per-dataview table, as HTML."""
    r = v.threshold
    kind = catalog.record.coverage
    counted = ", ".join(level.key for _, level in v.levels)
    parts = [
        '<section id="verdict"><h2>Can this data be shared?</h2>',
        f'<p class="policy">Policy ({_e(v.source)}): tolerated risk <b>R = {r:g}</b> against '
        f"{len(v.levels)} counted attack level{'s' if len(v.levels) != 1 else ''}: "
        f"<code>{_e(counted)}</code>"
        + (
            f"; a release must keep at least {as_given(v.policy.min_coverage)} of the {_e(kind)}"
            if v.policy.min_coverage is not None
            else ""
        )
        + ".</p>",
    ]
    if v.chosen is None:
        parts.append(
            '<div class="verdict no"><p><b>No.</b> No dataview keeps anyone after suppression '
            f"to risk ≤ {r:g} under the counted attack levels: removing the people above it "
            "makes others unique, pass after pass. Try <code>prudence sanitize --method "
            "suppress-locations</code>, fewer counted levels, or coarser dataviews.</p></div>"
        )
    else:
        parts.append(_answer(catalog, v))
    parts.append(_table(catalog, v))
    parts.append("</section>")
    return "\n".join(parts)


def _answer(catalog: Catalog, v: Verdict) -> str:
    assert v.chosen is not None
    r = v.threshold
    kind = catalog.record.coverage
    entry = catalog.dataview_entry(v.chosen.before.id)
    in_view = int(np.count_nonzero(np.diff(v.chosen.before.offsets)))
    released = int(v.chosen.released.sum())
    share = v.chosen.share_released(kind)
    passes = len(v.chosen.outcome.steps)
    enough = v.policy.min_coverage is None or share >= v.policy.min_coverage
    yes = "Yes, as it is" if passes == 0 else "Yes, with suppression"
    if v.not_covered:
        yes += ", against the counted attackers only"
    if share <= 0:  # people, but none of the data: nothing to share
        enough = False
        head = (
            f"<b>No.</b> The best release keeps none of the {_e(kind)}: nothing of this "
            f"data can be shared at risk ≤ {r:g}. Try coarser dataviews, or fewer counted "
            "levels."
        )
    elif enough:
        head = f"<b>{yes}.</b>"
    else:
        head = (
            f"<b>Not under this policy:</b> the best release keeps {percent(share)} of the "
            f"{_e(kind)}, below the policy's {as_given(v.policy.min_coverage or 0.0)}."
        )
    options = [
        *(f"--attack {a}" for a in v.policy.attacks),
        *(f"--where {shlex.quote(w)}" for w in v.policy.where),
    ]
    command = " ".join(["prudence sanitize --dataview", entry.id, f"--threshold {r:g}", *options])
    lines = [
        f'<div class="verdict {"yes" if enough else "no"}"><p>{head} Recommended dataview '
        f"<b>{_e(entry.id)}</b> ({_e(entry.show())}): a release at risk ≤ {r:g} keeps "
        f"<b>{released:,} of {in_view:,} people</b> and <b>{percent(share)} of the {_e(kind)}</b>"
        + (
            f" after {passes} suppression pass{'es' if passes != 1 else ''}"
            if passes
            else ", nobody removed"
        )
        + f". <code>{_e(command)}</code></p>"
    ]
    if passes:
        lines.append(
            f"<p>As it is, {_e(entry.id)} does not meet the policy: {in_view - released:,} "
            "people are above it, or become unique once those are removed; the release "
            "removes them first (<code>prudence check</code> without --min-coverage judges "
            "the dataview as it is and fails).</p>"
        )
    missing = v.not_covered
    if missing:
        items = "".join(
            f"<li><code>{_e(lv.level)}</code>: {'at least ' if lv.sampled else ''}"
            f"{lv.users_above:,} released people above {r:g} (highest {lv.max_risk:.3g}"
            f"{', a lower bound' if lv.sampled else ''})</li>"
            for lv in missing
        )
        lines.append(
            "<p><b>Not covered by this release</b> — attack levels assessed but not counted "
            f"that still single people out above {r:g} on the released data:</p><ul>"
            f"{items}</ul><p>The release is safe only against the counted attackers.</p>"
        )
    else:
        lines.append(
            f"<p>Every attack level assessed ({len(v.coverage)}) stays at or below {r:g} on "
            "the released data.</p>"
        )
    lines += [f"<p><b>Note:</b> {_e(note)}</p>" for note in v.notes]
    sampled = sorted(lv.level for lv in v.coverage if lv.sampled)
    if sampled:
        lines.append(
            "<p><b>Lower bounds:</b> these levels were assessed on sampled knowledge "
            f"instances: <code>{_e(', '.join(sampled))}</code>. The exact attacker singles "
            "out at least as many people, so their risks and the figures above can only be "
            "worse than shown.</p>"
        )
    lines.append("</div>")
    return "\n".join(lines)


def _table(catalog: Catalog, v: Verdict) -> str:
    """Per dataview: people at ≤ R before suppression, what a release keeps, as is?"""
    dims = catalog.dimension_names
    kind = catalog.record.coverage
    bounds = bool(v.scores.table["lower_bound"].any())
    head = "".join(
        f"<th>{_e(c)}</th>"
        for c in [
            "dataview",
            *dims,
            "meets R as it is",
            "people released",
            f"{kind} released",
            f"{kind} held at ≤ R before suppression",
            *(["risks"] if bounds else []),
        ]
    )
    rows = []
    for _, row in v.scores.table.iterrows():
        as_is = row["passes"] == 0 and row["users_released"] > 0
        cells = [
            row["dataview"],
            *(row[d] for d in dims),
            "yes" if as_is else "no",
            f"{int(row['users_released']):,} of {int(row['users_in_view']):,}",
            percent(row["released"]),
            percent(row["kept"]),
            *(["lower bound (sampled)" if row["lower_bound"] else "exact"] if bounds else []),
        ]
        chosen = v.chosen is not None and row["dataview"] == v.chosen.before.id
        mark = ' class="chosen"' if chosen else ""
        rows.append(f"<tr{mark}>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return (
        '<table class="dataviews"><thead><tr>'
        + head
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _e(value: object) -> str:
    return html.escape(str(value))
