"""Catalogs of format version 1 (per-dataview tables as CSV, `.csv.gz`) stay readable:
every command reads them and prints what it prints from the same catalog in version 2
(Parquet tables); a catalog of an unknown version is refused with what to do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from prudence_cli.catalog import CATALOG_VERSION, open_catalog
from prudence_cli.errors import CatalogError
from prudence_cli.io.checksums import sha256_fresh
from tests.assessed import run

# how version 1 wrote its tables (CatalogWriter before Parquet)
_GZIP = {"method": "gzip", "compresslevel": 1, "mtime": 0}


def write_version_1(folder: Path) -> None:
    """Rewrite the assessed catalog `folder` as version 1 wrote it: each dataview, its
    risks as `.csv.gz` and its locations as `.csv`, catalog.json naming them, and no
    mobility measures (commands compute them when asked)."""
    manifest = json.loads((folder / "catalog.json").read_text())
    mobility = manifest.pop("mobility")
    for name in (mobility["distortion"], mobility["correlation"]):
        (folder / name).unlink()
    shutil.rmtree(folder / "measures")
    for entry in manifest["dataviews"]:
        del entry["measures"]
        view, risks = entry["file"], entry["risks"]
        locations = view.replace(".parquet", ".locations.parquet")
        entry["file"] = view.replace(".parquet", ".csv.gz")
        entry["risks"] = risks.replace(".parquet", ".csv.gz")
        for old, new, options in (
            (view, entry["file"], {"compression": _GZIP}),
            (risks, entry["risks"], {"compression": _GZIP}),
            (locations, locations.replace(".parquet", ".csv"), {}),
        ):
            pd.read_parquet(folder / old).to_csv(folder / new, index=False, **options)
            (folder / old).unlink()
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "catalog.json")
    manifest["files"] = {p.relative_to(folder).as_posix(): sha256_fresh(p) for p in files}
    manifest["format_version"] = 1
    (folder / "catalog.json").write_text(json.dumps(manifest, indent=2) + "\n")


@pytest.fixture
def both(pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The assessed catalog as written (version 2) and rewritten as version 1."""
    monkeypatch.chdir(tmp_path)
    new, old = tmp_path / "new", tmp_path / "old"
    shutil.copytree(pristine / "e2e", new)
    shutil.copytree(pristine / "e2e", old)
    write_version_1(old)
    return new, old


def test_the_assessed_catalog_is_version_2_with_parquet_tables(both):
    new, old = both
    manifest = json.loads((new / "catalog.json").read_text())
    assert manifest["format_version"] == CATALOG_VERSION == 2
    names = {e["file"] for e in manifest["dataviews"]} | {e["risks"] for e in manifest["dataviews"]}
    assert names and all(name.endswith(".parquet") for name in names)
    assert not list(new.rglob("*.csv.gz"))
    assert list(old.rglob("*.csv.gz")) and not list(old.rglob("*.parquet"))


@pytest.mark.parametrize(
    "command",
    [
        ("catalog", "show", "--format", "csv"),
        ("catalog", "risks", "--format", "csv"),
        ("catalog", "risks", "--format", "json", "--where", "h=2"),
        ("catalog", "best", "--max-risk", "0.5", "--format", "csv"),
        ("check", "--max-risk", "0.3", "--format", "json"),
        ("check", "--max-risk", "0.5", "--min-coverage", "0.2", "--format", "json"),
        ("catalog", "utility", "--format", "csv"),
        ("catalog", "utility", "--show", "correlation", "--format", "json", "--where", "h=1"),
    ],
    ids=["show", "risks-csv", "risks-json", "best", "check", "check-coverage", "utility", "corr"],
)
def test_every_reading_command_prints_the_same_from_either_version(both, command):
    """(Version 1 stored no mobility measures: `catalog utility` computes from its
    dataviews what it reads from version 2's tables.)"""
    new, old = both
    from_new = run(*command, "--catalog", str(new))
    from_old = run(*command, "--catalog", str(old))
    assert from_new.exit_code in (0, 1), from_new.output
    assert (from_old.exit_code, from_old.stdout) == (from_new.exit_code, from_new.stdout)


def test_the_tables_read_back_the_same(both):
    new, old = both
    a, b = open_catalog(new), open_catalog(old)
    assert [e.id for e in a.dataviews] == [e.id for e in b.dataviews]
    for entry in a.dataviews:
        pd.testing.assert_frame_equal(a.risks(entry.id), b.risks(entry.id), check_exact=True)
        pd.testing.assert_frame_equal(a.dataview_table(entry.id), b.dataview_table(entry.id))
        view_a, users_a = a.view(entry.id)
        view_b, users_b = b.view(entry.id)
        assert list(users_a) == list(users_b)
        pd.testing.assert_frame_equal(view_a.table(users_a), view_b.table(users_b))
        pd.testing.assert_frame_equal(view_a.locations, view_b.locations)


def test_a_release_and_a_report_from_version_1(both):
    new, old = both
    for catalog, out in ((new, "rel_new"), (old, "rel_old")):
        args = ("--threshold", "0.5", "--dataview", "d4", "--method", "suppress-locations")
        result = run("sanitize", "--catalog", str(catalog), *args, "--out", out, "--quiet")
        assert result.exit_code == 0, result.output
        report = run("report", "--catalog", str(catalog), "--out", f"{out}.html", "--quiet")
        assert report.exit_code == 0, report.output
    for name in ("dataview.csv", "locations.csv"):
        assert Path("rel_old", name).read_bytes() == Path("rel_new", name).read_bytes()


def test_a_damaged_version_1_table_is_an_error_naming_it(both):
    _, old = both
    table = old / "risks" / "d2.csv.gz"
    table.write_bytes(table.read_bytes()[:40])
    result = run("check", "--max-risk", "0.3", "--catalog", str(old))
    assert result.exit_code == 2
    assert f"{table}: changed or damaged" in result.stderr


def test_an_unknown_version_is_refused_with_what_to_do(both):
    new, _ = both
    manifest = json.loads((new / "catalog.json").read_text())
    manifest["format_version"] = 3
    (new / "catalog.json").write_text(json.dumps(manifest))
    with pytest.raises(CatalogError, match="version 3 .*reads versions 1 and 2: run prudence"):
        open_catalog(new)
