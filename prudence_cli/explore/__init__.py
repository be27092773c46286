"""Exploring a catalog: filtered rows, planes, curves, best dataviews and their Pareto
front, the policy check and the choice of epsilon."""

from prudence_cli.explore.scores import (
    DISCLOSURE,
    Policy,
    Scores,
    check,
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
    "check",
    "curve",
    "dataview_scores",
    "epsilon_choice",
    "natural_order",
    "ordinal_agreement",
    "plane",
    "utility_scores",
]
