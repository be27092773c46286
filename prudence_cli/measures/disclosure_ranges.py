"""Unicity's knowledge, classes and EM/KL-disclosure (measures/disclosure.py) made in
ranges of users where they are kept: on a Dask cluster, the ranges of a dataview kept
on the workers (dataviews/on_workers.py), whose rows never come to the assessing
process.

- **Knowledge**: each range draws its users' known bins from the same random stream a
  whole draw reads — a row's number is the row's place in the view, so a range starts
  the stream (PCG64) that many numbers ahead — and keeps them.
- **Classes** |E_i|: each range's users' known bins travel, a chunk at a time, to every
  worker holding ranges, which counts the members of each class among the users it
  holds; the counts are added up. No range's records leave its worker (a counting
  problem cut into shards would join the members of each shard on one worker: at 10M
  people, more than a worker of 5 GiB holds).
- **EM/KL**: the sampled users are drawn here from the stream after the knowledge's
  numbers, as a whole run draws them. For each chunk of them (EM_KL_CHUNK, so that the
  per-bin sums are added as a whole run adds them), their known bins are fetched from
  their ranges, every range counts the members it holds of each one's class and the bins
  those are active in (`member_bins`), and the assessing process adds the ranges'
  counts up (`em_kl_of_counts`): the same numbers, added in the same order, as the
  whole computation. What it holds is vectors per bin, and the counts of the bins of a
  group of classes of about FETCHED rows at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from prudence_cli.attacks.ranged import view_ranges
from prudence_cli.dataviews.base import CountedView, Dataview, ViewRange
from prudence_cli.engine import Elements, Engine
from prudence_cli.engine.jit import choose
from prudence_cli.measures import disclosure_sums as sums
from prudence_cli.measures.disclosure_sums import (
    Disclosure,
    bin_shares,
    chunks_added,
    class_members,
    draw_knowledge,
    em_kl_of_counts,
    finished,
    member_bins,
    postings,
    sampled_users,
)

# the bins' counts the ranges send back at once, about (a bin and a count each): the
# sampled users of a chunk are fetched in groups whose classes' members' rows — their
# class sizes × the mean row count — add up to about this
FETCHED = 1 << 22

# the seed of the knowledge's random stream: SeedSequence(entropy, spawn_key=key)
Seed = tuple[int, tuple[int, ...]]


@dataclass
class KnowledgeRange:
    """A range of users (the `first` among all, numbered from 0 here): their records (1
    per bin they are active in) and the bins of their knowledge."""

    first: int
    records: Elements
    known: Elements
    dimensionality: int  # a bins view's d (0: unknown, or not a bins view)
    _postings: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def last(self) -> int:
        return self.first + self.records.n_users

    def postings(self, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
        """The posting lists of the bins [0, n_bins) of the range's records (made once)."""
        if n_bins not in self._postings:
            self._postings.clear()
            post_offsets, post_users = postings(self.records, n_bins)
            small = np.int32 if post_users.shape[0] < 2**31 else np.int64  # held: half
            self._postings[n_bins] = post_offsets.astype(small), post_users.astype(np.int32)
        return self._postings[n_bins]


def disclosure_in_ranges(
    view: Dataview,
    points: int,
    weighted: bool,
    seed: Seed,
    engine: Engine,
    samples: int | None,
) -> tuple[Disclosure, int]:
    """measures.disclosure of the knowledge `draw_knowledge` draws (`points` bins a user,
    `weighted` by activity, from the stream of `seed`), made in the view's ranges of
    users on the engine's runner; and how many bins are known in all. The same numbers
    as drawing and counting the whole view; d is a bins view's dimensionality (as each
    range's view tells it; None where it is unknown, 0, or the view has none)."""
    runner = engine.runner
    first, ranges = view_ranges(view, runner)
    ahead = view.rows_before(first[:-1])  # the rows before each range
    before = {int(a): int(r) for a, r in zip(first[:-1], ahead, strict=True)}
    kept = runner.each_kept(_drawn, ranges, points, weighted, seed, before)
    del ranges  # each range's rows go once its knowledge is drawn
    n_bins, known, dimensionality = 0, 0, 0
    active = np.zeros(0, dtype=np.int64)
    for top, held, counts, d in runner.each_streamed(_census, kept):
        n_bins, known, dimensionality = max(n_bins, top + 1), known + held, max(dimensionality, d)
        active = np.r_[active, np.zeros(max(counts.shape[0] - active.shape[0], 0), np.int64)]
        active[: counts.shape[0]] += counts
    rows = view.rows
    choose(rows)
    sizes = _class_sizes(runner, kept, first, n_bins, engine.worker())
    present = view.in_view
    rng = _stream(seed, rows)  # past the knowledge's numbers
    users = sampled_users(present, samples, rng)
    q, untouched_kl = bin_shares(active, int(present.sum()))
    mean = rows / view.n_users if view.n_users else 0
    choose(int(sizes[users].sum() * mean))
    chunk = sums.EM_KL_CHUNK
    rows = (sizes[users] * mean).astype(np.int64)  # the rows of each one's class, about
    found = [
        _chunk(runner, kept, users[k : k + chunk], rows[k : k + chunk], q, untouched_kl, engine)
        for k in range(0, max(users.shape[0], 1), chunk)
    ]
    measures = finished(
        sizes, present, users, chunks_added(found), q, untouched_kl, n_bins, dimensionality or None
    )
    return measures, known


def _class_sizes(
    runner: Any, kept: list[Any], first: np.ndarray, n_bins: int, worker: tuple[int | None, bool]
) -> np.ndarray:
    """|E_i| per user (0 for a user without any bin): each range's users' knowledge,
    CLASSES users at a time, sent to every worker holding ranges, which counts the
    members it holds of each one's class (`class_members`); the counts added up. No
    range's records leave its worker."""
    sizes = np.zeros(int(first[-1]), dtype=np.int64)
    calls = (
        (held, (lo, min(lo + CLASSES, b - a), n_bins, worker))
        for held, a, b in zip(kept, first[:-1].tolist(), first[1:].tolist(), strict=True)
        for lo in range(0, b - a, CLASSES)
    )
    for users, counts in runner.checked(_queries, calls, _members_here, kept, _added):
        sizes[users] = counts
    return sizes


def _chunk(
    runner: Any,
    kept: list[Any],
    users: np.ndarray,
    rows: np.ndarray,
    q: np.ndarray,
    untouched_kl: np.ndarray,
    engine: Engine,
) -> tuple[np.ndarray, ...]:
    """`em_kl_sums` of the chunk of sampled `users`, from the ranges' counts, fetched in
    groups of about FETCHED `rows` of their classes (the per-bin sums added as one chunk
    adds them)."""
    n_bins = q.shape[0]
    em_sum, kl_sum, touched = np.zeros(n_bins), np.zeros(n_bins), np.zeros(n_bins)
    shares = (q, untouched_kl, float(q.sum()), float(untouched_kl.sum()))
    em_user, kl_user = np.zeros(users.shape[0]), np.zeros(users.shape[0])
    worker = engine.worker()
    cuts = np.searchsorted(np.cumsum(rows), np.arange(FETCHED, int(rows.sum()), FETCHED))
    bounds = np.unique(np.r_[0, cuts + 1, users.shape[0]]).tolist()  # each takes one
    for at, end in zip(bounds[:-1], bounds[1:], strict=True):
        fetched = users[at:end].astype(np.int64)
        lists = runner.each(_known_of, kept, fetched)  # each range's, in user order
        lengths = np.concatenate([length for length, _ in lists])
        q_offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        q_elements = np.concatenate([elements for _, elements in lists]).astype(np.int64)
        counted = runner.each(_members_of, kept, q_offsets, q_elements, n_bins, worker)
        members = np.stack([c[0] for c in counted])
        shift = np.cumsum([0] + [c[2].shape[0] for c in counted[:-1]])
        positions = np.stack([c[1] + s for c, s in zip(counted, shift, strict=True)])
        bins = np.concatenate([c[2] for c in counted])
        counts = np.concatenate([c[3] for c in counted])
        found = (members, positions, bins, counts, len(counted))
        em, kl = em_kl_of_counts(*found, *shares, em_sum, kl_sum, touched)
        em_user[at:end] = em
        kl_user[at:end] = kl
    return em_user, kl_user, em_sum, kl_sum, touched


def _drawn(
    rows: ViewRange, points: int, weighted: bool, seed: Seed, before: dict[int, int]
) -> KnowledgeRange:
    """The range's records and its users' knowledge, drawn from the whole draw's stream
    at the range's first row."""
    records = cast(CountedView, rows.view).elements()
    known = draw_knowledge(records, points, weighted, _stream(seed, before[rows.first]))
    ones = _ones(records.offsets, records.elements)
    d = int(getattr(rows.view, "dimensionality", 0))
    owners = np.repeat(np.arange(records.n_users), records.lengths)
    offsets = np.zeros(records.n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(owners[known], minlength=records.n_users), out=offsets[1:])
    return KnowledgeRange(rows.first, ones, _ones(offsets, records.elements[known]), d)


def _ones(offsets: np.ndarray, elements: np.ndarray) -> Elements:
    """Lists whose values are all 1 (no memory of their own: counting reads no value)."""
    return Elements(offsets, elements, np.broadcast_to(np.float64(1.0), elements.shape))


def _stream(seed: Seed, ahead: int) -> np.random.Generator:
    """The random stream of `seed` (numpy's default generator, PCG64), `ahead` numbers
    on: where a whole draw would be after that many rows' numbers."""
    bits = np.random.PCG64(np.random.SeedSequence(seed[0], spawn_key=seed[1]))
    bits.advance(ahead)
    return np.random.Generator(bits)


# a range's users whose knowledge goes to the workers at once to be counted
CLASSES = 1 << 16

# a class query as it travels: the known bins (offsets, bins), the users asking (among
# all), the number of bins and how the kernels run
Queries = tuple[np.ndarray, np.ndarray, np.ndarray, int, tuple[int | None, bool]]


def _queries(
    held: KnowledgeRange, lo: int, hi: int, n_bins: int, worker: tuple[int | None, bool]
) -> Queries:
    """The knowledge of the range's users [lo, hi) who know a bin, as class queries."""
    local = lo + np.flatnonzero(held.known.lengths[lo:hi] > 0)
    lengths, elements = _lists_of(held.known, local)
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    return offsets, elements.astype(np.int64), local + held.first, n_bins, worker


def _members_here(queries: Queries, *held: KnowledgeRange) -> np.ndarray:
    """The members of each query's class among the users of the ranges `held` (on one
    worker: a task whose kernels run as the planning process chose)."""
    from prudence_cli.engine.tasks import _as_planned

    offsets, elements, _, n_bins, worker = queries
    _as_planned(worker)
    counts = np.zeros(offsets.shape[0] - 1, dtype=np.int64)
    for part in held:
        records = part.records
        found = class_members(
            records.offsets, records.elements, *part.postings(n_bins), offsets, elements
        )
        counts += found
    return counts


def _added(queries: Queries, *counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The users asking, and their classes' members over every worker."""
    users = queries[2]
    return users, np.sum(counts, axis=0) if counts else np.zeros(users.shape[0], np.int64)


def _census(held: KnowledgeRange) -> tuple[int, int, np.ndarray, int]:
    """The range's largest bin, how many bins its users know, its users per bin, and its
    view's d."""
    elements = held.records.elements
    top, known = int(elements.max(initial=-1)), int(held.known.elements.shape[0])
    return top, known, np.bincount(elements), held.dimensionality


def _known_of(held: KnowledgeRange, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The known bins of those of `users` (ascending, among all) in the range: the
    length of each one's, and the bins one after the other."""
    return _lists_of(held.known, users[(users >= held.first) & (users < held.last)] - held.first)


def _lists_of(lists: Elements, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lists of `users` (ascending): the length of each, and their elements one
    after the other."""
    lengths = lists.lengths[users].astype(np.int64)
    before = np.cumsum(lengths) - lengths  # where each one's elements go
    at = np.repeat(lists.offsets[users] - before, lengths) + np.arange(int(lengths.sum()))
    return lengths, lists.elements[at]


def _members_of(
    held: KnowledgeRange,
    q_offsets: np.ndarray,
    q_elements: np.ndarray,
    n_bins: int,
    worker: tuple[int | None, bool],
) -> tuple[np.ndarray, ...]:
    """`member_bins` of the queries among the range's users (a task: its kernels run as
    the planning process chose)."""
    from prudence_cli.engine.tasks import _as_planned

    _as_planned(worker)
    records = held.records
    return member_bins(
        records.offsets, records.elements, *held.postings(n_bins), q_offsets, q_elements
    )
