"""The kernel warm-up `make test` runs at install: every counting attack on presence and
trajectory dataviews, with every engine strategy, runs on its tiny views; so do unicity,
evaluate, the attacks on randomized profiles and the sorts only large levels call."""

from __future__ import annotations

import pytest

from prudence_cli import warm
from prudence_cli.attacks.base import CountingAttack
from prudence_cli.attacks.registry import ATTACKS


@pytest.mark.parametrize("strategy", sorted(warm._ENGINES))
def test_the_warm_up_runs_every_counting_attack_it_can_view(strategy):
    warmed = {name.split(" ")[0] for name, _ in warm.warm(strategy)}
    others = {"unicity", "evaluate", "randomized", "orders"}
    assert (others <= warmed) is (strategy == "posting")
    warmed -= others
    expected = {
        name
        for name in ATTACKS
        if isinstance(ATTACKS[name], CountingAttack)
        and ATTACKS[name].formats & {"presence", "probability", "trajectory"}
    }
    assert warmed == expected
    assert {"presence", "visit", "location", "frequency", "probability"} <= warmed
