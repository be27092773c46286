"""A catalog's `utility.csv`, one row per dataview's dimension values: the scores the
config declares (`utility.scores`), or the error of the aggregate it declares
(`utility.aggregate`, measures/aggregate.py)."""

from __future__ import annotations

import itertools

import pandas as pd

from prudence_cli.config import Config
from prudence_cli.config.dimensions import dimension_label
from prudence_cli.dataviews.restore import parse_dimensions
from prudence_cli.errors import PrudenceError
from prudence_cli.io.readers import read_utility_scores
from prudence_cli.measures.aggregate import Activity, PointsActivity, Space, aggregate_table
from prudence_cli.select import Selection


def aggregate_utility(config: Config, selection: Selection) -> pd.DataFrame:
    """utility.csv from the error of the declared aggregate, one row per profile."""
    aggregate = config.utility_aggregate
    assert aggregate is not None
    layers = dict(config.dataview.layers)
    names = config.dataview.dimension_names
    profiles = []
    for combo in itertools.product(*(values for _, values in config.dataview.dimensions)):
        values = dict(zip(names, combo, strict=True))
        space = Space(
            grid=values.get("grid"),
            layer=layers[values["regions"]] if "regions" in values else None,
        )
        labels = {n: dimension_label(config.dataview.format, n, v) for n, v in values.items()}
        profiles.append((labels, space, int(values["time"])))
    target = Space(
        grid=aggregate.grid,
        layer=layers[aggregate.layer] if aggregate.layer is not None else None,
    )
    timezone = config.input.timezone
    activity: Activity = PointsActivity(selection, timezone)
    if selection.placed is not None:  # the points are on Dask workers: counted there
        from prudence_cli.measures.ranges_activity import RangesActivity  # Dask's

        wanted: dict[Space, set[int]] = {target: {aggregate.seconds}}
        for _, space, seconds in profiles:  # each space's points placed once
            wanted.setdefault(space, set()).add(seconds)
        activity = RangesActivity(selection.placed, timezone, wanted)
    return aggregate_table(activity, profiles, (target, aggregate.seconds))


def utility_scores(config: Config) -> pd.DataFrame:
    """The config's utility scores with dimension values in the catalog's spelling."""
    assert config.utility_scores is not None
    names = list(config.dataview.dimension_names)
    table = read_utility_scores(config.utility_scores, names)
    fmt = config.dataview.format
    try:
        parsed = [
            parse_dimensions(fmt, dict(zip(names, row, strict=True)))
            for row in table[names].itertuples(index=False)
        ]
    except ValueError as exc:
        raise PrudenceError(f"{config.utility_scores}: {exc}") from None
    for k, name in enumerate(names):
        table[name] = [dimension_label(fmt, name, dims[k][1]) for dims in parsed]
    return table
