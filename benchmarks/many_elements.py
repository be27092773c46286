"""A level of many elements on a Dask deployment: each worker's memory while the level's
vectors per element are added up, ranked and cut into partitions.

    python benchmarks/many_elements.py [--people 2000000] [--elements 60000000]
                                       [--ranges 16] [--limit-gb 3] [--workers 2]

A counting level made here, not read from a file (a kernel figure, not an end-to-end
one): `--people` people holding 5 of `--elements` elements each (uniform, distinct per
person: a year of hours on many places has tens of millions of distinct visits), every
pair of each person's elements asked (`unique_location` at h = 2, keyed), in `--ranges`
ranges on the tests' deployment (tests/engine/test_cluster.py) of `--workers` × `dask
worker --memory-limit`. Each worker's resident memory is sampled every 0.1 s; with the
scheduler's task stream, it gives each kind of task the largest memory its worker had
while one ran (the level's vectors per element: `add` of the ranges' sums, `_holders`,
`_ranked` by rarity; each size's weights in blocks: `getitem` of a range's blocks,
`extent` and `_cut_block` of each block). Prints the
time, each worker's peak and that table; writes benchmarks/out/many_elements_<people>_
<elements>.json. No peer counts a level on a cluster: compare two commits' runs.
Not run in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]
from prudence_cli.engine import Elements, Engine, QuerySpec  # noqa: E402
from prudence_cli.engine.problem import CountingProblem  # noqa: E402
from tests.engine.test_cluster import deployment  # noqa: E402

OUT = HERE / "out"
PLACES_A_PERSON = 5


def level(people: int, elements: int, seed: int = 1) -> CountingProblem:
    """Each person's distinct elements, sorted; every pair of them asked."""
    rng = np.random.default_rng(seed)
    owner = np.repeat(np.arange(people, dtype=np.int64), PLACES_A_PERSON)
    drawn = rng.integers(0, elements, owner.shape[0])
    keys = np.unique(owner * elements + drawn)  # by person, then element, distinct
    owner, drawn = keys // elements, (keys % elements).astype(np.int32)
    members = Elements.from_rows(people, owner, drawn, np.ones(drawn.shape[0]))
    sizes = np.minimum(members.lengths, 2).astype(np.int64)
    spec = QuerySpec(members, size_lo=sizes, size_hi=sizes, mode="subsets")
    return CountingProblem(members, spec, match="contains")


def measured(problem: CountingProblem, ranges: int, workers: int, limit: int) -> dict:
    """The level counted on a new deployment: time, peaks, the peak while each kind of
    task ran on its worker."""
    import psutil
    from distributed import Client

    from prudence_cli.engine.ranged import split
    from prudence_cli.engine.runner import DaskRunner

    OUT.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="many-elements-", dir=OUT))
    samples: list[tuple[float, dict[str, int]]] = []
    with deployment(folder, workers, limit) as address, Client(address, timeout=60) as client:
        processes = {w: psutil.Process(pid) for w, pid in client.run(os.getpid).items()}
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                rss = {w: p.memory_info().rss for w, p in processes.items()}
                samples.append((time.time(), rss))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        client.get_task_stream(start=time.time())  # start recording
        runner = DaskRunner(address)
        try:
            engine = Engine(strategy="keyed", runner=runner, worker_threads=1, max_instances=10**12)
            started = time.time()
            support = engine.min_support(split(problem, runner, ranges))
            seconds = time.time() - started
        finally:
            runner.close()
        stream = client.get_task_stream(start=started)
        stop.set()
        sampler.join()
    by_task: dict[str, float] = {}
    for task in stream:
        name = task["key"].split("-")[0].strip("('_")
        for span in (s for s in task["startstops"] if s["action"] == "compute"):
            during = [rss[task["worker"]] for t, rss in samples
                      if span["start"] - 0.1 <= t <= span["stop"] + 0.1]  # fmt: skip
            if during:
                by_task[name] = max(by_task.get(name, 0.0), max(during) / 1e9)
    peaks = [max(rss[w] for _, rss in samples) / 1e9 for w in processes]
    return {
        "seconds": round(seconds, 2),
        "worker_peaks_gb": [round(p, 3) for p in peaks],
        "peak_while_gb": {k: round(v, 3) for k, v in sorted(by_task.items())},
        "minimum_sum": int(support.minimum.sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=2_000_000)
    parser.add_argument("--elements", type=int, default=60_000_000)
    parser.add_argument("--ranges", type=int, default=16)
    parser.add_argument("--limit-gb", type=float, default=3.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    problem = level(args.people, args.elements)
    found = measured(problem, args.ranges, args.workers, int(args.limit_gb * 2**30))
    print(f"{found['seconds']} s, workers at {found['worker_peaks_gb']} GB")
    for name, gb in found["peak_while_gb"].items():
        print(f"  {name:20s} {gb:.3f} GB")
    found = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **{k: getattr(args, k) for k in ("people", "elements", "ranges", "workers")},
        "limit_gb": args.limit_gb,
        **found,
    }
    path = OUT / f"many_elements_{args.people}_{args.elements}.json"
    path.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
