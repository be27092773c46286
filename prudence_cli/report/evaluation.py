"""The HTML report of `prudence evaluate`: distributions of the probability of
re-identification per attacker knowledge, their cost-normalised version, and the
coverage of the release against the risk threshold (Basu et al., A risk model for privacy in
trajectory data, Figures 3, 10-12)."""

from __future__ import annotations

import base64
import html
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from prudence_cli.measures.empirical import Evaluation
from prudence_cli.report.charts import figure_bytes


def render_evaluation(summary: dict[str, Any], result: Evaluation) -> str:
    figures = [
        (
            "Probability of re-identification",
            "For each number h of observations the attacker knows, the share of attacks "
            "(vertical) whose probability of success is at most the value on the horizontal "
            "axis. An attack fails when the release does not hold the knowledge: it counts "
            "at probability 0, so each curve starts at the share of attacks that fail. A "
            "curve that reaches the top at the left means almost every attack fails; the "
            "theoretical guarantee of a k-anonymous release is only its right end, 1/k.",
            _cdf_figure(result),
        ),
        (
            "Cost-normalised probability",
            "The same over every attack, each probability divided by the cost of acquiring "
            f"its knowledge ({summary['settings']['cost']} cost model): a single indicator "
            "of the risk of publishing the whole dataset.",
            _cost_figure(result),
        ),
        (
            "Coverage against the risk threshold",
            "Share of the released origin-destination hops that remain when every released "
            "trajectory holding an attack more successful than the threshold is removed "
            "(equation 4 of Basu et al., A risk model for privacy in trajectory data).",
            _coverage_figure(result),
        ),
    ]
    u = summary["utility"]
    rows = "".join(f"<li>{html.escape(s)}</li>" for s in summary["statements"])
    parts = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">',
        "<title>Prudence evaluation</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:900px;margin:2em auto;"
        "padding:0 1em}p.how{background:#f4f7fa;padding:.6em .9em;border-left:3px solid "
        "#4575b4}img{max-width:100%}</style></head><body>",
        "<h1>Empirical risk of a release</h1>",
        f"<p>Original: <code>{html.escape(summary['original']['path'])}</code> "
        f"({summary['original']['trajectories']:,} trajectories); released: "
        f"<code>{html.escape(summary['released']['path'])}</code> "
        f"({summary['released']['trajectories']:,}). Knowledge: {summary['knowledge']}.</p>",
        f"<ul>{rows}</ul>",
        f"<p>Utility: OD coverage {u['coverage']:.3f}, OD precision {u['precision']:.3f} "
        f"({u['od_common']:,.0f} hops shared of {u['od_original']:,.0f} original and "
        f"{u['od_released']:,.0f} released).</p>",
    ]
    for title, text, figure in figures:
        data = base64.b64encode(figure_bytes(figure, "svg")).decode("ascii")
        parts += [
            f"<h2>{html.escape(title)}</h2>",
            f'<p class="how">How to read it. {html.escape(text)}</p>',
            f'<img class="chart" alt="{html.escape(title)}" '
            f'src="data:image/svg+xml;base64,{data}">',
        ]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _cdf_figure(result: Evaluation) -> Figure:
    figure = Figure(figsize=(6.5, 3.8), layout="constrained")
    ax = figure.subplots()
    for h, group in result.cdf.groupby("h"):
        x = np.concatenate([[0.0], group["probability"].to_numpy(), [1.0]])
        y = np.concatenate([[0.0], group["share"].to_numpy(), [1.0]])
        ax.step(x, y, where="post", label=f"h = {h}")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("probability of re-identification")
    ax.set_ylabel("share of attacks at or below")
    ax.grid(alpha=0.3)
    ax.legend()
    return figure


def _cost_figure(result: Evaluation) -> Figure:
    figure = Figure(figsize=(6.5, 3.4), layout="constrained")
    ax = figure.subplots()
    frame = result.cost_cdf
    ax.step(
        np.concatenate([[0.0], frame["normalized"]]),
        np.concatenate([[0.0], frame["share"]]),
        where="post",
    )
    ax.set_xlim(0, max(float(frame["normalized"].to_numpy().max(initial=0.0)), 1e-3) * 1.05)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("probability / cost")
    ax.set_ylabel("share of attacks at or below")
    ax.grid(alpha=0.3)
    return figure


def _coverage_figure(result: Evaluation) -> Figure:
    figure = Figure(figsize=(6.5, 3.4), layout="constrained")
    ax = figure.subplots()
    curve = result.coverage_curve
    ax.step(curve["threshold"], curve["coverage"], where="post")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("risk threshold p")
    ax.set_ylabel("OD coverage")
    ax.grid(alpha=0.3)
    return figure
