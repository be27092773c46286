"""The unicity attack of the thesis on disclosure analysis of mobile-phone data (chapters 3-4) on
spatio-temporal bins.

The attacker knows p of the person's bins (`points`), drawn in proportion to the
person's activity in each (`draw: activity`, the thesis's model) or uniformly; the
candidates are the people active in all of them (the equivalence class E_i), so
Risk(u) = 1 / |E_u| and its mean over the people of the dataview is k-disclosure.
The level also reports unicity, EM- and KL-disclosure (with 95 % confidence intervals
from `samples` people) and the per-bin EM and KL (see measures/disclosure.py), averaged
over the view's dimensionality d: every space unit × time bin of the period (see
dataviews/bins.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import pandas as pd

from prudence_cli.attacks.base import Attack, AttackResult
from prudence_cli.attacks.ranged import in_ranges
from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.dataviews.base import CountedView
from prudence_cli.dataviews.bins import BinsView
from prudence_cli.engine import Engine
from prudence_cli.measures.disclosure import disclosure, disclosure_in_ranges, draw_knowledge


class UnicityAttack(Attack[CountedView]):
    name: ClassVar[str] = "unicity"
    # on several workers, its levels are made in ranges of users where they are counted:
    # each person's knowledge is drawn from the person's rows (measures/disclosure_ranges.py)
    local: ClassVar[bool] = True

    def risks(
        self,
        view: CountedView,
        level: KnowledgeLevel,
        engine: Engine,
        known_ones: np.ndarray | None = None,
        computed: Mapping[str, np.ndarray] | None = None,
    ) -> AttackResult:
        seed = (engine.seed, (*engine.seed_key, 3))
        weighted = level["draw"] == "activity"
        samples = None if level["samples"] == "all" else int(level["samples"])
        if in_ranges(self, engine):  # drawn and counted where the view's ranges are
            found, n_known = disclosure_in_ranges(
                view, level["points"], weighted, seed, engine, samples
            )
        else:
            # a bins view read back from a catalog or a ledger has no d (not stored: 0), and
            # a presence view none at all: there EM and KL average over the bins someone is in
            d = (view.dimensionality or None) if isinstance(view, BinsView) else None
            rng = np.random.default_rng(np.random.SeedSequence(seed[0], spawn_key=seed[1]))
            records = view.elements()
            known = draw_knowledge(records, level["points"], weighted, rng)
            found, n_known = disclosure(records, known, engine, samples, rng, d), int(known.sum())
        risk = np.zeros(view.n_users)
        present = found.class_size > 0
        risk[present] = 1.0 / found.class_size[present]
        # the labels as the table holds them (millions of bins: no Python string a bin)
        labels = view.locations["label"].array[: found.em_attribute.shape[0]]
        table = pd.DataFrame({"bin": labels, "em": found.em_attribute, "kl": found.kl_attribute})
        measures = {
            "unicity": found.unicity,
            "k_disclosure": found.k_disclosure,
            "em": found.em,
            "em_ci": found.em_ci,
            "kl": found.kl,
            "kl_ci": found.kl_ci,
            "sampled_people": float(found.sampled.shape[0]),
        }
        return AttackResult(risk, n_known, False, measures, {"disclosure": table})
