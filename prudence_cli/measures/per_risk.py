"""A view's coverage summed per distinct risk: what the RAC curves and the i-RAC_D index
(measures/rac.py) read of it, when its sums are exact.

Coverage counts (rows, visits, distinct places) are whole numbers: below 2^53, every sum
of them is exact in floats, whatever its order. Summed per distinct risk, piece by piece
as the view holds them (a view built on the workers holds a piece per range of people),
they give the running sum of RAC_D in order of risk to the bit, without a vector of
coverage, or of the people's order, as long as the people: the assessing process's
memory at 1B people. Coverage with fractions is not summed here (`per_risk` is None).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

CHUNK = 1 << 18  # people at a time

# below this, sums of whole numbers in floats are exact whatever their order (2^53, with
# a margin for the bound's own rounding)
EXACT_BELOW = 2.0**52

# a view's coverage as pieces: (the first person, c({u}, D) of the people from there on),
# in any order, no two overlapping; people in no piece hold nothing. Called once per
# pass over them.
Pieces = Callable[[], Iterable[tuple[int, np.ndarray]]]


@dataclass(frozen=True)
class PerRisk:
    """Per distinct risk, increasing: the people at it and their coverage summed, and the
    people holding any coverage."""

    distinct: np.ndarray
    people: np.ndarray  # int64
    sums: np.ndarray
    in_view: int

    @property
    def total(self) -> float:
        """c(U, D): everyone's coverage (exact)."""
        return float(self.sums.sum())

    def weighted(self) -> float:
        """Σ c({u}, D)·(1 − Risk(u)) over U, of the per-risk sums (i-RAC_D's numerator)."""
        return float(np.dot(self.sums, 1.0 - self.distinct))


def per_risk(risk: np.ndarray, pieces: Pieces, chunk: int = CHUNK) -> PerRisk | None:
    """The coverage `pieces` summed per distinct value of `risk` (over U), `chunk` people
    at a time; None unless every sum of it is exact (whole numbers summing below 2^52)
    and no risk is NaN."""
    bound, in_view = 0.0, 0
    for _, values in pieces():
        for a in range(0, values.shape[0], chunk):
            c = values[a : a + chunk]
            if not np.array_equal(c, np.rint(c)):  # (NaN, too, is not equal to itself)
                return None
            bound += float(np.abs(c).sum(dtype=float))
            if not bound < EXACT_BELOW:  # (infinite coverage, too)
                return None
            in_view += int(np.count_nonzero(c > 0))
    n = risk.shape[0]
    found = []
    for a in range(0, n, chunk):
        some = risk[a : a + chunk]
        if np.isnan(some).any():
            return None
        found.append(np.unique(some))
    distinct = np.unique(np.concatenate([np.zeros(0), *found]))
    people = np.zeros(distinct.shape[0], dtype=np.int64)
    for a in range(0, n, chunk):
        people += np.bincount(np.searchsorted(distinct, risk[a : a + chunk]), minlength=len(people))
    sums = np.zeros(distinct.shape[0])
    for first, values in pieces():
        for a in range(0, values.shape[0], chunk):
            c = values[a : a + chunk]
            at = np.searchsorted(distinct, risk[first + a : first + a + c.shape[0]])
            sums += np.bincount(at, weights=c, minlength=len(sums))
    return PerRisk(distinct, people, sums, in_view)


def of_vector(coverage: np.ndarray) -> Pieces:
    """A coverage vector over U as pieces (one)."""
    return lambda: [(0, coverage)]


def vector_of(pieces: Pieces, n_users: int) -> np.ndarray:
    """The coverage vector over U of `pieces`, as floats (people in none: 0); a vector
    given whole is given back."""
    held = list(pieces())
    if len(held) == 1 and held[0][0] == 0 and held[0][1].shape[0] == n_users:
        return held[0][1].astype(float, copy=False)
    out = np.zeros(n_users)
    for first, values in held:
        out[first : first + values.shape[0]] = values
    return out
