"""Vectors kept on disk and mapped back (prudence_cli/io/spilled.py), and the assessment
that keeps a view's risks so: one level's risks in memory at a time."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from prudence_cli.assess import make_engine, run_assessment
from prudence_cli.catalog.writer import CatalogWriter
from prudence_cli.config import load_config
from prudence_cli.io.spilled import Spilled

CONFIGS = Path(__file__).parent.parent.parent / "configs"


def test_vectors_come_back_as_kept_and_read_only(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    kept = {"h=1": rng.random(1000), "h=2": rng.random(1000), "none": np.zeros(0)}
    with Spilled(tmp_path / "spill") as spilled:
        for key, values in kept.items():
            mapped = spilled.add(key, values)
            assert np.array_equal(mapped, values) and mapped.dtype == values.dtype
        assert list(spilled) == list(kept) and len(spilled) == 3
        assert "h=3" not in spilled
        for key, values in kept.items():
            assert isinstance(spilled[key], np.memmap)
            assert np.array_equal(spilled[key], values)
        with pytest.raises(ValueError, match="read-only"):
            spilled["h=1"][0] = 2.0
        # a key kept again replaces its vector only
        spilled.add("h=1", np.ones(5))
        assert np.array_equal(spilled["h=1"], np.ones(5))
        assert np.array_equal(spilled["h=2"], kept["h=2"])
        spilled.add("h=4", np.full(3, 7.0))
        assert np.array_equal(spilled["h=2"], kept["h=2"])
    assert not (tmp_path / "spill").exists()


def test_an_assessment_holds_its_levels_risks_on_disk(tmp_path: Path, monkeypatch) -> None:
    """Each view's risks, level after level, are kept on disk until its risks table is
    written (the table is the levels' risks, as computed), and gone from the catalog."""
    config = load_config(CONFIGS / "demo.yaml")
    dims = tuple((n, values[:1]) for n, values in config.dataview.dimensions)
    config = dataclasses.replace(
        config, dataview=dataclasses.replace(config.dataview, dimensions=dims)
    )
    seen: list[tuple[str, int, bool]] = []
    write_view = CatalogWriter.write_view

    def written(self, view, user_ids, risks, locations, **entry):
        seen.append(
            (
                type(risks).__name__,
                len(list(Path(risks.folder).glob("*.npy"))),
                all(isinstance(risks[key], np.memmap) for key in risks),
            )
        )
        return write_view(self, view, user_ids, risks, locations, **entry)

    monkeypatch.setattr(CatalogWriter, "write_view", written)
    result = run_assessment(config, tmp_path / "catalog", make_engine(config), None)
    levels = sum(len(a.levels) for a in config.attacks)
    assert seen == [("Spilled", levels, True)]
    catalog = result.output
    assert not [p for p in catalog.rglob("*") if p.name.startswith(".risks")]
    risks = pd.read_parquet(catalog / result.manifest["dataviews"][0]["risks"])
    assert risks.shape[1] == 1 + levels
    irac = pd.read_csv(catalog / "irac.csv")
    columns = risks.drop(columns="user")
    assert np.allclose(columns.mean().to_numpy(), irac["mean_risk"].to_numpy())
