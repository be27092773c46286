"""Sampled instances of a level over the budget: explicit queries drawn per target and
checked exactly against the posting lists (so each found support is a true support, and
the minimum over the draws a lower bound of the target's risk).

The draws, per target, in order:

1. one deterministic query of its rarest elements (fewest holders first), the likeliest
   to be held by few users;
2. random queries (uniform positions, seeded), in rounds of doubling size, up to
   `sample` in all. A target whose support has reached 1 (risk 1, which no further draw
   can raise) leaves after its round: it draws no more.

The random numbers of a draw are a function of the level's key (drawn from the config's
seed), the round, the target and the draw's place (`uniforms`: SplitMix64 at that
point), not of the order in which targets are drawn: a target draws the same queries
wherever it is drawn, in whatever chunk, range of users or worker
(engine/ranged_sampled.py draws them where the level's ranges are).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from prudence_cli.arrays import GAMMA, mixed
from prudence_cli.engine import compiled
from prudence_cli.engine.indexes import _Postings
from prudence_cli.engine.problem import MODES, CountingProblem, whole_lists
from prudence_cli.engine.tasks import fold_results

_FIRST_ROUND = 4  # random draws per target in the first round; doubled each round


def sampled_widths(problem: CountingProblem) -> np.ndarray:
    """Per user: the size of the sampled queries (items in compositions mode), 0 for users
    without a query: the largest size, whose queries are the most specific."""
    spec = problem.queries
    whole_lists(spec)
    lengths = spec.elements.lengths
    if spec.mode == "compositions":
        usable = (spec.size_hi > 0) & (lengths > 0)
        return np.where(usable, np.minimum(spec.compose, spec.totals()), 0).astype(np.int64)
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
    key: int,
    support: np.ndarray,
    chunk_instances: int,
    checks: tuple[Checks, Any, Any] | None = None,
) -> int:
    """Draw up to 1 + n queries per target of `users` (see the module), with the random
    numbers of `key` (`uniforms`), check them against the members' `postings`, fold their
    supports into `support` (running minimum); returns how many were checked. `checks`
    — (run, the shared level data as `run` takes it, a worker setting) — checks them
    elsewhere, e.g. on a Dask cluster."""
    if users.size == 0 or n <= 0:
        return 0
    drawer = Drawer(problem, np.diff(postings.offsets), key)
    run = checks or (_here, (problem, postings), None)
    checked = 0
    for round_, k in rounds(n):
        users = users if round_ == 0 else users[support[users] > 1]
        if users.size == 0:
            break

        def write(
            chunk: np.ndarray, out: tuple[np.ndarray, ...], r: int = round_, k: int = k
        ) -> None:
            drawer.draw(r, k, chunk, chunk, out)

        checked += _check(users, drawer.widths, k, write, support, chunk_instances, run)
    return checked


def rounds(n: int) -> Iterator[tuple[int, int]]:
    """The rounds of a sampled count of up to `n` random queries a target, and the
    queries each draws a target: round 0 its rarest-elements query, then rounds of
    doubling size."""
    yield 0, 1
    drawn, size, round_ = 0, _FIRST_ROUND, 1
    while drawn < n:
        k = min(size, n - drawn)
        yield round_, k
        drawn += k
        size *= 2
        round_ += 1


class Drawer:
    """Writes the queries a level's targets draw (the module): of `problem`'s lists, the
    elements' holders `rarity` over the whole level (of each element, or of the elements
    `ids` only: those `problem` holds, ascending), the random numbers of `key`."""

    def __init__(
        self, problem: CountingProblem, rarity: np.ndarray, key: int, ids: np.ndarray | None = None
    ) -> None:
        spec = problem.queries
        q = spec.elements
        self.widths = sampled_widths(problem)  # of whole lists (`whole_lists`)
        upper = spec.upper if spec.upper is not None else np.full(q.values.shape, np.inf)
        self.common = (q.offsets, q.elements, q.values, upper)
        self.settings = (MODES.index(spec.mode), spec.compose, spec.totals(), spec.delta)
        # where each position's element's holders are in `rarity`
        self.held = q.elements if ids is None else _positions_in(ids, q.elements)
        self.rarity = rarity
        self.key = key

    def draw(
        self,
        round_: int,
        k: int,
        chunk: np.ndarray,
        named: np.ndarray,
        out: tuple[np.ndarray, ...],
    ) -> None:
        """The `k` queries a target of round `round_` (0: the rarest-elements one) of the
        targets `chunk` (rows of this problem), numbered `named` among all the level's
        targets (their random numbers are theirs), into `out`."""
        widths = self.widths[chunk]
        if round_ == 0:
            compiled.enumeration_kernels.rarest_queries(
                *self.common, chunk, widths, *self.settings, self.rarity, self.held, *out
            )
            return
        randoms = uniforms(self.key, round_, named, k, int(widths.max(initial=1)))
        compiled.enumeration_kernels.sample_queries(
            *self.common, chunk, widths, k, *self.settings, randoms, *out
        )


def _positions_in(ids: np.ndarray, elements: np.ndarray) -> np.ndarray:
    """Where each of `elements` is among `ids` (ascending, holding every one of them)."""
    at = np.searchsorted(ids, elements)
    return at.astype(np.int32) if ids.shape[0] < 2**31 else at


def uniforms(key: int, round_: int, targets: np.ndarray, k: int, width: int) -> np.ndarray:
    """The random numbers in [0, 1) of `k` draws of `width` positions of each of the
    `targets` (their numbers among the level's) in round `round_`: a row per (target,
    draw), target after target. Number (t, r, j, i) is SplitMix64's output at a point
    made of the key and of t, r, j, i alone: the same wherever it is drawn."""
    with np.errstate(over="ignore"):
        seed = np.uint64(key) ^ mixed((targets.astype(np.uint64) + np.uint64(1)) * GAMMA)
        seed = mixed(mixed(seed) + np.uint64(round_ + 1) * GAMMA)
        place = (np.arange(k, dtype=np.uint64)[:, None] << np.uint64(24)) + np.arange(
            width, dtype=np.uint64
        )
        z = mixed(seed[:, None, None] + (place[None] + np.uint64(1)) * GAMMA)
    return ((z >> np.uint64(11)).astype(np.float64) * 2.0**-53).reshape(-1, width)


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

    fold_results(support, run(verify_drawn, shared, chunks()))
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
