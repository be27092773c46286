"""The ledger with real processes: two releases at once get distinct ids, each record and
copy its own release; a run killed (SIGKILL) at each moment of writing a release leaves a
ledger that the next run settles, never forgetting a release that reached its folder."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner
from filelock import FileLock

from prudence_cli.catalog import open_catalog
from prudence_cli.cli import main
from prudence_cli.sanitize import ledger, release
from prudence_cli.sanitize.ledger import read_ledger
from prudence_cli.sanitize.release import SanitizeRequest, run_sanitize
from tests.assessed import release_args
from tests.cli.test_cli import CONFIG

SPAWN = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited threads


def request(recipient: str, dataview: str = "d4") -> SanitizeRequest:
    return SanitizeRequest(0.5, dataview, method="suppress-locations", recipient=recipient)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, sample_gps) -> Path:
    root = tmp_path_factory.mktemp("ledger-processes")
    (root / "demo.yaml").write_text(CONFIG.format(path=sample_gps))
    result = CliRunner().invoke(
        main, ["assess", str(root / "demo.yaml"), "--out", str(root / "e2e"), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    return root / "e2e"


@pytest.fixture
def catalog(pristine, tmp_path) -> Path:
    shutil.copytree(pristine, tmp_path / "e2e")
    return tmp_path / "e2e"


def raw_records(catalog: Path) -> list[dict[str, Any]]:
    return json.loads((catalog / "ledger" / "ledger.json").read_text())["releases"]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_child(target, *args: Any) -> int | None:
    process = SPAWN.Process(target=target, args=args)
    process.start()
    process.join(300)
    return process.exitcode


# --- in the child processes -----------------------------------------------------------------


def _release_at_once(catalog: str, out: str, dataview: str, recipient: str, barrier) -> None:
    """Release once every child is ready to number its release; numbering takes a while."""
    real_open, real_next = release.open_ledger, ledger.Ledger.next_id

    def together(*args: Any, **kwargs: Any):
        barrier.wait(120)
        return real_open(*args, **kwargs)

    def slowly(self: ledger.Ledger) -> str:
        number = real_next(self)
        time.sleep(0.5)  # without the lock, the other run would read the same ledger now
        return number

    release.open_ledger = together  # type: ignore[assignment]
    ledger.Ledger.next_id = slowly  # type: ignore[method-assign]
    run_sanitize(open_catalog(Path(catalog)), request(recipient, dataview), Path(out))


def _release_killed(catalog: str, out: str, moment: str) -> None:
    """Release, killed by SIGKILL at `moment`: while the files are written ("writing"),
    once the record is written pending ("pending"), once the folder is in place
    ("in place", before the record is marked complete)."""

    def die(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGKILL)

    if moment == "writing":
        release.render_markdown = die  # type: ignore[assignment]
    elif moment == "pending":
        real_save = ledger._save

        def save(root: Path, records: list[dict[str, Any]]) -> None:
            real_save(root, records)
            if any(r.get("state") == ledger.PENDING for r in records):
                die()

        ledger._save = save  # type: ignore[assignment]
    else:
        ledger._completed = die  # type: ignore[assignment]
    run_sanitize(open_catalog(Path(catalog)), request("acme"), Path(out))


# --- the tests ------------------------------------------------------------------------------


def test_two_processes_releasing_at_once_get_distinct_ids_and_their_own_copies(catalog, tmp_path):
    barrier = SPAWN.Barrier(2)
    children = [
        SPAWN.Process(
            target=_release_at_once,
            args=(str(catalog), str(tmp_path / out), dataview, recipient, barrier),
        )
        for out, dataview, recipient in (("a", "d4", "acme"), ("z", "d2", "zeta"))
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(300)
    assert [child.exitcode for child in children] == [0, 0]
    records = read_ledger(open_catalog(catalog))
    assert sorted(r["id"] for r in records) == ["r001", "r002"]
    assert {r["recipient"] for r in records} == {"acme", "zeta"}
    for record in records:
        folder = Path(record["release"])
        report = json.loads((folder / "report.json").read_text())
        assert (report["release"], report["recipient"]) == (record["id"], record["recipient"])
        assert report["dataview"]["id"] == record["dataview"]
        assert record["state"] == "complete"
        for name, recorded in record["released_files"].items():
            assert sha256(folder / name) == recorded
        # the ledger's copy of each release is that release's own data
        copy = pd.read_csv(catalog / "ledger" / record["id"] / "dataview.csv.gz", dtype=str)
        released = pd.read_csv(folder / "dataview.csv", dtype=str)
        assert copy.sort_values(list(copy.columns)).values.tolist() == (
            released.sort_values(list(released.columns)).values.tolist()
        )


def test_killed_while_writing_the_release_leaves_no_record(catalog, tmp_path):
    out = tmp_path / "rel"
    assert run_child(_release_killed, str(catalog), str(out), "writing") == -signal.SIGKILL
    assert not out.exists()
    assert read_ledger(open_catalog(catalog)) == []
    assert not (catalog / "ledger" / "r001").exists()
    result = run_sanitize(open_catalog(catalog), request("acme"), out)
    assert result.met and result.report is not None and result.report.release == "r001"


def test_killed_before_the_folder_is_in_place_the_record_is_removed(catalog, tmp_path):
    out = tmp_path / "rel"
    assert run_child(_release_killed, str(catalog), str(out), "pending") == -signal.SIGKILL
    (pending,) = raw_records(catalog)
    assert pending["state"] == "pending" and not out.exists()
    staging = Path(pending["staging"])
    assert staging.is_dir() and (catalog / "ledger" / "r001").is_dir()
    # while a run holds the lock, its pending record is listed as it is
    with FileLock(catalog / "ledger" / ".lock"):
        assert [r["state"] for r in read_ledger(open_catalog(catalog))] == ["pending"]
    # the next reader settles it: no folder, so no release
    assert read_ledger(open_catalog(catalog)) == []
    assert raw_records(catalog) == []
    assert not staging.exists() and not (catalog / "ledger" / "r001").exists()


def test_killed_once_the_folder_is_in_place_the_release_is_kept(catalog, tmp_path):
    out = tmp_path / "rel"
    assert run_child(_release_killed, str(catalog), str(out), "in place") == -signal.SIGKILL
    (pending,) = raw_records(catalog)
    assert pending["state"] == "pending"
    assert json.loads((out / "report.json").read_text())["release"] == "r001"
    # the next release settles it first, then assesses the new one together with it
    second = run_sanitize(open_catalog(catalog), request("acme"), tmp_path / "second")
    assert second.report is not None and second.report.combined_with == ("r001",)
    first, _ = raw_records(catalog)
    assert first["state"] == "complete" and "staging" not in first
    assert first["recovered"].startswith("found in place")


def test_a_pending_record_whose_folders_are_both_gone_is_kept(catalog, tmp_path):
    """Its folder may have been put in place, then moved: over-state, never under-state."""
    out = tmp_path / "rel"
    assert run_child(_release_killed, str(catalog), str(out), "pending") == -signal.SIGKILL
    shutil.rmtree(raw_records(catalog)[0]["staging"])
    (record,) = read_ledger(open_catalog(catalog))
    assert record["state"] == "complete" and record["recovered"].startswith("not found")
    assert (catalog / "ledger" / "r001" / "dataview.csv.gz").is_file()


def prudence(*args: str, cwd: Path, fault: str = "") -> subprocess.CompletedProcess[str]:
    """The real command in its own process; PRUDENCE_FAULT kills it at a point of the
    release folder's swap (io/atomic.py)."""
    env = {**os.environ, "PRUDENCE_FAULT": fault}
    command = [sys.executable, "-c", "from prudence_cli.cli import main; main()", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def sanitize_args(catalog: Path, out: str) -> tuple[str, ...]:
    return (*release_args("acme", out), "--catalog", str(catalog))


def test_the_command_killed_before_its_folder_is_swapped_in_records_nothing(catalog, tmp_path):
    killed = prudence(*sanitize_args(catalog, "rel"), cwd=tmp_path, fault="before-swap")
    assert killed.returncode == -signal.SIGKILL
    assert [r["state"] for r in raw_records(catalog)] == ["pending"]
    listing = prudence("catalog", "releases", "--catalog", str(catalog), cwd=tmp_path)
    assert listing.returncode == 0 and listing.stdout.count("\n") == 1  # the header alone
    assert raw_records(catalog) == [] and not (tmp_path / "rel").exists()


def test_the_command_killed_after_its_folder_is_swapped_in_keeps_it(catalog, tmp_path):
    assert prudence(*sanitize_args(catalog, "rel"), cwd=tmp_path).returncode == 0
    killed = prudence(*sanitize_args(catalog, "rel"), cwd=tmp_path, fault="after-swap")
    assert killed.returncode == -signal.SIGKILL
    assert json.loads((tmp_path / "rel" / "report.json").read_text())["release"] == "r002"
    listing = prudence(
        "catalog", "releases", "--catalog", str(catalog), "--format", "json", cwd=tmp_path
    )
    assert [r["id"] for r in json.loads(listing.stdout)] == ["r001", "r002"]
    assert [r["state"] for r in raw_records(catalog)] == ["complete", "complete"]
