"""A level held in ranges of users (engine/ranged.py) and over the budget, sampled where
its ranges are: the supports that sampling the whole level gives (engine/sampling.py),
bit for bit, without the level ever being gathered.

- Whole-record targets, and targets with at most `sample` instances, are counted
  exactly, as a ranged level is (`ranged.counted`), the others' queries left out, and
  with the posting strategy the sampled count of a whole level takes.
- The other targets draw their queries in their ranges, on the range's worker, round
  after round (sampling.rounds): each range draws for those of its targets still above
  support 1, a chunk of targets at a time, with the holders of each element over the
  whole level and each target's own random numbers (sampling.uniforms): the queries a
  whole level's count draws.
- A query's support is the sum of its supports among the users of each range: every
  chunk of queries is checked against the posting lists of each range, on the worker
  holding the range (one task a worker, for all the ranges it holds), and the counts
  are added where the chunk was drawn, whose minimum per target comes back. So a worker
  holds its own ranges and their posting lists, never another's; each chunk of queries
  travels to every worker.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from prudence_cli.arrays import distinct
from prudence_cli.engine.blocks import in_blocks, looked_up
from prudence_cli.engine.indexes import _Postings, chosen_rows
from prudence_cli.engine.per_element import PerElement, element_runs, renumbered, smaller, whole_of
from prudence_cli.engine.plan import drawing_targets
from prudence_cli.engine.problem import CountingProblem, Support
from prudence_cli.engine.ranged import Engine, RangedProblem, Work, counted, unset, work
from prudence_cli.engine.ranged_shards import Part
from prudence_cli.engine.sampling import Drawer, rounds, sampled_widths
from prudence_cli.engine.tasks import fold_results, least_per_owner


def sampled_support(
    engine: Engine, ranged: RangedProblem, planned: Work, floats: bool = False
) -> Support:
    """The supports of a ranged level sampled (see the module), as Engine.min_support of
    the whole level gives them (as float64 with `floats`), with the instances it checks."""
    runner, sample = engine.runner, engine.sample or 0
    if ranged.ordered:  # it draws by each range's distinct holders (`_drawn_support`):
        planned.holders.release()  # not the plan's (8 bytes an element on a worker)
    # the exact share: whole records, and targets with at most `sample` instances
    parts = runner.each_kept(_exact_only, ranged.parts, sample)
    exact = RangedProblem(
        parts, ranged.first, ranged.match, ranged.ordered, ranged.mode, ranged.self_queries
    )
    exact_work = work(engine, exact)
    posting = [replace(plan, strategy="posting") for plan in exact_work.plans]
    exact_work = replace(exact_work, plans=posting)
    minimum = counted(engine, exact, exact_work, floats)
    del exact, parts
    checked = exact_work.whole + sum(plan.queries for plan in posting)
    # the drawn share, in rounds
    found = runner.each(_drawn, ranged.parts, sample)
    drawn = np.concatenate(
        [rows + first for rows, first in zip(found, ranged.first[:-1].tolist(), strict=True)]
        or [np.zeros(0, dtype=np.int64)]
    )
    if drawn.size:
        checked += _drawn_support(engine, ranged, planned, drawn, minimum)
    minimum[minimum == unset(minimum.dtype)] = 0
    return Support(minimum, checked, bool(drawn.size))


def _drawn_support(
    engine: Engine, ranged: RangedProblem, planned: Work, drawn: np.ndarray, minimum: np.ndarray
) -> int:
    """Fold the supports of the queries the `drawn` targets draw into `minimum`; returns
    how many queries were checked."""
    runner, at = engine.runner, planned.blocks
    n = planned.n_elements
    # each element's holders over the whole level: the plan's count of its places when no
    # list repeats one (unordered), else each range's distinct holders added up; in
    # blocks kept where they were added, as the plan's are
    kept = planned.holders.kept  # (let go of when ordered: `sampled_support`)
    if ranged.ordered:
        kept = runner.summed_blocks(_holder_blocks, ranged.parts, at.shape[0] - 1, at)
        if len(kept) == 1:
            kept = [runner.kept_on(kept[0], whole_of)]
    if len(kept) == 1:  # one block: whole, from where it is, to each range that draws
        rarities = [runner.share(kept[0])] * len(ranged.parts)
    else:  # each range given its own elements' holders only
        rarities = looked_up(runner, kept, at, ranged.parts)
        planned.holders.release()
    del kept
    posted = runner.each_kept(_posted, ranged.parts, n)
    widest = max(runner.each(_widest, ranged.parts), default=1)
    key = engine.sample_key()
    checked = 0
    active = drawn
    try:
        for round_, k in rounds(engine.sample or 0):
            if round_:
                active = active[minimum[active] > 1]
            if active.size == 0:
                break
            step = max(1, engine.partition_instances // max(k * widest, 1))
            calls = _calls(ranged, active, step, (round_, k, key), rarities)
            fold_results(minimum, runner.checked(_queries, calls, _counted_here, posted, _least))
            checked += int(active.size) * k
    finally:  # the ranges' drawers (and the level they read) are let go on their workers
        runner.each(_forget, ranged.parts)
    return checked


def _calls(
    ranged: RangedProblem, active: np.ndarray, step: int, drawing: tuple[Any, ...], rarities: list
) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """The draws of a round: each range's active targets (its rows), `step` at a time,
    each drawn by the range's holders of `rarities`."""
    first = ranged.first
    bounds = np.searchsorted(active, first)
    for r, part in enumerate(ranged.parts):
        rows = active[bounds[r] : bounds[r + 1]] - first[r]
        for a in range(0, rows.size, step):
            yield part, (rows[a : a + step], int(first[r]), *drawing, rarities[r])


# --- on a range's worker -----------------------------------------------------------------


def _exact_only(part: Part, sample: int) -> Part:
    """The range with the queries of its targets that draw (Engine._drawn) left out (of
    its problem too: counting takes its rest from it, ranged._prepared)."""
    drawn = drawing_targets(part.rest.queries, sample)
    if not drawn.any():
        return part

    def without(problem: CountingProblem) -> CountingProblem:
        spec = problem.queries
        lo, hi = np.where(drawn, 0, spec.size_lo), np.where(drawn, 0, spec.size_hi)
        return replace(problem, queries=replace(spec, size_lo=lo, size_hi=hi))

    return Part(without(part.problem), part.whole, without(part.rest))


def _drawn(part: Part, sample: int) -> np.ndarray:
    """The range's targets that draw (rows)."""
    return np.flatnonzero(drawing_targets(part.rest.queries, sample)).astype(np.int64)


def _holder_blocks(part: Part, at: np.ndarray) -> tuple[PerElement, ...]:
    """How many of the range's users hold each of the level's elements, once however
    often their sequence visits it (the whole level's posting lists' lengths are the
    sums of these), cut in blocks `at` (blocks.in_blocks)."""
    members = part.problem.members
    owners = np.repeat(np.arange(members.n_users, dtype=np.int64), members.lengths)
    pairs = distinct(members.elements.astype(np.int64) * max(members.n_users, 1) + owners)
    return in_blocks(PerElement.counted(pairs // max(members.n_users, 1), int(at[-1])), at)


def _widest(part: Part) -> int:
    return int(sampled_widths(part.rest).max(initial=1))


class _Posted:
    """A range's rest and the posting lists of its members, which its worker checks
    every chunk of queries against. When that takes much less memory than offsets over
    the level's `n` elements (per_element.smaller), the members' elements are numbered
    among the distinct ones the range holds (`ids`, in their order; a copy of its lists
    so numbered), so that the offsets go with those: a query with an element the range
    does not hold then has no support in it, unchecked, and the others are checked as
    numbered."""

    def __init__(self, part: Part, n: int) -> None:
        self.problem = part.rest
        members, distinct = part.problem.members, not part.problem.ordered
        self.ids: np.ndarray | None = None
        order = None
        if smaller(members.elements.nbytes, n * 8):  # else numbered lists alone are larger
            order, ids, runs = element_runs(members.elements)
            if smaller(members.elements.nbytes + ids.shape[0] * (8 + ids.itemsize), n * 8):
                self.ids, n = ids, ids.shape[0]
                members = renumbered(members, order, np.arange(n), runs)
        # else offsets over the level's elements are not much larger
        self.postings = _Postings(members, n, distinct, order if distinct else None)

    def verify(self, queries: tuple[np.ndarray, ...]) -> np.ndarray:
        """The supports of `queries` (CSR offsets, elements, bounds, references) among the
        range's users."""
        offsets, elements, lower, upper, refs = queries[:5]
        if self.ids is None:
            return self.postings.verify(self.problem, offsets, elements, lower, upper, refs)
        elements = elements[: offsets[-1]]  # the rest of a drawer's buffer is not a query's
        codes = np.searchsorted(self.ids, elements).astype(elements.dtype)  # as drawn: one
        held = codes < self.ids.shape[0]  # compiled kernel for both
        held[held] = self.ids[codes[held]] == elements[held]
        lengths = np.diff(offsets)
        owners = np.repeat(np.arange(lengths.shape[0]), lengths)
        missing = np.bincount(owners[~held], minlength=lengths.shape[0])
        counts = np.zeros(lengths.shape[0], dtype=np.int64)
        asked = np.flatnonzero((missing == 0) & (lengths > 0))
        if asked.size == 0:
            return counts
        kept, rows = chosen_rows(offsets, asked)
        found = self.postings.verify(
            self.problem, kept, codes[rows], lower[rows], upper[rows], refs[asked]
        )
        counts[asked] = found
        return counts

    def __sizeof__(self) -> int:  # for Dask's memory accounting
        postings, ids = self.postings, self.ids
        numbered = 0 if ids is None else ids.nbytes + postings.members.elements.nbytes
        return int(postings.users.nbytes + postings.offsets.nbytes + numbered)


def _posted(part: Part, n: int) -> _Posted:
    return _Posted(part, n)


# each range's drawer on this worker while the range is there (a worker's threads may
# draw for several at once): by the range's identity, never holding the range, and let
# go with it (spilled to disk, forgotten) or when its sampling ends (`_forget`)
_drawers: dict[int, tuple[weakref.ref[Part], Drawer]] = {}


def _drawer(part: Part, rarity: np.ndarray | PerElement, key: int) -> Drawer:
    ident = id(part)
    held = _drawers.get(ident)
    if held is not None and held[0]() is part and held[1].key == key:
        return held[1]
    if isinstance(rarity, PerElement):  # the range's own elements' (blocks.looked_up)
        drawer = Drawer(part.rest, rarity.values, key, rarity.ids)
    else:
        drawer = Drawer(part.rest, rarity, key)
    _drawers[ident] = (weakref.ref(part, lambda _: _drawers.pop(ident, None)), drawer)
    return drawer


def _queries(
    part: Part,
    rows: np.ndarray,
    first: int,
    round_: int,
    k: int,
    key: int,
    rarity: np.ndarray | PerElement,
) -> tuple[np.ndarray, ...]:
    """The queries the targets `rows` of the range (whose first user is `first`) draw in
    round `round_`, `k` each: (offsets, elements, lower, upper, references, owners among
    all users)."""
    drawer = _drawer(part, rarity, key)
    n_queries = rows.shape[0] * k
    capacity = int(drawer.widths[rows].sum()) * k
    out = (
        np.zeros(n_queries + 1, dtype=np.int64),
        np.empty(capacity, dtype=np.int32),
        np.empty(capacity),
        np.empty(capacity),
        np.empty(n_queries, dtype=np.int64),
        np.empty(n_queries, dtype=np.int64),
    )
    drawer.draw(round_, k, rows, rows + first, out)
    offsets, elements, lower, upper, refs, owners = out
    return offsets, elements, lower, upper, refs, owners + first


def _forget(part: Part) -> None:
    _drawers.pop(id(part), None)


def _counted_here(queries: tuple[np.ndarray, ...], *posted: _Posted) -> np.ndarray:
    """The supports of `queries` among the users of the ranges `posted` (on one worker)."""
    counts = np.zeros(queries[0].shape[0] - 1, dtype=np.int64)
    for found in posted:
        counts += found.verify(queries)
    return counts


def _least(queries: tuple[np.ndarray, ...], *counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each target's least support over its queries (the supports of each added up over
    the workers): the targets, and their least supports."""
    owners = queries[5]
    total = np.sum(counts, axis=0) if counts else np.zeros(owners.shape[0], dtype=np.int64)
    return least_per_owner(owners, total)
