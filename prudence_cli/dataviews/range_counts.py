"""What a view kept in ranges of users on the workers (dataviews/on_workers.py) tells of
its people from the counts each range keeps beside its rows (cluster_views.Built): per
person, its rows, and its visits and distinct places where they differ from its rows.
What is added up — its rows, who is in it, c(U, D) — comes of the few numbers each range
sent back when it was built; the rest is read range by range from the workers, as it is
asked for: who is in the view, its rows before a person, its coverage — as a vector over
U, or piece by piece as the ranges hold it (measures/per_risk.py), a few ranges at a
time in the assessing process's memory; never the view's rows, and counts kept for
every person only of a small view (at most on_workers.KEPT_COUNTS bytes of them)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from prudence_cli.cluster_views import Built
from prudence_cli.dataviews import coverage as covered

# exact below this: c(U, D) of whole numbers, as a float sum of the vector gives it
_EXACT_SUM = 2**53


class RangeCounts:
    """The people of a view kept in `ranges` (of |U| = `n_users` people), from the
    ranges' counts; `additive`: whether its data is a sum over people."""

    n_users: int

    @property
    def ranges(self) -> list[Built]:
        raise NotImplementedError

    @property
    def additive(self) -> bool:
        raise NotImplementedError

    def counts_of(
        self, field: str, which: Sequence[int] | None = None
    ) -> Iterator[tuple[Built, np.ndarray]]:
        """Each range's counts `field` per user (cluster_views.COUNTS), or those of the
        ranges numbered `which`, read from the worker keeping them, as they come."""
        raise NotImplementedError

    @property
    def offsets(self) -> np.ndarray:
        """As a Dataview's: user u's rows are [offsets[u], offsets[u + 1]) (8 bytes a
        person, made when asked: nothing of `assess` asks)."""
        out = np.zeros(self.n_users + 1, dtype=np.int64)
        np.cumsum(self._vector("rows", np.int64), out=out[1:])
        return out

    @property
    def rows(self) -> int:
        return sum(b.rows for b in self.ranges)

    @property
    def users_in_view(self) -> int:
        return sum(b.users_in_view for b in self.ranges)

    @property
    def in_view(self) -> np.ndarray:
        """Per user of U, whether they have a row in the view (a byte a person)."""
        out = np.zeros(self.n_users, dtype=bool)
        for first, last, held in self.in_view_pieces():
            out[first:last] = held
        return out

    def in_view_pieces(self) -> Iterator[tuple[int, int, np.ndarray]]:
        """`in_view` as each range holds it (its first person, its last + 1, whether each
        has a row), read from the workers as they come: no vector of them all."""
        for b, rows in self.counts_of("rows"):
            yield b.first, b.last, rows > 0

    def rows_before(self, users: np.ndarray) -> np.ndarray:
        """The view's rows of the users before each of `users` (ascending): of the
        ranges' totals, and the counts of the ranges they fall within."""
        order = sorted(range(len(self.ranges)), key=lambda k: _bounds(self.ranges[k]))
        totals = np.cumsum([0] + [self.ranges[k].rows for k in order])
        firsts = np.array([self.ranges[k].first for k in order], dtype=np.int64)
        users = np.asarray(users, dtype=np.int64)
        out = np.zeros(len(users), dtype=np.int64)
        within: dict[str, list[int]] = {}  # by range: the users inside it, not its first
        asked = []
        at = np.searchsorted(firsts, users, side="right") - 1  # the range each is in
        for j, (user, i) in enumerate(zip(users.tolist(), at.tolist(), strict=True)):
            if i < 0:
                continue
            b = self.ranges[order[i]]
            out[j] = totals[i + 1] if user >= b.last else totals[i]
            if b.first < user < b.last:
                if b.path not in within:
                    asked.append(order[i])
                within.setdefault(b.path, []).append(j)
        for b, rows in self.counts_of("rows", sorted(asked)):
            for j in within[b.path]:
                out[j] += int(rows[: users[j] - b.first].sum(dtype=np.int64))
        return out

    def coverage(self, kind: str) -> np.ndarray:
        """c({u}, D) per user, as the view's own (dataviews/coverage.py `counted`)."""
        covered.check_coverage(kind)
        return self._vector(_field(kind), float)

    def coverage_total(self, kind: str) -> float:
        """Dataview.coverage_total: an additive view's counts added up range by range, as
        integers — the vector's float sum, to the bit, below 2^53 — without the vector;
        anything else of the vector."""
        covered.check_coverage(kind)
        if self.additive:
            totals = [b.totals[_field(kind)] for b in self.ranges]
            if all(t is not None for t in totals):
                total = sum(t for t in totals if t is not None)
                if total < _EXACT_SUM:
                    return float(total)
        return float(self.coverage(kind).sum())

    def coverage_pieces(self, kind: str) -> Callable[[], Iterator[tuple[int, np.ndarray]]]:
        """`coverage` as each range holds it (its first person, its values), read from
        the workers at each pass: no vector of them all. A view that is not additive (a
        clusters view's coverage is its clusters') gives its vector."""
        if not self.additive:
            vector = self.coverage(kind)
            return lambda: iter([(0, vector)])
        covered.check_coverage(kind)
        field = _field(kind)

        def pieces() -> Iterator[tuple[int, np.ndarray]]:
            for b, values in self.counts_of(field):
                yield b.first, values

        return pieces

    def per_range(self, found: Sequence[np.ndarray]) -> np.ndarray:
        """Each range's values per user, `found` in the order of the ranges, for every
        user of U (users of no range, if any: 0)."""
        dtype = np.result_type(*found) if found else np.float64
        out = np.zeros(self.n_users, dtype=dtype)
        for b, values in zip(self.ranges, found, strict=True):
            out[b.first : b.last] = values
        return out

    def _vector(self, field: str, dtype: type) -> np.ndarray:
        """The ranges' counts `field`, for every user of U (users of no range, if any,
        hold nothing)."""
        out: np.ndarray = np.zeros(self.n_users, dtype=dtype)
        for b, values in self.counts_of(field):
            out[b.first : b.last] = values
        return out


def _bounds(b: Built) -> tuple[int, int]:
    return b.first, b.last


def _field(kind: str) -> str:
    """The counts (cluster_views.COUNTS) of the coverage `kind`."""
    return {"visits": "visits", "locations": "places"}.get(kind, "rows")
