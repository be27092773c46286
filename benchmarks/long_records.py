"""Knowledge at the extremes: `h: all` on long records (issue 21).

    python benchmarks/long_records.py [--repeat 3] [--people 140] [--attacks location_sequence]
                                      [--peers/--no-peers] [--skmob-targets 3]
                                      [--end-to-end/--no-end-to-end]

The shape of week-long ship tracks on a 1 km × 1 h trajectory dataview: ~140 people
whose records hold 300 to 2,600 visits, moving cell by cell along lanes between a few
ports (so lanes and ports are shared, the open sea is not). The same tracks on cells 16
times coarser (the 16 km view: records of tens to a few hundred visits) are the short
case the long one is measured against.

- Prudence alone: each (grid, attack) at h = all runs in a fresh subprocess after a
  warm-up of the kernels; the time is the attack only (the view is built in memory), the
  best of `--repeat` runs, since the build machine's two cores are shared. Printed: the
  long / short ratio.
- End to end: the tracks written as a GPS CSV (one fix per cell crossed) and assessed by
  `prudence assess` (`location_sequence`, h: all) on a 1 km and a 16 km grid: the wall
  time of the whole command, start-up included.
- Peers: they take h as a number, and with h at or above a person's number of rows make
  one instance of all of them — the whole record, as `h: all`. The view's visits are
  written as a trajectory CSV (a visit at its cell's centre, in time order) and the peers
  run at h = the longest record; fastmob on every person, scikit-mobility on a seeded
  sample of `--skmob-targets` and extrapolated (as in `run.py`). Printed: peer time /
  Prudence time, and whether the per-person risks agree.

Results go to benchmarks/out/long_records.json. Not run in CI.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE))
from run import (  # type: ignore[import-not-found]  # noqa: E402
    PEER_CASES,
    PEER_PYTHON,
    machine,
    peer_run,
    run_child,
)

SIDE = 480  # cells of 1 km on a side
PORTS = 12


def ship_tracks(people: int, seed: int = 21) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user, x, y, hour) of every 1 km cell each ship crosses, in time order.

    Every ship sails from port to port along a straight lane with a little sideways drift,
    at 8 to 25 cells an hour, until its record holds its drawn number of visits (log-
    uniform in 300-2,600).
    """
    rng = np.random.default_rng(seed)
    ports = rng.integers(20, SIDE - 20, size=(PORTS, 2))
    users, xs, ys, hours = [], [], [], []
    for u in range(people):
        length = int(np.exp(rng.uniform(np.log(300), np.log(2600))))
        speed = rng.uniform(8, 25)
        here = int(rng.integers(PORTS))
        x: list[int] = []
        y: list[int] = []
        while len(x) < length:
            there = int(rng.choice([p for p in range(PORTS) if p != here]))
            (x0, y0), (x1, y1) = ports[here], ports[there]
            steps = int(max(abs(x1 - x0), abs(y1 - y0)))
            t = np.linspace(0.0, 1.0, steps + 1)
            drift = np.cumsum(rng.integers(-1, 2, steps + 1)) // 4
            normal = np.array([-(y1 - y0), x1 - x0], dtype=float) / max(steps, 1)
            x += list(np.rint(x0 + t * (x1 - x0) + drift * normal[0]).astype(int))
            y += list(np.rint(y0 + t * (y1 - y0) + drift * normal[1]).astype(int))
            here = there
        x, y = x[:length], y[:length]
        users.append(np.full(length, u))
        xs.append(np.clip(x, 0, SIDE - 1))
        ys.append(np.clip(y, 0, SIDE - 1))
        hours.append((np.arange(length) / speed).astype(np.int64))
    return tuple(np.concatenate(a) for a in (users, xs, ys, hours))  # type: ignore[return-value]


def ship_view(people: int, cell_km: int):  # noqa: ANN201 (a TrajectoryView; imported late)
    """The trajectory dataview of the tracks on cells of `cell_km` km, 1 h bins, consecutive
    repeats of a (cell, hour) collapsed as the dataview does."""
    from prudence_cli.dataviews.trajectory import TrajectoryView, collapse_repeats

    user, x, y, hour = ship_tracks(people)
    side = SIDE // cell_km + 1
    cell = (x // cell_km) * side + y // cell_km
    location, cells = pd.factorize(cell, sort=True)
    keep = collapse_repeats(user, location, hour)
    labels = pd.DataFrame({"label": cells.astype(str), "lon": 0.0, "lat": 0.0})
    return TrajectoryView(
        "d1",
        (("grid", cell_km * 1000), ("time", 3600)),
        people,
        user[keep].astype(np.int32),
        location[keep].astype(np.int32),
        labels,
        tbin=hour[keep],
    )


def child(people: int, cell_km: int, attack_name: str, risks: str = "") -> None:
    """In a subprocess: warm up on the same view, then time one attack at h = all; one
    JSON line (and the per-person risks in the CSV `risks`, when given)."""
    from prudence_cli.attacks.base import KnowledgeLevel
    from prudence_cli.attacks.registry import ATTACKS
    from prudence_cli.engine import Engine

    view = ship_view(people, cell_km)
    attack = ATTACKS[attack_name]
    level = KnowledgeLevel(attack_name, (("h", "all"),))
    attack.risks(view.keep(view.user < 2), level, Engine())  # kernels loaded, not timed
    started = time.perf_counter()
    result = attack.risks(view, level, Engine())
    seconds = time.perf_counter() - started
    if risks:
        pd.DataFrame({"uid": _uids(people), "risk": result.risk}).to_csv(risks, index=False)
    lengths = np.bincount(view.user, minlength=people)
    print(
        json.dumps(
            {
                "attack": attack_name,
                "h": "all",
                "cell_km": cell_km,
                "people": people,
                "visits": int(view.user.shape[0]),
                "shortest": int(lengths[lengths > 0].min()),
                "longest": int(lengths.max()),
                "seconds": seconds,
                "instances": result.instances,
                "mean_risk": float(result.risk.mean()),
            }
        )
    )


def _uids(people: int) -> np.ndarray:
    return np.char.add("ship", np.char.zfill(np.arange(people).astype(str), 3))


def _lat_lon(x_km: np.ndarray, y_km: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return 43.0 + y_km / 111.2, 10.0 + x_km / (111.32 * np.cos(np.radians(43.2)))


def peer_csv(people: int, cell_km: int, path: Path) -> int:
    """The view's visits as the peers' trajectory CSV (uid, datetime, lat, lng): each visit
    at its cell's centre, a minute apart within its hour, in time order. Returns the
    longest record."""
    view = ship_view(people, cell_km)
    side = SIDE // cell_km + 1
    cell = view.locations["label"].to_numpy().astype(np.int64)[view.location]
    lat, lon = _lat_lon((cell // side + 0.5) * cell_km, (cell % side + 0.5) * cell_km)
    same_hour = pd.Series(view.tbin).groupby([view.user, view.tbin]).cumcount().to_numpy()
    seconds = (view.tbin * 3600 + same_hour * 60).astype("timedelta64[s]")
    pd.DataFrame(
        {
            "uid": _uids(people)[view.user],
            "datetime": (np.datetime64("2024-03-04T00:00:00") + seconds).astype(str),
            "lat": lat,
            "lng": lon,
        }
    ).to_csv(path, index=False, float_format="%.7f")
    return int(np.bincount(view.user, minlength=people).max())


def end_to_end(people: int, cell_km: int, folder: Path) -> float:
    """Seconds of `prudence assess` (a subprocess: start-up, reading, selection, the view
    and the attack) on the tracks written as a GPS CSV, `location_sequence` at h: all on
    a `cell_km` grid and 1 h bins."""
    user, x, y, hour = ship_tracks(people)
    step = np.arange(user.shape[0]) - np.searchsorted(user, user)  # visit number per ship
    seconds = (hour * 3600 + step % 60).astype("timedelta64[s]")
    lat, lon = _lat_lon(x + 0.5, y + 0.5)
    pd.DataFrame(
        {
            "uid": _uids(people)[user],
            "datetime": (np.datetime64("2024-03-04T00:00:00") + seconds).astype(str),
            "lat": lat,
            "lng": lon,
        }
    ).to_csv(folder / "tracks.csv", index=False, float_format="%.6f")
    (folder / "ships.yaml").write_text(
        "name: ships\n"
        "input: {path: tracks.csv, columns: {user: uid, time: datetime, lat: lat, lon: lng}}\n"
        f"dataview: {{format: trajectory, dimensions: {{grid: [{cell_km}km], time: [1h]}}}}\n"
        "attacks: [{attack: location_sequence, knowledge: {h: [all]}}]\n"
        "output: catalog\n"
    )
    prudence = Path(sys.executable).with_name("prudence")
    started = time.perf_counter()
    command = [str(prudence), "assess", str(folder / "ships.yaml")]
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def best_child(args: argparse.Namespace, cell_km: int, attack: str, risks: str = "") -> Any:
    """The fastest of `--repeat` child runs (None when every run failed)."""
    best = None
    for _ in range(args.repeat):
        row = run_child(
            [__file__, "--child", json.dumps([args.people, cell_km, attack, risks])],
            f"{attack} h=all {cell_km} km",
        )
        if row is not None and (best is None or row["seconds"] < best["seconds"]):
            best = row
    return best


def compare_peers(
    args: argparse.Namespace, attack: str, cell_km: int, prudence: dict[str, Any], folder: Path
) -> dict[str, Any]:
    """The peers on the same visits at h = the longest record; peer / Prudence times."""
    case = next(c for c in PEER_CASES if c.attack == attack)
    longest = peer_csv(args.people, cell_km, folder / "traj.csv")
    case = replace(case, knowledge={"h": longest})
    mine = pd.read_csv(folder / "risks.csv").set_index("uid")["risk"]
    row: dict[str, Any] = {"attack": attack, "cell_km": cell_km, "peer_h": longest}
    for tool, targets in (("fastmob", None), ("skmob", args.skmob_targets)):
        ran = peer_run(tool, case, folder / "traj.csv", targets, folder)
        if ran is None:
            continue
        risks, report = ran
        total = float(report["seconds"]) * args.people / int(report["targets"])
        row[f"{tool}_s"] = total
        row[f"{tool}_extrapolated"] = int(report["targets"]) < args.people
        row[f"{tool}_ratio"] = total / float(prudence["seconds"])
        if tool in case.same_as:
            same = np.allclose(mine.reindex(risks.index).to_numpy(), risks.to_numpy())
            row[f"{tool}_agree"] = bool(same)
        agree = {True: " agree", False: " DIFFER", None: ""}[row.get(f"{tool}_agree")]
        mark = "~" if row[f"{tool}_extrapolated"] else " "
        print(
            f"{attack:<18} h=all {cell_km:>2} km  {tool} at h={longest}: {mark}{total:9.2f} s "
            f"×{row[f'{tool}_ratio']:,.0f}{agree}",
            flush=True,
        )
    return row


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(*json.loads(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=140)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--attacks", nargs="+", default=["location_sequence", "location", "visit"])
    parser.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--skmob-targets", type=int, default=3)
    parser.add_argument("--end-to-end", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    print(f"{machine()}; best of {args.repeat} runs", flush=True)
    rows: list[dict[str, Any]] = []
    if args.end_to_end:
        for cell_km in (16, 1):
            with tempfile.TemporaryDirectory() as tmp:
                best = min(end_to_end(args.people, cell_km, Path(tmp)) for _ in range(args.repeat))
            rows.append({"end_to_end": True, "cell_km": cell_km, "seconds": best})
            print(
                f"prudence assess, location_sequence h=all, {cell_km:>2} km grid: {best:6.2f} s "
                "(end to end: start-up, CSV, view, attack)",
                flush=True,
            )
    peers = args.peers and PEER_PYTHON.exists()
    if args.peers and not peers:
        print("no peers: run `bash benchmarks/peers_setup.sh` first", file=sys.stderr)
    for attack in args.attacks:
        times = {}
        for cell_km in (16, 1):
            with tempfile.TemporaryDirectory() as tmp:
                risks = str(Path(tmp) / "risks.csv") if peers else ""
                row = best_child(args, cell_km, attack, risks)
                if row is None:
                    continue
                rows.append(row)
                times[cell_km] = row["seconds"]
                print(
                    f"{attack:<18} h=all {cell_km:>2} km  {row['people']} people, "
                    f"{row['shortest']:,}-{row['longest']:,} visits  prudence "
                    f"{row['seconds']:7.3f} s",
                    flush=True,
                )
                if peers:
                    rows.append(compare_peers(args, attack, cell_km, row, Path(tmp)))
        if len(times) == 2:
            print(f"{attack:<18} long / short: {times[1] / times[16]:.1f}×", flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "long_records.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
