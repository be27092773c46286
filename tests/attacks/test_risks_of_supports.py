"""A level's supports made into its risks (attacks/base._counted): a range at a time, as
a ranged level's ranges tell who asked a query and a view kept in ranges who is in it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.attacks.base import _counted
from prudence_cli.engine import Engine, Support
from prudence_cli.engine.ranged import RangedProblem, split
from prudence_cli.engine.runner import LocalRunner
from tests.engine.test_engine import random_problem

pytestmark = pytest.mark.usefixtures("kernels")


class PiecedView:
    """Who is in a view, given in pieces of consecutive people as a view kept in ranges
    gives it (RangeCounts.in_view_pieces), each piece a mask of its own."""

    def __init__(self, held: np.ndarray, cuts: list[int]) -> None:
        self.held, self.cuts = held, cuts
        self.n_users = held.shape[0]
        self.users_in_view = int(held.sum())

    def in_view_pieces(self):
        for a, b in zip(self.cuts[:-1], self.cuts[1:], strict=True):
            yield a, b, self.held[a:b].copy()


def literal(minimum, queried, held, known) -> np.ndarray:
    """The definition, a person at a time: 1 for a person known at 1 who is in the view;
    else 1 / the least support of their queries; else, in the view without a query,
    hidden among all of its people; else (not in the view) 0."""
    risk = np.zeros(minimum.shape[0])
    with np.errstate(divide="ignore"):
        for u in range(minimum.shape[0]):
            if known is not None and known[u] and held[u]:
                risk[u] = 1.0
            elif queried[u]:
                risk[u] = np.divide(1.0, np.float64(minimum[u]))
            elif held[u]:
                risk[u] = 1.0 / max(int(held.sum()), 1)
    return risk


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(0, 40),
    ranges=st.integers(1, 5),
    pieces=st.integers(1, 4),
    knowing=st.booleans(),
)
def test_risks_made_range_by_range_are_the_definitions(seed, n, ranges, pieces, knowing):
    rng = np.random.default_rng(seed)
    problem = random_problem(rng, n, 9, 2)
    held = rng.random(n) < 0.8
    cuts = sorted({0, n, *rng.integers(0, n + 1, pieces - 1).tolist()})
    view = PiecedView(held, cuts)
    known = rng.random(n) < 0.2 if knowing else None
    minimum = Engine().min_support(problem).minimum
    expected = literal(minimum, problem.queries.size_hi > 0, held, known)
    with np.errstate(divide="ignore"):
        here = _counted(view, problem, Engine(), known).risk
        engine = Engine(runner=LocalRunner(shards=2))
        ranged = _counted(view, split(problem, engine.runner, ranges), engine, known).risk
    np.testing.assert_array_equal(here, expected)
    np.testing.assert_array_equal(ranged, expected)


class _Supports(Engine):
    """An engine whose supports are already counted: only the risks are made of them."""

    def __init__(self, minimum: np.ndarray) -> None:
        super().__init__(runner=LocalRunner())
        self.minimum = minimum

    def min_support(self, problem, floats=False):
        return Support(self.minimum, 0, False)


def test_risks_are_made_in_the_supports_with_a_range_held_at_a_time():
    """4M people in 16 ranges and 16 pieces of the view: beside the supports, which become
    the risks, at most a range's masks at a time — where who asked, who is in the view
    and who is neither were each a byte a person (12 MB)."""
    import tracemalloc

    n, count = 4_000_000, 16
    rng = np.random.default_rng(2)
    first = np.linspace(0, n, count + 1).astype(np.int64)
    asks = rng.random(n) < 0.9
    parts = [
        SimpleNamespace(problem=SimpleNamespace(queries=SimpleNamespace(size_hi=asks[a:b] * 2)))
        for a, b in zip(first[:-1], first[1:], strict=True)
    ]
    level = RangedProblem(parts, first, "contains", False, "subsets", True)
    view = PiecedView(rng.random(n) < 0.95, first.tolist())
    known = rng.random(n) < 0.1
    supports = rng.integers(1, 50, n).astype(np.float64)
    tracemalloc.start()
    try:
        risk = _counted(view, level, _Supports(supports), known).risk
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert risk is supports
    assert peak < n // 2
