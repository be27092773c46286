"""End to end: `prudence assess` on a large GPS CSV against the time to merely read it.

    python benchmarks/end_to_end.py [--people 1000000] [--repeat 3]

1. Data: a seeded GPS CSV of 10 fixes per person (1M people: 10M rows, about 0.5 GB),
   each person returning to 5-9 favourite places of a 20,000-place lattice over Pisa
   (Zipf popularity), naive ISO times local to Europe/Rome over June 2011, rows in time
   order. Cached under benchmarks/out/end_to_end/ and reused while it exists.
2. The floor: `pyarrow.csv.read_csv` of the same file (every core), wall time.
3. `prudence assess` as a user runs it: a subprocess from the CSV with a config of one
   presence dataview (250 m grid) and `unique_location` at h = 2; its wall time and peak
   resident memory (the child's own rusage), and the step times it records in the
   catalog's manifest.
4. The steps in-process through the public functions, each in its own subprocess:
   `read_points`, then `select`, then `build_dataviews`.

Each figure is the minimum over `--repeat` runs, the floor and assess taking turns.
Prints the ratio assess / floor and
writes benchmarks/out/end_to_end.json. Not run in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
DATA = OUT / "end_to_end"
CLI = "from prudence_cli.cli import main; main()"  # `prudence`, from the tree measured
POINTS_PER_PERSON = 10

CONFIG = """\
name: end_to_end
seed: 1
input:
  path: {csv}
  format: gps
  columns: {{user: uid, time: datetime, lat: lat, lon: lng}}
  timezone: Europe/Rome
dataview:
  format: presence
  dimensions: {{grid: [250m]}}
attacks:
  - attack: unique_location
    knowledge: {{h: [2]}}
output: {catalog}
"""


def lattice(places: int = 20_000) -> tuple[Any, Any, Any]:
    """The places people return to: lat, lon (300 m apart over Pisa) and popularity
    (Zipf, exponent 0.8)."""
    import numpy as np

    side = int(np.ceil(np.sqrt(places)))
    cell = np.arange(places)
    lat = np.round(43.66 + (cell // side) * 300.0 / 110_540.0, 7)
    lon = np.round(10.33 + (cell % side) * 300.0 / (111_320.0 * np.cos(np.radians(43.7))), 7)
    popularity = 1.0 / np.arange(1, places + 1) ** 0.8
    return lat, lon, popularity / popularity.sum()


def write_gps(path: Path, people: int, seed: int = 1) -> None:
    """The seeded GPS CSV (see the module docstring), written through a temporary name."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    rng = np.random.default_rng(seed)
    lat, lon, popularity = lattice()
    favourites = rng.choice(popularity.size, size=(people, 9), p=popularity)
    kept = rng.integers(5, 10, people)
    rows = people * POINTS_PER_PERSON
    user = np.repeat(np.arange(people), POINTS_PER_PERSON)
    pick = (rng.random(rows) ** 2 * kept[user]).astype(np.int64)  # skewed to the first
    place = favourites[user, pick]
    start = np.datetime64("2011-06-01T00:00:00", "s").astype(np.int64)
    seconds = start + rng.integers(0, 30 * 86_400, rows)
    order = np.argsort(seconds, kind="stable")
    tmp = path.with_suffix(".tmp")
    schema = pa.schema(
        [
            ("uid", pa.string()),
            ("datetime", pa.string()),
            ("lat", pa.float64()),
            ("lng", pa.float64()),
        ]
    )
    with pcsv.CSVWriter(tmp, schema) as writer:
        for first in range(0, rows, 1_000_000):
            part = order[first : first + 1_000_000]
            stamps = np.datetime_as_string(seconds[part].astype("datetime64[s]"))
            table = pa.table(
                {
                    "uid": pa.array(np.char.add("u", np.char.zfill(user[part].astype(str), 7))),
                    "datetime": pa.array(stamps),
                    "lat": lat[place[part]],
                    "lng": lon[place[part]],
                },
                schema=schema,
            )
            writer.write_table(table)
    tmp.replace(path)


def data_file(people: int) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"gps_{people}.csv"
    if not path.exists():  # written by a child: this process stays small while it measures
        started = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--write", str(path), str(people)], check=True)
        print(f"wrote {path} in {time.perf_counter() - started:.0f} s", flush=True)
    return path


def alternated(commands: list[list[str]], repeat: int) -> list[tuple[float, float, str]]:
    """Each command run `repeat` times, in turns (so that other work on a shared machine
    weighs on each alike): per command the fastest wall time, the smallest peak and the
    last run's stdout."""
    runs: list[list[tuple[float, float, str]]] = [[] for _ in commands]
    for _ in range(repeat):
        for k, command in enumerate(commands):
            runs[k].append(_timed(command))
    return [(min(r[0] for r in rs), min(r[1] for r in rs), rs[-1][2]) for rs in runs]


def _timed(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak resident GB (the child's own rusage) and stdout of a command,
    run from the data folder (no source tree there to import from)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, text=True, cwd=DATA)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"{' '.join(command)} failed:\n{err.read()}")
        return wall, usage.ru_maxrss / 1e6, out.read()  # ru_maxrss is in kB on Linux


FLOOR = """
import sys, time
import pyarrow.csv as pcsv
started = time.perf_counter()
table = pcsv.read_csv(sys.argv[1])
print(time.perf_counter() - started, table.num_rows)
"""

STEPS = """
import json, sys, time
from pathlib import Path
from prudence_cli.config import load_config
from prudence_cli.io.readers import read_points
from prudence_cli.select import select
from prudence_cli.dataviews.build import build_dataviews

config = load_config(Path(sys.argv[1]))
steps = {}
started = time.perf_counter()
raw = read_points(config.input.spec())
steps["read_points"] = time.perf_counter() - started
started = time.perf_counter()
selection = select(raw, config)
steps["select"] = time.perf_counter() - started
del raw
started = time.perf_counter()
views = list(build_dataviews(selection, config.dataview, config.input.timezone))
steps["build_dataviews"] = time.perf_counter() - started
print(json.dumps(steps))
"""


def main() -> None:
    if sys.argv[1:2] == ["--write"]:
        write_gps(Path(sys.argv[2]), int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--tree",
        type=Path,
        default=ROOT,
        help="the source tree to measure (another checkout, e.g. an earlier version)",
    )
    args = parser.parse_args()
    csv = data_file(args.people)
    rows = args.people * POINTS_PER_PERSON
    config = DATA / f"config_{args.people}.yaml"
    catalog = DATA / f"catalog_{args.people}"
    config.write_text(CONFIG.format(csv=csv, catalog=catalog), encoding="utf-8")

    python = sys.executable
    os.environ["PYTHONPATH"] = str(args.tree.resolve())  # the children import from it
    assess_command = [python, "-c", CLI, "assess", str(config), "-q", "--out", str(catalog)]
    (floor, floor_peak, _), (assess, assess_peak, _) = alternated(
        [[python, "-c", FLOOR, str(csv)], assess_command], args.repeat
    )
    print(f"floor: pyarrow.csv.read_csv {floor:.2f} s, {floor_peak:.2f} GB", flush=True)
    manifest = json.loads((catalog / "catalog.json").read_text(encoding="utf-8"))
    recorded = manifest.get("timings_seconds", {})
    print(f"prudence assess: {assess:.2f} s, {assess_peak:.2f} GB peak", flush=True)
    step_runs = [
        json.loads(_timed([python, "-c", STEPS, str(config)])[2]) for _ in range(args.repeat)
    ]
    steps = {k: min(run[k] for run in step_runs) for k in step_runs[0]}

    result = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start",
        "tree": str(args.tree.resolve()),
        "people": args.people,
        "rows": rows,
        "csv_bytes": csv.stat().st_size,
        "repeat": args.repeat,
        "floor_read_csv_seconds": round(floor, 3),
        "floor_peak_gb": round(floor_peak, 3),
        "assess_seconds": round(assess, 3),
        "assess_peak_gb": round(assess_peak, 3),
        "ratio": round(assess / floor, 2),
        "assess_recorded_seconds": recorded,
        "steps_in_process_seconds": {k: round(v, 3) for k, v in steps.items()},
    }
    print(f"ratio assess / floor: {assess / floor:.1f}x")
    print("steps recorded by assess:", ", ".join(f"{k} {v:.2f} s" for k, v in recorded.items()))
    print("steps in process:", ", ".join(f"{k} {v:.2f} s" for k, v in steps.items()))
    OUT.mkdir(exist_ok=True)
    name = "" if args.tree.resolve() == ROOT else f"_{args.tree.resolve().name}"
    target = OUT / f"end_to_end_{args.people}{name}.json"
    target.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
