"""Small inputs, whole processes: `prudence assess` from the CSV against the peers' scripts;
and the commands that read a catalog.

    python benchmarks/startup.py [--sizes 200 2000] [--repeat 5] [--skmob-targets 2]
                                 [--attacks location visit ...] [--no-skmob]
                                 [--no-compare] [--no-breakdown]
    python benchmarks/startup.py --reads CATALOG [--repeat 20]

At 200 and 2,000 people, most of a run is starting up, not attacking, so this compares
whole processes, wall time from launch to exit, on the data of `run.py` (the same seeded
users; a place is a tower for Prudence, its coordinates for scikit-mobility and its H3
cell for fastmob):

- Prudence: `prudence assess CONFIG` — Python, imports, the config, reading and
  selecting the call records, the dataview, the kernels (from numba's cache: one
  warm-up run first), the attack, writing the catalog;
- fastmob and scikit-mobility: `peer_attacks.py` in the peers' environment
  (`benchmarks/peers_setup.sh`) — Python, imports, reading the CSV, the attack, writing
  the risks. scikit-mobility runs on a seeded sample of targets: its whole process is
  extrapolated as (wall time − its attack time) + attack time × people / targets, and
  marked `~`.

Prudence and fastmob take turns, one run each per round after an untimed round, so that
a passing load weighs on both alike; each time is the minimum of `--repeat` rounds, with
the median next to it (this machine's runs spread by ±0.03 s, as much as some of the
gaps). scikit-mobility runs once, after them. Then, unless `--no-breakdown`, where
Prudence's time goes at the smallest size: each heavy import alone in a fresh process,
and the stages of one assessment in one process. Results: benchmarks/out/startup.json.

With `--reads CATALOG`, instead: `prudence catalog show` (table, CSV, JSON) and
`prudence check` on an assessed catalog (e.g. catalog/demo of `make demo`), whole
processes, best and median of `--repeat` runs taken in turn, after one untimed round;
the bare interpreter for scale. The code timed is whichever `prudence_cli` the
interpreter imports (PYTHONPATH=OTHER_TREE times another version on the same catalog).
Results: benchmarks/out/startup_reads.json. Not part of CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from run import PeerCase

HERE = Path(__file__).resolve().parent
PEER_PYTHON = HERE / ".peers" / "venv" / "bin" / "python"
OUT = HERE / "out"
PRUDENCE = Path(sys.executable).with_name("prudence")
HEAVY = ("numpy", "pandas", "scipy.sparse", "shapely", "pyproj", "matplotlib", "numba")
# The processes timed write their bytecode (.pyc) on the untimed first run, as a user's
# machine does: an environment that forbids it would time compiling every module.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


# --- the processes timed --------------------------------------------------------------------


def write_config(paths: dict[str, Path], case: PeerCase, folder: Path) -> Path:
    """A Prudence config (JSON is YAML) for one attack on the call records of `paths`."""
    knowledge = {k: [v] for k, v in case.knowledge.items()}
    config = {
        "name": f"startup-{case.attack}",
        "seed": 7,
        "input": {
            "path": str(paths["events"]),
            "format": "cdr",
            "columns": {"user": "user", "time": "time", "tower": "tower"},
            "towers": str(paths["towers"]),
            "timezone": "UTC",
        },
        "dataview": {
            "format": case.view,
            "dimensions": {"time": ["1h"]} if case.view == "trajectory" else {},
        },
        "attacks": [{"attack": case.attack, **({"knowledge": knowledge} if knowledge else {})}],
        "output": str(folder / f"catalog-{case.attack}"),
    }
    path = folder / f"{case.attack}.yaml"
    path.write_text(json.dumps(config, indent=1), encoding="utf-8")
    return path


def wall(command: list[str], repeat: int) -> tuple[float, str]:
    """The minimum wall time of `repeat` runs of `command`, and the last run's stdout."""
    times, out = timed_runs(command, repeat)
    return min(times), out


def timed_runs(command: list[str], repeat: int) -> tuple[list[float], str]:
    """The wall times of `repeat` runs of `command`, and the last run's stdout."""
    times, out = [], ""
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=ENV)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()[-400:]}")
        times.append(seconds)
        out = done.stdout
    return times, out


def in_turns(commands: dict[str, list[str]], repeat: int) -> dict[str, tuple[list[float], str]]:
    """Each command's wall times over `repeat` rounds, the commands taking turns within a
    round (a passing load weighs on all of them alike), after one untimed round."""
    runs: dict[str, tuple[list[float], str]] = {name: ([], "") for name in commands}
    for round_ in range(repeat + 1):
        for name, command in commands.items():
            try:
                times, out = timed_runs(command, 1)
            except RuntimeError as exc:
                raise Failed(name, str(exc)) from None
            if round_:
                runs[name] = (runs[name][0] + times, out)
    return runs


class Failed(RuntimeError):
    """A command of `in_turns` that failed, by its name."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


def prudence_command(config: Path) -> list[str]:
    return [str(PRUDENCE), "assess", str(config), "--force", "--quiet"]


def peer_process(
    tool: str, case: PeerCase, data: Path, users: int, targets: int | None, repeat: int
) -> tuple[float, bool]:
    """The peer's whole process (extrapolated to every target when `targets` is set)."""
    command = peer_command_of(tool, case, data, targets)
    seconds, out = wall(command, repeat)
    return extrapolated(seconds, out, users)


def peer_command_of(tool: str, case: PeerCase, data: Path, targets: int | None) -> list[str]:
    sys.path.insert(0, str(HERE))
    from run import peer_command

    command = peer_command(tool, case, data, data.parent / f"{tool}-{case.attack}.csv")
    if targets is not None:
        command += ["--targets", str(targets), "--seed", "1"]
    return command


def extrapolated(seconds: float, out: str, users: int) -> tuple[float, bool]:
    """A peer's whole process at every target from a run on some of them."""
    report = json.loads(out.strip().splitlines()[-1])
    assessed = int(report["targets"])
    if assessed >= users:
        return seconds, False
    attack = float(report["seconds"])
    return seconds - attack + attack * users / assessed, True


def peer_cases() -> tuple[list[PeerCase], Any]:
    """run.py's attack cases and data generator (imported here: they load pandas, which
    the stages' child process must import itself, on its own clock)."""
    sys.path.insert(0, str(HERE))
    from run import PEER_CASES, make_data

    return PEER_CASES, make_data


def compare(
    users: int, attacks: list[str], repeat: int, skmob_targets: int | None
) -> list[dict[str, Any]]:
    """Each attack's whole processes at `users` people (scikit-mobility's on a sample of
    `skmob_targets` targets; None: not run)."""
    cases, make_data = peer_cases()
    rows = []
    with tempfile.TemporaryDirectory(prefix=f"startup-{users}-") as tmp:
        folder = Path(tmp)
        paths = make_data(users, 30, 200, seed=users, folder=folder)
        for case in cases:
            if case.attack not in attacks:
                continue
            row: dict[str, Any] = {"users": users, "attack": case.attack}
            commands = {"prudence": prudence_command(write_config(paths, case, folder))}
            if PEER_PYTHON.exists():  # fastmob and Prudence take turns
                commands["fastmob"] = peer_command_of("fastmob", case, paths["traj"], None)
            try:
                runs = in_turns(commands, repeat)
            except Failed as exc:
                if exc.name != "fastmob":
                    raise
                print(f"  fastmob {case.attack}: {exc}", file=sys.stderr)
                runs = in_turns({"prudence": commands["prudence"]}, repeat)
            times = runs["prudence"][0]
            row["prudence_s"], row["prudence_median_s"] = min(times), statistics.median(times)
            if "fastmob" in runs:
                times, out = runs["fastmob"]
                row["fastmob_s"], row["fastmob_extrapolated"] = extrapolated(min(times), out, users)
                row["fastmob_median_s"] = statistics.median(times)
                row["fastmob_ratio"] = row["fastmob_s"] / row["prudence_s"]
                row["fastmob_median_ratio"] = row["fastmob_median_s"] / row["prudence_median_s"]
            if PEER_PYTHON.exists() and skmob_targets is not None:
                try:
                    seconds, extra = peer_process(
                        "skmob", case, paths["traj"], users, skmob_targets, 1
                    )
                except RuntimeError as exc:
                    print(f"  skmob {case.attack}: {exc}", file=sys.stderr)
                else:
                    row["skmob_s"], row["skmob_extrapolated"] = seconds, extra
                    row["skmob_ratio"] = seconds / row["prudence_s"]
            rows.append(row)
            print(line(row), flush=True)
    return rows


def line(row: dict[str, Any]) -> str:
    parts = [f"{row['users']:>5} people  {row['attack']:<18} prudence {row['prudence_s']:6.2f} s"]
    if "prudence_median_s" in row:
        parts[0] += f" (median {row['prudence_median_s']:.2f})"
    for tool in ("fastmob", "skmob"):
        if f"{tool}_s" in row:
            mark = "~" if row[f"{tool}_extrapolated"] else " "
            median = (
                f", median ×{row[f'{tool}_median_ratio']:.2f}"
                if f"{tool}_median_ratio" in row
                else ""
            )
            parts.append(
                f"{tool} {mark}{row[f'{tool}_s']:8.2f} s (×{row[f'{tool}_ratio']:.2f} "
                f"prudence's{median})"
            )
    return "  ".join(parts)


# --- reading a catalog ----------------------------------------------------------------------

READS = {
    "catalog show --format table": ("catalog", "show", "--format", "table"),
    "catalog show --format csv": ("catalog", "show", "--format", "csv"),
    "catalog show --format json": ("catalog", "show", "--format", "json"),
    "check": ("check",),
}


def reads(catalog: Path, repeat: int) -> dict[str, dict[str, float]]:
    """Per command reading `catalog`, the best and median wall time of `repeat` runs,
    the commands taken in turn (a passing load weighs on all of them alike)."""
    commands = {"python -c pass": [sys.executable, "-c", "pass"]}
    for name, args in READS.items():
        commands[name] = [str(PRUDENCE), *args, "--catalog", str(catalog)]
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(repeat + 1):  # round 0 fills the caches, untimed
        for name, command in commands.items():
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, env=ENV)
            seconds = time.perf_counter() - started
            if done.returncode not in (0, 1):  # check: 1 when the policy is not met
                raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()[-400:]}")
            if round_:
                times[name].append(seconds)
    return {
        name: {"best_s": min(found), "median_s": statistics.median(found)}
        for name, found in times.items()
    }


def show_reads(found: dict[str, dict[str, float]]) -> None:
    print(f"{'':<28} {'best':>6} {'median':>7}")
    for name, entry in found.items():
        print(f"{name:<28} {entry['best_s']:6.3f} {entry['median_s']:7.3f} s")


# --- where Prudence's time goes ----------------------------------------------------------------


def import_times(repeat: int) -> dict[str, float]:
    """Each heavy module imported alone in a fresh process (its dependencies included,
    so the times overlap: numpy is inside all of them), and the bare interpreter."""
    times = {}
    for name in ("", *HEAVY):
        code = f"import {name}" if name else "pass"
        times[name or "python"] = wall([sys.executable, "-c", code], repeat)[0]
    if PEER_PYTHON.exists():  # what fastmob's script imports before its attack
        code = "import numpy, pandas, fastmob"
        times["peers: numpy, pandas 1.5, fastmob"] = wall([str(PEER_PYTHON), "-c", code], repeat)[0]
    return times


def stages(config: Path) -> dict[str, Any]:
    """Run in a child process: the stages of one assessment, timed in order, with the heavy
    modules each one loaded."""
    clock = time.perf_counter()
    marks: dict[str, Any] = {}

    def mark(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        loaded = [m for m in HEAVY if m in sys.modules and m not in marks.get("_seen", ())]
        marks["_seen"] = (*marks.get("_seen", ()), *loaded)
        marks[stage] = {"seconds": round(now - clock, 4), "loaded": loaded}
        clock = now

    import prudence_cli.cli  # noqa: F401

    mark("import the command line")
    from prudence_cli.assess import make_engine
    from prudence_cli.attacks.registry import ATTACKS
    from prudence_cli.config import load_config
    from prudence_cli.dataviews.build import build_dataviews
    from prudence_cli.prepare import prepare

    mark("import the assessment pipeline")
    cfg = load_config(config)
    mark("load the config")
    selection = prepare(cfg, lambda done, size: None).selection
    mark("read and select")
    view = next(build_dataviews(selection, cfg.dataview, cfg.input.timezone))
    mark("build the dataview")
    from prudence_cli.engine import jit

    engine = make_engine(cfg, None, None, None)
    for level in cfg.attacks[0].levels:
        ATTACKS[level.attack].risks(view, level, engine)
    way = "compiled" if jit.is_compiled() else "as Python"
    mark(f"the attack, as `assess` runs it ({way})")
    marks.pop("_seen")
    return marks


def breakdown(users: int, attacks: list[str], repeat: int) -> dict[str, Any]:
    """Imports alone, and per attack the stages of one assessment (minimum over `repeat`
    child processes) with the whole child process's wall time."""
    cases, make_data = peer_cases()
    found: dict[str, Any] = {"imports_alone_s": import_times(repeat), "stages": {}}
    with tempfile.TemporaryDirectory(prefix="startup-breakdown-") as tmp:
        folder = Path(tmp)
        paths = make_data(users, 30, 200, seed=users, folder=folder)
        for case in cases:
            if case.attack not in attacks:
                continue
            config = write_config(paths, case, folder)
            wall(prudence_command(config), 1)  # numba's cache filled, the catalog folder made
            command = [sys.executable, __file__, "--child-stages", str(config)]
            runs = []
            for _ in range(repeat):
                seconds, out = wall(command, 1)
                runs.append({**json.loads(out), "whole child process": {"seconds": seconds}})
            found["stages"][case.attack] = {
                stage: {
                    "seconds": round(min(run[stage]["seconds"] for run in runs), 4),
                    "loaded": runs[0][stage].get("loaded", []),
                }
                for stage in runs[0]
            }
    return found


def show_breakdown(found: dict[str, Any]) -> None:
    print("\neach import alone, fresh process (overlapping: numpy is in all of them):")
    for name, seconds in found["imports_alone_s"].items():
        print(f"  {name:<14} {seconds:6.3f} s")
    for attack, stages_ in found["stages"].items():
        print(f"\n{attack}: the stages of one assessment, in order")
        for stage, entry in stages_.items():
            loaded = f"  loads {', '.join(entry['loaded'])}" if entry["loaded"] else ""
            print(f"  {stage:<44} {entry['seconds']:6.3f} s{loaded}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skmob-targets", type=int, default=2)
    parser.add_argument("--skmob", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--attacks", nargs="+", help="attack names (default: every peer case)")
    parser.add_argument("--compare", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--breakdown", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--reads", type=Path, metavar="CATALOG", help="time catalog show and check")
    parser.add_argument("--child-stages", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_stages:
        print(json.dumps(stages(args.child_stages)))
        return
    if args.reads:
        found = reads(args.reads, args.repeat)
        show_reads(found)
        OUT.mkdir(exist_ok=True)
        report = {
            "when": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "catalog": str(args.reads),
            "repeat": args.repeat,
            "commands": found,
        }
        (OUT / "startup_reads.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
        print(f"\nwritten {OUT / 'startup_reads.json'}")
        return
    args.attacks = args.attacks or [case.attack for case in peer_cases()[0]]
    if not PEER_PYTHON.exists():
        print(f"no peers at {PEER_PYTHON}: run benchmarks/peers_setup.sh", file=sys.stderr)
    results: dict[str, Any] = {
        "when": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "repeat": args.repeat,
        "rows": [],
    }
    for users in args.sizes if args.compare else ():
        skmob = args.skmob_targets if args.skmob else None
        results["rows"] += compare(users, args.attacks, args.repeat, skmob)
    if args.breakdown:
        results["breakdown"] = breakdown(min(args.sizes), args.attacks, args.repeat)
        show_breakdown(results["breakdown"])
    OUT.mkdir(exist_ok=True)
    name = "startup.json" if args.compare else "startup_breakdown.json"
    (OUT / name).write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(f"\nwritten {OUT / name}")


if __name__ == "__main__":
    main()
