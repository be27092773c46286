"""Clusters dataviews end to end: the local engine, and a Dask deployment whose workers
keep the crossings.

    python benchmarks/clusters.py [--users 20000] [--days 7] [--parts 4]
                                  [--limit-gb 3] [--workers 2]

1. Data: `prudence sample segments --users N --days D` (seeded map-matched trips over
   Pisa's streets, 4.5M crossings at 20,000 people and 7 days), cached under
   benchmarks/out/clusters/, and the same rows as `--parts` Parquet parts, each a share
   of the people, for the deployment.
2. The config: one clusters dataview (1 h windows, frequency 3, tolerance 100 m), the
   cluster attack, coverage `segments` (RAC_D re-clusters without the unsafe people),
   no mobility measures.
3. The local engine: `prudence assess` on the CSV, its data segment limited to
   `--limit-gb` (benchmarks/cluster.py's `run_local`): wall time, peak memory, the
   catalog's own timings (reading, attacks).
4. The deployment of benchmarks/cluster.py (`dask scheduler`, `--workers` × `dask worker
   --memory-limit`), `prudence assess --engine dask` on the parts: wall time, the
   assessing process's and each worker's peak, time per task; and whether its i-RAC
   table is the local one's.
Results: benchmarks/out/clusters_<users>_<days>.json. Not run in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from cluster import BIN, run_cluster, run_local  # type: ignore[import-not-found]  # noqa: E402

OUT = HERE / "out"
DATA = OUT / "clusters"
CONFIG = """\
name: clusters_benchmark
seed: 7
input:
  path: {path}
  format: segments
  columns: {{user: uid, trip: trip, segment: segment, enter: entered, leave: left}}
  segments: {streets}
  timezone: Europe/Rome
dataview:
  format: clusters
  dimensions: {{window: [1h], frequency: [3], tolerance: [100m]}}
attacks:
  - attack: cluster
coverage: segments
utility: {{measures: none}}
output: {catalog}
"""


def sample(users: int, days: int, parts: int) -> tuple[Path, Path, Path]:
    """The sampled trips (CSV), the streets, and the trips as Parquet parts (cached;
    made by child processes: a child's peak memory starts at its parent's)."""
    trips = DATA / f"trips_{users}_{days}.csv"
    streets = DATA / "streets.csv"
    folder = DATA / f"parts_{users}_{days}_{parts}"
    DATA.mkdir(parents=True, exist_ok=True)
    if not trips.exists():
        partial = trips.with_name(trips.name + ".tmp.csv")
        command = [str(BIN / "prudence"), "sample", "segments", "--users", str(users)]
        command += ["--days", str(days), "--out", str(partial), "--segments", str(streets)]
        subprocess.run([*command, "--force", "--quiet"], check=True)
        partial.replace(trips)
    if not folder.exists():
        command = [sys.executable, __file__, "--write", str(trips), str(folder), str(parts)]
        subprocess.run(command, check=True)
    return trips, streets, folder


def write_parts(trips: Path, folder: Path, parts: int) -> None:
    """The rows of `trips` in `parts` Parquet files, person k's in part k mod `parts`,
    written whole, then the folder renamed into place."""
    import pandas as pd

    rows = pd.read_csv(trips, dtype=str)
    person = pd.factorize(rows["uid"])[0]
    partial = folder.with_name(folder.name + ".tmp")
    partial.mkdir(exist_ok=True)
    for k in range(parts):
        rows[person % parts == k].to_parquet(partial / f"part-{k:03d}.parquet", index=False)
    partial.replace(folder)


def _timings(catalog: Path) -> dict[str, float]:
    manifest = json.loads((catalog / "catalog.json").read_text())
    return manifest.get("timings_seconds", {})


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--write":
        write_parts(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--limit-gb", type=float, default=3.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    limit = int(args.limit_gb * 2**30)
    trips, streets, parts = sample(args.users, args.days, args.parts)
    name = f"{args.users}_{args.days}"
    results: dict[str, object] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "users": args.users,
        "days": args.days,
        "crossings": sum(1 for _ in trips.open()) - 1,
        "limit_gb": args.limit_gb,
        "workers": args.workers,
        "cpus": os.cpu_count(),
    }
    runs = {"local": (trips, DATA / f"local_{name}"), "cluster": (parts, DATA / f"dask_{name}")}
    for kind, (path, catalog) in runs.items():
        config = DATA / f"config_{kind}_{name}.yaml"
        text = CONFIG.format(path=path, streets=streets, catalog=catalog)
        config.write_text(text, encoding="utf-8")
        if kind == "local":
            found = run_local(config, catalog, limit)
        else:
            found = run_cluster(config, catalog, args.workers, limit)
        if found["exit"] == 0:
            found["timings"] = _timings(catalog)
        results[kind] = found
        print(f"{kind}:", json.dumps(found), flush=True)
    local, spread = (runs[k][1] / "irac.csv" for k in ("local", "cluster"))
    if local.exists() and spread.exists():
        results["same_irac"] = local.read_text() == spread.read_text()
    (OUT / f"clusters_{name}.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
