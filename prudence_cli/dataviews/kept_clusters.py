"""A clusters view kept on the workers (dataviews/on_workers.py): each range of users'
crossings stay on the worker that holds its points. The clusters are made here from what
the ranges tell — per (window, segment), the distinct people who crossed it, added over
the ranges (a person is in one range) — and are small: the frequent segments of each
window. Each range then reads its people's risks and coverage against them, and the
data kept at each risk threshold from its crossers' least risks (dataviews/clusters.py):
the assessing process holds vectors per person, per (window, segment) its distinct
people, and per clustered one at most `frequency` risks; never a crossing."""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from typing import Any, cast

import numpy as np
import pandas as pd

from prudence_cli.dataviews import coverage as covered
from prudence_cli.dataviews.base import Dataview
from prudence_cli.dataviews.clusters import (
    ClusterDimensions,
    Clusters,
    ClusterView,
    Crossers,
    added,
    clusters_of,
    least_risks,
    thresholds,
)
from prudence_cli.dataviews.on_workers import KeptView


class KeptClusters(KeptView, ClusterDimensions):
    """A ClusterView whose crossings are on the workers, as one for the cluster attack
    (`cluster_risks`) and the measures (`coverage`, `data_at`, `data_of`)."""

    @property
    def geometry(self) -> np.ndarray | None:
        return self.placed.geometry

    @cached_property
    def clusters(self) -> Clusters:
        # the ranges' counts added in as they come, once they are as many as the sum's
        # (each count is added a few times at most, and not all are held at once)
        frequency: list[pd.Series] = []
        waiting: list[pd.Series] = []
        for _, part in self.each_called("segment_people", [()] * len(self.ranges)):
            waiting.append(part)
            if sum(len(w) for w in waiting) >= sum(len(f) for f in frequency):
                frequency, waiting = [added([*frequency, *waiting])], []
        frequency = [added([*frequency, *waiting])]
        return clusters_of(frequency[0], self.geometry, self.min_users, self.tolerance)

    @cached_property
    def _clusters_there(self) -> Any:
        """The clusters, sent once to the workers holding the ranges."""
        client = self.placed.kept.client
        workers = sorted({b.worker for b in self.ranges})
        (sent,) = client.scatter([self.clusters], workers=workers, broadcast=True, hash=False)
        return sent

    def _against_clusters(self, method: str) -> list[Any]:
        return self.called(method, [(self._clusters_there,)] * len(self.ranges))

    def cluster_risks(self) -> tuple[np.ndarray, int]:
        found = self._against_clusters("risks_against")
        return self.per_range([r for r, _ in found]), sum(moves for _, moves in found)

    def coverage(self, kind: str) -> np.ndarray:
        covered.check_coverage(kind)
        return self.per_range(self._against_clusters("clustered"))

    def data_at(self, risk: np.ndarray, points: np.ndarray, kind: str) -> np.ndarray:
        """ClusterView.data_at: each range's crossers' least risks, folded in as they come
        (at most `frequency` rows a clustered segment of a window held here)."""
        covered.check_coverage(kind)
        found = self._clusters_there
        arguments = [(risk[b.first : b.last], found) for b in self.ranges]
        least: Crossers = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        for _, part in self.each_called("crosser_risks", arguments):
            least = least_risks([least, part], self.min_users)
        limits = thresholds(least, self.min_users)
        return np.searchsorted(limits, points, side="right").astype(float)

    def data_of(self, people: np.ndarray, kind: str) -> float:
        """The pairs at least `frequency` of `people` crossed (ClusterView.data_of): those
        at threshold 0 when the others are at risk 1; for everyone, every clustered one."""
        if people.all():
            covered.check_coverage(kind)
            return float(self.clusters.segment.shape[0])
        at = self.data_at(np.where(people, 0.0, 1.0), np.zeros(1), kind)
        return float(at[0])

    def whole(self, users: np.ndarray | None = None) -> Dataview:
        return replace(cast(ClusterView, super().whole(users)), geometry=self.geometry)

    def close(self) -> None:
        if "_clusters_there" in self.__dict__:
            self.__dict__.pop("_clusters_there").release()
        super().close()
