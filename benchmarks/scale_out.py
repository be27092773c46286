"""Beyond one machine: ingestion throughput and the Dask backend against the local engine.

    python benchmarks/scale_out.py [--rows 50000000] [--users 1000000] [--skip-ingest]

1. Ingestion: a synthetic GPS CSV of `--rows` rows (ISO times, 6-decimal coordinates) and
   its Parquet copy, each read by Prudence's reader in a fresh subprocess: rows/s and
   peak memory. The files go to a temporary folder (several GB) and are removed.
2. Scale-out: `unique_location` on `--users` synthetic people at h = 2 and 3, with the
   local engine (numba on every core), and on a Dask LocalCluster of 1 and 2
   single-threaded workers. Each run is a subprocess; memory is the client's peak plus
   every worker's. The n/k line is the 1-worker time divided by k.

Results go to benchmarks/out/scale_out.json and .md. Not run in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE))
from run import machine, peak_kb, run_child  # type: ignore[import-not-found]  # noqa: E402


def write_gps(path: Path, rows: int, seed: int = 1) -> None:
    """A GPS CSV in 10M-row slices: 1 fix a minute per user, over Pisa."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    rng = np.random.default_rng(seed)
    step = 10_000_000
    users = max(rows // 200, 1)
    with pcsv.CSVWriter(
        path,
        pa.schema(
            [
                ("uid", pa.string()),
                ("datetime", pa.string()),
                ("lat", pa.float64()),
                ("lng", pa.float64()),
            ]
        ),
    ) as writer:
        for start in range(0, rows, step):
            n = min(step, rows - start)
            user = rng.integers(0, users, n)
            seconds = 1306908000 + rng.integers(0, 30 * 86400, n)
            stamp = np.datetime_as_string(seconds.astype("datetime64[s]"))
            table = pa.table(
                {
                    "uid": pa.array(np.char.add("u", user.astype(str))),
                    "datetime": pa.array(stamp),
                    "lat": np.round(43.6 + rng.random(n) * 0.2, 6),
                    "lng": np.round(10.3 + rng.random(n) * 0.2, 6),
                }
            )
            writer.write_table(table)


def read_child(path: str) -> None:
    """Subprocess: read the file with Prudence's reader, print one JSON line."""
    from prudence_cli.io.points import read_points
    from prudence_cli.io.specs import ColumnMap, PointsSpec

    spec = PointsSpec(
        path=Path(path),
        format="gps",
        columns=ColumnMap(user="uid", time="datetime", lat="lat", lon="lng"),
        towers=None,
        timezone="Europe/Rome",
        time_format="auto",
        delimiter=",",
        on_invalid="stop",
    )
    started = time.perf_counter()
    points = read_points(spec)
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "file": Path(path).suffix,
                "rows": points.rows_read,
                "seconds": seconds,
                "rows_per_second": points.rows_read / seconds,
                "peak_gb": peak_kb() / 1e6,
                "bytes": Path(path).stat().st_size,
            }
        )
    )


def to_parquet(source: str, target: str) -> None:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    with pcsv.open_csv(source) as reader, pq.ParquetWriter(target, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)


def ingest(rows: int) -> list[dict[str, object]]:
    out = []
    with tempfile.TemporaryDirectory(dir=OUT) as tmp:
        csv_path = Path(tmp) / "gps.csv"
        started = time.perf_counter()
        write_gps(csv_path, rows)
        print(f"wrote {rows:,} rows in {time.perf_counter() - started:.0f} s", flush=True)
        parquet_path = Path(tmp) / "gps.parquet"
        # in a subprocess, so that this process stays small
        subprocess.run(
            [sys.executable, __file__, "--to-parquet", str(csv_path), str(parquet_path)],
            check=True,
        )
        for path in (csv_path, parquet_path):
            row = run_child([__file__, "--read-child", str(path)], path.name)
            if row is None:
                continue
            out.append(row)
            print(
                f"{path.name:<12} {row['rows']:>12,} rows  {row['seconds']:7.1f} s  "
                f"{row['rows_per_second']:>12,.0f} rows/s  {row['peak_gb']:.2f} GB",
                flush=True,
            )
    return out


def scale_out(users: int) -> list[dict[str, object]]:
    rows = []
    for h in (2, 3):
        for engine, workers, sharded in (
            ("local", 0, False),
            ("dask", 1, False),
            ("dask", 2, False),
            ("dask", 2, True),
        ):
            extra = (
                {"engine": engine, "workers": workers, "sharded": sharded}
                if engine == "dask"
                else {}
            )
            row = run_child(
                [
                    str(HERE / "run.py"),
                    "--child",
                    json.dumps(["presence", "unique_location", users, h, extra]),
                ],
                f"h={h} {engine} {workers}{' sharded' if sharded else ''}",
            )
            if row is None:
                continue
            rows.append(row)
            each = " + ".join(f"{gb:.2f}" for gb in row.get("worker_peaks_gb", []))
            print(
                f"h={h} {engine:<5} workers={workers}{' sharded' if sharded else '':<8} "
                f"{row['seconds']:7.1f} s  client {row['peak_gb']:.2f} GB  workers "
                f"{each or '—'} GB",
                flush=True,
            )
    return rows


def render(results: dict[str, object]) -> str:
    lines = [f"Machine: {results['machine']}. Date: {results['date']}.", ""]
    ingest_rows = results.get("ingest") or []
    if ingest_rows:
        lines += [
            "| input | rows | size GB | wall s | rows/s | peak GB |",
            "|---|---|---|---|---|---|",
        ]
        for r in ingest_rows:  # type: ignore[union-attr]
            lines.append(
                f"| {r['file']} | {r['rows']:,} | {r['bytes'] / 1e9:.2f} | {r['seconds']:.1f} | "
                f"{r['rows_per_second']:,.0f} | {r['peak_gb']:.2f} |"
            )
        lines.append("")
    scale_rows = results.get("scale_out") or []
    if scale_rows:
        lines += [
            "| h | engine | wall s | / local | n/k line s | over the line | peak GB, "
            "assessing process | peak GB, each worker |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for h in (2, 3):
            at_h = [r for r in scale_rows if r["h"] == h]  # type: ignore[index]
            local = next((r for r in at_h if r["engine"] == "local"), None)
            one = next((r for r in at_h if r["engine"] == "dask" and r["workers"] == 1), None)
            for r in at_h:
                name = "local" if r["engine"] == "local" else f"dask, {r['workers']} worker(s)"
                if r["engine"] == "dask" and r["workers"] > 1:
                    name += ", sharded" if r.get("sharded") else ", whole level to each"
                ratio = f"{r['seconds'] / local['seconds']:.2f}" if local else "—"
                line = over = "—"
                if one and r["engine"] == "dask":
                    ideal = one["seconds"] / r["workers"]
                    line = f"{ideal:.1f}"
                    over = f"{(r['seconds'] / ideal - 1) * 100:+.0f} %"
                each = ", ".join(f"{gb:.2f}" for gb in r.get("worker_peaks_gb", [])) or "—"
                lines.append(
                    f"| {h} | {name} | {r['seconds']:.1f} | {ratio} | {line} | {over} | "
                    f"{r['peak_gb']:.2f} | {each} |"
                )
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--read-child":
        read_child(sys.argv[2])
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--to-parquet":
        to_parquet(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--skip-scale-out", action="store_true")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    results: dict[str, object] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
    }
    if not args.skip_ingest:
        results["ingest"] = ingest(args.rows)
    if not args.skip_scale_out:
        results["scale_out"] = scale_out(args.users)
    (OUT / "scale_out.json").write_text(json.dumps(results, indent=2) + "\n")
    (OUT / "scale_out.md").write_text(render(results))
    print(render(results))


if __name__ == "__main__":
    main()
