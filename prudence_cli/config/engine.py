"""The config's `engine` block: where and how the counting runs (DESIGN.md section 7)."""

from __future__ import annotations

import re

from prudence_cli.config.reader import Reader
from prudence_cli.config.schema import BACKENDS, DEFAULT_MAX_INSTANCES, EngineConfig
from prudence_cli.errors import shown
from prudence_cli.units import parse_bytes

# a Dask scheduler's address: a scheme Dask knows, a host, a port (IPv6 in brackets)
SCHEDULER_ADDRESS = re.compile(
    r"((tcp|tls|ws|wss|ucx)://)?(\[[0-9A-Fa-f:.]+\]|[^\s/:\[\]]+):(?P<port>\d{1,5})/?"
)


def scheduler_problem(address: str) -> str | None:
    """What is wrong with `address` as a Dask scheduler's (the config's engine.scheduler,
    or --scheduler), found before any connection is tried; None: nothing."""
    found = SCHEDULER_ADDRESS.fullmatch(address)
    if found is None:
        return (
            f"{shown(address)} is not the address of a Dask scheduler: give "
            "tcp://HOST:PORT (or tls://, ws://, wss://), e.g. tcp://10.0.0.5:8786"
        )
    if not 1 <= int(found["port"]) <= 65535:
        return (
            f"{shown(address)} names port {int(found['port'])}, and a port is 1-65535 (a "
            "Dask scheduler's is 8786 by default)"
        )
    return None


def parse_engine(r: Reader, data: object) -> EngineConfig:
    """`engine`: its keys checked, the scheduler's address included."""
    m = r.mapping(
        data,
        "engine",
        allowed={"max_instances", "jobs", "sample", "backend", "scheduler", "memory"},
    )
    sample = m.get("sample")
    backend = r.choice(m.get("backend", "local"), "engine.backend", BACKENDS)
    scheduler = m.get("scheduler")
    if scheduler is not None:
        scheduler = r.string(scheduler, "engine.scheduler")
        if backend != "dask":
            r.fail("engine.scheduler", "is the address of a Dask scheduler: set backend: dask")
        problem = scheduler_problem(scheduler)
        if problem:
            r.fail("engine.scheduler", problem)
    memory = m.get("memory")
    return EngineConfig(
        backend=backend,
        scheduler=scheduler,
        memory=None if memory is None else r.convert(memory, "engine.memory", parse_bytes),
        max_instances=r.integer(
            m.get("max_instances", DEFAULT_MAX_INSTANCES), "engine.max_instances", minimum=1
        ),
        jobs=r.integer(m.get("jobs", 0), "engine.jobs", minimum=0),
        sample=None if sample is None else r.integer(sample, "engine.sample", minimum=1),
    )
