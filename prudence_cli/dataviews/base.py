"""What every dataview has: an id, its dimension values, the user universe U, rows
sorted by user, and the locations they refer to (DESIGN.md section 4).

Each dataview class is one format (its name in `format`, registered in
dataviews/registry.py) and owns its whole life: `build` (from the selected points placed
on a grid or in regions), `table` (the rows the catalog and the ledger keep),
`from_table` (back from that table) and `concat` (one view of several releases to one
recipient). The data dimensions of a format live in config/dimensions.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa

from prudence_cli import columns as C
from prudence_cli.config.dimensions import dimension_label
from prudence_cli.dataviews import coverage as covered
from prudence_cli.engine.problem import Elements

if TYPE_CHECKING:
    from prudence_cli.select import Selection

Dimensions = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Pairs:
    """The distinct (user, location) pairs of the selected points, sorted by user, then
    location, with the visits (points) of each."""

    user: np.ndarray  # int32
    location: np.ndarray  # int32
    count: np.ndarray  # int32


@dataclass(frozen=True)
class Located:
    """The selected points placed on one grid (or on their towers, or in regions)."""

    location: np.ndarray  # int32 per point
    locations: pd.DataFrame  # label, lon, lat per location code
    pair_count: np.ndarray  # per point: visits of its (user, location) pair
    pairs: Pairs | None = None  # on a grid or towers: the pairs the points make
    # a range of users' points on a worker: the whole view's bins (bins.BinNumbering)
    bins: Any = None


@dataclass(frozen=True)
class ViewRange:
    """The rows of users [first, last) of a view, as a view of their own (users from 0)."""

    view: Dataview
    first: int
    last: int


@dataclass(frozen=True)
class BuildSettings:
    """What a build needs besides the points: the local clock of time bins, and where
    profiles split their period (UTC ns; None: the middle of the selected time span)."""

    timezone: str = "UTC"
    split: int | None = None
    # the configured select.period [start, end) in UTC ns; None: the data's first / last
    period: tuple[int | None, int | None] = (None, None)


@dataclass(frozen=True)
class StoredTable:
    """A dataview's table as the catalog or the ledger keeps it (see `Dataview.table`),
    its users and locations already coded in U and in `locations` (table order)."""

    view_id: str
    dimensions: Dimensions
    n_users: int
    user: np.ndarray  # code in U per table row
    location: np.ndarray  # code in `locations` per table row
    table: pd.DataFrame
    locations: pd.DataFrame
    crs: str | None = None


@dataclass(frozen=True)
class Dataview:
    """Rows sorted by user; user codes index `Selection.user_ids`; `location` codes index
    `locations` (label, lon, lat)."""

    id: str
    dimensions: tuple[tuple[str, Any], ...]
    n_users: int  # |U|: every selected user, including those absent from the view
    user: np.ndarray  # int32 per row
    location: np.ndarray  # int32 per row
    locations: pd.DataFrame = field(repr=False)

    format = "dataview"
    row_fields: ClassVar[tuple[str, ...]] = ("user", "location")  # per-row arrays
    additive: ClassVar[bool] = True  # the data of a group of people = the sum of theirs
    on_workers: ClassVar[bool] = False  # rows kept on Dask workers (on_workers.KeptView)
    # elements some attacks number over the whole view (trajectory: "visits", segments:
    # "triples"), which a range of its users must be given to number its own as the
    # whole view does: their codes' class (`of(call)`, see `numbering`), kept in the
    # view's `codes` field
    numberings: ClassVar[tuple[str, ...]] = ()
    codes_class: ClassVar[Any] = None
    # numbers the elements in blocks when its ranges are kept on workers (kept_codes)
    blocked_codes: ClassVar[Any] = None

    @cached_property
    def offsets(self) -> np.ndarray:
        """CSR offsets: user u's rows are [offsets[u], offsets[u + 1])."""
        out = np.zeros(self.n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.user, minlength=self.n_users), out=out[1:])
        return out

    @property
    def labels(self) -> dict[str, str]:
        """The dimension values as the catalog prints them: {"grid": "500m", ...}."""
        return {name: dimension_label(self.format, name, value) for name, value in self.dimensions}

    @property
    def shown(self) -> str:
        """The dimensions as `name=value ...`, for progress and messages."""
        return " ".join(f"{k}={v}" for k, v in self.labels.items())

    @property
    def users_in_view(self) -> int:
        return int(np.count_nonzero(np.diff(self.offsets)))

    @property
    def in_view(self) -> np.ndarray:
        """Per user of U, whether they have a row in the view."""
        return np.diff(self.offsets) > 0

    def in_view_pieces(self) -> Iterator[tuple[int, int, np.ndarray]]:
        """`in_view` in pieces of consecutive users (first, last + 1, mask), as a view kept
        in ranges gives it (RangeCounts.in_view_pieces): here, one piece."""
        yield 0, self.n_users, self.in_view

    def rows_before(self, users: np.ndarray) -> np.ndarray:
        """The view's rows of the users before each of `users` (ascending)."""
        return self.offsets[users]

    @property
    def frequency(self) -> int:
        return int(dict(self.dimensions).get("frequency", 1))

    def keep(self, rows: np.ndarray) -> Dataview:
        """The same view (same universe U) with only the rows where `rows` is True."""
        changes = {
            name: getattr(self, name)[rows]
            for name in self.row_fields
            if getattr(self, name) is not None
        }
        return replace(self, **changes)

    def users(self, first: int, last: int) -> Dataview:
        """The rows of users [first, last) as a view of their own, its users numbered from
        0 (same locations)."""
        lo, hi = int(self.offsets[first]), int(self.offsets[last])
        rows = {
            name: getattr(self, name)[lo:hi]
            for name in self.row_fields
            if getattr(self, name) is not None
        }
        rows["user"] = (self.user[lo:hi] - first).astype(self.user.dtype)
        return replace(self, n_users=last - first, **rows)

    @classmethod
    def numbering(cls, kind: str) -> Any:
        """The class of the numbering `kind` (one of `numberings`): its `part`, the method
        of each part of a view (the view itself; on Dask workers, each range kept there)
        whose results, in a list, its `of` makes the whole view's codes of; its `joined`
        makes one of two of those results (to join them two by two)."""
        if kind not in cls.numberings:
            raise ValueError(f"{cls.format} views number no {kind}")
        return cls.codes_class

    def numbered(self, kind: str, codes: Any = None) -> Dataview:
        """The view with its elements `kind` numbered by `codes` (default: its own, as a
        whole view): the numbers its ranges of users keep (`users`)."""
        if kind not in self.numberings:
            raise ValueError(f"{self.format} views number no {kind}")
        changes = {"codes": self._own_codes if codes is None else codes}
        return replace(self, **changes)

    @cached_property
    def _own_codes(self) -> Any:
        """Its own elements' codes, made once (each level of an attack asks again)."""
        return self.codes_class.of([getattr(self, self.codes_class.part)()])

    @property
    def rows(self) -> int:
        return int(self.user.shape[0])

    def used_locations(self) -> pd.DataFrame:
        """The locations table restricted to the locations the view holds."""
        return self.locations.iloc[self._used].reset_index(drop=True)

    @property
    def n_locations_used(self) -> int:
        """How many locations the view holds."""
        return int(self._used.shape[0])

    @cached_property
    def _used(self) -> np.ndarray:
        """The location codes the view holds, ascending."""
        n = max(len(self.locations), int(self.location.max(initial=-1)) + 1)
        return np.flatnonzero(np.bincount(self.location, minlength=n))

    def coverage(self, kind: str) -> np.ndarray:
        """c({u}, D) per user, for the coverage `kind`."""
        raise NotImplementedError

    def coverage_total(self, kind: str) -> float:
        """c(U, D) for the coverage `kind`: the sum of `coverage`."""
        return float(self.coverage(kind).sum())

    def coverage_pieces(self, kind: str) -> Callable[[], Iterable[tuple[int, np.ndarray]]]:
        """`coverage` as pieces of consecutive people (measures/per_risk.py): here, one,
        the whole vector, made once."""
        coverage = self.coverage(kind)
        return lambda: [(0, coverage)]

    def data_of(self, people: np.ndarray, kind: str) -> float:
        """The data the people of the mask `people` (over U) produce together."""
        return float(self.coverage(kind)[people].sum())

    def share_of(self, people: np.ndarray, kind: str) -> float:
        """The share of the view's data the people of the mask `people` hold (0 when the
        view holds none)."""
        total = self.data_of(np.ones(self.n_users, dtype=bool), kind)
        return self.data_of(people, kind) / total if total else 0.0

    def table(self, user_ids: np.ndarray) -> pd.DataFrame:
        """The dataview's rows with the original user ids (what the catalog keeps)."""
        raise NotImplementedError

    def table_parts(self, user_ids: np.ndarray, rows: int) -> Iterator[pd.DataFrame]:
        """`table` in parts of whole users, about `rows` rows each (one at least): one
        after the other, they are the table, whose text is never all held at once."""
        offsets = self.offsets
        cuts = np.searchsorted(offsets, np.arange(rows, int(offsets[-1]), rows))
        bounds = np.unique(np.r_[0, cuts, self.n_users]).tolist()
        if len(bounds) < 2:
            yield self.table(user_ids)
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            yield self.users(a, b).table(user_ids[a:b])

    def release_table(self, user_ids: np.ndarray) -> pd.DataFrame:
        """What a release of this dataview shares: its rows, unless the format shares an
        aggregate instead."""
        return self.table(user_ids)

    @classmethod
    def build(
        cls,
        selection: Selection,
        located: Located,
        view_id: str,
        dimensions: Dimensions,
        settings: BuildSettings,
    ) -> Dataview:
        """The view of the selected points `located` for one combination of dimension
        values."""
        raise NotImplementedError

    @classmethod
    def from_table(cls, stored: StoredTable) -> Dataview:
        """The view back from its stored table. Raises ValueError when the table cannot
        give one."""
        raise NotImplementedError

    @classmethod
    def concat(cls, views: Sequence[Dataview]) -> Dataview:
        """One view holding the rows of `views[0]` (the new release) and of the earlier
        releases after it, same format and universe, each view's locations kept apart."""
        raise ValueError(f"releases of {cls.format} dataviews cannot be joined")


@dataclass(frozen=True)
class CountedView(Dataview):
    """Rows of (user, location, count): a location (or bin) with how often the user was
    there. Rows sorted by user, then location id."""

    count: np.ndarray  # per row

    row_fields: ClassVar[tuple[str, ...]] = ("user", "location", "count")

    def elements(self) -> Elements:
        """Per user: locations (ascending ids) with their counts."""
        return Elements(self.offsets, self.location, self.count.astype(float))

    def coverage(self, kind: str) -> np.ndarray:
        """`locations` and `records` count the user's rows (one per user-location pair),
        `visits` sums their counts (`coverage.counted`)."""
        return covered.counted(self.user, self.count, self.n_users, kind)

    def table(self, user_ids: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            {
                C.USER: gathered(user_ids, self.user),
                C.LOCATION: gathered(self.locations["label"].to_numpy(), self.location),
                C.COUNT: self.count,
            }
        )

    @classmethod
    def from_table(cls, stored: StoredTable) -> Dataview:
        """Rows sorted by user, then location id, with their stored counts."""
        order = np.lexsort((stored.location, stored.user))
        return cls(
            stored.view_id,
            stored.dimensions,
            stored.n_users,
            stored.user[order].astype(np.int32),
            stored.location[order].astype(np.int32),
            stored.locations,
            count=stored.table["count"].to_numpy()[order].astype(np.int32),
            **cls.stored_fields(stored.table, order),
        )

    @classmethod
    def stored_fields(cls, table: pd.DataFrame, order: np.ndarray) -> dict[str, Any]:
        """The format's own per-row fields from its stored table, rows in `order`."""
        return {}


def gathered(labels: np.ndarray, codes: np.ndarray) -> Any:
    """labels[codes] as a table's text column: gathered by Arrow where pandas keeps text
    in Arrow (no Python string made per row: several times faster on millions of rows),
    else as objects. The same text either way."""
    if _ARROW_TEXT is not None:
        try:
            dictionary = pa.array(labels, type=pa.string(), from_pandas=True)
        except (pa.ArrowTypeError, pa.ArrowInvalid):  # labels that are not all text
            pass
        else:
            return pd.array(dictionary.take(pa.array(codes)), dtype=_ARROW_TEXT)
    return labels[codes]


def text_column(values: np.ndarray | pa.Array) -> Any:
    """A numpy or Arrow array of text as a table's text column (see `gathered`)."""
    if not isinstance(values, pa.Array):
        values = pa.array(values, type=pa.string())
    if _ARROW_TEXT is not None:
        return pd.array(values, dtype=_ARROW_TEXT)
    return values.to_numpy(zero_copy_only=False).astype(object)


def _arrow_text() -> Any:
    """The dtype pandas gives a column of Python strings, when Arrow holds it."""
    dtype = pd.Series(np.array(["text"], dtype=object)).dtype
    return dtype if getattr(dtype, "storage", None) == "pyarrow" else None


_ARROW_TEXT = _arrow_text()


V = TypeVar("V", bound=Dataview)


def same_class(views: Sequence[Dataview], cls: type[V]) -> list[V]:
    """The views that are instances of `cls` (all of them, for views of one format)."""
    return [v for v in views if isinstance(v, cls)]


@dataclass(frozen=True)
class JoinedRows:
    """The rows of several views one after the other; location codes index `locations`,
    the views' location tables one after the other, labels prefixed with the view id."""

    n_users: int
    user: np.ndarray
    location: np.ndarray
    locations: pd.DataFrame


def join_rows(views: Sequence[Dataview]) -> JoinedRows:
    n_users = max(v.n_users for v in views)
    offsets = np.cumsum([0] + [len(v.locations) for v in views])
    user = np.concatenate([v.user for v in views])
    location = np.concatenate([v.location + off for v, off in zip(views, offsets, strict=False)])
    locations = pd.concat(
        [v.locations.assign(label=f"{v.id}:" + v.locations["label"].astype(str)) for v in views],
        ignore_index=True,
    )
    return JoinedRows(n_users, user, location, locations)


def table_bins(stamps: pd.Series, seconds: int) -> np.ndarray:
    """Bin indexes from the bin starts written in a table (local wall clock)."""
    wall = pd.to_datetime(stamps).to_numpy().astype("datetime64[s]")
    return wall.astype(np.int64) // seconds
