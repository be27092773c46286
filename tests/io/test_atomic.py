"""io.atomic: temporary names that say who made them, cleaned once their process is
gone; a swap undone on an error between its renames; writability checked up front."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prudence_cli.errors import PrudenceError
from prudence_cli.io import atomic
from prudence_cli.io.atomic import (
    atomic_folder,
    check_writable,
    recover,
    shown_path,
    write_bytes_atomic,
)


def dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def test_stale_temporary_files_and_folders_are_removed(tmp_path):
    pid = dead_pid()
    stale_file = tmp_path / f".a.csv.tmp-{pid}-{atomic._HOST}-x1"
    stale_file.write_text("original ids")
    stale_folder = tmp_path / f".cat.tmp-{pid}-{atomic._HOST}-x2"
    (stale_folder / "risks").mkdir(parents=True)
    elsewhere = tmp_path / f".a.csv.tmp-{pid}-ffffffff-x3"  # another host, recent: kept
    elsewhere.write_text("")
    forgotten = tmp_path / f".a.csv.tmp-{pid}-ffffffff-x4"  # another host, days ago
    forgotten.write_text("")
    days_ago = time.time() - 3 * 86400
    os.utime(forgotten, (days_ago, days_ago))
    legacy = tmp_path / ".a.csv.k2j4h5.tmp"  # earlier releases' names: unknown owner
    legacy.write_text("")
    write_bytes_atomic(tmp_path / "a.csv", b"x")
    recover(tmp_path / "cat")
    assert not stale_file.exists() and not stale_folder.exists()
    assert elsewhere.exists() and legacy.exists() and not forgotten.exists()
    assert (tmp_path / "a.csv").read_bytes() == b"x"


def test_recover_puts_back_a_folder_moved_aside(tmp_path):
    old = tmp_path / f".cat.old-{dead_pid()}-{atomic._HOST}-x"
    old.mkdir()
    (old / "catalog.json").write_text("{}")
    recover(tmp_path / "cat")
    assert (tmp_path / "cat" / "catalog.json").exists() and not old.exists()


def test_recover_never_fails(tmp_path):
    recover(tmp_path / "missing" / "cat")
    recover(Path("/proc/1/nothing/cat"))


def test_an_error_between_the_renames_restores_the_folder(tmp_path, monkeypatch):
    target = tmp_path / "cat"
    target.mkdir()
    (target / "x").write_text("before")
    real = os.replace
    calls = []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", second_fails)
    with pytest.raises(OSError), atomic_folder(target, lambda p: True) as folder:
        (folder / "x").write_text("after")
    assert (target / "x").read_text() == "before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cat"]


def test_atomic_folder_private_or_not(tmp_path):
    with atomic_folder(tmp_path / "charts", lambda p: True, private=False) as folder:
        (folder / "a.png").write_bytes(b"")
    assert (tmp_path / "charts").stat().st_mode & 0o077 != 0
    with atomic_folder(tmp_path / "release", lambda p: True) as folder:
        (folder / "data.csv").write_bytes(b"")
    assert (tmp_path / "release").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "release" / "data.csv").stat().st_mode & 0o777 == 0o600


def test_check_writable(tmp_path):
    (tmp_path / "file").write_text("")
    (tmp_path / "folder").mkdir()
    check_writable(tmp_path / "new" / "deeper")
    check_writable(tmp_path / "folder")
    check_writable(tmp_path / "file", folder=False)
    with pytest.raises(PrudenceError, match="is a file, and a folder is expected"):
        check_writable(tmp_path / "file")
    with pytest.raises(PrudenceError, match="is a folder, and a file is expected"):
        check_writable(tmp_path / "folder", folder=False)
    with pytest.raises(PrudenceError, match="is a file, not a folder"):
        check_writable(tmp_path / "file" / "release")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "folder"]


def test_shown_path_names_the_target_not_the_temporary():
    assert shown_path("c/.e2e.tmp-12-0123abcd-q/risks/d1.csv.gz") == "c/e2e/risks/d1.csv.gz"
    assert shown_path(Path(".catalog.json.tmp-1-0123abcd-z")) == "catalog.json"
    assert shown_path("/data/in.csv") == "/data/in.csv"


def test_a_worker_writes_beside_the_probe_only_as_its_owner(tmp_path):
    """A worker that sees the catalog's folder writes its parts there only if it can
    write a file beside the probe, owned by the probe's owner: else (a read-only mount,
    a worker running as another user) the parts come back to be written here. The
    worker's own test file is removed either way."""
    from prudence_cli.io.atomic import writes_as_its_owner

    probe = tmp_path / ".probe-x"
    probe.touch()
    assert writes_as_its_owner(str(probe), "mine") and sorted(tmp_path.iterdir()) == [probe]
    assert not writes_as_its_owner(str(tmp_path / "nowhere"), "mine")
    if os.geteuid() == 0:  # root writes anywhere: the probe of another user, then
        os.chown(probe, 12345, 12345)
    else:  # a folder it may read but not write
        tmp_path.chmod(0o500)
    try:
        assert not writes_as_its_owner(str(probe), "mine")
    finally:
        tmp_path.chmod(0o700)
    assert sorted(tmp_path.iterdir()) == [probe]
