"""Exit codes, one meaning each (issue 15): 0 done, 1 policy not met, 2 bad input, usage
or environment, 3 internal error with a log; signals clean up as Ctrl-C does; a closed
pipe ends quietly."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from prudence_cli.catalog import CatalogWriter, open_catalog
from prudence_cli.cli import main

CLI = [sys.executable, "-c", "from prudence_cli.cli import main; main()"]


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def cli(*args: str, cwd: Path, fault: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PRUDENCE_FAULT"}
    if fault:
        env["PRUDENCE_FAULT"] = fault
    return subprocess.run(
        [*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_usage_errors_stay_2(project):
    assert run("assess").exit_code == 2
    assert run("report").exit_code == 2  # --out is required


def test_a_full_disk_is_exit_2_naming_the_catalog(project, monkeypatch):
    def full(self, view_id, *args):
        raise OSError(errno.ENOSPC, "No space left on device", str(self.folder / "risks/x.gz"))

    monkeypatch.setattr(CatalogWriter, "write_risks", full)
    _full_disk_said(project, f"{project}/catalog/e2e/risks/x.gz")


def _full_disk_said(project: Path, named: str) -> None:
    """`assess` on a full disk: exit 2, one line naming `named` and what to do, and
    nothing of the run left in the output folder."""
    result = run("assess", "demo.yaml", "--quiet")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {named}: no space left on the device; free some space, or write to another disk"
    )
    assert "Traceback" not in result.output
    assert hidden(project / "catalog") == []


def test_a_disk_full_while_a_levels_risks_wait_on_it_is_exit_2_leaving_nothing(
    project, monkeypatch
):
    """The levels' risks wait in the catalog being written (io/spilled.py): the disk
    filling half-way through one is said as any full disk, naming the catalog, and
    nothing of the run is left there, the spilled files neither."""
    import numpy as np

    save = np.save

    def full(path, values, **kwargs):
        if ".risks-" not in str(path):
            return save(path, values, **kwargs)
        with open(path, "wb") as half:  # a write stopped part-way
            half.write(b"\x93NUMPY")
        raise OSError(errno.ENOSPC, "No space left on device")  # a write names no file

    monkeypatch.setattr(np, "save", full)
    _full_disk_said(project, f"{project}/catalog/e2e")
    assert not (project / "catalog" / "e2e").exists()


def test_an_unwritable_output_folder_is_exit_2_before_any_work(project, monkeypatch):
    import prudence_cli.io.atomic as atomic

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", kwargs.get("dir"))

    monkeypatch.setattr(atomic.tempfile, "mkstemp", refuse)
    monkeypatch.setattr("prudence_cli.assess._prepare", lambda *a: pytest.fail("computed"))
    (project / "catalog").mkdir()
    result = run("assess", "demo.yaml", "--quiet")
    assert result.exit_code == 2
    assert f"{project}/catalog/e2e: cannot write in {project}/catalog (Permission" in result.stderr
    assert f"make {project}/catalog writable" in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_output_folder_is_exit_2(project):
    (project / "catalog").mkdir()
    os.chmod(project / "catalog", 0o555)
    try:
        result = run("assess", "demo.yaml", "--quiet")
    finally:
        os.chmod(project / "catalog", 0o755)
    assert result.exit_code == 2
    assert "cannot write in catalog" in result.stderr


def test_an_os_error_without_a_path_names_the_out_option(assessed, monkeypatch):
    def fail(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("prudence_cli.report.page.write_report", fail)
    result = run("report", "--catalog", str(assessed), "--out", "r.html")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: r.html: no space left on the device")


def test_an_internal_error_is_exit_3_with_a_traceback_in_a_log(assessed, monkeypatch):
    def bug(*args):
        return 1 / 0

    monkeypatch.setattr("prudence_cli.report.page.write_report", bug)
    reports = assessed.parents[1] / "reports"
    reports.mkdir()
    result = run("report", "--catalog", str(assessed), "--out", "reports/r.html")
    assert result.exit_code == 3
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "Error: internal error in prudence report: ZeroDivisionError: division by zero"
    )
    (log,) = reports.glob("prudence-error-*.log")
    assert str(log) in lines[0]
    text = log.read_text()
    assert "Traceback" in text and "ZeroDivisionError" in text and "prudence report" in text


def test_an_internal_error_without_out_logs_in_tmpdir(project, tmp_path, monkeypatch):
    logs = tmp_path / "tmpdir"
    logs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(logs))
    monkeypatch.setattr("prudence_cli.assess._prepare", lambda *a: {}["boom"])
    result = run("assess", "demo.yaml", "--quiet")
    assert result.exit_code == 3
    assert "internal error in prudence assess: KeyError: 'boom'" in result.stderr
    (log,) = logs.glob("prudence-error-*.log")
    assert "KeyError" in log.read_text()


def test_running_out_of_memory_is_exit_2_with_what_helps(project, monkeypatch):
    def short(*args):
        raise MemoryError("Unable to allocate 38.1 MiB for an array with shape (5000000,)")

    monkeypatch.setattr("prudence_cli.assess._prepare", short)
    result = run("assess", "demo.yaml", "--quiet")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: prudence assess ran out of memory (Unable to allocate 38.1 MiB for an array "
        "with shape (5000000,)); nothing was written."
    )
    assert "engine.memory" in result.stderr and "--engine dask" in result.stderr


def test_a_policy_failure_stays_1(assessed):
    result = run("check", "--catalog", str(assessed), "--max-risk", "0.01")
    assert result.exit_code == 1


def test_a_closed_pipe_ends_quietly_with_0(assessed):
    """`prudence catalog risks | head -1`: stdout's reader is gone before the first write."""
    with subprocess.Popen(
        [*CLI, "catalog", "risks", "--catalog", str(assessed), "--format", "csv"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        errors = proc.stderr.read()
        assert proc.wait(timeout=300) == 0, errors
    assert errors == b""


def test_head_of_catalog_risks_under_pipefail(assessed):
    command = " ".join([*CLI[:2], repr(CLI[2]), "catalog", "risks", "--catalog", str(assessed)])
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command} | head -1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("dataview,") and done.stderr == ""


@pytest.mark.parametrize("name", ["TERM", "HUP"])
def test_sigterm_and_sighup_clean_up_as_ctrl_c(assessed, name):
    before = (assessed / "catalog.json").read_text()
    done = cli(
        "assess", "demo.yaml", "--quiet", cwd=assessed.parents[1], fault=f"before-swap:{name}"
    )
    number = getattr(signal, f"SIG{name}")
    assert done.returncode == 128 + number, done.stderr
    assert done.stderr.strip() == f"Stopped by SIG{name}: nothing was written."
    assert hidden(assessed.parent) == []
    assert (assessed / "catalog.json").read_text() == before


def test_signal_handlers_are_restored_after_a_command(project):
    before = signal.getsignal(signal.SIGTERM)
    assert run("validate", "demo.yaml").exit_code == 0
    assert signal.getsignal(signal.SIGTERM) == before


def test_interrupt_between_the_renames_puts_the_catalog_back(assessed, monkeypatch):
    import prudence_cli.io.atomic as atomic

    before = (assessed / "catalog.json").read_text()
    real = os.replace
    calls = []

    def interrupted(src, dst):
        calls.append(dst)
        if len(calls) == 2:  # the new catalog onto the target
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", interrupted)
    result = CliRunner().invoke(main, ["assess", "demo.yaml", "--quiet"])
    assert result.exit_code == 130
    monkeypatch.setattr(atomic.os, "replace", real)
    assert (assessed / "catalog.json").read_text() == before
    assert hidden(assessed.parent) == []
    open_catalog(assessed)
