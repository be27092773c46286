"""c({u}, D): how much of a dataview's data each person holds (Pratesi et al., PRUDEnce,
section 3.3), per coverage kind, from the view's per-row arrays.

numpy only: a dataview's own `coverage` counts with these functions, and `prudence
check` counts with them straight from the stored rows, without building the view or
importing pandas. Which function a format's rows take is declared with the format
(`FormatSpec.stored_coverage` in config/dimensions.py).
"""

from __future__ import annotations

import numpy as np

from prudence_cli.arrays import distinct

COVERAGE_KINDS = ("locations", "visits", "records", "segments")


def check_coverage(kind: str) -> None:
    if kind not in COVERAGE_KINDS:
        raise ValueError(f"unknown coverage {kind!r}; known: {', '.join(COVERAGE_KINDS)}")


def counted(user: np.ndarray, count: np.ndarray, n_users: int, kind: str) -> np.ndarray:
    """Rows of (user, location, count): `locations` and `records` count the user's rows
    (one per user-location pair), `visits` sums their counts."""
    check_coverage(kind)
    if kind == "visits":
        return np.bincount(user, weights=count, minlength=n_users)
    return np.bincount(user, minlength=n_users).astype(float)


def per_row(
    user: np.ndarray, location: np.ndarray, n_users: int, n_locations: int, kind: str
) -> np.ndarray:
    """One row per visit (trajectories) or segment traversal (trips): `locations` counts
    the user's distinct locations (codes below `n_locations`), every other kind the
    user's rows."""
    check_coverage(kind)
    if kind == "locations":
        n = max(n_locations, 1)
        pairs = distinct(user.astype(np.int64) * n + location)
        return np.bincount(pairs // n, minlength=n_users).astype(float)
    return np.bincount(user, minlength=n_users).astype(float)


def share(coverage: np.ndarray, people: np.ndarray) -> float:
    """The share of the data the people of the mask `people` hold (0 when there is
    none), as `Dataview.share_of` gives it for an additive view."""
    total = float(coverage[np.ones(coverage.shape[0], dtype=bool)].sum())
    return float(coverage[people].sum()) / total if total else 0.0
