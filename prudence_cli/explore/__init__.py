"""Exploring a catalog: filtered rows, planes, curves, best dataviews and their Pareto
front, and the choice of epsilon (the policy check is sanitize/check.py)."""

from prudence_cli.explore.scores import (
    DISCLOSURE,
    Policy,
    Scores,
    curve,
    dataview_scores,
    epsilon_choice,
    natural_order,
    ordinal_agreement,
    plane,
    utility_scores,
)

__all__ = [
    "DISCLOSURE",
    "Policy",
    "Scores",
    "curve",
    "dataview_scores",
    "epsilon_choice",
    "natural_order",
    "ordinal_agreement",
    "plane",
    "utility_scores",
]
