"""The counting problem the engine solves, in its own words (no attack, no dataview).

Every user v holds a list of *elements* (e.g. locations, visits), each with a *value*
(e.g. a visit count or a share). A *query* of a target user u is an s-subset of u's
query elements — kept in list order when the problem is `ordered`, else sorted — with a
bound per element. Its *support* is the number of users v whose list *contains* the
query's elements, each matching its bound:

- ``dominance``: v's value ≥ the lower bound;
- ``box``: lower ≤ v's value ≤ upper;
- ``ratio``: v's value divided by v's value at the query's reference element lies in
  [lower, upper] (the reference is the query element with the largest value, ties to the
  first);
- ``contains``: no values; v's list contains the query's elements.

For unordered problems containment is set containment (elements are distinct per user
and sorted); for ordered ones it is subsequence containment (repeats allowed, values
unused): the query's elements appear in v's list in the same order.

How queries are drawn from u's query elements, by `queries.mode`:

- ``subsets``: every s-subset, s in [size_lo[u], size_hi[u]]; lower/upper bounds are the
  query elements' `lower` / `upper`;
- ``compositions``: every s-subset S and every way to write H_u = min(compose,
  Σ lower of u) as a sum of s positive parts, part i at most lower[i] (the sub-multisets
  of size H_u of a multiset with multiplicities `lower`);
- ``ratios``: every s-subset; bounds are value / value at the reference ∓ `delta`.

The engine returns, per user, the minimum support over the user's queries — an attack's
risk is then 1 / minimum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from prudence_cli.errors import BudgetError

_LARGEST_CODE = int(np.iinfo(np.int32).max)  # element codes are int32 (Elements.elements)

MATCHES = ("dominance", "box", "ratio", "contains")
MODES = ("subsets", "compositions", "ratios")
# `compose` of compositions that ask each target's whole multiset (H_u = Σ lower of u)
EVERY = int(np.iinfo(np.int64).max)


@dataclass(frozen=True)
class Elements:
    """Per-user element lists in CSR form: user u owns positions [offsets[u], offsets[u+1]).

    elements: int32 codes; values: float64 (counts, shares; zeros when unused).
    """

    offsets: np.ndarray
    elements: np.ndarray
    values: np.ndarray

    @property
    def n_users(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def __sizeof__(self) -> int:
        # what a Dask worker counts of it when it decides what to spill to disk
        return int(self.offsets.nbytes + self.elements.nbytes + self.values.nbytes)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @staticmethod
    def from_rows(
        n_users: int, user: np.ndarray, elements: np.ndarray, values: np.ndarray | None = None
    ) -> Elements:
        """CSR from rows already grouped by user (in the order each list should have).
        The engine numbers elements in 32 bits: a code beyond is refused (BudgetError),
        never wrapped into another element."""
        offsets = np.zeros(n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(user, minlength=n_users), out=offsets[1:])
        vals = np.zeros(len(elements)) if values is None else np.asarray(values, dtype=float)
        codes = np.asarray(elements)
        if codes.dtype != np.int32 and codes.size:
            Elements.check_codes(int(codes.max()))
        return Elements(offsets, codes.astype(np.int32, copy=False), vals)

    @staticmethod
    def check_codes(largest: int) -> None:
        """Refuses element codes up to `largest` that the engine cannot number in 32 bits
        (BudgetError)."""
        if largest > _LARGEST_CODE:
            raise BudgetError(
                f"{largest + 1:,} distinct elements (places, or visits at a place "
                f"and time) are more than the engine numbers ({_LARGEST_CODE + 1:,}): "
                "assess a coarser dataview (a larger grid or time granularity)"
            )

    def select(self, keep: np.ndarray) -> Elements:
        """The same users with only the positions where `keep` is True."""
        owners = np.repeat(np.arange(self.n_users), self.lengths)
        offsets = np.zeros(self.n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(owners[keep], minlength=self.n_users), out=offsets[1:])
        return Elements(offsets, self.elements[keep], self.values[keep])


@dataclass(frozen=True)
class QuerySpec:
    """Where targets' queries come from: their query elements and how to draw them."""

    elements: Elements  # the query elements; `values` are the lower bounds (or caps)
    size_lo: np.ndarray  # int64 per user; 0 = no query
    size_hi: np.ndarray  # int64 per user
    upper: np.ndarray | None = None  # per query element, for `box` subsets
    mode: str = "subsets"
    compose: int = 0  # H of the compositions mode (EVERY: a target's whole multiset)
    delta: float = 0.0  # tolerance of the ratios mode
    # per user, the sum of their whole query list's `values`, kept when the lists are cut
    # to suffixes (engine/shards.py): a composition's H_u is of the whole list
    list_totals: np.ndarray | None = None

    def totals(self) -> np.ndarray:
        """Per user, the sum of the values of their whole query list."""
        if self.list_totals is not None:
            return self.list_totals
        return segment_sums(self.elements.values, self.elements.offsets)


@dataclass(frozen=True)
class CountingProblem:
    members: Elements
    queries: QuerySpec
    match: str = "dominance"
    ordered: bool = False

    def __post_init__(self) -> None:
        if self.match not in MATCHES:
            raise ValueError(f"unknown match {self.match!r}")
        if self.ordered and self.match != "contains":
            raise ValueError("ordered problems match by containment only")
        if self.queries.mode not in MODES:
            raise ValueError(f"unknown query mode {self.queries.mode!r}")
        if self.members.n_users != self.queries.elements.n_users:
            raise ValueError("members and queries must cover the same users")

    @property
    def n_users(self) -> int:
        return self.members.n_users

    def __sizeof__(self) -> int:
        return nbytes(self)

    @property
    def self_queries(self) -> bool:
        """True when each target's queries are exactly its own member subsets (the same
        lists, bounds = own values): one enumeration then serves both sides."""
        spec = self.queries
        return (
            spec.elements is self.members
            and spec.mode == "subsets"
            and spec.upper is None
            and self.match in ("dominance", "contains")
        )


@dataclass(frozen=True)
class Support:
    """The engine's answer: minimum support per user (0 = no query) and how it was got."""

    minimum: np.ndarray
    instances: int  # instances enumerated, or checked when sampled (the sample counter)
    sampled: bool  # True: some supports come from drawn instances (risk: a lower bound)


def nbytes(*held: object) -> int:
    """The bytes of the arrays `held` hold (problems, their lists and queries, arrays),
    each array once: what a Dask worker is told they take (`__sizeof__`)."""
    seen: dict[int, int] = {}

    def walk(item: object) -> None:
        if isinstance(item, np.ndarray):
            seen[id(item)] = item.nbytes
        elif isinstance(item, CountingProblem):
            walk(item.members)
            walk(item.queries)
        elif isinstance(item, QuerySpec):
            for field in (item.elements, item.size_lo, item.size_hi, item.upper, item.list_totals):
                walk(field)
        elif isinstance(item, Elements):
            for array in (item.offsets, item.elements, item.values):
                walk(array)

    for item in held:
        walk(item)
    return sum(seen.values())


def whole_lists(spec: QuerySpec) -> None:
    """Refuses the queries of a shard (lists cut to suffixes, `list_totals` kept): what
    draws a target's queries or tells its whole record reads each whole list, and would
    read past a suffix into the next person's."""
    if spec.list_totals is not None:
        raise AssertionError("queries drawn or told whole from lists cut to a shard")


def segment_sums(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The sum of `values` of each list (CSR `offsets`)."""
    cumulative = np.concatenate([[0.0], np.cumsum(values, dtype=float)])
    return cumulative[offsets[1:]] - cumulative[offsets[:-1]]
