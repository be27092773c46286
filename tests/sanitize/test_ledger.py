"""The release ledger: releases to a recipient after a re-assessment with another
selection, a release recorded while another was assessed, errors while a release is
written, the lock, and randomized releases."""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from filelock import FileLock

from prudence_cli.catalog import open_catalog
from prudence_cli.catalog.query import counted_levels
from prudence_cli.cli import main
from prudence_cli.engine import Engine
from prudence_cli.errors import CatalogError
from prudence_cli.sanitize import ledger, release
from prudence_cli.sanitize.ledger import join_views, open_ledger, read_ledger, released_views
from prudence_cli.sanitize.release import SanitizeRequest, run_sanitize
from prudence_cli.sanitize.suppress import assess_levels
from tests.assessed import release as sanitize
from tests.assessed import run
from tests.randomized.test_randomize import CONFIG as PROFILES_CONFIG


def request(recipient: str | None, dataview: str = "d4") -> SanitizeRequest:
    return SanitizeRequest(0.5, dataview, method="suppress-locations", recipient=recipient)


def test_reassessing_with_another_selection_then_releasing_to_the_same_recipient(catalog):
    first = sanitize("acme", "r1")
    assert first.exit_code == 0, first.stderr
    config = Path("demo.yaml")
    config.write_text(config.read_text().replace("min_trips: 3", "min_trips: 14"))
    assert run("assess", "demo.yaml", "--quiet").exit_code == 0
    opened = open_catalog(catalog)
    _, universe = opened.view("d4")
    held = pd.read_csv(catalog / "ledger" / "r001" / "dataview.csv.gz", dtype=str)
    assert set(held["user"]) - set(universe)  # r001 holds people the new U leaves out
    second = sanitize("acme", "r2")
    assert second.exit_code == 0, second.stderr
    report = json.loads(Path("r2/report.json").read_text())
    assert report["combined_with"] == ["r001"]
    assert report["users"]["in_universe"] == len(universe)
    # a fresh assessment of both copies together: everyone released in r002 is at most R
    views = {v.id: v for v in released_views(open_catalog(catalog), "acme", universe)}
    levels = [lv for lv in counted_levels(opened) if lv[1].key in report["levels_counted"]]
    risk, _, _ = assess_levels(
        views["r002"], levels, Engine(), lambda v: join_views(v, [views["r001"]])
    )
    assert risk.max() <= 0.5
    assert (risk > 0).sum() == report["users"]["released"]


def test_a_release_recorded_while_another_was_assessed_is_assessed_with_it(catalog, monkeypatch):
    real = release.open_ledger

    def meanwhile(opened, *args):
        monkeypatch.setattr(release, "open_ledger", real)
        run_sanitize(open_catalog(catalog), request("acme", "d2"), Path("first"))
        return real(opened, *args)

    monkeypatch.setattr(release, "open_ledger", meanwhile)
    result = run_sanitize(open_catalog(catalog), request("acme"), Path("second"))
    assert result.report is not None
    assert (result.report.release, result.report.combined_with) == ("r002", ("r001",))
    assert [r["id"] for r in read_ledger(open_catalog(catalog))] == ["r001", "r002"]


def test_an_error_while_the_release_is_written_leaves_no_record(catalog, monkeypatch):
    def broken(report):
        raise OSError("disk full")

    monkeypatch.setattr(release, "render_markdown", broken)
    with pytest.raises(OSError, match="disk full"):
        run_sanitize(open_catalog(catalog), request("acme"), Path("rel"))
    assert not Path("rel").exists()
    assert read_ledger(open_catalog(catalog)) == []
    assert not (catalog / "ledger" / "r001").exists()
    assert not [p for p in Path().iterdir() if p.name.startswith(".rel.")]


def test_an_interrupt_once_the_folder_is_in_place_keeps_the_record(catalog, monkeypatch):
    real = os.replace
    out = Path("rel").absolute()

    def replace(source, target):
        real(source, target)
        if Path(target) == out:
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        run_sanitize(open_catalog(catalog), request("acme"), out)
    monkeypatch.setattr(os, "replace", real)
    (record,) = read_ledger(open_catalog(catalog))
    assert record["state"] == "complete" and "recovered" not in record
    assert json.loads((out / "report.json").read_text())["release"] == record["id"]


def test_an_error_after_the_folder_is_in_place_keeps_it_pending_then_complete(catalog, monkeypatch):
    def broken(record):
        raise OSError("disk full")

    monkeypatch.setattr(ledger, "_completed", broken)
    with pytest.raises(OSError):
        run_sanitize(open_catalog(catalog), request("acme"), Path("rel"))
    monkeypatch.undo()
    records = json.loads((catalog / "ledger" / "ledger.json").read_text())["releases"]
    assert [r["state"] for r in records] == ["pending"]
    (record,) = read_ledger(open_catalog(catalog))
    assert record["state"] == "complete"


def test_a_held_lock_is_waited_for_then_named(catalog):
    (catalog / "ledger").mkdir()
    with FileLock(catalog / "ledger" / ".lock"):
        busy = pytest.raises(CatalogError, match=r"ledger/\.lock: another prudence run")
        with busy, open_ledger(open_catalog(catalog), wait=0.2):
            pass
        assert read_ledger(open_catalog(catalog)) == []  # reading needs no lock


def test_randomized_releases_are_recorded(tmp_path):
    runner = CliRunner()
    runner.invoke(
        main,
        ["sample", "cdr", "--users", "50", "--days", "4"]
        + ["--out", str(tmp_path / "e.csv"), "--towers", str(tmp_path / "t.csv")],
    )
    (tmp_path / "p.yaml").write_text(PROFILES_CONFIG)
    assert runner.invoke(main, ["assess", str(tmp_path / "p.yaml"), "-q"]).exit_code == 0
    catalog = tmp_path / "catalog" / "p"
    args = ["sanitize", "--catalog", str(catalog), "--method", "randomize", "--dataview", "d2"]
    for epsilon, out in (("4", "one"), ("2", "two")):
        result = runner.invoke(main, [*args, "--epsilon", epsilon, "--out", str(tmp_path / out)])
        assert result.exit_code == 0, result.output
    listing = runner.invoke(main, ["catalog", "releases", "--catalog", str(catalog)])
    assert listing.exit_code == 0, listing.output
    listed = pd.read_csv(io.StringIO(listing.output))
    assert listed["id"].tolist() == ["r001", "r002"]
    assert set(listed["method"]) == {"randomize"}
    records = json.loads((catalog / "ledger" / "ledger.json").read_text())["releases"]
    assert [r["epsilon"] for r in records] == [4.0, 2.0]
    for record, out in zip(records, ("one", "two"), strict=True):
        assert record["mechanism"] == "laplace" and record["state"] == "complete"
        assert record["recipient"] is None and record["files"] == {}
        profiles = tmp_path / out / "profiles.csv.gz"
        digest = hashlib.sha256(profiles.read_bytes()).hexdigest()
        assert record["released_files"]["profiles.csv.gz"] == digest
        assert not (catalog / "ledger" / record["id"]).exists()  # no copy of noisy profiles
    assert np.isnan(listed["threshold"]).all()
