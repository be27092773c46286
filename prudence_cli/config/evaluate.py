"""The `evaluate` section of a config (`prudence evaluate`, Basu et al., A risk model for privacy
in trajectory data): the columns of the
trajectory tables and the settings of the empirical risk model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prudence_cli.config.loader import read_yaml
from prudence_cli.config.reader import Reader
from prudence_cli.config.schema import DEFAULT_MAX_INSTANCES

COST_MODELS = ("log", "linear", "exponential")


@dataclass(frozen=True)
class TrajectoryColumns:
    trajectory: str = "trajectory"
    location: str = "location"
    time: str | None = None
    order: str | None = None


@dataclass(frozen=True)
class EvaluationSettings:
    max_h: int = 5
    samples: int | None = None  # attacks drawn per h; None: every distinct sub-trajectory
    seed: int = 0
    cost: str = "log"
    alpha: float = 1.0
    beta: float = 0.5
    max_instances: int = 400_000_000


def load_evaluate_config(path: Path | str) -> tuple[TrajectoryColumns, EvaluationSettings]:
    """The `evaluate` section of a config: (TrajectoryColumns, EvaluationSettings)."""
    file = Path(path)
    data = read_yaml(file)
    r = Reader(file)
    top = r.mapping(data, "", required={"evaluate"}, allowed=None)
    m = r.mapping(
        top["evaluate"],
        "evaluate",
        allowed={"columns", "max_h", "samples", "seed", "cost", "max_instances"},
    )
    cols = r.mapping(
        m.get("columns", {}),
        "evaluate.columns",
        allowed={"trajectory", "location", "time", "order"},
    )
    columns = TrajectoryColumns(
        **{k: r.string(v, f"evaluate.columns.{k}") for k, v in cols.items()}
    )
    cost = r.mapping(m.get("cost", {}), "evaluate.cost", allowed={"model", "alpha", "beta"})
    samples = m.get("samples")
    settings = EvaluationSettings(
        max_h=r.integer(m.get("max_h", 5), "evaluate.max_h", minimum=1),
        samples=None if samples is None else r.integer(samples, "evaluate.samples", minimum=1),
        seed=r.integer(m.get("seed", 0), "evaluate.seed", minimum=0),
        cost=r.choice(cost.get("model", "log"), "evaluate.cost.model", COST_MODELS),
        alpha=r.number(cost.get("alpha", 1.0), "evaluate.cost.alpha"),
        beta=r.number(cost.get("beta", 0.5), "evaluate.cost.beta"),
        max_instances=r.integer(
            m.get("max_instances", DEFAULT_MAX_INSTANCES), "evaluate.max_instances", minimum=1
        ),
    )
    return columns, settings
