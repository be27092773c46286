"""A real Dask deployment against the local engine, under the same memory limit per process.

    python benchmarks/cluster.py [--people 10000000] [--files 20] [--limit-gb 3]
                                 [--workers 2] [--skip-local] [--h 2]
                                 [--sample N --max-instances M]
                                 [--trajectory [--attack visit|location] | --unicity
                                  | --profiles | --segments] [--cache] [--tag NAME]

1. Data: `--people` people of the end-to-end benchmark's habits (10 GPS fixes each, 5-9
   favourite places of a 20,000-place lattice over Pisa, Zipf popularity, June 2011),
   written as `--files` Parquet parts, each a range of people (typed columns), cached
   under benchmarks/out/cluster/ and reused while they exist. With `--segments`,
   map-matched trips instead: 2 trips of 5 segments each a person, over the shipped
   street network of Pisa (2,595 segments, Zipf popularity), June 2011.
2. The local engine: `prudence assess` on the folder, its data segment limited to
   `--limit-gb` (RLIMIT_DATA: numpy's arrays count, the reserved address space of the
   kernels does not): wall time, peak resident memory, or how it failed.
3. A deployment on this machine: `dask scheduler` and `--workers` × `dask worker
   --nthreads 1 --memory-limit LIMIT` (Dask's own limit: it spills, pauses and restarts a
   worker by it), then `prudence assess --engine dask --scheduler ...`: wall time, the
   assessing process's peak, each worker's peak, and the time of each partition task
   (from the scheduler's task stream).

The config: the end-to-end benchmark's (one presence dataview, 250 m grid,
`unique_location` at h = 2, or `--h`; with `--sample N --max-instances M`, a level over
M instances is sampled, N a person; `--max-instances M` alone raises the budget, the
level counted whole; with `--trajectory`, a trajectory dataview, 250 m
and 1 h, and `location_sequence` instead, or `--attack visit` or `location`; with
`--unicity`, a bins dataview, 250 m and 6 h, and `unicity` with 3 points drawn by
activity, EM/KL on 200 people; with `--cache`, `input.cache: parquet` in a new cache
folder, and the deployment's assessment run twice: writing the cache, then reading it;
with `--segments`, a segments dataview at 5 min and `subtrajectory` (its triples
numbered in blocks past 2^23 of them: dataviews/kept_codes.py); with `--profiles`,
boolean profiles on the 250 m grid and the randomized sweep of
randomized response at ε = 1 on N(b_i, 5), reidentification in scenario 2.2 on a sample
of 200 people);
the deployment: the tests' (tests/engine/test_cluster.py).
Results: benchmarks/out/cluster_<people>[_traj[_visit|_location]|_segments|_unicity]
[_h<h>][_s<N>]
[_cache][_m<M>][_<tag>].json (`_m<M>`: `--max-instances M` alone); the catalogs beside
them, in benchmarks/out/cluster/ under the same name, so that `--tag` keeps two codes'
runs (and their catalogs) apart to compare.
Not run in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from end_to_end import CONFIG, POINTS_PER_PERSON, lattice  # type: ignore[import-not-found]  # noqa: E402

from tests.engine.test_cluster import deployment  # noqa: E402  (the tests' deployment)

OUT = HERE / "out"
DATA = OUT / "cluster"
BIN = Path(sys.executable).parent
STREETS = HERE.parent / "sample_data" / "pisa_streets.csv.gz"
SEGMENTS = """\
name: end_to_end_segments
seed: 1
input:
  path: {parts}
  format: segments
  columns: {{user: uid, trip: trip, segment: segment, enter: entered, leave: left}}
  segments: {streets}
  timezone: Europe/Rome
dataview:
  format: segments
  dimensions: {{time: [5min]}}
attacks:
  - attack: subtrajectory
    knowledge: {{h: [2]}}
coverage: segments
output: {catalog}
"""


def write_parts(folder: Path, people: int, files: int, seed: int = 1) -> None:
    """The seeded parts (see the module docstring), each written whole, then the folder
    renamed into place."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    lat, lon, popularity = lattice()
    places = popularity.size
    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    per_file = -(-people // files)
    start = np.datetime64("2011-06-01T00:00:00", "ms").astype(np.int64)
    for k in range(files):  # people [first, last) in part k: each part on its own
        first, last = k * per_file, min((k + 1) * per_file, people)
        n = last - first
        favourites = rng.choice(places, size=(n, 9), p=popularity)
        kept = rng.integers(5, 10, n)
        user = np.repeat(np.arange(n), POINTS_PER_PERSON)
        pick = (rng.random(user.size) ** 2 * kept[user]).astype(np.int64)
        place = favourites[user, pick]
        millis = start + rng.integers(0, 30 * 86_400, user.size) * 1000
        ids = np.char.add("u", np.char.zfill((user + first).astype(str), 8))
        table = pa.table(
            {
                "uid": pa.array(ids),
                "datetime": pa.array(millis.astype("datetime64[ms]")),
                "lat": lat[place],
                "lng": lon[place],
            }
        )
        pq.write_table(table, tmp / f"part-{k:03d}.parquet")
    tmp.replace(folder)


def write_segment_parts(folder: Path, people: int, files: int, seed: int = 1) -> None:
    """As `write_parts`, map-matched trips over the shipped street network of Pisa: per
    person 2 trips of 5 segments (Zipf popularity, exponent 0.8), each begun at a random
    second of June 2011, each segment crossed in 20-90 s."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    streets = pd.read_csv(STREETS, usecols=["segment"])["segment"].to_numpy(dtype=str)
    popularity = 1.0 / np.arange(1, streets.size + 1) ** 0.8
    popularity = popularity[rng.permutation(streets.size)]
    popularity /= popularity.sum()
    trips, crossed = 2, 5
    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    per_file = -(-people // files)
    start = np.datetime64("2011-06-01T00:00:00", "ms").astype(np.int64)
    for k in range(files):
        first, last = k * per_file, min((k + 1) * per_file, people)
        n = (last - first) * trips  # trips of this part
        begun = start + rng.integers(0, 30 * 86_400, n) * 1000
        took = rng.integers(20, 91, (n, crossed)) * 1000
        left = begun[:, None] + np.cumsum(took, axis=1)
        entered = left - took
        user = np.repeat(np.arange(first, last), trips * crossed)
        trip = np.tile(np.repeat(np.array(["t0", "t1"]), crossed), last - first)
        table = pa.table(
            {
                "uid": pa.array(np.char.add("u", np.char.zfill(user.astype(str), 8))),
                "trip": pa.array(trip),
                "segment": pa.array(streets[rng.choice(streets.size, n * crossed, p=popularity)]),
                "entered": pa.array(entered.reshape(-1).astype("datetime64[ms]")),
                "left": pa.array(left.reshape(-1).astype("datetime64[ms]")),
            }
        )
        pq.write_table(table, tmp / f"part-{k:03d}.parquet")
    tmp.replace(folder)


def parts_for(people: int, files: int, segments: bool = False) -> Path:
    folder = DATA / (f"parts_{people}_{files}" + ("_segments" if segments else ""))
    if not folder.exists():
        started = time.perf_counter()
        kind = "--write-segments" if segments else "--write"
        subprocess.run(
            [sys.executable, __file__, kind, str(folder), str(people), str(files)],
            check=True,
        )
        print(f"wrote {folder} in {time.perf_counter() - started:.0f} s", flush=True)
    return folder


def run_local(config: Path, out: Path, limit: int) -> dict[str, object]:
    """`prudence assess` with its data segment limited to `limit` bytes."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    return _timed(
        [str(BIN / "prudence"), "assess", str(config), "--out", str(out), "--quiet", "--force"],
        limited,
    )


def _timed(command: list[str], before=None) -> dict[str, object]:
    with tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=before)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        return {
            "seconds": round(wall, 2),
            "peak_gb": round(usage.ru_maxrss / 1e6, 3),
            "exit": code,
            "error": err.read()[-600:] if code else "",
        }


def _peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_cluster(config: Path, out: Path, workers: int, limit: int) -> dict[str, object]:
    import cloudpickle
    from distributed import Client

    if __name__ != "__main__":  # imported (benchmarks/clusters.py): the workers cannot
        cloudpickle.register_pickle_by_value(sys.modules[__name__])  # import it by name
    DATA.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="cluster-", dir=DATA))
    with deployment(folder, workers, limit) as address, Client(address, timeout=60) as client:
        client.get_task_stream(start=time.time())  # start recording
        started = time.time()
        found = _timed(
            [
                str(BIN / "prudence"),
                "assess",
                str(config),
                "--out",
                str(out),
                "--quiet",
                "--force",
                "--engine",
                "dask",
                "--scheduler",
                address,
            ]
        )
        stream = client.get_task_stream(start=started)
        peaks = client.run(_peak_kb)
    tasks: dict[str, list[float]] = {}
    for task in stream:
        name = task["key"].split("-")[0].strip("('_")
        spans = [s for s in task["startstops"] if s["action"] == "compute"]
        tasks.setdefault(name, []).extend(s["stop"] - s["start"] for s in spans)
    found["worker_peaks_gb"] = [round(kb / 1e6, 3) for kb in peaks.values()]
    found["tasks"] = {
        name: {
            "count": len(times),
            "mean_s": round(sum(times) / len(times), 3),
            "max_s": round(max(times), 3),
        }
        for name, times in sorted(tasks.items())
        if times
    }
    if found["exit"] == 0:  # the deployment's logs are kept only when the run failed
        shutil.rmtree(folder, ignore_errors=True)
    else:
        found["logs"] = str(folder)
    return found


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] in ("--write", "--write-segments"):
        write = write_parts if sys.argv[1] == "--write" else write_segment_parts
        write(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--limit-gb", type=float, default=3.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--h", type=int, default=2)
    parser.add_argument("--sample", type=int, default=None)
    parser.add_argument("--max-instances", type=int, default=None)
    parser.add_argument("--trajectory", action="store_true")
    parser.add_argument(
        "--attack", choices=["location_sequence", "visit", "location"], default=None
    )
    parser.add_argument("--unicity", action="store_true")
    parser.add_argument("--cache", action="store_true")
    parser.add_argument("--profiles", action="store_true")
    parser.add_argument("--segments", action="store_true")
    parser.add_argument(
        "--tag", default="", help="appended to the outputs' names: two codes' runs kept apart"
    )
    args = parser.parse_args()
    if args.tag and not args.tag.replace("-", "").replace("_", "").isalnum():
        parser.error("--tag takes letters, digits, - and _ only (it names files)")
    if args.cache and args.segments:
        parser.error("--cache is measured on the GPS parts")
    if args.attack and not args.trajectory:
        parser.error("--attack chooses the attack of --trajectory")
    if sum((args.unicity, args.trajectory, args.profiles, args.segments)) > 1:
        parser.error("--unicity, --trajectory, --profiles and --segments are different views")
    attack = args.attack or "location_sequence"
    if args.h < 1 or (args.sample is not None and args.sample < 1):
        parser.error("--h and --sample are at least 1")
    limit = int(args.limit_gb * 2**30)
    parts = parts_for(args.people, args.files, args.segments)
    name = f"{args.people}" + ("_traj" if args.trajectory else "")
    name += "_segments" if args.segments else ""
    name += "_unicity" if args.unicity else ""
    name += "" if attack == "location_sequence" else f"_{attack}"
    name += f"_h{args.h}" if args.h != 2 or args.sample else ""
    name += f"_s{args.sample}" if args.sample else ""
    name += "_profiles" if args.profiles else ""
    name += "_cache" if args.cache else ""
    name += f"_m{args.max_instances}" if args.max_instances and not args.sample else ""
    name += f"_{args.tag}" if args.tag else ""
    config = DATA / f"config_{name}.yaml"
    text = CONFIG.format(csv=parts, catalog=DATA / f"catalog_{name}")
    if args.cache:  # a new cache: the first run writes it, the second reads it
        cache = DATA / f"cache_{name}"
        shutil.rmtree(cache, ignore_errors=True)
        cached = f"  format: gps\n  cache: parquet\n  cache_dir: {cache}\n"
        text = text.replace("  format: gps\n", cached)
    if args.segments:
        text = SEGMENTS.format(parts=parts, streets=STREETS, catalog=DATA / f"catalog_{name}")
    text = text.replace("knowledge: {h: [2]}", f"knowledge: {{h: [{args.h}]}}")
    if args.trajectory:
        text = text.replace("format: presence", "format: trajectory")
        text = text.replace("{grid: [250m]}", "{grid: [250m], time: [1h]}")
        text = text.replace("attack: unique_location", f"attack: {attack}")
    if args.unicity:
        text = text.replace("format: presence", "format: bins")
        text = text.replace("{grid: [250m]}", "{grid: [250m], time: [6h]}")
        text = text.replace(
            "attack: unique_location\n    knowledge: {h: [2]}",
            "attack: unicity\n    knowledge: {points: [3], draw: [activity], samples: [200]}",
        )
    if args.profiles:
        text = text.replace("format: presence", "format: profiles")
        text = text.replace("{grid: [250m]}", "{grid: [250m], profile: [boolean]}")
        text = text.replace(
            "attacks:\n  - attack: unique_location\n    knowledge: {h: [2]}",
            "mechanisms:\n  - {mechanism: randomized_response, epsilon: [1], "
            "neighbourhood: [5]}\nrandomize: {users: 200}\nattacks:\n"
            '  - attack: reidentification\n    knowledge: {scenario: ["2.2"], delta: [2], M: [1]}',
        )
    if args.sample:
        limit_of = args.max_instances or 1_000_000
        text += f"engine: {{max_instances: {limit_of}, sample: {args.sample}}}\n"
    elif args.max_instances:  # a level over the default budget, counted whole
        text += f"engine: {{max_instances: {args.max_instances}}}\n"
    config.write_text(text, encoding="utf-8")
    results: dict[str, object] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "people": args.people,
        "rows": args.people * POINTS_PER_PERSON,
        "files": args.files,
        "limit_gb": args.limit_gb,
        "workers": args.workers,
        "h": args.h,
        "sample": args.sample,
        "max_instances": args.max_instances,
        "format": "trajectory"
        if args.trajectory
        else "segments"
        if args.segments
        else "bins"
        if args.unicity
        else "profiles"
        if args.profiles
        else "presence",
        "attack": attack
        if args.trajectory
        else "subtrajectory"
        if args.segments
        else "unicity"
        if args.unicity
        else "reidentification"
        if args.profiles
        else "unique_location",
        "cache": args.cache,
        "cpus": os.cpu_count(),
    }
    if not args.skip_local:
        results["local"] = run_local(config, DATA / f"local_{name}", limit)
        print("local:", json.dumps(results["local"]), flush=True)
    results["cluster"] = run_cluster(config, DATA / f"cluster_{name}", args.workers, limit)
    print("cluster:", json.dumps(results["cluster"]), flush=True)
    if args.cache:
        again = run_cluster(config, DATA / f"cluster_{name}", args.workers, limit)
        results["cluster_from_cache"] = again
        print("cluster, from the cache:", json.dumps(again), flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / f"cluster_{name}.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
