"""Run a peer tool's re-identification attack on a CSV of trajectories.

Runs with the *peer* interpreter (``benchmarks/.peers/venv/bin/python``, made by
``benchmarks/peers_setup.sh``), never the project's: scikit-mobility 1.3.1 needs pandas 1.x.

    python peer_attacks.py --tool skmob|fastmob --attack ATTACK --h K --data traj.csv \\
        [--targets N --seed S] [--precision Hour] [--tolerance T] [--h3-resolution R] \\
        --out risks.csv
    python peer_attacks.py --make-synthetic N_USERS POINTS LOCATIONS SEED OUT.csv

The input has columns ``uid,datetime,lat,lng`` (naive ISO-8601 datetimes); uids are read as
strings. ``--out`` gets ``uid,risk`` (sorted by uid) for the users the tool returned, and
stdout gets one JSON line::

    {"tool", "attack", "h", "users", "targets", "risk_rows", "seconds", "cpu_seconds",
     "version", "options"}

``seconds`` / ``cpu_seconds`` are wall and process CPU time of the ``assess_risk`` call
only (reading the CSV and building the frame are not timed). With ``--targets N`` the
targets are ``random.Random(S).sample(sorted(uids), N)``; otherwise every user. An attack
the installed tool does not provide exits with code 3 after printing
``{"unsupported": true, ...}``. See ``benchmarks/PEERS.md`` for what each attack computes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import random
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ATTACKS = (
    "location",
    "location_sequence",
    "visit",
    "frequency",
    "unique_location",
    "home_work",
    "probability",
    "proportion",
)
PRECISIONS = ("Year", "Month", "Day", "Hour", "Minute", "Second")
TOLERANCE_ATTACKS = frozenset({"frequency", "probability", "proportion"})

# Attack name -> scikit-mobility class in skmob.privacy.attacks.
SKMOB_CLASSES = {
    "location": "LocationAttack",
    "location_sequence": "LocationSequenceAttack",
    "visit": "LocationTimeAttack",
    "frequency": "LocationFrequencyAttack",
    "unique_location": "UniqueLocationAttack",
    "home_work": "HomeWorkAttack",
    "probability": "LocationProbabilityAttack",
    "proportion": "LocationProportionAttack",
}

# Attack name -> function in fastmob.privacy.
FASTMOB_FUNCTIONS = {
    "location": "location_risk",
    "location_sequence": "location_sequence_risk",
    "visit": "location_time_risk",
    "frequency": "location_frequency_risk",
    "unique_location": "unique_location_risk",
    "home_work": "home_work_risk",
    "probability": "location_probability_risk",
    "proportion": "location_proportion_risk",
}

EXIT_UNSUPPORTED = 3


class Unsupported(Exception):
    """The installed tool has no implementation of the requested attack."""


def read_trajectories(path: Path) -> pd.DataFrame:
    """Read ``uid,datetime,lat,lng`` with string uids, parsed datetimes and float coordinates."""
    df = pd.read_csv(path, dtype={"uid": str, "lat": float, "lng": float})
    missing = {"uid", "datetime", "lat", "lng"} - set(df.columns)
    if missing:
        raise SystemExit(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    df["datetime"] = pd.to_datetime(df["datetime"])
    return df[["uid", "datetime", "lat", "lng"]]


def pick_targets(uids: list[str], n: int | None, seed: int) -> list[str] | None:
    """The seeded sample of ``n`` user ids (None: every user)."""
    if n is None:
        return None
    if not 1 <= n <= len(uids):
        raise SystemExit(f"--targets must be between 1 and {len(uids)}")
    return random.Random(seed).sample(sorted(uids), n)


def skmob_runner(
    df: pd.DataFrame, args: argparse.Namespace
) -> tuple[Callable[[list[str] | None], pd.DataFrame], str]:
    """Build the TrajDataFrame and attack object; return the timed call and the version."""
    from skmob.core.trajectorydataframe import TrajDataFrame
    from skmob.privacy import attacks

    cls = getattr(attacks, SKMOB_CLASSES[args.attack], None)
    if cls is None:
        raise Unsupported(f"skmob.privacy.attacks has no {SKMOB_CLASSES[args.attack]}")
    if args.attack == "visit":
        attack = cls(knowledge_length=args.h, time_precision=args.precision)
    elif args.attack in TOLERANCE_ATTACKS:
        attack = cls(knowledge_length=args.h, tolerance=args.tolerance)
    elif args.attack == "home_work":
        attack = cls()  # its instance is always the two first frequency-vector rows
    else:
        attack = cls(knowledge_length=args.h)
    tdf = TrajDataFrame(df, latitude="lat", longitude="lng", datetime="datetime", user_id="uid")

    def run(targets: list[str] | None) -> pd.DataFrame:
        return attack.assess_risk(tdf, targets=targets)

    return run, importlib.metadata.version("scikit-mobility")


def fastmob_runner(
    df: pd.DataFrame, args: argparse.Namespace
) -> tuple[Callable[[list[str] | None], pd.DataFrame], str]:
    """Bind the fastmob.privacy function; return the timed call and the version."""
    import fastmob.privacy

    func = getattr(fastmob.privacy, FASTMOB_FUNCTIONS[args.attack], None)
    if func is None:
        raise Unsupported(f"fastmob.privacy has no {FASTMOB_FUNCTIONS[args.attack]}")
    kwargs: dict[str, Any] = {
        "uid_col": "uid",
        "lat_col": "lat",
        "lng_col": "lng",
        "h3_resolution": args.h3_resolution,
    }
    if args.attack in ("visit", "location_sequence"):
        kwargs["datetime_col"] = "datetime"
    if args.attack == "visit":
        kwargs["time_precision"] = args.precision
    if args.attack in TOLERANCE_ATTACKS:
        kwargs["tolerance"] = args.tolerance

    def run(targets: list[str] | None) -> pd.DataFrame:
        if args.attack == "home_work":  # takes no knowledge_length
            return func(df, targets=targets, **kwargs)
        return func(df, args.h, targets=targets, **kwargs)

    return run, importlib.metadata.version("fastmob")


def assess(args: argparse.Namespace) -> int:
    """Run one attack, write ``--out`` and print the JSON summary line."""
    options: dict[str, Any] = {}
    if args.attack == "visit":
        options["precision"] = args.precision
    if args.attack in TOLERANCE_ATTACKS:
        options["tolerance"] = args.tolerance
    if args.tool == "fastmob":
        options["h3_resolution"] = args.h3_resolution
    summary: dict[str, Any] = {"tool": args.tool, "attack": args.attack, "h": args.h}

    df = read_trajectories(args.data)
    uids = df["uid"].unique().tolist()
    targets = pick_targets(uids, args.targets, args.seed)
    # The libraries may print; stdout is reserved for the one JSON line.
    with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            runner = skmob_runner if args.tool == "skmob" else fastmob_runner
            run, version = runner(df, args)
        except Unsupported as exc:
            summary.update(unsupported=True, reason=str(exc))
            print(json.dumps(summary))
            return EXIT_UNSUPPORTED
        wall0, cpu0 = time.perf_counter(), time.process_time()
        result = run(targets)
        seconds, cpu_seconds = time.perf_counter() - wall0, time.process_time() - cpu0

    risks = pd.DataFrame({"uid": result["uid"].astype(str), "risk": result["risk"].astype(float)})
    risks = risks.sort_values("uid", kind="stable")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    risks.to_csv(args.out, index=False)
    summary.update(
        users=len(uids),
        targets=len(uids) if targets is None else len(targets),
        risk_rows=len(risks),
        seconds=round(seconds, 6),
        cpu_seconds=round(cpu_seconds, 6),
        version=version,
        options=options,
    )
    print(json.dumps(summary))
    return 0


def make_synthetic(n_users: int, points: int, locations: int, seed: int, out: Path) -> None:
    """Write a seeded synthetic ``uid,datetime,lat,lng`` CSV.

    ``locations`` distinct places lie on a grid with 0.002 degree spacing (about 200 m, so
    no two share an H3 cell at any resolution >= 8) around Pisa (43.70 N, 10.38 E). Place
    popularity is Zipf-like (weight 1/rank, ranks shuffled over the grid). Each of the
    ``n_users`` users (``u0000``...) has ``points`` rows: places drawn independently by
    popularity (so a user may revisit a place), at distinct whole minutes drawn uniformly
    from 2024-01-01 to 2024-01-31, written in time order.
    """
    if min(n_users, points, locations) < 1:
        raise SystemExit("--make-synthetic: N_USERS, POINTS and LOCATIONS must be >= 1")
    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(locations)))
    cells = rng.choice(side * side, size=locations, replace=False)
    lats = np.round(43.70 + 0.002 * (cells // side), 6)
    lngs = np.round(10.38 + 0.002 * (cells % side), 6)
    weights = 1.0 / rng.permutation(np.arange(1, locations + 1))
    weights /= weights.sum()
    minutes_in_range = 30 * 24 * 60
    if points > minutes_in_range:
        raise SystemExit(f"--make-synthetic: POINTS must be <= {minutes_in_range}")
    start = np.datetime64("2024-01-01T00:00:00")
    frames = []
    for user in range(n_users):
        place = rng.choice(locations, size=points, p=weights)
        minute = np.sort(rng.choice(minutes_in_range, size=points, replace=False))
        frames.append(
            pd.DataFrame(
                {
                    "uid": f"u{user:04d}",
                    "datetime": (start + minute.astype("timedelta64[m]")).astype(str),
                    "lat": lats[place],
                    "lng": lngs[place],
                }
            )
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.concat(frames, ignore_index=True).to_csv(out, index=False)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse and cross-check the command line."""
    p = argparse.ArgumentParser(
        description="Run a scikit-mobility or fastmob privacy attack (peer venv only)."
    )
    p.add_argument(
        "--make-synthetic",
        nargs=5,
        metavar=("N_USERS", "POINTS", "LOCATIONS", "SEED", "OUT"),
        help="write a synthetic uid,datetime,lat,lng CSV and exit",
    )
    p.add_argument("--tool", choices=("skmob", "fastmob"))
    p.add_argument("--attack", choices=ATTACKS)
    p.add_argument("--h", type=int, help="background-knowledge length (ignored by home_work)")
    p.add_argument("--data", type=Path, help="uid,datetime,lat,lng CSV")
    p.add_argument("--targets", type=int, help="assess a seeded sample of N users")
    p.add_argument("--seed", type=int, default=0, help="seed of the target sample")
    p.add_argument("--precision", choices=PRECISIONS, help="visit attack: time precision")
    p.add_argument("--tolerance", type=float, help="frequency/probability/proportion tolerance")
    p.add_argument(
        "--h3-resolution",
        type=int,
        default=12,
        help="fastmob only: H3 resolution that defines a location (fastmob's default: 12)",
    )
    p.add_argument("--out", type=Path, help="uid,risk CSV to write")
    args = p.parse_args(argv)
    if args.make_synthetic:
        return args
    for name in ("tool", "attack", "h", "data", "out"):
        if getattr(args, name) is None:
            p.error(f"--{name} is required")
    if args.h < 1:
        p.error("--h must be >= 1")
    if args.attack == "visit":
        args.precision = args.precision or "Hour"
    elif args.precision is not None:
        p.error("--precision applies to the visit attack only")
    if args.attack in TOLERANCE_ATTACKS:
        args.tolerance = 0.0 if args.tolerance is None else args.tolerance
        if not 0.0 <= args.tolerance <= 1.0:
            p.error("--tolerance must be in [0, 1]")
    elif args.tolerance is not None:
        p.error("--tolerance applies to frequency, probability and proportion only")
    if not 0 <= args.h3_resolution <= 15:
        p.error("--h3-resolution must be in 0..15")
    return args


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.make_synthetic:
        n_users, points, locations, seed, out = args.make_synthetic
        make_synthetic(int(n_users), int(points), int(locations), int(seed), Path(out))
        return 0
    return assess(args)


if __name__ == "__main__":
    sys.exit(main())
