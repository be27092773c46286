"""Clusters of busy road segments (Pratesi et al., PRUDEnce, section 4.3).

What is shared is not people's data but areas: per time window, the segments crossed by
at least `frequency` distinct people, grouped into clusters of segments closer than the
`tolerance` ε, each with its traffic index μ = the mean frequency of its segments.

Clustering is density-based with a minimum cluster size of one: two frequent segments of
a window are in one cluster when a chain of frequent segments joins them, each link
shorter than ε — DBSCAN with min_samples = 1, which is exactly the connected components
of the "closer than ε" graph (shapely's STRtree finds the pairs, scipy the components).

The view keeps every person's segment crossings (person, segment, window), so that the
clusters can be recomputed without some people: suppression re-clusters, and RAC_D
counts the segments inside clusters made only of the safe people's data, against those of
the original view (coverage `segments`).

What needs every person's crossings is made of parts of disjoint people, each its
`method(*args)` — one part: the view itself; on Dask workers, each range of users kept
there (dataviews/kept_clusters.py): a (window, segment)'s distinct people are the sum
of the parts' (`segment_people`, `added`), a part's people's risks and coverage are
theirs alone, and the data at a risk threshold is read from each pair's
`frequency`-th least risky crosser (`thresholds`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from prudence_cli import columns as C
from prudence_cli.dataviews.base import (
    BuildSettings,
    Dataview,
    Dimensions,
    Located,
    StoredTable,
    gathered,
    table_bins,
)
from prudence_cli.dataviews.coverage import check_coverage
from prudence_cli.dataviews.trajectory import local_bins
from prudence_cli.space import project_lines

if TYPE_CHECKING:
    from prudence_cli.select import Selection


# per row: window, segment, risk of one of its crossers (`crosser_risks`, `least_risks`)
Crossers = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Clusters:
    """Per (window, segment) of a cluster: its cluster id; per cluster its window and μ."""

    window: np.ndarray  # per clustered (window, segment)
    segment: np.ndarray
    cluster: np.ndarray
    cluster_window: np.ndarray  # per cluster
    mu: np.ndarray  # per cluster


class ClusterDimensions:
    """What a clusters view is made by, of its dimensions (its own or, kept on the
    workers, kept_clusters.KeptClusters)."""

    dimensions: Dimensions

    @property
    def min_users(self) -> int:
        """`frequency`: the people a segment needs in a window to be shared."""
        return int(dict(self.dimensions).get("frequency", 1))

    @property
    def tolerance(self) -> float:
        """`tolerance`: the distance ε that joins segments in one cluster."""
        return float(dict(self.dimensions).get("tolerance", 100.0))


@dataclass(frozen=True)
class ClusterView(Dataview, ClusterDimensions):
    """Rows: one per segment crossed by a person in a window, sorted by person."""

    window: np.ndarray  # int64 window index per row (local clock)
    # per location code: LineString in the CRS (None on a range of users: the whole's)
    geometry: np.ndarray | None = field(repr=False)
    window_seconds: int = 3600

    format = "clusters"
    row_fields: ClassVar[tuple[str, ...]] = ("user", "location", "window")
    additive: ClassVar[bool] = False

    @cached_property
    def clusters(self) -> Clusters:
        return clusters_of(self.segment_people(), self.geometry, self.min_users, self.tolerance)

    def segment_people(self) -> pd.Series:
        """Per (window, segment) crossed: its distinct people."""
        return crossing_frequency(self.user, self.location, self.window)

    def cluster_risks(self) -> tuple[np.ndarray, int]:
        """The cluster attack's risk per person (attacks/cluster.py), and the distinct
        (person, window) moves its knowledge is made of."""
        return self.risks_against(self.clusters)

    def risks_against(self, found: Clusters) -> tuple[np.ndarray, int]:
        """`cluster_risks` of this view's people against the clusters `found`:
        Risk(u) = μ of the clusters u crossed / μ of the clusters of u's windows."""
        ones = np.ones(found.mu.shape[0], dtype=np.int64)
        of_window = pd.DataFrame({"mu": found.mu, "n": ones}).groupby(found.cluster_window).sum()
        moves = pd.DataFrame({"user": self.user, "window": self.window}).drop_duplicates()
        known = of_window.reindex(moves["window"].to_numpy(), fill_value=0)
        known = known.groupby(moves["user"].to_numpy()).sum()  # μ, clusters of u's windows
        crossed = self.crossings(found)[["user", "cluster"]].drop_duplicates()
        at = crossed["cluster"].to_numpy()
        linked = pd.DataFrame({"mu": found.mu[at], "n": ones[at]})
        linked = linked.groupby(crossed["user"].to_numpy()).sum()  # μ, clusters u crossed
        everyone = np.arange(self.n_users)
        total = known.reindex(everyone, fill_value=0)
        mine = linked.reindex(everyone, fill_value=0)
        risk = np.zeros(self.n_users)
        positive = total["n"].to_numpy() > 0
        risk[positive] = mine["mu"].to_numpy()[positive] / total["mu"].to_numpy()[positive]
        # every cluster of u's windows crossed: 1, whatever order the μ were added in
        risk[positive & (mine["n"].to_numpy() == total["n"].to_numpy())] = 1.0
        return risk, int(moves.shape[0])

    def data_of(self, people: np.ndarray, kind: str) -> float:
        """Segments inside the clusters computed from the data of `people` alone, each
        counted once per window. With a minimum cluster size of one every frequent
        segment is in a cluster, so this counts the (window, segment) pairs crossed by at
        least `frequency` of those people — no clustering needed."""
        check_coverage(kind)
        pair, owner = self._distinct_crossings
        counts = np.bincount(pair[people[owner]], minlength=int(pair.max(initial=-1)) + 1)
        return float(np.count_nonzero(counts >= self.min_users))

    def data_at(self, risk: np.ndarray, points: np.ndarray, kind: str) -> np.ndarray:
        """`data_of(risk <= r)` at each r of `points`, in one pass (`thresholds`)."""
        check_coverage(kind)
        found = thresholds(self.crosser_risks(risk, self.clusters), self.min_users)
        return np.searchsorted(found, points, side="right").astype(float)

    def crosser_risks(self, risk: np.ndarray, found: Clusters) -> Crossers:
        """Per (window, segment) of the clusters `found` this view's people crossed, the
        `frequency` least risks of its distinct crossers (`risk` per person of this
        view). The others are crossed by fewer people than `frequency` in all: no
        threshold makes them shared."""
        inside = self._clustered_rows(found)
        frame = pd.DataFrame(
            {"w": self.window[inside], "s": self.location[inside], "u": self.user[inside]}
        ).drop_duplicates()
        crossed = frame["w"].to_numpy(), frame["s"].to_numpy(), risk[frame["u"].to_numpy()]
        return least_risks([crossed], self.min_users)

    @cached_property
    def _distinct_crossings(self) -> tuple[np.ndarray, np.ndarray]:
        """Per distinct (person, window, segment): its (window, segment) code, its person."""
        segments = int(self.location.max(initial=-1)) + 1
        first = int(self.window.min()) if self.window.shape[0] else 0
        key = (self.window - first) * segments + self.location
        pair, pairs = pd.factorize(key)  # hashed: np.unique sorts, 6 times slower here
        crossing = pd.unique(self.user.astype(np.int64) * len(pairs) + pair)
        return crossing % len(pairs), crossing // len(pairs)

    def coverage(self, kind: str) -> np.ndarray:
        """Per person: their crossings of clustered segments (a guide only; the view's
        data measure is `data_of`, which is not a sum over people)."""
        check_coverage(kind)
        return self.clustered(self.clusters)

    def clustered(self, found: Clusters) -> np.ndarray:
        """Per person of this view: their crossings of segments of the clusters `found`."""
        clustered = self._clustered_rows(found)
        return np.bincount(self.user[clustered], minlength=self.n_users).astype(float)

    def crossings(self, found: Clusters) -> pd.DataFrame:
        """Per row in a cluster of `found`: person, window, cluster."""
        position = self._positions(found)
        inside = position >= 0
        return pd.DataFrame(
            {
                "user": self.user[inside],
                "window": self.window[inside],
                "cluster": found.cluster[position[inside]],
            }
        )

    def table(self, user_ids: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            {
                C.USER: gathered(user_ids, self.user),
                C.LOCATION: gathered(self.locations["label"].to_numpy(), self.location),
                "window": _stamp(self.window, self.window_seconds),
            }
        )

    def release_table(self, user_ids: np.ndarray) -> pd.DataFrame:
        """The clusters: window start, cluster, its segments, its traffic index μ."""
        found = self.clusters
        labels = self.locations["label"].to_numpy()
        frame = pd.DataFrame({"cluster": found.cluster, "segment": labels[found.segment]})
        segments = frame.groupby("cluster")["segment"].agg(lambda s: " ".join(sorted(s)))
        return pd.DataFrame(
            {
                "window": _stamp(found.cluster_window, self.window_seconds),
                "cluster": np.arange(found.mu.shape[0]),
                "segments": segments.reindex(np.arange(found.mu.shape[0])).to_numpy(),
                "mu": found.mu,
            }
        )

    @classmethod
    def build(
        cls,
        selection: Selection,
        located: Located,
        view_id: str,
        dimensions: Dimensions,
        settings: BuildSettings,
    ) -> ClusterView:
        """Every selected segment crossing, in windows of the `window` duration."""
        seconds = int(dict(dimensions)["window"])
        points = selection.points
        return cls(
            view_id,
            dimensions,
            selection.n_users,
            points[C.USER].to_numpy().astype(np.int32),
            located.location,
            located.locations,
            window=local_bins(points[C.TIME].to_numpy(), seconds, settings.timezone),
            geometry=selection.geometry,
            window_seconds=seconds,
        )

    @classmethod
    def from_table(cls, stored: StoredTable) -> ClusterView:
        """Needs the segments' geometry (`wkt` in the locations table) and the CRS."""
        import shapely

        locations, crs = stored.locations, stored.crs
        if crs is None or "wkt" not in locations:
            raise ValueError("a clusters dataview needs its segments' geometry and CRS")
        seconds = int(dict(stored.dimensions)["window"])
        order = np.argsort(stored.user, kind="stable")
        geometry = project_lines(shapely.from_wkt(locations["wkt"].to_numpy(dtype=object)), crs)
        return cls(
            stored.view_id,
            stored.dimensions,
            stored.n_users,
            stored.user[order].astype(np.int32),
            stored.location[order].astype(np.int32),
            locations,
            window=table_bins(stored.table["window"], seconds)[order],
            geometry=geometry,
            window_seconds=seconds,
        )

    def _clustered_rows(self, found: Clusters) -> np.ndarray:
        return self._positions(found) >= 0

    def _positions(self, found: Clusters) -> np.ndarray:
        """Per row: its (window, segment)'s place among those of `found` (-1: none)."""
        key = pd.MultiIndex.from_arrays([found.window, found.segment])
        return key.get_indexer(pd.MultiIndex.from_arrays([self.window, self.location]))


def cluster_segments(
    user: np.ndarray,
    segment: np.ndarray,
    window: np.ndarray,
    geometry: np.ndarray,
    min_users: int,
    tolerance: float,
) -> Clusters:
    """Frequent segments per window, clustered at distance ≤ tolerance (see module)."""
    return clusters_of(crossing_frequency(user, segment, window), geometry, min_users, tolerance)


def crossing_frequency(user: np.ndarray, segment: np.ndarray, window: np.ndarray) -> pd.Series:
    """Per (window, segment) crossed: its distinct people, sorted by window, segment."""
    crossings = pd.DataFrame({"user": user, "segment": segment, "window": window})
    return crossings.drop_duplicates().groupby(["window", "segment"]).size()


def added(parts: list[pd.Series]) -> pd.Series:
    """`crossing_frequency` of parts of disjoint people, as the whole's."""
    if len(parts) == 1:
        return parts[0]
    return pd.concat(parts).groupby(level=["window", "segment"]).sum()


def least_risks(parts: Iterable[Crossers], min_users: int) -> Crossers:
    """Per (window, segment) of the parts (`crosser_risks` of disjoint people, or what
    this function made of some of them), its `min_users` least risks: window, segment,
    risk per row, sorted so."""
    window, segment, risk = (np.concatenate(column) for column in zip(*parts, strict=True))
    order = np.lexsort((risk, segment, window))
    window, segment, risk = window[order], segment[order], risk[order]
    start, size = _runs(window, segment)
    keep = np.arange(window.shape[0]) - np.repeat(start, size) < min_users
    return window[keep], segment[keep], risk[keep]


def thresholds(least: Crossers, min_users: int) -> np.ndarray:
    """Per (window, segment) of `least` (`least_risks`: its rows sorted so), ascending:
    the least risk r at
    which `min_users` of its crossers are at risk ≤ r (+inf: never) — its
    `min_users`-th least risk. The data the people at risk ≤ r keep is the pairs whose
    threshold is ≤ r (a cluster needs no other segment: module)."""
    window, segment, risk = least
    start, size = _runs(window, segment)
    found = np.full(start.shape[0], np.inf)
    frequent = size >= min_users
    found[frequent] = risk[start[frequent] + min_users - 1]
    return np.sort(found)


def _runs(window: np.ndarray, segment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first row and the length of each run of one (window, segment), sorted rows."""
    if window.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = (window[1:] != window[:-1]) | (segment[1:] != segment[:-1])
    start = np.flatnonzero(np.r_[True, change])
    return start, np.diff(np.r_[start, window.shape[0]])


def clusters_of(
    frequency: pd.Series, geometry: np.ndarray | None, min_users: int, tolerance: float
) -> Clusters:
    """The segments of `frequency` (`crossing_frequency`) crossed by `min_users` people
    or more, clustered per window at distance ≤ tolerance (see module)."""
    import shapely

    if geometry is None:
        raise ValueError("a clusters dataview needs segment geometry (input.format: segments)")
    frequent = frequency[frequency >= min_users]
    windows, segments, clusters, cluster_window, mu = [], [], [], [], []
    next_cluster = 0
    for w, group in frequent.groupby(level="window", sort=True):
        segs = group.index.get_level_values("segment").to_numpy()
        freq = group.to_numpy(dtype=float)
        tree = shapely.STRtree(geometry[segs])
        left, right = tree.query(geometry[segs], predicate="dwithin", distance=tolerance)
        graph = coo_matrix((np.ones(left.shape[0]), (left, right)), shape=(len(segs),) * 2)
        count, labels = connected_components(graph, directed=False)
        windows.append(np.full(len(segs), w))
        segments.append(segs)
        clusters.append(labels + next_cluster)
        cluster_window.append(np.full(count, w))
        mu.append(
            np.bincount(labels, weights=freq, minlength=count)
            / np.bincount(labels, minlength=count)
        )
        next_cluster += count
    if not windows:
        empty = np.zeros(0, dtype=np.int64)
        return Clusters(empty, empty, empty, empty, np.zeros(0))
    return Clusters(
        np.concatenate(windows),
        np.concatenate(segments).astype(np.int64),
        np.concatenate(clusters),
        np.concatenate(cluster_window),
        np.concatenate(mu),
    )


def _stamp(windows: np.ndarray, seconds: int) -> pd.Index:
    return pd.to_datetime(windows * seconds, unit="s").strftime("%Y-%m-%dT%H:%M:%S")
