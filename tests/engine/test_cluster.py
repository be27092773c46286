"""A real Dask deployment: a `dask scheduler` and two `dask worker` processes on
127.0.0.1, each worker a separate process with its memory limit, and `prudence assess
--engine dask --scheduler tcp://...` run as a user runs it, on the shipped GPS sample
split into a folder of CSV, gzipped CSV and Parquet parts. The catalog is the local
engine's, file for file."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.engine.test_distributed import _same_catalog

pytest.importorskip("distributed")

ROOT = Path(__file__).parents[2]
DASK = Path(sys.executable).parent / "dask"
PRUDENCE = Path(sys.executable).parent / "prudence"


def _split(sample: Path, folder: Path) -> None:
    """The sample as one file per day, in turn CSV, gzipped CSV and Parquet, in Hive's
    layout, with the marker file Spark writes."""
    rows = pd.read_csv(sample, dtype=str)
    for k, (day, part) in enumerate(rows.groupby(rows["datetime"].str[:10])):
        where = folder / f"day={day}"
        where.mkdir(parents=True)
        kind = k % 3
        if kind == 0:
            part.to_parquet(where / "part-0.parquet", index=False)
        else:
            part.to_csv(where / ("part-0.csv.gz" if kind == 1 else "part-0.csv"), index=False)
    (folder / "_SUCCESS").write_text("")


@contextlib.contextmanager
def deployment(folder: Path, workers: int = 2, limit: int = 2**30) -> Iterator[str]:
    """A scheduler and `workers` worker processes (1 thread, `limit` bytes each) on
    127.0.0.1, their logs in `folder`; yields the scheduler's address, stops every
    process at the end. (benchmarks/cluster.py deploys with it too.)"""
    file = folder / "scheduler.json"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    logs = contextlib.ExitStack()

    def log(name: str):
        return logs.enter_context((folder / f"{name}.log").open("w"))

    processes = [
        subprocess.Popen(
            [
                str(DASK),
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(file),
            ],
            stdout=subprocess.DEVNULL,
            stderr=log("scheduler"),
            env=env,
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(file.read_text())["address"]
        for k in range(workers):
            processes.append(
                subprocess.Popen(
                    [
                        str(DASK),
                        "worker",
                        address,
                        "--name",
                        f"w{k}",
                        "--nthreads",
                        "1",
                        "--nworkers",
                        "1",
                        "--memory-limit",
                        str(limit),
                        "--no-dashboard",
                        "--local-directory",
                        str(folder / f"w{k}"),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=log(f"worker-{k}"),
                    env=env,
                )
            )
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
            limits = [w["memory_limit"] for w in client.scheduler_info()["workers"].values()]
            assert limits == [limit] * workers
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        logs.close()


def _tasks_run(address: str) -> tuple[dict[str, int], list[int]]:
    """The engine's partition tasks and the input's tasks the scheduler saw through, by
    kind (in task states passed through); and how many task transitions each worker went
    through."""
    from distributed import Client

    def seen(dask_scheduler) -> dict[str, int]:
        return {
            name: sum(prefix.state_counts.values())
            for name, prefix in dask_scheduler.task_prefixes.items()
            if name.endswith("_task")
            or name in ("glimpsed", "read_split", "load", "select_range", "finish_range")
            or name in ("range_cells", "range_view", "keyed_part", "census", "cut")
            or name in ("join_piece", "range_of", "range_written", "range_whole")
            or name in ("range_measured", "shard_measured")
            or name in ("cut_range", "joined_bucket", "first_pass", "third_pass")
            or name in ("made_written", "ids_at")
        }

    def transitions(dask_worker) -> int:
        return int(dask_worker.state.transition_counter)

    with Client(address, timeout=60) as client:
        return client.run_on_scheduler(seen), list(client.run(transitions).values())


def _config(folder: Path, parts: Path, url: str = "", options: dict | None = None) -> Path:
    """The demo's config on `parts`, or on the `url` of a store with its `options`."""
    text = (ROOT / "configs" / "demo.yaml").read_text(encoding="utf-8")
    path = f"{url}\n  storage_options: {json.dumps(options)}" if url else str(parts)
    text = text.replace("path: ../sample_data/pisa_gps.csv.gz", f"path: {path}")
    text = text.replace("grid: [250m, 500m, 750m]", "grid: [500m]")
    text = text.replace("frequency: [1, 4, 7, 10, 13]", "frequency: [1, 7]")
    text += "engine: {memory: 2MB}  # partitions small enough to make several per level\n"
    assert f"path: {path}" in text and "grid: [500m]" in text
    config = folder / ("stored.yaml" if url else "split.yaml")
    config.write_text(text, encoding="utf-8")
    return config


@contextlib.contextmanager
def _in_a_store(parts: Path) -> Iterator[tuple[str, str]]:
    """`parts` uploaded to a bucket of an S3 endpoint on 127.0.0.1 (moto's server), with
    the credentials already in the environment (the workers inherit them as they
    start): the URL of the parts and the endpoint."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        store = boto3.client("s3", endpoint_url=endpoint)
        store.create_bucket(Bucket="exports")
        for file in sorted(parts.rglob("*")):
            if file.is_file():
                key = f"gps/{file.relative_to(parts).as_posix()}"
                store.put_object(Bucket="exports", Key=key, Body=file.read_bytes())
        yield "s3://exports/gps/", endpoint
    finally:
        server.stop()


@pytest.mark.skipif(not DASK.exists(), reason="the dask command line is not installed")
def test_assess_on_a_scheduler_and_two_worker_processes_gives_the_local_catalog(
    tmp_path, monkeypatch
):
    """From parts on a shared disk, then from the same parts in an object store (each
    worker fetching the parts it reads, with the credentials of its environment; that
    half needs s3fs and moto, of the test extras)."""
    stores = all(importlib.util.find_spec(name) for name in ("s3fs", "moto"))
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # before the workers
        monkeypatch.setenv(variable, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    parts = tmp_path / "parts"
    _split(ROOT / "sample_data" / "pisa_gps.csv.gz", parts)
    config = _config(tmp_path, parts)
    local = subprocess.run(
        [str(PRUDENCE), "assess", str(config), "--out", str(tmp_path / "local"), "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert local.returncode == 0, local.stderr
    with deployment(tmp_path) as address:
        done = subprocess.run(
            [
                str(PRUDENCE),
                "assess",
                str(config),
                "--out",
                str(tmp_path / "cluster"),
                "--engine",
                "dask",
                "--scheduler",
                address,
                "--quiet",
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        tasks, per_worker = _tasks_run(address)
        # each worker ran the partitions of its shard of the levels, each shard joined
        # there from the pieces the ranges of users cut where they are kept
        assert tasks["keyed_part"] > 10 and min(per_worker) > 0
        assert tasks["census"] > 0 and tasks["cut"] > 0 and tasks["join_piece"] > 0
        # the workers glimpsed and read every part, cut it by ranges of users, selected
        # each range from the pieces kept on their disks, and finished it there
        assert tasks["glimpsed"] > 0 and tasks["read_split"] > 0 and tasks["load"] > 0
        assert tasks["select_range"] > 0 and tasks["finish_range"] > 0
        # and built the presence views where the points stayed, kept them there: the
        # levels made, the tables written and the mobility measured from their ranges
        assert tasks["range_cells"] > 0 and tasks["range_view"] > 0
        assert tasks["range_of"] > 0 and tasks["range_written"] > 0
        assert tasks["range_measured"] > 0 and tasks["shard_measured"] > 0
        assert tasks.get("range_whole", 0) == 0  # never gathered
        # the people's measures compared in buckets of values there, and the risks and
        # measures written there with the ids the workers keep: no id ever came back
        assert tasks["cut_range"] > 0 and tasks["joined_bucket"] > 0
        assert tasks["first_pass"] > 0 and tasks["third_pass"] > 0
        assert tasks["made_written"] > 0 and tasks.get("ids_at", 0) == 0
        if stores:
            with _in_a_store(parts) as (url, endpoint):
                stored = _config(tmp_path, parts, url, {"endpoint_url": endpoint})
                done = subprocess.run(
                    [str(PRUDENCE), "assess", str(stored), "--out", str(tmp_path / "store")]
                    + ["--engine", "dask", "--scheduler", address, "--quiet"],
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=600,
                )
            assert done.returncode == 0, done.stderr
    if stores:
        assert _same_catalog(tmp_path / "local", tmp_path / "store") > 0  # tables in parts
        fetched = json.loads((tmp_path / "store" / "catalog.json").read_text())["inputs"]
        assert sorted(f["path"] for f in fetched if f["path"].startswith(url)) == sorted(
            f"{url}{p.relative_to(parts).as_posix()}" for p in parts.rglob("part-0.*")
        )
    assert _same_catalog(tmp_path / "local", tmp_path / "cluster") > 0
    manifest = json.loads((tmp_path / "cluster" / "catalog.json").read_text())
    engine = json.dumps(manifest)
    assert address in engine and '"workers": 2, "sharded": true' in engine
    recorded = [f["path"] for f in manifest["inputs"] if "/parts/" in f["path"]]
    assert len(recorded) == sum(1 for _ in parts.rglob("part-0.*"))
