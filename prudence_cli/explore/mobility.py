"""What a release at each risk threshold still tells an analyst, from a catalog: per
dataview and counted attack level, the mobility measures (measures/mobility.py) on the
people at risk ≤ t against the whole dataview, and their correlation with risk
(Pellungrini et al., Analyzing Privacy Risk in Human Mobility Data, sections 5.2–5.3).

`prudence assess` computes them for every dataview and level (`view_mobility`) and stores
the tables in the catalog; `catalog_mobility` reads them back when they hold what is
asked, and computes them from the dataview's files otherwise (other thresholds or
measures, or a catalog assessed before they were stored): the same numbers either way."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from prudence_cli.catalog import Catalog, CatalogWriter
from prudence_cli.catalog.query import Levels, dataview_entries
from prudence_cli.catalog.records import DataviewEntry, MobilityEntry
from prudence_cli.config.mobility import MEASURES, PERSON_MEASURES, THRESHOLDS, MobilityConfig
from prudence_cli.errors import CatalogError
from prudence_cli.measures.mobility import Measured, Profile, measures_for, visits_of

if TYPE_CHECKING:
    from prudence_cli.dataviews.base import Dataview
    from prudence_cli.dataviews.on_workers import KeptView
    from prudence_cli.select import IdsKept

# rows of a dataview from which `assess` measures it while its attacks run (Measurer)
BACKGROUND_ROWS = 200_000


@dataclass(frozen=True)
class Mobility:
    distortion: pd.DataFrame  # dataview, dimensions, level, threshold, kind, measure, ks, ...
    correlation: pd.DataFrame  # dataview, dimensions, level, measure, pearson, spearman, people
    skipped: tuple[str, ...]  # dataviews whose format has no places to measure


@dataclass(frozen=True)
class ViewMobility:
    """One dataview's measures (`profile`) and, per attack level, their distortion by
    risk threshold and their correlation with risk."""

    profile: Measured
    distortion: pd.DataFrame
    correlation: pd.DataFrame


def view_mobility(
    view: Dataview,
    crs: str,
    trips: bool,
    risks: Mapping[str, np.ndarray],
    keys: Mapping[str, str],
    thresholds: Sequence[float] = THRESHOLDS,
    measures: Sequence[str] | None = None,
) -> ViewMobility | None:
    """The tables of one dataview under each level of `risks` (level key → per-person
    risk), every row starting with the columns `keys` (dataview and dimensions); None
    when the format holds no places."""
    profile = view_profile(view, crs, trips, measures)
    return None if profile is None else levels_mobility(profile, risks, keys, thresholds)


def view_profile(
    view: Dataview, crs: str, trips: bool, measures: Sequence[str] | None = None
) -> Measured | None:
    """A dataview's measures, which no risk changes (None when its format holds no
    places)."""
    if view.on_workers:  # measured where its rows are
        from prudence_cli.measures.kept_mobility import kept_profile  # Dask's: only then

        return kept_profile(cast("KeptView", view), crs, measures, trips)
    visits = visits_of(view, crs, trips)
    return None if visits is None else Profile(visits, measures)


def levels_mobility(
    profile: Measured,
    risks: Mapping[str, np.ndarray],
    keys: Mapping[str, str],
    thresholds: Sequence[float] = THRESHOLDS,
) -> ViewMobility:
    """`view_mobility` from the dataview's measures."""
    levels = list(risks)
    distortion, correlation = profile.compared([risks[level] for level in levels], thresholds)
    return ViewMobility(
        profile, _keyed(distortion, levels, keys), _keyed(correlation, levels, keys)
    )


def _keyed(frames: list[pd.DataFrame], levels: list[str], keys: Mapping[str, str]) -> pd.DataFrame:
    """The frames of each level one after the other, the columns `keys` and `level` first."""
    if not frames:
        return pd.DataFrame()
    joined = pd.concat(frames, ignore_index=True)
    level = np.repeat(np.array(levels, dtype=object), [len(f) for f in frames])
    return pd.concat([pd.DataFrame({**keys, "level": level}, index=joined.index), joined], axis=1)


def catalog_mobility(
    catalog: Catalog,
    levels: Levels,
    where: Sequence[str] = (),
    thresholds: Sequence[float] = THRESHOLDS,
    measures: Sequence[str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    stored_tables: bool = True,
) -> Mobility:
    """The distortion tables of every dataview kept by `where`, under each level of
    `levels` (a person's risk at that level decides whether they are in D_t): those
    `assess` stored when they hold what is asked (unless not `stored_tables`), else
    computed from the dataviews' files."""
    crs = catalog.record.selection.crs
    if crs is None:
        raise CatalogError(
            f"{catalog.path}: the catalog records no projection; run prudence assess again"
        )
    entries = dataview_entries(catalog, where)
    stored = _stored(catalog, thresholds, measures) if stored_tables else None
    if stored is not None:
        return _kept(stored, entries, levels, thresholds, measures)
    distortion, correlation, skipped = [], [], []
    for done, entry in enumerate(entries):
        if progress is not None:
            progress(done, len(entries), f"measuring {entry.id}")
        risks = catalog.risks(entry.id)
        found = view_mobility(
            catalog.view(entry.id)[0],
            crs,
            catalog.trips,
            {level.key: risks[level.key].to_numpy(dtype=float) for _, level in levels},
            {"dataview": entry.id, **{k: str(v) for k, v in entry.dimensions.items()}},
            thresholds,
            measures,
        )
        if found is None:
            skipped.append(entry.id)
            continue
        distortion.append(found.distortion)
        correlation.append(found.correlation)
    if progress is not None:
        progress(len(entries), len(entries), "measured")
    return Mobility(_joined(distortion), _joined(correlation), tuple(skipped))


def _stored(
    catalog: Catalog, thresholds: Sequence[float], measures: Sequence[str] | None
) -> Mobility | None:
    """The tables `assess` stored, when they hold every threshold and measure asked."""
    entry = catalog.record.mobility
    if entry is None:
        return None
    has = MEASURES if entry.measures is None else entry.measures
    if not set(measures or MEASURES) <= set(has):
        return None
    if any(not np.isclose(entry.thresholds, t, rtol=0, atol=1e-12).any() for t in thresholds):
        return None
    distortion, correlation = catalog.mobility_tables()
    skipped = tuple(e.id for e in catalog.dataviews if e.measures is None)
    return Mobility(distortion, correlation, skipped)


def _kept(
    stored: Mobility,
    entries: Sequence[DataviewEntry],
    levels: Levels,
    thresholds: Sequence[float],
    measures: Sequence[str] | None,
) -> Mobility:
    """The stored rows asked for, in the order computing them gives: dataview, level,
    threshold as asked, then the measures as `measures_for` orders them."""
    views = [e.id for e in entries]
    keys = [level.key for _, level in levels]
    # person measures first, then location measures, each in the order asked
    chosen = measures_for(True, measures)
    order = [m for m in chosen if m in PERSON_MEASURES] + [
        m for m in chosen if m not in PERSON_MEASURES
    ]

    def kept(frame: pd.DataFrame, by_threshold: bool) -> pd.DataFrame:
        if frame.empty:
            return frame
        rank = {
            "dataview": {v: i for i, v in enumerate(views)},
            "level": {k: i for i, k in enumerate(keys)},
            "measure": {m: i for i, m in enumerate(order)},
        }
        ranks = pd.DataFrame({c: frame[c].map(r) for c, r in rank.items()})
        if by_threshold:
            at = frame["threshold"].to_numpy(dtype=float)
            ranks["threshold"] = np.nan
            for i, t in enumerate(thresholds):
                ranks.loc[np.isclose(at, t, rtol=0, atol=1e-12), "threshold"] = i
        wanted = ranks.notna().all(axis=1).to_numpy()
        by = ["dataview", "level", *(["threshold"] if by_threshold else []), "measure"]
        ordered = ranks[wanted].sort_values(by, kind="stable").index
        out = frame.loc[ordered].reset_index(drop=True)
        if by_threshold:  # the thresholds as asked, not as stored
            out["threshold"] = [thresholds[int(i)] for i in ranks.loc[ordered, "threshold"]]
        return out

    skipped = tuple(v for v in views if v in stored.skipped)
    return Mobility(kept(stored.distortion, True), kept(stored.correlation, False), skipped)


class _Measuring(threading.Thread):
    """`view_profile` in a daemon thread; `profile` waits for it and gives its result,
    or raises what it raised."""

    def __init__(self, view: Dataview, crs: str, trips: bool, measures: Sequence[str] | None):
        super().__init__(name="prudence-measures", daemon=True)
        self._arguments: tuple[Any, ...] | None = (view, crs, trips, measures)
        self._profile: Measured | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        assert self._arguments is not None
        try:
            self._profile = view_profile(*self._arguments)
        except BaseException as exc:  # noqa: BLE001 - raised again by `profile`
            self._error = exc
        finally:
            self._arguments = None  # the view goes with the thread's last reference

    def profile(self) -> Measured | None:
        self.join()
        if self._error is not None:
            raise self._error
        return self._profile


def _joined(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


class Measurer:
    """What `assess` measures, one dataview at a time as its risks come: each dataview's
    measures into `measures/` of the catalog, the tables of all of them at `finish`.

    A large dataview's measures (`view_profile`: they do not depend on risk) may be
    computed in a thread while its attacks run (`start`): numpy lets go of the GIL in its
    array loops, the attacks' sorts among them. (The compiled kernels keep it: letting go
    of it made the attacks slower on two cores, their threads then sharing the cores with
    the measures.) Only the comparison under each level's risks waits for the risks.
    `assess` starts it for its last view, once the selected points are let go: beside
    them, measuring two trajectory views of 100,000 people each in the thread raised the
    peak memory by 12% for no time gained. The thread is a daemon and writes nothing: a
    run that fails or is interrupted exits without waiting for it."""

    def __init__(self, setting: MobilityConfig, crs: str | None, writer: CatalogWriter) -> None:
        self.setting = setting
        self.crs = crs
        self.writer = writer
        self.distortion: list[pd.DataFrame] = []
        self.correlation: list[pd.DataFrame] = []
        self.seconds = 0.0  # spent measuring while no attack ran
        self._started: tuple[Dataview, _Measuring] | None = None

    @property
    def enabled(self) -> bool:
        return self.setting.enabled and self.crs is not None

    def start(self, view: Dataview) -> None:
        """Begin measuring `view` in a thread, when it is large enough to gain."""
        if not self.enabled or view.rows < BACKGROUND_ROWS or view.on_workers:
            return  # (a view kept on the workers is measured once gathered, in `add`)
        assert self.crs is not None
        measuring = _Measuring(view, self.crs, self.setting.trips, self.setting.measures)
        measuring.start()
        self._started = (view, measuring)

    def add(
        self,
        view: Dataview,
        user_ids: np.ndarray | IdsKept,
        risks: Mapping[str, np.ndarray],
        keys: Mapping[str, str],
    ) -> str | None:
        """Measure `view` under each level of `risks`; the name of its measures file in
        the catalog, None when nothing is measured (the setting, or no places)."""
        if not self.enabled:
            return None
        assert self.crs is not None
        started = time.perf_counter()
        if self._started is not None and self._started[0] is view:
            profile = self._started[1].profile()
        else:
            profile = view_profile(view, self.crs, self.setting.trips, self.setting.measures)
        self._started = None
        if profile is None:
            self.seconds += time.perf_counter() - started
            return None
        found = levels_mobility(profile, risks, keys, self.setting.thresholds)
        labels = view.locations["label"].to_numpy()
        places = profile.places.assign(location=labels[profile.places["location"].to_numpy()])
        name = self.writer.write_measures(view, profile, user_ids, places)
        self.distortion.append(found.distortion)
        self.correlation.append(found.correlation)
        self.seconds += time.perf_counter() - started
        return name

    def finish(self) -> MobilityEntry | None:
        """Write the tables; the manifest's entry (None when nothing was measured)."""
        if not self.distortion:
            return None
        distortion, correlation = self.writer.write_mobility(
            _joined(self.distortion), _joined(self.correlation)
        )
        thresholds = tuple(float(t) for t in self.setting.thresholds)
        return MobilityEntry(self.setting.measures, thresholds, distortion, correlation)
