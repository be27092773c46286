"""Integrity of what is certified: `check`, `sanitize`, `catalog best` and `report` read
only catalog files whose sha256 is the one catalog.json records, and the ledger's copies
only as their records say; a changed or damaged file is an exit-2 error naming it."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from prudence_cli.catalog import folder, open_catalog
from tests.assessed import release, run


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_risks_file_edited_to_zeros_does_not_pass_check(catalog):
    assert run("check", "--max-risk", "0.3").exit_code == 1  # the honest catalog fails
    for path in sorted((catalog / "risks").glob("*.parquet")):
        risks = pd.read_parquet(path)
        risks[risks.columns[1:]] = 0.0
        risks.to_parquet(path, index=False)
    result = run("check", "--max-risk", "0.3")
    assert result.exit_code == 2
    assert "risks/d1.parquet: changed or damaged" in result.stderr
    assert "run prudence assess again" in result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ("check", "--max-risk", "0.3"),
        ("sanitize", "--threshold", "0.5", "--out", "rel"),
        ("catalog", "best", "--max-risk", "0.3"),
        ("report", "--out", "report.html"),
    ],
    ids=["check", "sanitize", "best", "report"],
)
def test_a_truncated_file_is_an_error_naming_it(catalog, command):
    truncate(catalog / "risks" / "d2.parquet")
    result = run(*command)
    assert result.exit_code == 2, result.output
    assert "Aborted" not in result.output
    assert f"{catalog / 'risks' / 'd2.parquet'}: changed or damaged" in result.stderr
    assert "run prudence assess again" in result.stderr
    assert not Path("rel").exists() and not (catalog / "ledger").exists()


def test_a_truncated_dataview_table_is_an_error_naming_it(catalog):
    truncate(catalog / "dataviews" / "d3.parquet")
    result = run("check", "--max-risk", "0.3")
    assert result.exit_code == 2
    assert "dataviews/d3.parquet: changed or damaged" in result.stderr


def test_a_tampered_curve_fails_the_report(catalog):
    curves = sorted((catalog / "curves").glob("*.csv"))
    for curve in curves:  # the report draws the curves of some dataviews: edit them all
        table = pd.read_csv(curve)
        table["rac_u"] = 1.0
        table.to_csv(curve, index=False)
    result = run("report", "--out", "report.html", "--max-risk", "1")  # curves drawn
    assert result.exit_code == 2
    assert any(f"{curve.name}: changed or damaged" in result.stderr for curve in curves)
    assert not Path("report.html").exists()


def test_each_file_is_hashed_once_and_only_when_read(catalog, monkeypatch):
    hashed: list[str] = []
    original = folder.sha256_fresh

    def counting(path: Path) -> str:
        hashed.append(path.relative_to(catalog).as_posix())
        return original(path)

    monkeypatch.setattr(folder, "sha256_fresh", counting)
    opened = open_catalog(catalog)
    assert hashed == []
    assert not opened.irac.empty
    opened.risks("d1")
    opened.risks("d1")
    opened.view("d1")
    assert hashed == [
        "irac.csv",
        "risks/d1.parquet",
        "dataviews/d1.locations.parquet",
        "dataviews/d1.parquet",
    ]


def test_catalog_show_does_not_hash_what_it_does_not_read(catalog):
    truncate(catalog / "risks" / "d2.parquet")
    assert run("catalog", "show", "--format", "csv").exit_code == 0


def test_two_sanitizes_in_a_row_keep_the_ledger_verifiable(catalog):
    manifest = (catalog / "catalog.json").read_bytes()
    first = release("acme", "r1")
    assert first.exit_code == 0, first.stderr
    second = release("acme", "r2")  # reads and checks the ledger's copy of r001
    assert second.exit_code == 0, second.stderr
    check = run("check", "--max-risk", "1")
    assert check.exit_code == 0, check.stderr
    # the catalog's manifest is never rewritten by a release: the reports' anchor holds
    assert (catalog / "catalog.json").read_bytes() == manifest
    anchor = json.loads(Path("r2/report.json").read_text())["catalog"]["manifest_sha256"]
    assert anchor == sha256(catalog / "catalog.json")
    records = json.loads((catalog / "ledger" / "ledger.json").read_text())["releases"]
    assert [r["id"] for r in records] == ["r001", "r002"]
    for record in records:
        assert set(record["files"]) == {"dataview.csv.gz", "locations.csv"}
        for name, recorded in record["files"].items():
            assert sha256(catalog / "ledger" / record["id"] / name) == recorded


def test_a_changed_ledger_copy_is_an_error_naming_it(catalog):
    assert release("acme", "r1").exit_code == 0
    copy = catalog / "ledger" / "r001" / "dataview.csv.gz"
    table = pd.read_csv(copy, dtype=str)
    copy.write_bytes(gzip.compress(table.iloc[:1].to_csv(index=False).encode(), mtime=0))
    result = release("acme", "r2")
    assert result.exit_code == 2
    assert f"{copy}: changed or damaged since release r001 was recorded" in result.stderr
    assert not Path("r2").exists()
    assert release("zeta", "r3").exit_code == 0  # another recipient's release reads no copy


def test_reassessing_keeps_the_ledger_out_of_the_catalog_checksums(catalog):
    assert release("acme", "r1").exit_code == 0
    assert run("assess", "demo.yaml", "--quiet").exit_code == 0
    files = json.loads((catalog / "catalog.json").read_text())["files"]
    assert (catalog / "ledger" / "r001" / "dataview.csv.gz").is_file()
    assert not [name for name in files if name.startswith("ledger/")]
    second = release("acme", "r2")
    assert second.exit_code == 0, second.stderr
    assert run("check", "--max-risk", "1").exit_code == 0
