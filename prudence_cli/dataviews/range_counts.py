"""What a view kept in ranges of users on the workers (dataviews/on_workers.py) tells of
its people from what each range sent back when it was built (cluster_views.Built): per
person, its rows and its visits and distinct places where they differ from its rows.
Who is in the view, its rows, its coverage — as a vector over U, added up, or piece by
piece as the ranges hold it (measures/per_risk.py) — without the view's rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property

import numpy as np

from prudence_cli.cluster_views import Built
from prudence_cli.dataviews import coverage as covered


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

    @cached_property
    def rows_per_user(self) -> np.ndarray:
        found = [b.rows for b in self.ranges]
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int32)

    @cached_property
    def offsets(self) -> np.ndarray:
        """As a Dataview's: user u's rows are [offsets[u], offsets[u + 1])."""
        out = np.zeros(self.n_users + 1, dtype=np.int64)
        np.cumsum(self._per_user(self.rows_per_user), out=out[1:])
        return out

    @property
    def rows(self) -> int:
        return sum(int(b.rows.sum(dtype=np.int64)) for b in self.ranges)

    # what reads who is in the view, or its rows before a range, reads the ranges' rows:
    # the offsets (8 bytes a person, in the assessing process) are made only when asked
    @property
    def users_in_view(self) -> int:
        return sum(int(np.count_nonzero(b.rows)) for b in self.ranges)

    @property
    def in_view(self) -> np.ndarray:
        """Per user of U, whether they have a row in the view (a byte a person)."""
        out = np.zeros(self.n_users, dtype=bool)
        for b in self.ranges:
            out[b.first : b.last] = b.rows > 0
        return out

    def rows_before(self, users: np.ndarray) -> np.ndarray:
        """The view's rows of the users before each of `users` (ascending)."""
        ranges = sorted(self.ranges, key=lambda b: b.first)
        totals = np.cumsum([0] + [int(b.rows.sum(dtype=np.int64)) for b in ranges])
        firsts = np.array([b.first for b in ranges], dtype=np.int64)
        out = np.zeros(len(users), dtype=np.int64)
        for k, user in enumerate(np.asarray(users, dtype=np.int64).tolist()):
            i = int(np.searchsorted(firsts, user, side="right")) - 1  # the range it is in
            if i >= 0:
                b = ranges[i]
                within = min(user, b.last) - b.first
                out[k] = totals[i] + int(b.rows[:within].sum(dtype=np.int64))
        return out

    def coverage(self, kind: str) -> np.ndarray:
        """c({u}, D) per user, as the view's own (dataviews/coverage.py `counted`)."""
        covered.check_coverage(kind)
        field = {"visits": "visits", "locations": "places"}.get(kind)
        out = np.zeros(self.n_users)  # each range's put in place: no copy of them all
        for b in self.ranges:
            found = None if field is None else getattr(b, field)
            out[b.first : b.last] = b.rows if found is None else found
        return out

    def coverage_total(self, kind: str) -> float:
        """Dataview.coverage_total: an additive view's counts added up range by range, as
        integers — the vector's float sum, to the bit, below 2^53 — without the vector;
        anything else of the vector."""
        if self.additive:
            held = [values for _, values in self.coverage_pieces(kind)()]
            if all(values.dtype.kind in "iu" for values in held):
                total = sum(int(values.sum(dtype=np.int64)) for values in held)
                if total < 2**53:
                    return float(total)
        return float(self.coverage(kind).sum())

    def coverage_pieces(self, kind: str) -> Callable[[], Iterator[tuple[int, np.ndarray]]]:
        """`coverage` as each range holds it (its first person, its values): no vector of
        them all. A view that is not additive (a clusters view's coverage is its
        clusters') gives its vector."""
        if not self.additive:
            vector = self.coverage(kind)
            return lambda: iter([(0, vector)])
        covered.check_coverage(kind)
        field = {"visits": "visits", "locations": "places"}.get(kind)

        def pieces() -> Iterator[tuple[int, np.ndarray]]:
            for b in self.ranges:
                found = None if field is None else getattr(b, field)
                yield b.first, b.rows if found is None else found

        return pieces

    def _per_user(self, values: np.ndarray) -> np.ndarray:
        """Values of the ranges' users, for every user of U (the ranges hold them all;
        users of no range, if any, hold nothing)."""
        out = np.zeros(self.n_users, dtype=values.dtype)
        at = 0
        for b in self.ranges:
            out[b.first : b.last] = values[at : at + b.last - b.first]
            at += b.last - b.first
        return out
