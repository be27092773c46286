"""One small assessed catalog that tests copy and release from (4 presence dataviews of
the sample GPS data), shared by the integrity, ledger and fault tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from prudence_cli.cli import main
from tests.cli.test_cli import CONFIG


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, sample_gps: Path) -> Path:
    """The assessed catalog (`e2e`) and its config, assessed once per test module."""
    root = tmp_path_factory.mktemp("assessed")
    (root / "demo.yaml").write_text(CONFIG.format(path=sample_gps))
    result = run("assess", str(root / "demo.yaml"), "--out", str(root / "e2e"), "--quiet")
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def catalog(pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the assessed catalog in ./catalog/e2e, next to its config."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(pristine / "demo.yaml", tmp_path / "demo.yaml")
    shutil.copytree(pristine / "e2e", tmp_path / "catalog" / "e2e")
    return tmp_path / "catalog" / "e2e"


def release_args(recipient: str, out: str) -> tuple[str, ...]:
    """`sanitize` of dataview d4 at 0.5 by suppress-locations, to `recipient`."""
    return (
        "sanitize",
        "--threshold",
        "0.5",
        "--dataview",
        "d4",
        "--method",
        "suppress-locations",
        "--recipient",
        recipient,
        "--out",
        out,
        "--quiet",
    )


def release(recipient: str, out: str) -> Result:
    return run(*release_args(recipient, out))
