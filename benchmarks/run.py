"""Prudence against its peers (scikit-mobility 1.3.1, fastmob), and alone at scale.

    python benchmarks/run.py [--peers/--no-peers] [--scaling/--no-scaling]
                             [--skmob-targets 2 1] [--scaling-sizes 10000 100000 1000000]
    python benchmarks/run.py --markdown benchmarks/out/results.json   (tables for RESULTS.md)

Peers: the same seeded data — users with 30 points over 200 places, one point per hour
at most — is written as a trajectory CSV for the peers and as call records on a tower
table for Prudence, so that a place is the same place for every tool (a tower for
Prudence, its exact coordinates for scikit-mobility, its H3 cell for fastmob; places are
300 m apart). Each attack runs on the same data in the same run; times cover the
attack only (Prudence: building the dataview and computing every risk; peers: their
`assess_risk` call), never reading the CSV. fastmob runs in full; scikit-mobility takes
seconds to minutes per target, so it runs on a seeded sample of targets and its time
for all users is extrapolated (per-target time × users) — the output says so. Per-user
risks are compared where the tools define the same attack (see benchmarks/PEERS.md).

Scaling: Prudence alone on synthetic presence and trajectory dataviews of 10k to 1M
users, one subprocess per run, wall time and peak memory (max RSS).

Numba compiles Prudence's kernels once per machine (cached on disk); a warm-up run
excludes that from the timings. These are kernel figures: the counts run compiled
(PRUDENCE_KERNELS=compiled, unless the environment says otherwise), although a whole
`prudence assess` runs counts this small as Python to skip loading numba
(benchmarks/startup.py compares whole processes). Nothing here runs in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
PEER_PYTHON = HERE / ".peers" / "venv" / "bin" / "python"
OUT = HERE / "out"


@dataclass(frozen=True)
class PeerCase:
    """One attack as run by every tool: Prudence's names and the peers' options."""

    attack: str
    view: str  # Prudence dataview format
    knowledge: dict[str, object]
    peer_options: tuple[str, ...] = ()
    same_as: tuple[str, ...] = ("skmob", "fastmob")  # tools whose risks must agree
    note: str = ""


H = 2
PEER_CASES = [
    PeerCase("location", "trajectory", {"h": H}),
    PeerCase("location_sequence", "trajectory", {"h": H}),
    PeerCase(
        "visit",
        "trajectory",
        {"h": H},
        ("--precision", "Hour"),
        ("fastmob",),
        "scikit-mobility's Hour key ignores the hour (PEERS.md)",
    ),
    PeerCase(
        "frequency",
        "presence",
        {"h": H},
        ("--tolerance", "0"),
        (),
        "peers match equal counts at tolerance 0; Prudence matches count ≥ known",
    ),
    PeerCase("unique_location", "presence", {"h": H}),
    PeerCase("probability", "probability", {"h": H, "delta": 0.0}, ("--tolerance", "0")),
    PeerCase("proportion", "presence", {"h": H, "delta": 0.0}, ("--tolerance", "0")),
    PeerCase(
        "home_work",
        "presence",
        {},
        (),
        (),
        "peers take the two least visited places; Prudence the two most visited",
    ),
]
HEADLINE = ("location", "location_sequence", "visit", "frequency")


# --- data -----------------------------------------------------------------------------------


def make_data(users: int, points: int, places: int, seed: int, folder: Path) -> dict[str, Path]:
    """Write traj.csv (peers) and events.csv + towers.csv (Prudence) for the same data."""
    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(places)))
    lattice = np.array([(i % side, i // side) for i in range(places)], dtype=float) * 300.0
    lat = 43.70 + lattice[:, 1] / 110_540.0
    lon = 10.38 + lattice[:, 0] / (111_320.0 * np.cos(np.radians(43.7)))
    popularity = 1.0 / np.arange(1, places + 1) ** 0.8
    popularity /= popularity.sum()
    rows = []
    start = np.datetime64("2011-06-01T00:00:00")
    for u in range(users):
        favourites = rng.choice(places, size=rng.integers(5, 16), replace=False, p=popularity)
        weights = 1.0 / np.arange(1, favourites.size + 1) ** 1.2
        visited = rng.choice(favourites, size=points, p=weights / weights.sum())
        hours = np.cumsum(rng.integers(1, 7, size=points))
        times = (
            start
            + hours.astype("timedelta64[h]")
            + rng.integers(0, 3600, points).astype("timedelta64[s]")
        )
        rows.append(pd.DataFrame({"uid": f"u{u:05d}", "time": times, "place": visited}))
    data = pd.concat(rows, ignore_index=True)
    paths = {
        "traj": folder / "traj.csv",
        "events": folder / "events.csv",
        "towers": folder / "towers.csv",
    }
    pd.DataFrame(
        {
            "uid": data["uid"],
            "datetime": data["time"].dt.strftime("%Y-%m-%dT%H:%M:%S"),
            "lat": lat[data["place"]],
            "lng": lon[data["place"]],
        }
    ).to_csv(paths["traj"], index=False, float_format="%.7f")
    pd.DataFrame(
        {
            "user": data["uid"],
            "time": data["time"].dt.strftime("%Y-%m-%dT%H:%M:%S"),
            "tower": [f"p{p:04d}" for p in data["place"]],
        }
    ).to_csv(paths["events"], index=False)
    pd.DataFrame({"tower": [f"p{p:04d}" for p in range(places)], "lat": lat, "lon": lon}).to_csv(
        paths["towers"], index=False, float_format="%.7f"
    )
    return paths


# --- Prudence ---------------------------------------------------------------------------


def prudence_risks(paths: dict[str, Path], case: PeerCase) -> tuple[pd.Series, float]:
    """Per-user risks of one attack and the seconds spent building the view and attacking."""
    from prudence_cli.attacks.base import KnowledgeLevel
    from prudence_cli.attacks.registry import ATTACKS
    from prudence_cli.config import parse_config
    from prudence_cli.dataviews.build import build_dataviews
    from prudence_cli.engine import Engine
    from prudence_cli.io.points import read_points
    from prudence_cli.select import select

    attack = ATTACKS[case.attack]
    dims = {"time": ["1h"]} if case.view == "trajectory" else {}
    raw_config = {
        "input": {
            "path": str(paths["events"]),
            "format": "cdr",
            "towers": str(paths["towers"]),
            "timezone": "UTC",
        },
        "dataview": {"format": case.view, "dimensions": dims},
        "attacks": [{"attack": case.attack}],
    }
    config = parse_config(raw_config, paths["events"].parent / "bench.yaml")
    selection = select(read_points(config.input.spec()), config)
    level = KnowledgeLevel(
        case.attack, tuple((d.name, case.knowledge[d.name]) for d in attack.knowledge)
    )
    started = time.perf_counter()
    view = next(build_dataviews(selection, config.dataview, "UTC"))
    result = attack.risks(view, level, Engine())
    seconds = time.perf_counter() - started
    return pd.Series(result.risk, index=selection.user_ids), seconds


# --- peers ------------------------------------------------------------------------------------


def peer_command(tool: str, case: PeerCase, data: Path, out: Path) -> list[str]:
    """The peer's script on `data`, its per-user risks written to `out`."""
    return [
        str(PEER_PYTHON),
        str(HERE / "peer_attacks.py"),
        "--tool",
        tool,
        "--attack",
        case.attack,
        "--h",
        str(case.knowledge.get("h", 2)),
        "--data",
        str(data),
        "--out",
        str(out),
        *case.peer_options,
    ]


def peer_run(
    tool: str, case: PeerCase, data: Path, targets: int | None, folder: Path
) -> tuple[pd.Series, dict[str, object]] | None:
    out = folder / f"{tool}-{case.attack}.csv"
    command = peer_command(tool, case, data, out)
    if targets is not None:
        command += ["--targets", str(targets), "--seed", "1"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"  {tool} {case.attack}: failed ({done.stderr.strip()[-300:]})", file=sys.stderr)
        return None
    report = json.loads(done.stdout.strip().splitlines()[-1])
    risks = pd.read_csv(out, dtype={"uid": str}).set_index("uid")["risk"]
    return risks, report


def compare_peers(users: int, skmob_targets: int, folder: Path) -> list[dict[str, object]]:
    paths = make_data(users, 30, 200, seed=users, folder=folder)
    rows = []
    for case in PEER_CASES:
        prudence, seconds = prudence_risks(paths, case)
        row: dict[str, object] = {"users": users, "attack": case.attack, "prudence_s": seconds}
        for tool, targets in (("fastmob", None), ("skmob", skmob_targets)):
            if tool == "skmob" and case.attack not in HEADLINE:
                continue
            ran = peer_run(tool, case, paths["traj"], targets, folder)
            if ran is None:
                continue
            risks, report = ran
            assessed = int(report["targets"])
            total = float(report["seconds"]) * users / assessed
            row[f"{tool}_s"] = total
            row[f"{tool}_extrapolated"] = assessed < users
            row[f"{tool}_targets"] = assessed
            row[f"{tool}_ratio"] = total / seconds
            if tool in case.same_as:
                mine = prudence.reindex(risks.index)
                row[f"{tool}_agree"] = bool(np.allclose(mine.to_numpy(), risks.to_numpy()))
        row["note"] = case.note
        rows.append(row)
        print(_peer_line(row), flush=True)
    return rows


def _peer_line(row: dict[str, object]) -> str:
    parts = [f"{row['users']:>5} users  {row['attack']:<18} prudence {row['prudence_s']:8.3f} s"]
    for tool in ("fastmob", "skmob"):
        if f"{tool}_s" in row:
            mark = "~" if row[f"{tool}_extrapolated"] else " "
            agree = row.get(f"{tool}_agree")
            check = "" if agree is None else (" agree" if agree else " DIFFER")
            parts.append(
                f"{tool} {mark}{row[f'{tool}_s']:10.2f} s ×{row[f'{tool}_ratio']:,.0f}{check}"
            )
    return "  ".join(parts)


# --- scaling ----------------------------------------------------------------------------------

SCALING_CASES = [
    ("bins", "unicity", {"draw": "activity", "samples": 1000}),
    ("presence", "unique_location", {}),
    ("presence", "frequency", {}),
    ("presence", "presence", {"visits": "half"}),
    ("trajectory", "location", {}),
    ("trajectory", "location_sequence", {}),
    ("trajectory", "visit", {}),
]


def peak_kb() -> int:
    """This process's peak resident memory (kB): VmHWM, which, unlike ru_maxrss, does not
    carry over the parent's peak through fork and exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def scaling_child(
    view_format: str, attack_name: str, users: int, h: int, extra: dict[str, object]
) -> None:
    """Run in a subprocess: build a synthetic view, attack it, print one JSON line."""

    from prudence_cli.attacks.base import KnowledgeLevel
    from prudence_cli.attacks.registry import ATTACKS
    from prudence_cli.dataviews.presence import PresenceView
    from prudence_cli.dataviews.trajectory import TrajectoryView
    from prudence_cli.engine import Engine

    rng = np.random.default_rng(users)
    places = 20_000
    popularity = 1.0 / np.arange(1, places + 1)
    popularity /= popularity.sum()
    labels = pd.DataFrame({"label": np.arange(places).astype(str), "lon": 0.0, "lat": 0.0})
    if view_format == "bins":
        # a month of hourly call activity over 12 districts: 12 × 720 bins, each person
        # active in 1 + Poisson(40) of them, mostly at home and work districts
        from prudence_cli.dataviews.bins import BinsView

        n_bins = 12 * 720
        k = 1 + rng.poisson(40, users)
        user = np.repeat(np.arange(users), k)
        home = rng.integers(0, 12, users)[user]
        work = rng.integers(0, 12, users)[user]
        district = np.where(
            rng.random(k.sum()) < 0.7,
            np.where(rng.random(k.sum()) < 0.6, home, work),
            rng.integers(0, 12, k.sum()),
        )
        hour = rng.integers(0, 720, k.sum())
        key, first = np.unique(
            user.astype(np.int64) * n_bins + district * 720 + hour, return_index=True
        )
        bin_labels = pd.DataFrame({"label": np.arange(n_bins).astype(str), "lon": 0.0, "lat": 0.0})
        view = BinsView(
            "d1",
            (("regions", "district"), ("time", 3600)),
            users,
            (key // n_bins).astype(np.int32),
            (key % n_bins).astype(np.int32),
            bin_labels,
            count=rng.geometric(0.5, key.size).astype(np.int32),
            dimensionality=n_bins,
        )
    elif view_format == "presence":
        k = 1 + rng.poisson(6, users)
        user = np.repeat(np.arange(users), k)
        key, first = np.unique(
            user.astype(np.int64) * places + rng.choice(places, k.sum(), p=popularity),
            return_index=True,
        )
        view = PresenceView(
            "d1",
            (("frequency", 1),),
            users,
            (key // places).astype(np.int32),
            (key % places).astype(np.int32),
            labels,
            count=rng.geometric(0.3, key.size).astype(np.int32),
        )
    else:
        k = 1 + rng.poisson(9, users)
        user = np.repeat(np.arange(users), k).astype(np.int32)
        location = rng.choice(places, k.sum(), p=popularity).astype(np.int32)
        tbin = np.arange(k.sum(), dtype=np.int64) % 720
        view = TrajectoryView(
            "d1", (("time", 3600), ("frequency", 1)), users, user, location, labels, tbin=tbin
        )
    attack = ATTACKS[attack_name]
    extra = dict(extra)
    backend = str(extra.pop("engine", "local"))
    workers = int(extra.pop("workers", 1))  # type: ignore[call-overload]
    sharded = bool(extra.pop("sharded", True))  # False: every worker gets the whole level
    values = {"h": h, "points": h, **extra}
    level = KnowledgeLevel(attack_name, tuple((d.name, values[d.name]) for d in attack.knowledge))
    engine = Engine()
    if backend == "dask":
        from prudence_cli.engine.runner import DaskRunner

        engine = Engine(runner=DaskRunner(workers=workers), worker_threads=1)
        if not sharded:
            engine.runner.shards = 1
        # workers up and their kernels loaded before the clock starts
        attack.risks(view.keep(view.user < 1000), level, engine)
    started = time.perf_counter()
    result = attack.risks(view, level, engine)
    seconds = time.perf_counter() - started
    each_gb: list[float] = []
    if backend == "dask":
        each_gb = [kb / 1e6 for kb in engine.runner.client.run(peak_kb).values()]
        engine.runner.close()
    print(
        json.dumps(
            {
                "format": view_format,
                "attack": attack_name,
                "engine": backend,
                "workers": workers if backend == "dask" else 0,
                "users": users,
                "h": h,
                "rows": int(view.user.shape[0]),
                "seconds": seconds,
                "instances": result.instances,
                "peak_gb": peak_kb() / 1e6,
                "workers_peak_gb": sum(each_gb),
                "worker_peaks_gb": each_gb,
                "sharded": backend == "dask" and sharded and workers > 1,
                "mean_risk": float(result.risk.mean()),
            }
        )
    )


def run_child(args: list[str], label: str) -> dict[str, Any] | None:
    """Run `python ARGS` in a fresh process; its last stdout line as JSON, or None (said
    on stderr) when it failed."""
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"  {label}: failed {done.stderr[-400:]}", file=sys.stderr)
        return None
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def scaling(sizes: list[int]) -> list[dict[str, object]]:
    rows = []
    for users in sizes:
        for view_format, attack, extra in SCALING_CASES:
            for h in (1, 2, 3):
                row = run_child(
                    [__file__, "--child", json.dumps([view_format, attack, users, h, extra])],
                    f"{attack} h={h} {users}",
                )
                if row is None:
                    continue
                rows.append(row)
                print(
                    f"{users:>8} users  {view_format:<10} {attack:<18} h={h}  "
                    f"{row['seconds']:7.1f} s  {row['peak_gb']:5.2f} GB  "
                    f"{row['instances']:>13,} instances",
                    flush=True,
                )
    return rows


# --- main -------------------------------------------------------------------------------------


def warm_up() -> None:
    """Compile (or load from cache) every kernel on tiny data, outside the timings."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_data(20, 10, 30, seed=0, folder=Path(tmp))
        for case in PEER_CASES:
            prudence_risks(paths, case)


def machine() -> str:
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def render_markdown(results: dict[str, object]) -> str:
    """The tables of a run, as they go into benchmarks/RESULTS.md."""
    lines = [
        f"Machine: {results['machine']}. Date: {results['date']}. Command: `{results['command']}`.",
        "",
    ]
    peers = results.get("peers") or []
    if peers:
        lines += [
            "| users | attack (h = 2) | Prudence s | fastmob s | fastmob / Prudence | "
            "scikit-mobility s | scikit-mobility / Prudence | same risks |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in peers:  # type: ignore[attr-defined]
            skmob = "—"
            ratio = "—"
            if "skmob_s" in row:
                skmob = (
                    f"~{row['skmob_s']:,.0f} (extrapolated from {row['skmob_targets']} "
                    f"target{'s' if row['skmob_targets'] > 1 else ''})"
                )
                ratio = f"{row['skmob_ratio']:,.0f}×"
            agree = [t for t in ("fastmob", "skmob") if row.get(f"{t}_agree")]
            lines.append(
                f"| {row['users']:,} | {row['attack']} | {row['prudence_s']:.3f} | "
                f"{row.get('fastmob_s', float('nan')):.2f} | {row.get('fastmob_ratio', 0):,.0f}× | "
                f"{skmob} | {ratio} | {', '.join(agree) or row['note'] or '—'} |"
            )
        lines.append("")
    scaling_rows = results.get("scaling") or []
    if scaling_rows:
        lines += [
            "| users | data | attack | h | wall s | peak GB | instances |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in scaling_rows:  # type: ignore[attr-defined]
            lines.append(
                f"| {row['users']:,} | {row['format']} | {row['attack']} | {row['h']} | "
                f"{row['seconds']:.1f} | {row['peak_gb']:.2f} | {row['instances']:,} |"
            )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    os.environ.setdefault("PRUDENCE_KERNELS", "compiled")  # kernel figures (see above)
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        scaling_child(*json.loads(sys.argv[2]))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--markdown":
        print(render_markdown(json.loads(Path(sys.argv[2]).read_text())))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--scaling", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--peer-sizes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument(
        "--skmob-targets",
        type=int,
        nargs="+",
        default=[2, 1],
        help="scikit-mobility targets per peer size",
    )
    parser.add_argument(
        "--scaling-sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000]
    )
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    results: dict[str, object] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join(["python", "benchmarks/run.py", *sys.argv[1:]]),
    }
    print(f"{results['machine']}; {results['date']}", flush=True)
    warm_up()
    if args.peers:
        if not PEER_PYTHON.exists():
            subprocess.run(["bash", str(HERE / "peers_setup.sh")], check=True)
        print(
            "\nPeers (h = 2; ~ = extrapolated from a seeded sample of targets; "
            "×N = peer time / Prudence time):",
            flush=True,
        )
        peer_rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for users, targets in zip(args.peer_sizes, args.skmob_targets, strict=False):
                peer_rows += compare_peers(users, targets, Path(tmp))
        results["peers"] = peer_rows
    if args.scaling:
        print("\nPrudence alone (one subprocess per run; peak = max RSS):", flush=True)
        results["scaling"] = scaling(args.scaling_sizes)
    out = OUT / "results.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    (OUT / "results.md").write_text(render_markdown(results))
    print(f"\nResults in {out} and {OUT / 'results.md'}")
    differ = [
        f"{r['users']} users {r['attack']} ({t})"
        for r in results.get("peers", [])
        for t in ("fastmob", "skmob")
        if r.get(f"{t}_agree") is False
    ]
    if differ:
        print(
            "Per-user risks differ where the semantics are the same: " + "; ".join(differ),
            file=sys.stderr,
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
