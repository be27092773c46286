"""Sums of floats that do not depend on how the terms are split or ordered: each sum is
kept exactly, as an integer count of the smallest double (2**-1074, in units of
2**-1126 so that every double is a whole number of them), and rounded once, to the
nearest double (ties to even), when it is read.

So a measure summed over the people of one process, or over ranges of people on several
Dask workers whose exact sums are then added, gives the same bits (the mobility
comparisons, measures/distributions.py and measures/kept_compare.py). The rounding is
also the best there is: numpy's pairwise sums lose up to log2(n) bits.

How: each double's bits give its integer mantissa M (|M| < 2**53) and its exponent;
M is cut into a high and a low part of 26 and 27 bits, and the parts are
added per exponent with `np.bincount`, whose float64 sums of such integers are exact
below 2**53 (so 2**26 terms a call). The few thousand exponents' sums are then added as
Python integers. About 15 ns a term.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

_UNITS = 1126  # every finite double is an integer multiple of 2**-1126 (its units)
_LOW = 27  # bits of a mantissa's low part
_SLOTS = 2098  # exponents of doubles, as slots: a term is M × 2**(slot − 1126)
_BLOCK = 1 << 16  # terms taken at a time (buffers that stay in the CPU's cache)
_EXACT = 1 << 26  # terms whose parts' per-slot float64 sums stay exact (below 2**53)


@dataclass(frozen=True)
class ExactSum:
    """A sum of doubles held exactly: `units` × 2**-1126, and whether a NaN, +inf or
    −inf was among the terms. Sums are added with `+`; `float()` rounds once."""

    units: int = 0
    nan: bool = False
    plus_inf: bool = False
    minus_inf: bool = False

    def __add__(self, other: ExactSum) -> ExactSum:
        return ExactSum(
            self.units + other.units,
            self.nan or other.nan,
            self.plus_inf or other.plus_inf,
            self.minus_inf or other.minus_inf,
        )

    def __float__(self) -> float:
        """The sum rounded to the nearest double; NaN, ±inf as IEEE addition gives them
        (inf − inf is NaN), and ±inf when the exact sum overflows a double."""
        if self.nan or (self.plus_inf and self.minus_inf):
            return float("nan")
        if self.plus_inf or self.minus_inf:
            return float("inf") if self.plus_inf else float("-inf")
        try:
            return float(Fraction(self.units, 1 << _UNITS))  # correctly rounded
        except OverflowError:
            return float("inf") if self.units > 0 else float("-inf")


def exact_sum(values: np.ndarray) -> ExactSum:
    """The exact sum of `values` (any shape, converted to float64)."""
    terms = np.ascontiguousarray(values, dtype=np.float64).ravel()
    finite = np.isfinite(terms)
    flags = {}
    if not finite.all():
        odd = terms[~finite]
        flags = {
            "nan": bool(np.isnan(odd).any()),
            "plus_inf": bool((odd == np.inf).any()),
            "minus_inf": bool((odd == -np.inf).any()),
        }
        terms = terms[finite]
    return ExactSum(_units(terms), **flags)


def _units(terms: np.ndarray) -> int:
    """The exact sum of finite `terms`, in units of 2**-1126: each term's mantissa M
    cut into M = high × 2**27 + low, both parts summed per exponent slot in float64
    (exact while fewer than 2**26 terms are summed), then added as integers."""
    highs, lows = np.zeros(_SLOTS), np.zeros(_SLOTS)
    units, since = 0, 0
    slot = np.empty(_BLOCK, dtype=np.int64)
    mantissa = np.empty(_BLOCK, dtype=np.int64)
    part = np.empty(_BLOCK)
    for start in range(0, terms.shape[0], _BLOCK):
        bits = terms[start : start + _BLOCK].view(np.int64)
        n = bits.shape[0]
        s, m, p = slot[:n], mantissa[:n], part[:n]
        np.right_shift(bits, 52, out=s)
        np.bitwise_and(s, 0x7FF, out=s)  # the exponent field: 0 for zero and subnormals
        np.bitwise_and(bits, (1 << 52) - 1, out=m)
        np.bitwise_or(m, 1 << 52, out=m, where=s != 0)  # a normal's implicit bit
        np.negative(m, out=m, where=bits < 0)
        np.maximum(s, 1, out=s)  # |term| = M × 2**(max(field, 1) − 1075)
        s += _UNITS - 1075
        np.right_shift(m, _LOW, out=p, casting="unsafe")  # floor: low is ≥ 0
        highs += np.bincount(s, weights=p, minlength=_SLOTS)
        np.bitwise_and(m, (1 << _LOW) - 1, out=p, casting="unsafe")
        lows += np.bincount(s, weights=p, minlength=_SLOTS)
        since += n
        if since + _BLOCK > _EXACT or start + _BLOCK >= terms.shape[0]:
            units += _added(highs, lows)
            highs[:], lows[:], since = 0, 0, 0
    return units


def _added(highs: np.ndarray, lows: np.ndarray) -> int:
    """Per slot, the sums of the high and low parts, added as integers."""
    units = 0
    for at in np.flatnonzero((highs != 0) | (lows != 0)).tolist():
        units += ((int(highs[at]) << _LOW) + int(lows[at])) << at
    return units


def sum_of(values: np.ndarray) -> float:
    """`exact_sum(values)` rounded: the correctly rounded sum, whatever the order."""
    return float(exact_sum(values))
