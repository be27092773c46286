"""report.md: the release report in words, for a data-protection impact assessment."""

from __future__ import annotations

from prudence_cli.catalog.release_records import ReleaseReport
from prudence_cli.config.mobility import KEPT_KS, UNITS
from prudence_cli.units import percent


def render_markdown(report: ReleaseReport) -> str:
    users = report.users
    data = report.data
    before = report.i_rac_before
    after = report.i_rac_after
    dims = ", ".join(f"{k} = {v}" for k, v in report.dataview.dimensions.items())
    lines = [
        f"# Release {report.release}: dataview {report.dataview.id}",
        "",
        f"Prepared by prudence {report.tool_version} on {report.created}"
        + (f" for **{report.recipient}**." if report.recipient else "."),
        "",
        "## What is released",
        "",
        f"- Dataview **{report.dataview.id}** ({report.dataview.format}; {dims}) "
        f"of catalog `{report.catalog.name}`.",
        f"- **{users.released:,}** of the {users.in_view:,} people in the dataview "
        f"({users.in_universe:,} in the selected data); {users.removed:,} removed.",
        f"- {data.released:,.0f} of {data.before:,.0f} {data.coverage} "
        f"({_share(data.released, data.before)}); {data.rows_released:,} of "
        f"{data.rows_before:,} rows.",
        "- User ids: "
        + (
            "replaced by fresh random pseudonyms (the mapping stays in the catalog's ledger)."
            if report.pseudonymized
            else "the original ids."
        ),
        "",
        "## The guarantee",
        "",
        f"Every released person has a re-identification risk of at most "
        f"**{report.threshold:g}** (highest: {report.max_risk_after:.4g}) against each "
        f"of the {len(report.levels_counted)} attack levels counted: "
        + ", ".join(f"`{k}`" for k in report.levels_counted)
        + ".",
        "",
        "Risk is the probability that an attacker with that background knowledge singles the "
        "person out among the people of the released data (Pratesi et al., *PRUDEnce: a "
        "system for assessing privacy risk vs utility in data sharing ecosystems*, TDP "
        "2018), measured after suppression on the released data itself.",
        *_not_covered(report),
        *(f"\n**Note:** {note}" for note in report.notes),
        *_every_level(report),
    ]
    if report.combined_with:
        lines += [
            "",
            "The recipient already holds release(s) "
            + ", ".join(report.combined_with)
            + "; the risks above were measured on everything the recipient holds together.",
        ]
    if report.sampled:
        lines += [
            "",
            "**Some attack levels were checked on sampled knowledge instances: the "
            "risks are lower bounds.**",
        ]
    lines += [
        "",
        "## How",
        "",
        f"Method `{report.method}`: "
        + (
            "people above the threshold are removed, then everyone left is assessed again "
            "(removing people can raise the risk of others), until nobody is above it."
            if report.method == "suppress-users"
            else "each person above the threshold loses their rarest location, then everyone is "
            "assessed again, until nobody is above it."
        ),
        "",
        "| pass | people above | highest risk | people removed | rows removed |",
        "|---|---|---|---|---|",
    ]
    for step in report.iterations:
        lines.append(
            f"| {step.iteration} | {step.users_above:,} | {step.max_risk:.3g} | "
            f"{step.users_removed:,} | {step.rows_removed:,} |"
        )
    if not report.iterations:
        lines.append("| — | 0 | — | 0 | 0 |")
    lines += [
        *_mobility(report),
        "",
        "## Risk and coverage",
        "",
        "| | i-RAC_U | i-RAC_D | mean risk | share at risk 1 |",
        "|---|---|---|---|---|",
        f"| before | {before.i_rac_u:.3f} | {before.i_rac_d:.3f} | "
        f"{before.mean_risk:.3f} | {percent(before.share_at_risk_1)} |",
        f"| released | {after.i_rac_u:.3f} | {after.i_rac_d:.3f} | "
        f"{after.mean_risk:.3f} | {percent(after.share_at_risk_1)} |",
        "",
        "i-RAC_D of the release is measured against the data of the original dataview; "
        "people not released count with risk 0 in i-RAC_U, as the definition states.",
        "",
        "## Inputs",
        "",
    ]
    for item in report.inputs:
        lines.append(f"- `{item.path}` sha256 `{item.sha256}`")
    lines += [
        "",
        f"Catalog manifest sha256 `{report.catalog.manifest_sha256}`; seed {report.seed}.",
        "",
    ]
    return "\n".join(lines)


def _not_covered(report: ReleaseReport) -> list[str]:
    missing = report.not_covered
    if not missing:
        return []
    names = ", ".join(
        f"`{lv.level}` ({lv.users_above:,} people above {report.threshold:g}, highest "
        f"{lv.max_risk:.3g})"
        for lv in missing
    )
    return [
        "",
        f"**Not covered by this release: {names}.** These attack levels were assessed on "
        "this dataview but not counted; an attacker with that knowledge still singles out "
        "released people with a risk above the threshold. The release is safe only against "
        "the counted attackers.",
    ]


def _every_level(report: ReleaseReport) -> list[str]:
    if not report.levels_assessed:
        return []
    lines = [
        "",
        "Every attack level assessed on this dataview, on the released data:",
        "",
        "| attack level | counted | highest risk | mean risk | people above | covered | risks |",
        "|---|---|---|---|---|---|---|",
    ]
    for lv in report.levels_assessed:
        lines.append(
            f"| `{lv.level}` | {'yes' if lv.counted else 'no'} | {lv.max_risk:.3g} | "
            f"{lv.mean_risk:.3g} | {lv.users_above:,} | "
            f"{'yes' if lv.covered else '**not covered**'} | "
            f"{'lower bound (sampled)' if lv.sampled else 'exact'} |"
        )
    return lines


def _mobility(report: ReleaseReport) -> list[str]:
    """What the release still tells an analyst: each mobility measure before and after."""
    if not report.mobility:
        return []
    lines = [
        "",
        "## What the release still tells an analyst",
        "",
        "The mobility measures of Pellungrini et al., *Analyzing Privacy Risk in Human "
        "Mobility Data*, on the dataview and on the release: the Kolmogorov–Smirnov "
        "statistic (the largest gap between the two cumulative distributions: 0 the same, "
        "1 disjoint) and the 1-Wasserstein distance (the area between them, in the "
        f"measure's unit). A measure is **kept** when its KS is at most {KEPT_KS:g} (the "
        f"cumulative distributions never more than {KEPT_KS:g} apart), **moved** otherwise: an "
        "analyst should not study a moved measure on this release. The places' measures "
        "are recomputed on the places the release keeps: when the people removed took "
        "their rarely visited places with them, the places left are the busier ones, and "
        "their medians can rise.",
        "",
        "| measure | of | KS | kept | Wasserstein | median: dataview → release "
        "| count: dataview → release |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in report.mobility:
        unit = UNITS.get(m["measure"], "")
        lines.append(
            f"| {m['measure']} | {m['of']} | {shown_number(m['ks'])} | {_kept(m['ks'])} | "
            f"{shown_number(m['wasserstein'], unit)} | "
            f"{shown_number(m['median_before'], unit)} → "
            f"{shown_number(m['median_released'], unit)} | "
            f"{m['count_before']:,} → {m['count_released']:,} |"
        )
    return lines


def _kept(ks: float | None) -> str:
    return "—" if ks is None or ks != ks else ("kept" if ks <= KEPT_KS else "moved")


def kept_and_moved(report: ReleaseReport) -> tuple[list[str], list[str]]:
    """The release's mobility measures that it keeps and those it moves (by KEPT_KS),
    each as `measure KS`."""
    kept: list[str] = []
    moved: list[str] = []
    for m in report.mobility:
        if m["ks"] is not None and m["ks"] == m["ks"]:
            (kept if m["ks"] <= KEPT_KS else moved).append(f"{m['measure']} {m['ks']:.3f}")
    return kept, moved


def shown_number(value: float | None, unit: str = "") -> str:
    """A measure's value in a report: whole thousands, else three significant digits
    (trailing zeros kept, so that columns read alike), with its `unit`; — for none."""
    if value is None or value != value:
        return "—"
    number = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:#.3g}".rstrip(".")
    return f"{number} {unit}" if unit else number


def _share(part: float, whole: float) -> str:
    return percent(part / whole) if whole else "—"
