"""Sampled instances of a level over the budget: explicit queries drawn per target and
checked exactly against the posting lists (so each found support is a true support, and
the minimum over the draws a lower bound of the target's risk).

The draws, per target, in order:

1. one deterministic query of its rarest elements (fewest holders first), the likeliest
   to be held by few users;
2. random queries (uniform positions, seeded), in rounds of doubling size, up to
   `sample` in all. A target whose support has reached 1 (risk 1, which no further draw
   can raise) leaves after its round: it draws no more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from prudence_cli.engine import compiled
from prudence_cli.engine.indexes import _Postings, _segment_sums
from prudence_cli.engine.problem import MODES, CountingProblem

_FIRST_ROUND = 4  # random draws per target in the first round; doubled each round


def sampled_widths(problem: CountingProblem) -> np.ndarray:
    """Per user: the size of the sampled queries (items in compositions mode), 0 for users
    without a query: the largest size, whose queries are the most specific."""
    spec = problem.queries
    lengths = spec.elements.lengths
    if spec.mode == "compositions":
        totals = _segment_sums(spec.elements.values, spec.elements.offsets)
        usable = (spec.size_hi > 0) & (lengths > 0)
        return np.where(usable, np.minimum(spec.compose, totals), 0).astype(np.int64)
    width = np.minimum(spec.size_hi, lengths).astype(np.int64)
    return np.where((width >= np.maximum(spec.size_lo, 1)) & (width > 0), width, 0)


# checks chunks of drawn queries: (task, the level's shared data, each chunk's arguments),
# the results as they come (owners, supports); the engine runs them on its runner
Checks = Callable[[Callable[..., Any], Any, Iterator[tuple[Any, ...]]], Iterator[Any]]


def sample_support(
    problem: CountingProblem,
    postings: _Postings,
    users: np.ndarray,
    n: int,
    rng: np.random.Generator,
    support: np.ndarray,
    chunk_instances: int,
    checks: tuple[Checks, Any, Any] | None = None,
) -> int:
    """Draw up to 1 + n queries per target of `users` (see the module), check them against
    the members' `postings`, fold their supports into `support` (running minimum);
    returns how many were checked. The queries are drawn here, in order (the same draws
    wherever they are checked); `checks` — (run, the shared level data as `run` takes
    it, a worker setting) — checks them elsewhere, e.g. on a Dask cluster."""
    if users.size == 0 or n <= 0:
        return 0
    spec = problem.queries
    q = spec.elements
    widths = sampled_widths(problem)
    upper = spec.upper if spec.upper is not None else np.full(q.values.shape, np.inf)
    totals = _segment_sums(q.values, q.offsets)
    mode = MODES.index(spec.mode)
    common = (q.offsets, q.elements, q.values, upper)
    settings = (mode, spec.compose, totals, spec.delta)
    rarity = np.diff(postings.offsets)

    def rarest(chunk: np.ndarray, out: tuple[np.ndarray, ...]) -> None:
        compiled.enumeration_kernels.rarest_queries(
            *common, chunk, widths[chunk], *settings, rarity, *out
        )

    run = checks or (_here, (problem, postings), None)
    checked = _check(users, widths, 1, rarest, support, chunk_instances, run)
    active = users[support[users] > 1]
    drawn, size = 0, _FIRST_ROUND
    while active.size and drawn < n:
        k = min(size, n - drawn)

        def draw(chunk: np.ndarray, out: tuple[np.ndarray, ...], k: int = k) -> None:
            randoms = rng.random((chunk.shape[0] * k, int(widths[chunk].max(initial=1))))
            compiled.enumeration_kernels.sample_queries(
                *common, chunk, widths[chunk], k, *settings, randoms, *out
            )

        checked += _check(active, widths, k, draw, support, chunk_instances, run)
        drawn += k
        size *= 2
        active = active[support[active] > 1]
    return checked


def _check(
    users: np.ndarray,
    widths: np.ndarray,
    per_user: int,
    write: Callable[[np.ndarray, tuple[np.ndarray, ...]], None],
    support: np.ndarray,
    chunk_instances: int,
    checks: tuple[Checks, Any, Any],
) -> int:
    """`per_user` queries per user, written by `write` chunk by chunk (at most about
    `chunk_instances` query elements each), checked by `checks`, folded into `support`."""
    step = max(1, chunk_instances // max(per_user * int(widths[users].max(initial=1)), 1))
    run, shared, worker = checks

    def chunks() -> Iterator[tuple[Any, ...]]:
        for start in range(0, users.shape[0], step):
            chunk = users[start : start + step]
            n_queries = chunk.shape[0] * per_user
            capacity = int(widths[chunk].sum()) * per_user
            out = (
                np.zeros(n_queries + 1, dtype=np.int64),  # offsets
                np.empty(capacity, dtype=np.int32),  # elements
                np.empty(capacity),  # lower bounds
                np.empty(capacity),  # upper bounds
                np.empty(n_queries, dtype=np.int64),  # reference positions
                np.empty(n_queries, dtype=np.int64),  # owners
            )
            write(chunk, out)
            yield (*out, worker)

    for owners, counts in run(verify_drawn, shared, chunks()):
        compiled.group_kernels.scatter_min(support, owners, counts)
    return int(users.shape[0]) * per_user


def verify_drawn(
    shared: tuple[CountingProblem, _Postings],
    q_offsets: np.ndarray,
    q_elements: np.ndarray,
    q_lo: np.ndarray,
    q_hi: np.ndarray,
    q_ref: np.ndarray,
    q_owner: np.ndarray,
    worker: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """A chunk of drawn queries checked against the level's posting lists: their owners
    and supports (a task: on a worker, its kernels run as `worker` says)."""
    if worker is not None:
        from prudence_cli.engine.tasks import _as_planned

        _as_planned(worker)
    problem, postings = shared
    return q_owner, postings.verify(problem, q_offsets, q_elements, q_lo, q_hi, q_ref)


def _here(
    task: Callable[..., Any], shared: Any, arguments: Iterator[tuple[Any, ...]]
) -> Iterator[Any]:
    for args in arguments:
        yield task(shared, *args)
