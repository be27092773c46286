"""Dataview classes by format name, from the registry of formats in config/dimensions.py
(where a new format is one line: its dimensions and `module:Class`)."""

from __future__ import annotations

import importlib
from functools import cache

from prudence_cli.config.dimensions import FORMATS
from prudence_cli.dataviews.base import Dataview

__all__ = ["format_class", "format_classes"]


@cache
def format_class(name: str) -> type[Dataview]:
    """The dataview class of the format `name` (KeyError when there is none)."""
    module, _, class_name = FORMATS[name].view.partition(":")
    cls = getattr(importlib.import_module(f"prudence_cli.dataviews.{module}"), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Dataview) and cls.format == name):
        raise TypeError(f"FORMATS[{name!r}].view = {FORMATS[name].view!r} is not its Dataview")
    if cls.additive != (FORMATS[name].stored_coverage is not None):
        raise TypeError(
            f"FORMATS[{name!r}].stored_coverage must name how an additive view's rows are "
            "counted (dataviews/coverage.py), and be None for a view that is not additive"
        )
    return cls


def format_classes() -> dict[str, type[Dataview]]:
    """Every registered format's class (importing every format module)."""
    return {name: format_class(name) for name in FORMATS}
