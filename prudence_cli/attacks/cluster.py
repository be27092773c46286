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
import pandas as pd

from prudence_cli.attacks.base import Attack, AttackResult
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.dataviews.clusters import ClusterView
from prudence_cli.engine import Engine


class ClusterAttack(Attack[ClusterView]):
    name: ClassVar[str] = "cluster"

    def risks(
        self,
        view: ClusterView,
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
        computed: Mapping[str, np.ndarray] | None = None,
    ) -> AttackResult:
        found = view.clusters
        mu_of_window = pd.Series(found.mu).groupby(found.cluster_window).sum()
        moves = pd.DataFrame({"user": view.user, "window": view.window}).drop_duplicates()
        known = moves.groupby("user")["window"].apply(
            lambda w: float(mu_of_window.reindex(w.to_numpy()).fillna(0.0).sum())
        )
        crossed = view.crossings()[["user", "cluster"]].drop_duplicates()
        linked = (
            pd.Series(found.mu[crossed["cluster"].to_numpy()], index=crossed["user"].to_numpy())
            .groupby(level=0)
            .sum()
        )
        risk = np.zeros(view.n_users)
        total = known.reindex(np.arange(view.n_users)).fillna(0.0).to_numpy()
        mine = linked.reindex(np.arange(view.n_users)).fillna(0.0).to_numpy()
        positive = total > 0
        risk[positive] = mine[positive] / total[positive]
        return AttackResult(risk, int(moves.shape[0]), False)
