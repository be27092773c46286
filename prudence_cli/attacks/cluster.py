"""The attack on released segment clusters (Pratesi et al., PRUDEnce, section 4.3.1).

The attacker knows the time windows of all the target's movements (BK) and links the
target to the released clusters of those windows, weighted by their traffic index μ:
Risk(u) = W(clusters of BK crossed by u) / W(clusters of BK), with W the sum of μ
(Example 12: a person crossing every cluster of their windows is at risk 1). A person
whose windows hold no cluster has risk 0: nothing released can be linked to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from prudence_cli.attacks.base import Attack, AttackResult
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.dataviews.clusters import ClusterView
from prudence_cli.engine import Engine


class ClusterAttack(Attack[ClusterView]):
    name: ClassVar[str] = "cluster"
    # a person's risk reads their own crossings and the clusters of all: on Dask, made
    # in the ranges of a view kept on the workers (dataviews/kept_clusters.py)
    reads_kept: ClassVar[bool] = True

    def risks(
        self,
        view: ClusterView,
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
        computed: Mapping[str, np.ndarray] | None = None,
    ) -> AttackResult:
        risk, moves = view.cluster_risks()
        return AttackResult(risk, moves, False)
