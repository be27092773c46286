"""A project folder with the demo config of tests/cli/test_cli.py, assessed or not."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from prudence_cli.cli import main
from tests.cli.test_cli import CONFIG


@pytest.fixture
def project(tmp_path: Path, sample_gps: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo.yaml").write_text(CONFIG.format(path=sample_gps))
    return tmp_path


@pytest.fixture
def assessed(project: Path) -> Path:
    result = CliRunner().invoke(main, ["assess", "demo.yaml", "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return project / "catalog" / "e2e"
