"""The profiles pipeline of `prudence assess` (Olivier and Quertier, randomized sanitization
mechanisms): every randomized setting × attack
level on a seeded sample of each profiles dataview.

`prudence_cli.assess` dispatches here for `dataview.format: profiles`; it owns the catalog
folder, the common manifest and the i-RAC table, and this module writes only what is its
own: the true profiles to the dataviews folder, the rows to randomized.csv, and the
manifest's `randomize` entry (returned, for the caller to add).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
from scipy import sparse

from prudence_cli.catalog import RANDOMIZED, CatalogWriter
from prudence_cli.catalog.records import DataviewEntry, RandomizeEntry
from prudence_cli.config import Config
from prudence_cli.dataviews.build import build_dataviews, count_dataviews
from prudence_cli.dataviews.profiles import ProfilesView
from prudence_cli.errors import InputError
from prudence_cli.randomized.mechanisms import Affinity
from prudence_cli.randomized.sweep import SweepOptions, sampled, sweep
from prudence_cli.select import Selection

if TYPE_CHECKING:
    from prudence_cli.dataviews.on_workers import KeptView


@dataclass(frozen=True)
class ProfilesAssessment:
    views: list[DataviewEntry]  # the manifest's dataview entries
    table: pd.DataFrame  # the rows of randomized.csv
    settings: RandomizeEntry  # the manifest's `randomize` entry
    steps: int  # progress steps taken


def assess_profiles(
    config: Config,
    selection: Selection,
    writer: CatalogWriter,
    report: Callable[[int, int, str], None],
    knowledge: list[str],
) -> ProfilesAssessment:
    """Sweep every profiles dataview of the config into the catalog `writer` fills;
    `knowledge` names the attacks' knowledge columns, in the catalog's order."""
    levels = [level for a in config.attacks for level in a.levels]
    options = sweep_options(config)
    split = None
    if config.randomize.split is not None:
        split = int(config.randomize.split.tz_convert("UTC").value)
    kinds = dict(config.dataview.dimensions).get("profile", ("boolean",))
    per_kind = {k: sum(s.kind == k for s in config.mechanisms) for k in kinds}
    total = count_dataviews(config.dataview) // len(kinds) * sum(per_kind.values())
    rows: list[dict[str, Any]] = []
    views_meta: list[DataviewEntry] = []
    done = 0
    views = build_dataviews(selection, config.dataview, config.input.timezone, split)
    ids = selection.user_ids  # where they are: the views kept on workers are written there
    for view_index, built in enumerate(views):
        if built.users_in_view == 0 and "regions" in dict(built.dimensions):
            layer = dict(config.dataview.layers)[dict(built.dimensions)["regions"]]
            raise InputError(
                layer,
                f"no selected point falls in any of its {len(built.locations)} regions: "
                "give a layer that covers the data's area",
            )
        taken = None
        if built.on_workers:  # the sample's rows come here, never the points
            kept = cast("KeptView", built)
            taken = _sample_of(kept, options)
            view = kept.whole(taken[0])
        else:
            view = built
        assert isinstance(view, ProfilesView)
        dims = view.labels
        shown = view.shown

        def step(message: str, view_id: str = view.id, shown: str = shown) -> None:
            nonlocal done
            report(done, total, f"{view_id} {shown} {message}")
            done += 1

        for row in sweep(view, config.mechanisms, levels, options, view_index, step, taken):
            rows.append({"dataview": view.id, **dims, **row})
        split_at = pd.Timestamp(view.split, tz="UTC").isoformat()
        views_meta.append(writer.write_view(built, ids, {}, built.locations, split=split_at))
    table = randomized_frame(rows, config, knowledge)
    table.to_csv(writer.folder / RANDOMIZED, index=False)
    return ProfilesAssessment(views_meta, table, _settings(config, options, split), total)


def _sample_of(kept: KeptView, options: SweepOptions) -> tuple[np.ndarray, Affinity]:
    """The sweep's sample of a profiles view kept on the workers, drawn from the users
    each range has (as of the whole view), and the view's affinity: each range's
    visits-together counts, added up here as they come (whole numbers: exact)."""
    ranges = kept.ranges
    present = [np.zeros(0, dtype=np.int64)] * (len(ranges) + 1)  # and none: never empty
    m = len(kept.locations)
    counts = sparse.csr_matrix((m, m))
    for k, (found, part) in kept.each_called("present_and_together", [()] * len(ranges)):
        present[k] = found.astype(np.int64) + ranges[k].first
        counts = counts + part
    users = sampled(np.concatenate(present), options.users, options.seed)
    counts = counts.tocsr()
    counts.sort_indices()
    return users, Affinity(counts, max(kept.n_users, 1))


def sweep_options(config: Config) -> SweepOptions:
    """The config's `randomize:` section as the sweep's options."""
    return SweepOptions(
        users=config.randomize.users,
        leak_users=config.randomize.leak_users,
        leak_locations=config.randomize.leak_locations,
        max_error=config.randomize.max_error,
        seed=config.seed,
    )


def _settings(config: Config, options: SweepOptions, split: int | None) -> RandomizeEntry:
    """The manifest's `randomize` entry (read back by `sanitize --method randomize`)."""
    return RandomizeEntry(
        users="all" if options.users is None else options.users,
        leak={"users": options.leak_users, "locations": options.leak_locations},
        max_error=options.max_error,
        split="middle" if split is None else pd.Timestamp(split, tz="UTC").isoformat(),
        settings=tuple(
            {
                "mechanism": s.mechanism,
                "epsilon": s.epsilon,
                "neighbourhood": "all" if s.neighbourhood is None else s.neighbourhood,
                "p": s.p,
            }
            for s in config.mechanisms
        ),
        sampler="numpy PCG64; integer noise from geometric draws (see "
        "prudence_cli/sanitize/randomize.py)",
    )


def randomized_frame(
    rows: list[dict[str, Any]], config: Config, knowledge: list[str]
) -> pd.DataFrame:
    """The rows of randomized.csv in a fixed column order."""
    first = [
        "dataview",
        *config.dataview.dimension_names,
        "mechanism",
        "epsilon",
        "neighbourhood",
        "p",
        "users",
        "statistic",
        "mean_error",
        "mean_value",
        "relative_error",
        "admissible",
        "attack",
        *knowledge,
        "success_rate",
        "successes",
        "targets",
    ]
    extra = [k for row in rows for k in row if k not in first]
    return pd.DataFrame(rows, columns=first + list(dict.fromkeys(extra)))
