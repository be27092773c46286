"""`prudence evaluate`: the empirical risk of a release against its original (Basu et al., A risk
model for privacy in trajectory data),
written as a folder of tables, a JSON summary and an HTML report.

An attack succeeds when the release holds its knowledge t' (N_D'(t') > 0, so that
Pr(re_id | t') > 0) and fails otherwise (probability 0). The summary says, per h, how
many attacks fail, how many succeed, and how many succeed with a probability at most
each of a few levels: only attacks that succeed are counted there. The paper's own
phrasing ("98 % of the attacks have at most 10^-5 probability of success") counts the
failed attacks too; that share is the cumulative distribution the report draws.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from prudence_cli import __version__
from prudence_cli.config.evaluate import EvaluationSettings, TrajectoryColumns
from prudence_cli.engine import Elements
from prudence_cli.io.atomic import atomic_folder
from prudence_cli.io.checksums import sha256_file
from prudence_cli.io.tables import read_trajectories
from prudence_cli.measures.empirical import Evaluation, evaluate

EVALUATION_FORMAT = "prudence-evaluation"


def encode(original: pd.DataFrame, released: pd.DataFrame) -> tuple[Elements, Elements, np.ndarray]:
    """Both tables as engine lists over one element vocabulary; and the vocabulary."""
    codes, labels = pd.factorize(pd.concat([original["element"], released["element"]]))
    split = len(original)
    return (
        _lists(original["trajectory"], codes[:split]),
        _lists(released["trajectory"], codes[split:]),
        np.asarray(labels, dtype=object),
    )


def run_evaluation(
    original_path: Path,
    released_path: Path,
    columns: TrajectoryColumns,
    settings: EvaluationSettings,
    out: Path,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[Evaluation, dict[str, Any]]:
    """Evaluate the release, write the folder `out`; the evaluation and its summary
    (evaluation.json). `progress` hears each step: reading, each h, writing."""
    report = progress or (lambda done, total, message: None)
    args = (columns.trajectory, columns.location, columns.time, columns.order)
    report(0, 0, f"reading {original_path.name}")
    original = read_trajectories(original_path, *args)
    report(0, 0, f"reading {released_path.name}")
    released = read_trajectories(released_path, *args)
    a, b, labels = encode(original, released)
    result = evaluate(a, b, settings, progress)
    attacks = result.attacks.assign(
        knowledge=[
            " → ".join(labels[int(c)] for c in k.split()) for k in result.attacks["knowledge"]
        ]
    )
    summary = {
        "format": EVALUATION_FORMAT,
        "tool_version": __version__,
        "original": {
            "path": str(original_path),
            "sha256": sha256_file(original_path),
            "trajectories": a.n_users,
            "points": int(a.elements.shape[0]),
        },
        "released": {
            "path": str(released_path),
            "sha256": sha256_file(released_path),
            "trajectories": b.n_users,
            "points": int(b.elements.shape[0]),
        },
        "settings": asdict(settings),
        "columns": asdict(columns),
        "knowledge": "sampled" if result.sampled else "every distinct sub-trajectory",
        "attacks_per_h": {int(h): int(n) for h, n in attacks.groupby("h").size().items()},
        "utility": result.utility,
        "statements": result.statements,
    }
    from prudence_cli.report.evaluation import render_evaluation

    report(0, 0, f"writing {out}")
    with atomic_folder(out, _is_evaluation) as folder:
        attacks.to_csv(
            folder / "attacks.csv.gz", index=False, compression={"method": "gzip", "mtime": 0}
        )
        result.cdf.to_csv(folder / "cdf.csv", index=False)
        result.cost_cdf.to_csv(folder / "cost_cdf.csv", index=False)
        result.coverage_curve.to_csv(folder / "coverage.csv", index=False)
        (folder / "report.html").write_text(render_evaluation(summary, result), encoding="utf-8")
        (folder / "evaluation.json").write_text(
            json.dumps(summary, indent=2, default=_plain) + "\n", encoding="utf-8"
        )
    return result, summary


def _lists(trajectory: pd.Series, codes: np.ndarray) -> Elements:
    ids = pd.factorize(trajectory)[0]
    return Elements.from_rows(int(ids.max(initial=-1)) + 1, ids, codes.astype(np.int32))


def _is_evaluation(folder: Path) -> bool:
    try:
        data = json.loads((folder / "evaluation.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == EVALUATION_FORMAT


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)


def null_model(table: pd.DataFrame, columns: TrajectoryColumns, seed: int) -> pd.DataFrame:
    """Random trajectories like `table` (Basu et al., A risk model for privacy in trajectory data,
    "Risk analysis on null model"): the
    same trajectories with the same lengths (and time labels, when there are some), each
    location drawn uniformly from the locations of `table`."""
    rng = np.random.default_rng(seed)
    locations = table["location"].unique()
    out = pd.DataFrame(
        {
            columns.trajectory: table["trajectory"].to_numpy(),
            columns.location: locations[rng.integers(0, len(locations), len(table))],
        }
    )
    if columns.time:
        out[columns.time] = table["time"].to_numpy()
    if columns.order:
        out[columns.order] = table.groupby("trajectory", sort=False).cumcount().to_numpy()
    return out
