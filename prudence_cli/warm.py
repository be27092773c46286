"""Compile every kernel ahead of the first large assessment.

The kernels run as Python on small work and compiled by numba on large work
(`engine/jit.py`). numba compiles a kernel the first time it is called compiled and
keeps it in its cache (next to the package, or in NUMBA_CACHE_DIR): on a new machine, the
first large assessment spends seconds to a minute compiling what it uses.
`python -m prudence_cli.warm` (run by `make test`; useful when building an image for CI
or for Dask workers) compiles them all: every kernel the counting attacks on presence and
trajectory dataviews use — both exact strategies, whole-record queries and sampled
levels — and those of the unicity attack, of `prudence evaluate`, of the attacks on
randomized profiles and the sorts only large levels call, each on tiny data, so that a
first assessment loads them from the cache instead. The data is built as the pipelines
build theirs (same array types), which is what a compiled kernel is specialised on; its
content does not matter. The keyed strategy's kernels and the others' compile in two
processes at once (numba compiles on one core).
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from prudence_cli.attacks.base import CountingAttack, KnowledgeLevel
from prudence_cli.attacks.registry import ATTACKS
from prudence_cli.config.evaluate import EvaluationSettings
from prudence_cli.dataviews.base import Dataview
from prudence_cli.dataviews.presence import PresenceView, ProbabilityView
from prudence_cli.dataviews.trajectory import TrajectoryView
from prudence_cli.engine import Elements, Engine, compiled
from prudence_cli.engine.jit import running
from prudence_cli.engine.runner import LocalRunner
from prudence_cli.measures.empirical import evaluate
from prudence_cli.randomized.attacks import l1_distances
from prudence_cli.randomized.mechanisms import affinity, neighbourhoods

__all__ = ["main", "warm"]

# (user, location, count or time bin): 4 people over 4 places, sharing some of them
_ROWS = np.array(
    [
        (0, 0, 3),
        (0, 1, 1),
        (0, 2, 2),
        (1, 0, 1),
        (1, 1, 4),
        (1, 3, 1),
        (2, 1, 2),
        (2, 2, 1),
        (2, 3, 5),
        (3, 0, 2),
    ],
    dtype=np.int64,
)
# the engines of each warming process: the keyed strategy's kernels; the posting lists'
# (also whole-record queries) and sampling's
_ENGINES = {
    "keyed": (Engine(strategy="keyed", brute_limit=0), Engine(strategy="keyed")),
    "posting": (Engine(strategy="posting"), Engine(max_instances=0, sample=2)),
}


def _views() -> dict[str, Dataview]:
    """One tiny view per format the warmed attacks read."""
    user = _ROWS[:, 0].astype(np.int32)
    location = _ROWS[:, 1].astype(np.int32)
    locations = pd.DataFrame({"label": [str(i) for i in range(4)], "lon": 0.0, "lat": 0.0})
    fields: dict[str, Any] = {"n_users": 4, "user": user, "location": location}
    presence = {**fields, "locations": locations, "count": _ROWS[:, 2].astype(np.int32)}
    return {
        "presence": PresenceView("d1", (("frequency", 1),), **presence),
        "probability": ProbabilityView("d1", (("frequency", 1),), **presence),
        "trajectory": TrajectoryView(
            "d1",
            (("time", 3600), ("frequency", 1)),
            **fields,
            locations=locations,
            tbin=_ROWS[:, 2],
        ),
    }


def _levels(attack: CountingAttack[Any]) -> list[KnowledgeLevel]:
    """Levels at h = 1, 2 and all (with every value of the other knowledge dimensions)."""
    values = {}
    for dimension in attack.knowledge:
        if dimension.name == "h":
            values["h"] = (1, 2, "all")
        else:
            values[dimension.name] = tuple(dimension.default)
    return list(attack.levels(values))


def warm(strategy: str) -> list[tuple[str, float]]:
    """Call every kernel the warmed attacks use with the engines of `strategy` (a key of
    `_ENGINES`), compiled whatever the work; then, in the `posting` process, the kernels
    of unicity, evaluate, the randomized profiles and the large levels' sorts. The
    seconds each one took."""
    views = _views()
    spent = []
    for name in ATTACKS:
        attack = ATTACKS[name]
        if not isinstance(attack, CountingAttack):
            continue
        formats = [f for f in sorted(attack.formats) if f in views]
        if not formats:
            continue
        started = time.perf_counter()
        with running("compiled"):
            for level in _levels(attack):
                for engine in _ENGINES[strategy]:
                    attack.risks(views[formats[0]], level, engine)
        spent.append((f"{name} ({strategy})", time.perf_counter() - started))
    if strategy == "posting":
        for name, step in (
            ("unicity", lambda: _unicity(views["presence"])),
            ("evaluate", _evaluate),
            ("randomized profiles", _profiles),
            ("orders", _orders),
        ):
            started = time.perf_counter()
            with running("compiled"):
                step()
            spent.append((name, time.perf_counter() - started))
    return spent


def _unicity(view: Dataview) -> None:
    """Unicity made whole, and in ranges of users (as on a cluster's workers)."""
    attack = ATTACKS["unicity"]
    level = attack.levels({"points": (2,), "draw": ("activity",), "samples": (2,)})[0]
    attack.risks(view, level, _ENGINES["posting"][0])
    attack.risks(view, level, Engine(strategy="posting", runner=LocalRunner(shards=2)))


def _evaluate() -> None:
    """Both ways `prudence evaluate` draws its attacks: every sub-trajectory, sampled."""
    users = _ROWS[:, 0].astype(np.int64)
    lists = Elements.from_rows(4, users, _ROWS[:, 1].astype(np.int32))
    for samples in (None, 2):
        evaluate(lists, lists, EvaluationSettings(max_h=2, samples=samples))


def _orders() -> None:
    """The sorts of elements that only large levels call (a start index's counting sort,
    a shard's radix sort when it numbers its elements, the rank by rarity of a level's
    holders): not reached on tiny data."""
    elements = _ROWS[:, 1].astype(np.int32)
    compiled.group_kernels.counting_order(elements, 4)
    compiled.group_kernels.radix_order(elements)
    holders = np.bincount(elements)
    compiled.group_kernels.counting_rank(holders, int(holders.max()) + 1)


def _profiles() -> None:
    profiles = sparse.csr_matrix(
        (_ROWS[:, 2].astype(float), (_ROWS[:, 0], _ROWS[:, 1])), shape=(4, 4)
    )
    l1_distances(profiles, profiles)
    neighbourhoods(profiles > 0, affinity(profiles > 0), 1)


def main() -> None:
    """Warm every strategy's kernels, two processes at once; report the time taken."""
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=len(_ENGINES)) as pool:
        for spent in pool.map(warm, _ENGINES):
            for name, seconds in spent:
                print(f"  {name:<36} {seconds:6.1f} s", file=sys.stderr)
    print(f"kernels compiled in {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
