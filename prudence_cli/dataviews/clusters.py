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
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Clusters:
    """Per (window, segment) of a cluster: its cluster id; per cluster its window and μ."""

    window: np.ndarray  # per clustered (window, segment)
    segment: np.ndarray
    cluster: np.ndarray
    cluster_window: np.ndarray  # per cluster
    mu: np.ndarray  # per cluster


@dataclass(frozen=True)
class ClusterView(Dataview):
    """Rows: one per segment crossed by a person in a window, sorted by person."""

    window: np.ndarray  # int64 window index per row (local clock)
    geometry: np.ndarray = field(repr=False)  # per location code: LineString in the CRS
    window_seconds: int = 3600

    format = "clusters"
    row_fields: ClassVar[tuple[str, ...]] = ("user", "location", "window")
    additive: ClassVar[bool] = False

    @property
    def min_users(self) -> int:
        return int(dict(self.dimensions).get("frequency", 1))

    @property
    def tolerance(self) -> float:
        return float(dict(self.dimensions).get("tolerance", 100.0))

    @cached_property
    def clusters(self) -> Clusters:
        return cluster_segments(
            self.user, self.location, self.window, self.geometry, self.min_users, self.tolerance
        )

    def data_of(self, people: np.ndarray, kind: str) -> float:
        """Segments inside the clusters computed from the data of `people` alone, each
        counted once per window. With a minimum cluster size of one every frequent
        segment is in a cluster, so this counts the (window, segment) pairs crossed by at
        least `frequency` of those people — no clustering needed."""
        check_coverage(kind)
        pair, owner = self._distinct_crossings
        counts = np.bincount(pair[people[owner]], minlength=int(pair.max(initial=-1)) + 1)
        return float(np.count_nonzero(counts >= self.min_users))

    @cached_property
    def _distinct_crossings(self) -> tuple[np.ndarray, np.ndarray]:
        """Per distinct (person, window, segment): its (window, segment) code, its person."""
        frame = pd.DataFrame({"u": self.user, "w": self.window, "s": self.location})
        frame = frame.drop_duplicates()
        pair, _ = pd.factorize(pd.MultiIndex.from_arrays([frame["w"], frame["s"]]))
        return pair.astype(np.int64), frame["u"].to_numpy()

    def coverage(self, kind: str) -> np.ndarray:
        """Per person: their crossings of clustered segments (a guide only; the view's
        data measure is `data_of`, which is not a sum over people)."""
        check_coverage(kind)
        clustered = self._clustered_rows()
        return np.bincount(self.user[clustered], minlength=self.n_users).astype(float)

    def crossings(self) -> pd.DataFrame:
        """Per row in a cluster: person, window, cluster."""
        found = self.clusters
        key = pd.MultiIndex.from_arrays([found.window, found.segment])
        position = key.get_indexer(pd.MultiIndex.from_arrays([self.window, self.location]))
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
        if selection.geometry is None:
            raise ValueError("a clusters dataview needs segment geometry (input.format: segments)")
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

    def _clustered_rows(self) -> np.ndarray:
        found = self.clusters
        key = pd.MultiIndex.from_arrays([found.window, found.segment])
        return key.get_indexer(pd.MultiIndex.from_arrays([self.window, self.location])) >= 0


def cluster_segments(
    user: np.ndarray,
    segment: np.ndarray,
    window: np.ndarray,
    geometry: np.ndarray,
    min_users: int,
    tolerance: float,
) -> Clusters:
    """Frequent segments per window, clustered at distance ≤ tolerance (see module)."""
    import shapely

    crossings = pd.DataFrame({"user": user, "segment": segment, "window": window})
    frequency = crossings.drop_duplicates().groupby(["window", "segment"]).size()
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
