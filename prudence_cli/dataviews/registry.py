"""The registry of dataview formats by name: a new format is one new module (its dataview
class: build, table, from_table, concat), one line here, and its data dimensions in
config/dimensions.py."""

from __future__ import annotations

from prudence_cli.dataviews.base import Dataview
from prudence_cli.dataviews.bins import BinsView
from prudence_cli.dataviews.clusters import ClusterView
from prudence_cli.dataviews.presence import PresenceView, ProbabilityView
from prudence_cli.dataviews.profiles import ProfilesView
from prudence_cli.dataviews.segments import SegmentView
from prudence_cli.dataviews.trajectory import TrajectoryView

__all__ = ["DATAVIEW_FORMATS", "format_class"]

DATAVIEW_FORMATS: dict[str, type[Dataview]] = {
    cls.format: cls
    for cls in (
        PresenceView,
        ProbabilityView,
        TrajectoryView,
        SegmentView,
        ClusterView,
        BinsView,
        ProfilesView,
    )
}


def format_class(name: str) -> type[Dataview]:
    """The dataview class of the format `name` (KeyError when there is none)."""
    return DATAVIEW_FORMATS[name]
