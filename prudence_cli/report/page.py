"""`prudence report`: the catalog as one self-contained HTML page (charts embedded as
data URIs; nothing is fetched when it is opened), or its charts as PNG files."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from prudence_cli.catalog import Catalog, Manifest
from prudence_cli.catalog.query import Levels
from prudence_cli.config.policy import ReleasePolicy
from prudence_cli.explore.scores import Scores, dataview_scores, epsilon_choice, natural_order
from prudence_cli.io.atomic import atomic_folder, write_text_atomic
from prudence_cli.measures.mobility import THRESHOLDS
from prudence_cli.report.charts import (
    Chart,
    curve_charts,
    epsilon_charts,
    pareto_chart,
    plane_charts,
)
from prudence_cli.report.maps import risk_map
from prudence_cli.report.mobility import mobility_parts
from prudence_cli.report.verdict import Verdict, render_verdict, verdict
from prudence_cli.sanitize.ledger import read_ledger

Progress = Callable[[int, int, str], None]  # done of total steps, what

READING = {
    "mobility": (
        "What the release still tells an analyst",
        "The mobility measures of Pellungrini et al., Analyzing Privacy Risk in Human "
        "Mobility Data (section 2), on the recommended dataview (solid) and on its release "
        "at R (dashed): per person, how far they range (radius of gyration), how evenly they "
        "spread their visits (mobility entropy, 0 to 1), their trips (trajectories only), "
        "visits and places; per place, how evenly its visitors share it (location entropy), "
        "for how many people it is the most visited place, and its trips in or out. The table "
        "gives the Kolmogorov–Smirnov statistic (0: the same distribution, 1: disjoint) and "
        "the Wasserstein distance (in the measure's unit) between the two. Removing the "
        "riskiest people often removes the most mobile ones: a measure whose distribution "
        "moves is one an analyst should not study on this release. The KS is also the largest "
        "difference, over every cut-off value, between the shares of people (or places) "
        "below it: KS 0.05 means no share moves by more than 5 points. The bars give the "
        "share of people (or places) per bar. The second chart follows the paper's Figures "
        "3–6: each measure on D_t, the people whose risk (the highest over the counted "
        "levels) is at most t before any suppression, for each threshold t the catalog "
        "measured, against everyone (D_1): the further a line moves from everyone's, the "
        "more removing the people above t distorts the measure. A release at t removes at "
        "least those people (suppression also removes those whom removal makes unique), so "
        "the first chart, of the release itself, can move further.",
    ),
    "map": (
        "Where the risk lies",
        "The recommended dataview's places (grid cells drawn at their size; towers, "
        "regions and segments as points) in the projected coordinates of the data. Left: "
        "the share of each place's records held by people above the tolerated risk R, "
        "before the release (bright: the records of at-risk people concentrate there). "
        "Right: the share of each place's records the release removes (bright: the release "
        "takes most of the place away). Bright means risk or loss on both sides; the "
        "colour scale is readable with every kind of colour vision.",
    ),
    "planes": (
        "i-RAC planes",
        "Each square is one dataview, placed by its data dimensions, for one attacker. "
        "i-RAC_U is the area under the RAC_U curve: 1 means nobody can be singled out, 0 "
        "that everyone can. i-RAC_D is the same weighted by how much data each person holds: "
        "it says how much of the data could be shared with only low-risk people. Bright "
        "(yellow) is safe and useful, dark (purple) is risky. Coarser dimensions usually "
        "move towards bright (Pratesi et al., PRUDEnce, Figure 5). The counted attack "
        "levels are shown; the others are folded at the end of the page.",
    ),
    "curves": (
        "RAC curves",
        "For a tolerated risk r on the horizontal axis, RAC_U (left) gives the share of "
        "people whose risk is at most r and RAC_D (right) the share of the data they hold. "
        "A curve that climbs early means most people are safe at a low threshold; a curve "
        "that stays flat until r = 1 means most people are unique. One line per attacker "
        "counted knowledge level: more knowledge pushes the curves down and to the right. "
        "Drawn for the dataviews of the Pareto front and the recommended one; prudence "
        "catalog curve --dataview ID draws any other.",
    ),
    "epsilon": (
        "Choosing ε",
        "Each chart is one mechanism on one kind of profile. Every line is an attack of "
        "Olivier and Quertier, randomized sanitization mechanisms (section V) with its knowledge: "
        "the share of the sampled people it "
        "succeeds on, for each privacy parameter ε. Green bands mark the admissible ε, where "
        "the statistician's statistic (visitors or mean visits per location) keeps its mean "
        "error within the configured share of its mean; the dashed line is that error. A safe "
        "choice is an ε inside a green band where every line stays below the dotted line R. "
        "Larger ε means less noise: more utility and more successful attacks.",
    ),
    "pareto": (
        "Choosing a dataview",
        "Each point is a dataview: horizontally, the share of its data that a release at "
        "the tolerated risk R keeps (after suppressing risky people and re-assessing those "
        "left until nobody is above R, as prudence sanitize does); vertically, the mean "
        "risk in the dataview before suppression, each person at their strongest counted "
        "attacker; dataviews whose release would keep nobody are not on the front. "
        "Good choices are to the right and low. The blue, labelled points form the Pareto "
        "front: no other dataview is at least as good on both and better on one; grey points are "
        "dominated and never the best choice (the thesis on disclosure analysis of mobile-phone "
        "data, chapter 5).",
    ),
}


@dataclass(frozen=True)
class Page:
    charts: list[Chart]
    head: Callable[[], list[str]]  # the sections before the charts (the verdict)
    tail: Callable[[], list[str]]  # the sections after them
    under: dict[str, str] = field(default_factory=dict)  # HTML under a section's charts


def page_parts(
    catalog: Catalog,
    policy: ReleasePolicy,
    source: str,
    levels: Levels,
    where: Sequence[str] = (),
    progress: Progress | None = None,
) -> Page:
    """The charts and sections of the catalog's kind; `progress` hears the fixpoint of
    each dataview (what a release keeps)."""
    manifest = catalog.record
    max_risk = policy.max_risk if policy.max_risk is not None else 0.3
    if catalog.kind == "profiles":
        return Page(
            list(epsilon_charts(catalog, max_risk, where)),
            lambda: [],
            lambda: [
                _epsilon_choice(catalog, max_risk, where),
                _releases(catalog),
                _profiles_footer(manifest, max_risk),
            ],
        )
    scores = dataview_scores(catalog, levels, max_risk, where, progress=progress)
    found = verdict(catalog, scores, levels, policy, source)
    counted = {level.key for _, level in levels}
    shown = risk_map(catalog, found.chosen, max_risk) if found.chosen is not None else None
    crs = manifest.selection.crs
    measured = manifest.mobility
    thresholds = measured.thresholds if measured is not None else THRESHOLDS
    analyst = (
        mobility_parts(crs, found.chosen, catalog.trips, thresholds)
        if found.chosen is not None
        else None
    )
    charts = [
        *([shown] if shown is not None else []),
        *(analyst[0] if analyst is not None else []),
        pareto_chart(scores),
        *plane_charts(catalog, counted, where),
        *curve_charts(catalog, counted, where, _worth_a_curve(scores, found)),
    ]
    return Page(
        charts,
        lambda: [render_verdict(catalog, found)],
        lambda: [_disclosure(catalog), _releases(catalog), _footer(manifest, max_risk, levels)],
        {"mobility": analyst[1]} if analyst is not None else {},
    )


def _worth_a_curve(scores: Scores, found: Verdict) -> set[str]:
    """The dataviews whose RAC curves the page draws: the Pareto front and the
    recommended one (the others: prudence catalog curve --dataview ID)."""
    front = scores.table.loc[scores.table["pareto"] == "front", "dataview"]
    chosen = {found.chosen.before.id} if found.chosen is not None else set()
    return {str(v) for v in front} | chosen


def write_report(
    catalog: Catalog,
    out: Path,
    fmt: str,
    policy: ReleasePolicy,
    source: str,
    levels: Levels,
    where: Sequence[str] = (),
    progress: Progress | None = None,
) -> int:
    """Write the report page (`fmt` html) or every chart as `<name>.png` into the folder
    `out` (png), atomically; returns the number of charts. `progress` hears the fixpoint
    of each dataview, then each chart drawn."""
    page = page_parts(catalog, policy, source, levels, where, progress)
    if fmt == "html":
        write_text_atomic(out, render_page(catalog, page, progress))
        return len(page.charts)
    with atomic_folder(out, _is_chart_folder, private=False) as folder:
        for done, chart in enumerate(page.charts):
            if progress is not None:
                progress(done, len(page.charts), f"drawing {chart.name}")
            (folder / f"{chart.name}.png").write_bytes(chart.png())
    return len(page.charts)


def render_page(catalog: Catalog, page: Page, progress: Progress | None = None) -> str:
    """The page: the verdict, the summary, the charts by section, the folded charts of
    the levels not counted, then the closing sections; `progress` hears each chart."""
    drawn = iter(range(len(page.charts)))

    def figure(chart: Chart) -> str:
        if progress is not None:
            progress(next(drawn), len(page.charts), f"drawing {chart.name}")
        return _figure(chart)

    manifest = catalog.record
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Prudence report: {_e(manifest.name)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Privacy risk and data quality: {_e(manifest.name)}</h1>",
        *page.head(),
        _summary(catalog),
    ]
    shown = [c for c in page.charts if not c.folded]
    for section in ("map", "mobility", "epsilon", "pareto", "planes", "curves"):
        title, text = READING[section]
        members = [c for c in shown if c.section == section]
        if not members:
            continue
        parts += [
            f'<section id="{section}"><h2>{_e(title)}</h2>',
            f'<p class="how">How to read it. {_e(text)}</p>',
            *map(figure, members),
            page.under.get(section, ""),
            "</section>",
        ]
    folded = [c for c in page.charts if c.folded]
    if folded:
        parts += [
            '<section id="not-counted"><details><summary>The attack levels that are not '
            f"counted ({len(folded)} charts)</summary>",
            *map(figure, folded),
            "</details></section>",
        ]
    return "\n".join([*parts, *page.tail(), "</body></html>"]) + "\n"


def _figure(chart: Chart) -> str:
    data = base64.b64encode(chart.svg()).decode("ascii")
    return (
        f'<figure><img class="chart" alt="{_e(chart.title)}" '
        f'src="data:image/svg+xml;base64,{data}"><figcaption>{_e(chart.title)}'
        "</figcaption></figure>"
    )


def _summary(catalog: Catalog) -> str:
    m = catalog.record
    selection = m.selection.stats
    dims = (
        "; ".join(
            f"{name}: "
            + ", ".join(natural_order(pd.Series([v.dimensions[name] for v in catalog.dataviews])))
            for name in catalog.dimension_names
        )
        or "none (raw locations)"
    )
    attacks = "; ".join(
        f"{a.attack} ({len(a.levels)} level{'s' if len(a.levels) != 1 else ''})" for a in m.attacks
    )
    inputs = "".join(
        f"<li><code>{_e(Path(i.path).name)}</code> sha256 <code>{_e(i.sha256[:16])}…</code></li>"
        for i in m.inputs
    )
    dropped = sum(m.invalid_rows.dropped.values())
    rows = [
        ("people (U)", f"{m.selection.users:,}"),
        (
            "points selected",
            f"{selection.get('points', 0):,} of {selection.get('rows_read', 0):,} "
            f"rows read" + (f" ({dropped:,} invalid rows dropped)" if dropped else ""),
        ),
        ("dataviews", f"{len(catalog.dataviews)} {m.format_of_dataviews}: {dims}"),
        ("attacks", attacks),
        ("data measured as", m.coverage),
        ("assessed", f"{m.created} by prudence {m.tool_version}"),
    ]
    sampled = sorted({str(s.get("level")) for s in m.sampling if s.get("sampled", True)})
    if sampled:
        rows.append(
            (
                "sampled levels",
                f"{', '.join(sampled)}: risks are lower bounds (sampled knowledge instances, "
                "each at least the risk at every smaller h)",
            )
        )
    table = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return (
        '<section id="summary"><h2>The data assessed</h2>'
        f'<table class="summary">{table}</table><ul>{inputs}</ul></section>'
    )


def _epsilon_choice(catalog: Catalog, max_success: float, where: Sequence[str]) -> str:
    """The `catalog best` table of a profiles catalog: the chosen ε per mechanism."""
    table = epsilon_choice(catalog, max_success, where)
    dims = catalog.dimension_names
    columns = ["dataview", *dims, "mechanism", "neighbourhood"]
    lines = []
    for keys, group in table.groupby(columns, sort=False):
        chosen = group[group["choice"]]
        admissible = group[group["admissible"]]["epsilon"]
        answer = (
            f"ε = {chosen['epsilon'].iloc[0]:g} (worst success "
            f"{chosen['worst_success'].iloc[0]:.3f}, {chosen['worst_attack'].iloc[0]})"
            if not chosen.empty
            else "none: no ε is both admissible and safe"
        )
        span = f"{admissible.min():g} to {admissible.max():g}" if not admissible.empty else "none"
        cells = [*map(str, keys), span, answer]
        lines.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{_e(c)}</th>" for c in [*columns, "admissible ε (swept)", "chosen ε"])
    text = (
        "How to read it. The chosen ε is the largest swept value whose statistic stays "
        f"admissible and on which no counted attack succeeds on more than {max_success:g} "
        "of the sample (prudence catalog best --max-risk R prints every setting). "
        "None means the mechanism offers no trade-off on this data, as Olivier and Quertier found "
        "for count profiles."
    )
    return (
        f'<section id="choice"><h2>Chosen ε</h2><p class="how">{_e(text)}</p>'
        f"<table><tr>{head}</tr>{''.join(lines)}</table></section>"
    )


def _profiles_footer(manifest: Manifest, max_success: float) -> str:
    options = manifest.randomize
    return (
        f"<footer>Catalog <code>{_e(manifest.name)}</code>. Attacks on a sample "
        f"of {_e(options.users if options else '?')} users, seed {_e(manifest.seed)}; leaked "
        f"shares {_e(options.leak if options else {})}; tolerated success R = {max_success:g}."
        "</footer>"
    )


def _disclosure(catalog: Catalog) -> str:
    """Unicity, k-disclosure, EM and KL per dataview and level, when assessed."""
    irac = catalog.irac
    if "unicity" not in irac:
        return ""
    rows = irac.dropna(subset=["unicity"])
    columns = ["dataview", *catalog.dimension_names, *catalog.knowledge_names]
    head = "".join(
        f"<th>{_e(c)}</th>"
        for c in [*columns, "unicity", "k-disclosure", "EM (95% CI)", "KL (95% CI)"]
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td>{_e(r[c])}</td>" for c in columns)
        + f"<td>{r['unicity']:.3f}</td><td>{r['k_disclosure']:.3f}</td>"
        + f"<td>{r['em']:.4f} ± {r['em_ci']:.4f}</td><td>{r['kl']:.4f} ± {r['kl_ci']:.4f}</td>"
        + "</tr>"
        for _, r in rows.iterrows()
    )
    text = (
        "How to read it. Unicity is the share of people singled out by the points an "
        "attacker knows; k-disclosure the mean of 1/(size of the group they hide in); EM- and "
        "KL-disclosure measure what the attacker learns about every other bin of the "
        "person's record (the thesis on disclosure analysis of mobile-phone data, chapter 4), "
        "averaged over a sample of people with a 95% "
        "confidence interval. Compare profiles within a column: the measures are ordinal."
    )
    return (
        f'<section id="disclosure"><h2>Disclosure measures</h2><p class="how">{_e(text)}'
        f"</p><table><tr>{head}</tr>{body}</table></section>"
    )


def _releases(catalog: Catalog) -> str:
    records = read_ledger(catalog)
    if not records:
        return (
            '<section id="releases"><h2>Releases</h2><p>No release recorded yet '
            "(<code>prudence sanitize</code> records them).</p></section>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("release", "recipient", "created", "dataview", "R", "method", "people")
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{_e(v)}</td>"
            for v in (
                r["id"],
                r.get("recipient") or "—",
                r["created"],
                r["dataview"],
                _bound(r),
                r["method"],
                f"{r['users']:,}",
            )
        )
        + "</tr>"
        for r in records
    )
    return f'<section id="releases"><h2>Releases</h2><table><tr>{head}</tr>{body}</table></section>'


def _bound(record: dict[str, object]) -> str:
    """R of a suppression release, ε of a randomized one."""
    if record.get("threshold") is None:
        return f"ε = {record['epsilon']:g}"
    return f"{record['threshold']:g}"


def _footer(manifest: Manifest, max_risk: float, levels: Levels) -> str:
    keys = ", ".join(level.key for _, level in levels)
    return (
        f"<footer>Catalog <code>{_e(manifest.name)}</code>. Pareto analysis at "
        f"R = {max_risk:g}, a person's risk being the maximum over: {_e(keys)}.</footer>"
    )


def _is_chart_folder(folder: Path) -> bool:
    return all(p.suffix == ".png" for p in folder.iterdir())


def _e(value: object) -> str:
    return html.escape(str(value))


_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
h1{font-size:1.5em}h2{margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse}td,th{padding:.25em .7em;text-align:left;
border-bottom:1px solid #eee}
p.how{background:#f4f7fa;padding:.6em .9em;border-left:3px solid #4575b4}
figure{margin:1.2em 0}img.chart{max-width:100%}figcaption{color:#555;font-size:.9em}
footer{margin-top:3em;color:#777;font-size:.85em}
div.verdict{padding:.2em 1em;margin:1em 0;border-left:6px solid;border-radius:3px}
div.verdict.yes{border-color:#0072B2;background:#eef5fb}
div.verdict.no{border-color:#D55E00;background:#fdf1e9}
table.dataviews tr.chosen td{font-weight:bold;background:#eef5fb}
details summary{cursor:pointer;font-weight:bold;margin:1em 0}
"""
