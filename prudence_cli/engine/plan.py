"""Work planning of the counting engine: per-size instance counts and strategy, binomial
counts (decided in log space, saturating, never a table), the memory model of a partition
and the greedy partitioning of element ranges.

A plan is made of sums over users (`size_work`), so that a level held in ranges of users
(engine/ranged.py) is planned from each range's sums, as one whole level is from its own."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from prudence_cli.engine.problem import CountingProblem, Elements, QuerySpec

STRATEGIES = ("auto", "keyed", "posting")
_SATURATE = 2**62
_LOG_SATURATE = math.log(_SATURATE)
# memory model of a partition (bytes), measured on the kernels' arrays with sort buffers
_BYTES_PER_INSTANCE = 64  # owner, bounds reference, order and packed keys, sort scratch
_BYTES_PER_KEY_ELEMENT = 40  # per element of a key: id, value, bounds, a sorted copy
_BYTES_PER_ELEMENT = 48  # the level's data: lists, values, posting lists, start index
_BYTES_PER_USER = 40  # offsets, supports, partial results
_BYTES_PER_ELEMENT_ID = 16  # a shard's start indexes and posting lists: bounds per element id
_BYTES_PER_HELD_ID = 4  # a ranged level's shard: the level's id of each element it holds


def level_bytes(elements: int, users: int) -> int:
    """About the memory of a level's data: `elements` positions (members and queries)
    of `users`, with what its tasks derive from them (posting lists, start indexes)."""
    return _BYTES_PER_ELEMENT * elements + _BYTES_PER_USER * users


def shard_bytes(elements: int, users: int, n_elements: int) -> int:
    """About the memory of a shard of `elements` positions of a level of `users` and
    `n_elements` element ids, as its worker holds it (ranged_shards.ShardData, about half
    of this, with what its tasks derive from it)."""
    return level_bytes(elements, users) + _BYTES_PER_ELEMENT_ID * n_elements


def numbered_shard_bytes(elements: int, users: int, n_elements: int) -> int:
    """`shard_bytes` of a ranged level's shard, which numbers the elements it holds among
    themselves (ranged_shards.numbered): at most one a position, each with its id."""
    held = min(elements, n_elements)
    return shard_bytes(elements, users, held) + _BYTES_PER_HELD_ID * held


@dataclass(frozen=True)
class SizePlan:
    """The work for one query size: instance counts and the chosen strategy."""

    size: int
    members: int  # s-subsets of every user (keyed strategy)
    queries: int  # the targets' queries of this size
    posting_cost: int  # candidate checks of the posting strategy (estimate)
    strategy: str
    self_queries: bool = False  # keyed: the queries are the member subsets themselves

    @property
    def instances(self) -> int:
        if self.strategy == "posting":
            return self.queries
        return self.members + (0 if self.self_queries else self.queries)


# the elements `_partitions` takes at a time
_CHUNK = 1 << 20


def _partitions(weights: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Contiguous element ranges [lo, hi) with at most `budget` instances each (greedy).

    A single element with more instances than the budget forms a partition of its own.
    Elements of no work after the last partition with work are in none. Found by
    `Cutting`: a search of the running sums (a level can have tens of millions of
    elements), made a chunk at a time, where those are exact; else in turn."""
    weights = np.asarray(weights)
    if weights.shape[0] == 0:
        return []
    total = 0.0
    for _, running in _running(weights):
        total = float(running[-1])
    del running  # (a chunk's sums, not held while the weights are cut)
    exact = total < _EXACT and weights.min() >= 0 and _whole(weights)
    return Cutting(weights.shape[0], total, budget, exact).cut(weights)[0]


@dataclass
class Cutting:
    """The greedy partitions (`_partitions`) of a vector of `n` weights summing to
    `total`, given in turn a block of consecutive elements at a time (each where it is
    kept: blocks.py), and what is carried from one block to the next. Where the running
    sums are `exact` (whole weights, not negative, `total` below 2^53), each partition's
    end is searched in them, made a chunk at a time; else the weights are added one at a
    time, which is the definition. Each partition comes with the running sum at its end
    (shards.reached), and the total last: all that grouping them needs of the weights."""

    n: int
    total: float
    budget: int
    exact: bool
    lo: int = 0  # the open partition's first element
    base: float = 0.0  # exact: the running sum up to it
    acc: float = 0.0  # in turn: its weight
    before: float = 0.0  # the running sum up to the next block
    done: bool = False  # exact: no work is left after the last partition

    def cut(
        self, values: np.ndarray, ids: np.ndarray | None = None
    ) -> tuple[list[tuple[int, int]], np.ndarray]:
        """The partitions of the whole vector (`feed`, then `finish`) and their sums."""
        parts, reaches = self.feed(values, 0, ids)
        last, ends = self.finish()
        return parts + last, np.array(reaches + ends, dtype=np.float64)

    def feed(
        self, values: np.ndarray, start: int, ids: np.ndarray | None = None
    ) -> tuple[list[tuple[int, int]], list[float]]:
        """The partitions closed in the block of elements from `start` that holds
        `values` (at start + `ids`, ascending, zero elsewhere: exact only), with the
        running sum at each one's end. Blocks come in order, and each is given whole."""
        if not self.exact:
            return self._in_turn(values, start)
        if ids is not None:
            held = values != 0
            ids, values = (ids, values) if held.all() else (ids[held], values[held])
        parts: list[tuple[int, int]] = []
        reaches: list[float] = []
        for i, running in _running(values, self.before):  # running[j]: up to i + j, in
            while not self.done:
                # the first end past the budget: the partition closes before it, unless
                # it holds no work yet (then that element is alone, and closes after it)
                j = int(np.searchsorted(running, self.base + self.budget, side="right"))
                if j == running.shape[0]:
                    break  # in a later chunk, or none
                e = start + (i + j if ids is None else int(ids[i + j]))
                if (running[j - 1] if j else self.before) == self.base:
                    e, reached = e + 1, float(running[j])
                else:
                    reached = float(running[j - 1] if j else self.before)
                if e >= self.n:
                    self.done = True  # the open partition ends with the weights
                    break
                parts.append((self.lo, e))
                reaches.append(reached)
                self.lo, self.base = e, reached
                self.done = self.total <= self.base  # no work left
            if self.done:
                break
            self.before = float(running[-1])
        return parts, reaches

    def finish(self) -> tuple[list[tuple[int, int]], list[float]]:
        """The last partition, when it holds work, and its sum; the total last."""
        total = self.total if self.exact else self.before
        open_ = self.total > self.base if self.exact else self.acc > 0
        if self.lo < self.n and open_:
            return [(self.lo, self.n)], [total, total]
        return [], [total]

    def _in_turn(self, values: np.ndarray, start: int) -> tuple[list[tuple[int, int]], list]:
        parts, reaches = [], []
        for i, running in _running(values, self.before):
            chunk = values[i : i + running.shape[0]].tolist()
            for k, w in enumerate(chunk):
                if self.acc > 0 and self.acc + w > self.budget:
                    parts.append((self.lo, start + i + k))
                    # Σ weights[:e], as shards.reached makes it (sums_at)
                    reaches.append(float(running[k - 1]) if k else self.before)
                    self.lo, self.acc = start + i + k, 0.0
                self.acc += w
            self.before = float(running[-1])
        return parts, reaches


def held_partitions(
    ids: np.ndarray, values: np.ndarray, size: int, budget: int
) -> tuple[list[tuple[int, int]], np.ndarray] | None:
    """`_partitions` of the vector over `size` elements that is `values` at `ids`
    (ascending) and 0 elsewhere, and the running sum at each one's end and in all last
    (shards.reached), from those entries alone — or None where their sums are not exact
    (then only the whole vector is the definition). The elements between two held go
    with the partition before them, but for one held element over the budget alone,
    which closes right after itself: as `_partitions` cuts the whole vector."""
    if not exact_extent(values):
        return None
    return Cutting(size, float(values.sum(dtype=np.float64)), budget, True).cut(values, ids)


def exact_extent(values: np.ndarray) -> bool:
    """Whether `values`' sum is the same in any order: whole numbers, not negative, below
    2^53 in all."""
    total = float(values.sum(dtype=np.float64))  # (integers summed as such could wrap)
    return values.min(initial=0) >= 0 and _whole(values) and total < _EXACT


# running sums of whole numbers are exact below this
_EXACT = 2.0**53


def sums_at(weights: np.ndarray, ends: Sequence[int] | np.ndarray) -> np.ndarray:
    """The running sum of `weights` up to each of `ends` (ascending; Σ weights[:e] as
    float64), with no vector per element beside `weights` (`_running`)."""
    ends = np.asarray(ends, dtype=np.int64)
    found = np.zeros(ends.shape[0])
    total = 0.0
    for i, running in _running(weights):
        lo = int(np.searchsorted(ends, i + 1, side="left"))
        hi = int(np.searchsorted(ends, i + running.shape[0], side="right"))
        found[lo:hi] = running[ends[lo:hi] - i - 1]
        total = float(running[-1])
    found[ends > weights.shape[0]] = total
    return found


def _running(weights: np.ndarray, carry: float = 0.0) -> Iterator[tuple[int, np.ndarray]]:
    """The running sum of `weights` (float64) after `carry`, `_CHUNK` elements at a time:
    (i, the sums of weights[: i + 1] to weights[: i + chunk]). A chunk at a time, since
    numpy would copy weights received unaligned (a Dask worker's frame) whole to sum them
    at once."""
    for i in range(0, weights.shape[0], _CHUNK):
        running = np.cumsum(weights[i : i + _CHUNK], dtype=np.float64)
        running += carry
        carry = float(running[-1])
        yield i, running


def _whole(weights: np.ndarray) -> bool:
    """Whether every weight is a whole number."""
    if weights.dtype.kind in "iub":
        return True
    step = _CHUNK
    return all(
        np.array_equal(chunk, np.floor(chunk))
        for chunk in (weights[i : i + step] for i in range(0, weights.shape[0], step))
    )


def _partitions_in_turn(weights: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """`_partitions`, adding one element at a time (`_CHUNK` at a time as Python
    floats)."""
    weights = np.asarray(weights)
    return Cutting(weights.shape[0], 0.0, budget, False).cut(weights)[0]


@lru_cache(maxsize=1 << 16)
def binomial(n: int, k: int) -> int:
    """C(n, k), saturating at 2**62. Whether it fits is decided from the closed form in log
    space (lgamma), so a count that would not fit is never formed; below that it is exact,
    by the multiplicative formula with every intermediate under 2**63 (no big integers).
    Cached: each distinct (n, k) is worked out once."""
    if n < 0 or k < 0 or k > n:
        return 0
    k = min(k, n - k)
    log = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    if log > _LOG_SATURATE + 1e-9:
        return _SATURATE
    value = 1
    for i in range(1, k + 1):  # value = C(n - k + i, i), exactly; k < 63 here
        m = n - k + i
        value = (value // i) * m + (value % i) * m // i
        if value >= _SATURATE:
            return _SATURATE
    return value


def _binomials(n: np.ndarray, s: int) -> np.ndarray:
    """C(n, s) per entry, saturating at 2**62: one `binomial` per distinct value (or per
    value up to the largest, when that is fewer than the entries: no sort then)."""
    n = np.asarray(n, dtype=np.int64)
    top = int(n.max(initial=-1))
    if top < n.shape[0]:
        table = np.array([binomial(v, s) for v in range(top + 1)] + [0], dtype=np.int64)
        return table[np.where(n >= 0, n, top + 1)]
    values, inverse = np.unique(n, return_inverse=True)
    counts = np.array([binomial(int(v), s) for v in values.tolist()], dtype=np.int64)
    return counts[inverse.reshape(-1)]


def _saturating_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.minimum(a.astype(float) * b.astype(float), _SATURATE).astype(np.int64)


def _sum_binomials(n: np.ndarray, s: int) -> int:
    """Σ C(n_i, s), saturating at 2**62 (summed in floating point)."""
    values, counts = np.unique(np.asarray(n, dtype=np.int64), return_counts=True)
    total = sum(float(binomial(int(v), s)) * int(c) for v, c in zip(values, counts, strict=True))
    return int(min(total, _SATURATE))


def _gb(n_bytes: float) -> str:
    if n_bytes >= 1e9:
        return f"{n_bytes / 1e9:.2f} GB"
    return f"{n_bytes / 1e6:.1f} MB"


def plan_cost(
    problem: CountingProblem, whole: np.ndarray, plans: list[SizePlan], bounded: int = 1
) -> int:
    """See `Engine.cost`: what the plans do, and the whole-record queries' elements."""
    whole_elements = float(problem.queries.elements.lengths[whole].sum())
    return work_cost(problem.match, whole_elements, plans, bounded)


def work_cost(match: str, whole_elements: float, plans: list[SizePlan], bounded: int = 1) -> int:
    """The cost of `plans` and of whole-record queries of `whole_elements` elements in all;
    an instance counted by bounds (dominance, boxes, ratios) weighs `bounded` instances."""
    weight = 1 if match == "contains" else bounded
    work = whole_elements + sum(
        float(plan.posting_cost if plan.strategy == "posting" else weight * plan.instances)
        for plan in plans
    )
    return int(min(_SATURATE, work))


def _asks(spec: QuerySpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per user: whether it asks any query, and its smallest and largest query size."""
    lo = np.maximum(spec.size_lo, 1)
    hi = np.minimum(spec.size_hi, spec.elements.lengths)
    return lo <= hi, lo, hi


def _query_sizes(spec: QuerySpec) -> np.ndarray:
    """The query sizes some target asks: s in [max(size_lo, 1), min(size_hi, length)]."""
    asks, lo, hi = _asks(spec)
    if not asks.any():
        return np.zeros(0, dtype=np.int64)
    cover = np.zeros(int(hi[asks].max()) + 2, dtype=np.int64)
    np.add.at(cover, lo[asks], 1)
    np.add.at(cover, hi[asks] + 1, -1)
    return np.flatnonzero(np.cumsum(cover) > 0)


def _per_target(spec: QuerySpec, s: int) -> tuple[np.ndarray, np.ndarray]:
    """The targets asking queries of size s, and how many each asks (saturating; in
    compositions mode C(L, s) · C(H_u - 1, s - 1), an upper bound)."""
    lengths = spec.elements.lengths
    targets = (spec.size_lo <= s) & (s <= spec.size_hi) & (lengths >= s)
    per_target = _binomials(lengths[targets], s)
    if spec.mode == "compositions":
        h_u = np.minimum(spec.compose, spec.totals()[targets]).astype(np.int64)
        per_target = _saturating_mul(per_target, _binomials(np.maximum(h_u - 1, 0), s - 1))
    return targets, per_target


def _instances_per_target(spec: QuerySpec) -> tuple[np.ndarray, np.ndarray]:
    """Targets with any query, and each one's number of queries over every size."""
    counts = np.zeros(spec.size_hi.shape[0])
    for s in _query_sizes(spec).tolist():
        targets, per_target = _per_target(spec, s)
        counts[targets] += per_target.astype(float)
    return _asks(spec)[0], counts


def drawing_targets(spec: QuerySpec, sample: int) -> np.ndarray:
    """The targets a sampled count draws queries for: those with more than `sample`
    instances; each of the others has all of its instances checked."""
    targets, counts = _instances_per_target(spec)
    return np.asarray(targets & (counts > sample))


def size_work(problem: CountingProblem, holders: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per query size of `sizes`, the sums over the users of `problem` that its plan is
    made of (floating point, as counts saturate): the targets' queries, the members'
    subsets, and the posting strategy's candidate checks, from `holders`, the number of
    users holding each element in the whole level."""
    spec = problem.queries
    q = spec.elements
    member_lengths = problem.members.lengths
    held = holders[q.elements] if q.elements.size else q.elements.astype(np.int64)
    rarest = _segment_min(held, q.offsets)
    del held
    work = np.zeros((len(sizes), 3))
    for i, s in enumerate(np.asarray(sizes).tolist()):
        targets, per_target = _per_target(spec, s)
        per_target = per_target.astype(float)
        work[i, 0] = per_target.sum()
        work[i, 1] = _sum_binomials(member_lengths, s)
        work[i, 2] = float(np.dot(per_target, rarest[targets] * s))
    return work


def size_plans(
    sizes: np.ndarray, work: np.ndarray, self_queries: bool, strategy: str
) -> list[SizePlan]:
    """The plan of each query size from the sums of `size_work` (of the whole level, or
    added up over its ranges): instance counts, and the strategy (`auto`: the cheaper)."""
    plans = []
    for s, (queries, members, posting) in zip(
        np.asarray(sizes).tolist(), work.tolist(), strict=True
    ):
        queries, members = int(min(_SATURATE, queries)), int(min(_SATURATE, members))
        posting = int(min(_SATURATE, posting))
        keyed = members + (0 if self_queries else queries)
        chosen = strategy
        if chosen == "auto":
            chosen = "posting" if posting < keyed else "keyed"
        plans.append(SizePlan(s, members, queries, posting, chosen, self_queries))
    return plans


def _segment_min(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Minimum per CSR segment; _SATURATE for empty segments."""
    out = np.full(offsets.shape[0] - 1, _SATURATE, dtype=np.int64)
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    if nonempty.size:
        out[nonempty] = np.minimum.reduceat(values, offsets[nonempty])
    return out


def begun_at(offsets: np.ndarray, positions: np.ndarray, owners: np.ndarray, s: int) -> np.ndarray:
    """How many s-subsets of its list begin at each of `positions` (of lists `owners`, CSR
    `offsets`): C(r, s - 1), r the positions after it in its list."""
    return _binomials(offsets[owners + 1] - 1 - positions, s - 1)


def first_weights(
    lists: Elements,
    owners: np.ndarray,
    begun: np.ndarray,
    n_elements: int,
    users: np.ndarray | None = None,
) -> np.ndarray:
    """Number of s-subsets per first element, from those `begun` at each position (of
    lists `owners`), optionally only for `users` (a weight per user)."""
    weights = begun.astype(float)
    if users is not None:
        weights *= users[owners]
    return np.bincount(lists.elements, weights=weights, minlength=n_elements)
