"""Where risk concentrates: the recommended dataview's places drawn from their geometry in
the catalog's projected CRS — grid cells as squares of their size, towers, regions and
segments as points — coloured before and after the release. Vector graphics, no tiles:
the report stays one offline file."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyproj
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from prudence_cli.catalog import Catalog
from prudence_cli.report.charts import Chart
from prudence_cli.sanitize.forecast import Suppressed
from prudence_cli.units import parse_size

PALETTE = "cividis"  # sequential and colour-blind safe


def risk_map(catalog: Catalog, chosen: Suppressed, threshold: float) -> Chart | None:
    """Two panels over the places of the dataview: the share of each place's records held
    by people above R before suppression, and the share of its records released."""
    before = chosen.before
    crs = catalog.record.selection.crs
    locations = before.locations
    if crs is None or locations.empty or not {"lon", "lat"} <= set(locations):
        return None
    to_crs = pyproj.Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    x, y = to_crs.transform(locations["lon"].to_numpy(), locations["lat"].to_numpy())
    x, y = np.asarray(x) / 1000.0, np.asarray(y) / 1000.0  # km
    n = len(locations)
    rows = np.bincount(before.location, minlength=n).astype(float)
    risky_rows = chosen.outcome.initial_risk[before.user] > threshold
    at_risk = np.bincount(before.location, weights=risky_rows, minlength=n)
    after = chosen.outcome.view
    kept = np.bincount(after.location, minlength=n).astype(float)
    used = rows > 0
    share_at_risk = np.divide(at_risk, rows, out=np.zeros(n), where=used)
    share_removed = np.divide(rows - kept, rows, out=np.zeros(n), where=used)
    entry = catalog.dataview_entry(before.id)
    cell = _cell_km(entry.dimensions)  # the catalog's labels: a restored view may differ
    x0, y0 = x[used].min(), y[used].min()
    figure = Figure(figsize=(9, 4.2), layout="constrained")
    axes = figure.subplots(1, 2, sharex=True, sharey=True)
    panels = (
        (share_at_risk, f"before: share of each place's records of people above {threshold:g}"),
        (share_removed, "the release: share of each place's records removed"),
    )
    for ax, (values, title) in zip(axes, panels, strict=True):
        px, py, v = x[used] - x0, y[used] - y0, values[used]
        if cell is not None:
            squares = [
                Rectangle((a - cell / 2, b - cell / 2), cell, cell)
                for a, b in zip(px, py, strict=True)
            ]
            patches = PatchCollection(squares, cmap=PALETTE, edgecolor="none")
            patches.set_array(v)
            patches.set_clim(0, 1)
            ax.add_collection(patches)
            mappable = patches
            pad = cell
        else:
            mappable = ax.scatter(px, py, c=v, cmap=PALETTE, vmin=0, vmax=1, s=14)
            pad = 0.5
        ax.set_xlim(px.min() - pad, px.max() + pad)
        ax.set_ylim(py.min() - pad, py.max() + pad)
        ax.set_aspect("equal")
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("km east")
        ax.grid(alpha=0.2)
    axes[0].set_ylabel("km north")
    figure.colorbar(mappable, ax=axes, shrink=0.8, label="share of the place's records")
    title = f"Where the risk lies: {before.id} ({entry.show()}) at R = {threshold:g}"
    figure.suptitle(title)
    return Chart(f"map-{before.id}", "map", title, figure)


def _cell_km(labels: dict[str, Any]) -> float | None:
    """The side of a grid cell in km, when the dataview is a grid."""
    if "grid" not in labels:
        return None
    return parse_size(str(labels["grid"])) / 1000.0
