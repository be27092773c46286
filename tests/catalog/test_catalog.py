"""Atomic catalog writes: a failed or interrupted run never leaves a catalog that looks
complete, and never damages an earlier one."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from prudence_cli.catalog import CatalogWriter, find_catalog, open_catalog
from prudence_cli.cli import main
from prudence_cli.errors import CatalogError
from tests.cli.test_cli import CONFIG


@pytest.fixture
def config_path(tmp_path, sample_gps, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "demo.yaml"
    path.write_text(CONFIG.format(path=sample_gps))
    return path


def assess(*extra: str):
    return CliRunner().invoke(main, ["assess", "demo.yaml", "--quiet", *extra])


def leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def fail_on_second_dataview(monkeypatch, error: BaseException) -> None:
    calls = []
    original = CatalogWriter.write_risks

    def flaky(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise error
        return original(self, *args, **kwargs)

    monkeypatch.setattr(CatalogWriter, "write_risks", flaky)


def test_crash_leaves_no_catalog(config_path, monkeypatch, tmp_path):
    fail_on_second_dataview(monkeypatch, OSError("disk full"))
    result = assess()
    assert result.exit_code != 0
    assert not (tmp_path / "catalog" / "e2e").exists()
    assert leftovers(tmp_path / "catalog") == []


def test_interrupt_keeps_the_previous_catalog(config_path, monkeypatch, tmp_path):
    assert assess().exit_code == 0
    manifest = (tmp_path / "catalog" / "e2e" / "catalog.json").read_text()
    fail_on_second_dataview(monkeypatch, KeyboardInterrupt())
    result = assess()
    assert result.exit_code == 130
    assert "nothing was written" in result.stderr
    assert (tmp_path / "catalog" / "e2e" / "catalog.json").read_text() == manifest
    open_catalog(tmp_path / "catalog" / "e2e")
    assert leftovers(tmp_path / "catalog") == []


def test_rerun_replaces_the_catalog(config_path, tmp_path):
    assert assess().exit_code == 0
    assert assess().exit_code == 0
    assert sorted(p.name for p in (tmp_path / "catalog").iterdir()) == ["e2e"]


def test_refuses_to_overwrite_a_foreign_folder(config_path, tmp_path):
    target = tmp_path / "catalog" / "e2e"
    target.mkdir(parents=True)
    (target / "thesis.tex").write_text("precious")
    result = assess()
    assert result.exit_code == 2
    assert "is not a folder this command wrote" in result.stderr
    assert (target / "thesis.tex").read_text() == "precious"


def test_incomplete_and_foreign_catalogs_are_refused(tmp_path):
    (tmp_path / "half").mkdir()
    with pytest.raises(CatalogError, match="not a complete catalog"):
        open_catalog(tmp_path / "half")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "catalog.json").write_text(
        json.dumps({"format": "prudence-catalog", "format_version": 0, "tool_version": "0.0.1"})
    )
    with pytest.raises(CatalogError, match="catalog format version 0"):
        open_catalog(tmp_path / "old")


def test_find_catalog_defaults(tmp_path):
    with pytest.raises(CatalogError, match="no catalog in ./catalog"):
        find_catalog(None, cwd=tmp_path)
    for name in ("a", "b"):
        (tmp_path / "catalog" / name).mkdir(parents=True)
        (tmp_path / "catalog" / name / "catalog.json").write_text("{}")
    with pytest.raises(CatalogError, match="several catalogs"):
        find_catalog(None, cwd=tmp_path)
    (tmp_path / "catalog" / "b" / "catalog.json").unlink()
    assert find_catalog(None, cwd=tmp_path) == tmp_path / "catalog" / "a"


def test_find_catalog_prefers_the_config_in_the_folder(tmp_path):
    from tests.conftest import MINIMAL_CONFIG

    (tmp_path / "config.yaml").write_text(MINIMAL_CONFIG)  # output: out
    (tmp_path / "notes.yaml").write_text("just: notes\n")
    for name in ("out", "catalog/other"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "catalog.json").write_text("{}")
    assert find_catalog(None, cwd=tmp_path) == tmp_path / "out"
