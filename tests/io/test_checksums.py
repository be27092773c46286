"""sha256 of files: once per file version in a run, started ahead in the background,
never stale after an edit."""

from __future__ import annotations

import hashlib
import threading
import time

import pytest

from prudence_cli.io import checksums


def test_a_digest_started_ahead_is_read_once_and_waited_for(tmp_path, monkeypatch):
    path = tmp_path / "points.csv"
    path.write_bytes(b"uid,datetime\n" * 1000)
    reads = []
    started = threading.Event()
    fresh = checksums.sha256_fresh

    def slow(p):
        reads.append(p)
        started.set()
        time.sleep(0.2)  # the caller below asks while this is still hashing
        return fresh(p)

    monkeypatch.setattr(checksums, "sha256_fresh", slow)
    checksums.sha256_ahead([path])
    assert started.wait(5)
    digest = checksums.sha256_file(path)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(reads) == 1


def test_an_edited_file_is_hashed_again_and_a_missing_one_raises_to_the_caller(tmp_path):
    path = tmp_path / "points.csv"
    path.write_bytes(b"a")
    first = checksums.sha256_file(path)
    path.write_bytes(b"bb")
    assert checksums.sha256_file(path) != first
    missing = tmp_path / "gone.csv"
    checksums.sha256_ahead([missing])  # the background thread says nothing
    with pytest.raises(FileNotFoundError, match="gone.csv"):
        checksums.sha256_file(missing)


def test_a_digest_remembered_from_another_process_serves_its_version_only(tmp_path):
    """What a worker hashed as it read a file is taken for that version of the file; the
    file edited since is hashed again here."""
    path = tmp_path / "part.csv"
    path.write_bytes(b"uid,datetime\n")
    version = checksums.file_version(path)
    checksums.remember(version, "digest from the worker")
    assert checksums.sha256_file(path) == "digest from the worker"
    path.write_bytes(b"uid,datetime\n1,2\n")
    assert checksums.sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()
