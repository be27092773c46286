"""What a release folder gives away (issue 15): readable by its owner only, and its
report names the input and the catalog without saying where they are; --out is checked
before anything is computed."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from prudence_cli.catalog.records import InputFile
from prudence_cli.catalog.release_records import CatalogRef
from tests.sanitize.test_sanitize import catalog_dir, run

__all__ = ["catalog_dir"]  # fixture


def test_input_files_and_catalogs_are_named_without_their_folders():
    assert InputFile("/home/ana/data/gps.csv", "ab", 3).anonymous() == InputFile("gps.csv", "ab", 3)
    assert CatalogRef("demo", "ef").to_json() == {"name": "demo", "manifest_sha256": "ef"}
    old = {"path": "/x/catalog", "name": "demo", "manifest_sha256": "ef"}
    assert CatalogRef.from_json(old).to_json() == old  # reports of earlier versions


def test_a_release_is_private_and_names_no_folder(catalog_dir):
    result = run("sanitize", "--threshold", "0.5", "--out", "release", "-q")
    assert result.exit_code == 0, result.stderr
    release = Path("release")
    assert stat.S_IMODE(release.stat().st_mode) == 0o700
    for path in release.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    report = json.loads((release / "report.json").read_text())
    assert [i["path"] for i in report["inputs"]] == ["gps.csv"]
    assert set(report["catalog"]) == {"name", "manifest_sha256"}
    home = str(catalog_dir.parents[1])
    for name in ("report.json", "report.md"):
        assert home not in (release / name).read_text(), name


@pytest.mark.parametrize("kind", ["file", "unwritable"])
def test_sanitize_checks_out_before_computing(catalog_dir, monkeypatch, kind):
    import prudence_cli.io.atomic as atomic

    monkeypatch.setattr(
        "prudence_cli.sanitize.release.run_sanitize", lambda *a: pytest.fail("computed")
    )
    if kind == "file":
        Path("release").write_text("notes")
        message = "release is a file, and a folder is expected here"
    else:

        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(atomic.tempfile, "mkstemp", refuse)
        message = "release: cannot write in . (Permission denied)"
    result = run("sanitize", "--threshold", "0.5", "--out", "release")
    assert result.exit_code == 2
    assert message in result.stderr
