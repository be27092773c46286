"""Files and faults (issue 15): nothing overwritten that a command did not write, no
ledger across configs, links written through, owner-only catalogs, and every kill window
of a catalog swap cleaned up or put back by the next run."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from prudence_cli.catalog import open_catalog
from prudence_cli.io.atomic import write_bytes_atomic
from tests.cli.test_cli import CONFIG
from tests.cli.test_exit_codes import cli, hidden, run


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- report --out FILE and sample --out FILE ---------------------------------------


def test_report_refuses_to_overwrite_the_config_or_the_data(assessed, sample_gps):
    project = assessed.parents[1]
    config = (project / "demo.yaml").read_text()
    (project / "data.csv").write_bytes(sample_gps.read_bytes())
    for victim in ("demo.yaml", "data.csv"):
        result = run("report", "--catalog", str(assessed), "--out", victim)
        assert result.exit_code == 2
        assert f"{victim} exists and is not a file this command wrote" in result.stderr
        assert "pass --force to replace it" in result.stderr
    assert (project / "demo.yaml").read_text() == config
    assert (project / "data.csv").read_bytes() == sample_gps.read_bytes()
    forced = run("report", "--catalog", str(assessed), "--out", "data.csv", "--force")
    assert forced.exit_code == 0
    assert b"<title>Prudence report: " in (project / "data.csv").read_bytes()


def test_report_replaces_an_earlier_report(assessed):
    for _ in range(2):
        result = run("report", "--catalog", str(assessed), "--out", "r.html")
        assert result.exit_code == 0, result.stderr


def test_report_into_a_folder_is_exit_2(assessed):
    (assessed.parents[1] / "reports").mkdir()
    result = run("report", "--catalog", str(assessed), "--out", "reports")
    assert result.exit_code == 2
    assert "reports is a folder, and a file is expected here" in result.stderr
    (assessed.parents[1] / "charts").write_text("notes")
    png = run("report", "--catalog", str(assessed), "--format", "png", "--out", "charts")
    assert png.exit_code == 2
    assert "charts is a file, and a folder is expected here" in png.stderr


def test_sample_never_overwrites_without_force(tmp_path, monkeypatch):
    """A sample has the columns of real data (a tower table is `tower,lat,lon`, as the
    user's own): an existing file is never taken for an earlier sample."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo.yaml").write_text("name: precious\n")
    small = ("--users", "3", "--days", "1")
    result = run("sample", "gps", *small, "--out", "demo.yaml")
    assert result.exit_code == 2
    assert "demo.yaml exists and is not a file this command wrote" in result.stderr
    assert (tmp_path / "demo.yaml").read_text() == "name: precious\n"
    assert run("sample", "gps", *small, "--out", "gps.csv.gz").exit_code == 0
    again = run("sample", "gps", *small, "--seed", "8", "--out", "gps.csv.gz")
    assert again.exit_code == 2 and "--force" in again.stderr
    (tmp_path / "my_towers.csv").write_text("tower,lat,lon\nMY-TOWER,45.1,9.2\n")
    mine = run("sample", "cdr", *small, "--out", "c.csv", "--towers", "my_towers.csv")
    assert mine.exit_code == 2 and "my_towers.csv exists" in mine.stderr
    assert "MY-TOWER" in (tmp_path / "my_towers.csv").read_text()
    towers = run("sample", "cdr", *small, "--out", "c.csv", "--towers", "demo.yaml")
    assert towers.exit_code == 2 and "demo.yaml exists" in towers.stderr
    assert not (tmp_path / "c.csv").exists()
    forced = run("sample", "gps", *small, "--out", "demo.yaml", "--force")
    assert forced.exit_code == 0
    assert (tmp_path / "demo.yaml").read_text().startswith("uid,datetime,lat,lng\n")


def test_sample_into_a_folder_is_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    result = run("sample", "gps", "--users", "3", "--days", "1", "--out", "data")
    assert result.exit_code == 2
    assert "data is a folder, and a file is expected here" in result.stderr


def test_a_null_model_replaces_a_file_only_with_force(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trips = "uid,trip,segment,entered,left\nv1,t1,s1,2011-06-01T08:00:00,2011-06-01T08:01:00\n"
    (tmp_path / "like.csv").write_text(trips)
    args = ("sample", "--null-model", "--like", "like.csv", "--out", "like.csv")
    result = run(*args)
    assert result.exit_code == 2 and "like.csv exists" in result.stderr
    assert (tmp_path / "like.csv").read_text() == trips


# --- assess --out: another config's catalog, its ledger, links --------------------


def fake_ledger(catalog: Path) -> None:
    """A stand-in for releases recorded in a catalog (the ledger folder is copied whole)."""
    (catalog / "ledger").mkdir()
    (catalog / "ledger" / "ledger.json").write_text(json.dumps({"releases": [{"id": "r001"}]}))


def test_reassessing_the_same_config_keeps_its_ledger(assessed):
    fake_ledger(assessed)
    assert run("assess", "demo.yaml", "--quiet").exit_code == 0
    assert (assessed / "ledger" / "ledger.json").exists()


def test_another_configs_catalog_is_refused_and_never_inherits_its_ledger(assessed, sample_gps):
    project = assessed.parents[1]
    fake_ledger(assessed)
    other = CONFIG.format(path=sample_gps).replace("name: e2e", "name: other")
    (project / "other.yaml").write_text(other)
    before = (assessed / "catalog.json").read_text()
    result = run("assess", "other.yaml", "--quiet", "--out", str(assessed))
    assert result.exit_code == 2
    assert "is the catalog of config 'e2e' (demo.yaml), not of 'other' (other.yaml)" in (
        result.stderr
    )
    assert (assessed / "catalog.json").read_text() == before
    # the same name in another config file is another config too
    (project / "copy.yaml").write_text(CONFIG.format(path=sample_gps))
    assert run("assess", "copy.yaml", "--quiet").exit_code == 2
    forced = run("assess", "other.yaml", "--out", str(assessed), "--force")
    assert forced.exit_code == 0, forced.stderr
    assert "Replaced the catalog of config 'e2e' (demo.yaml)" in forced.stderr
    assert "its ledger of releases was discarded" in forced.stderr
    assert open_catalog(assessed).record.name == "other"
    assert not (assessed / "ledger").exists()


def test_a_symlinked_out_is_written_through(project):
    real = project / "storage" / "e2e"
    real.parent.mkdir()
    (project / "catalog").mkdir()
    link = project / "catalog" / "e2e"
    link.symlink_to(real)
    for _ in range(2):  # new, then replaced
        assert run("assess", "demo.yaml", "--quiet").exit_code == 0
        assert link.is_symlink() and link.resolve() == real.resolve()
        assert (real / "catalog.json").is_file()
    assert hidden(project / "catalog") == [] and hidden(real.parent) == []
    assert open_catalog(link).record.name == "e2e"


def test_a_symlinked_report_file_is_written_through(assessed):
    project = assessed.parents[1]
    (project / "site").mkdir()
    (project / "r.html").symlink_to(project / "site" / "index.html")
    assert run("report", "--catalog", str(assessed), "--out", "r.html").exit_code == 0
    assert (project / "r.html").is_symlink()
    assert b"Prudence report" in (project / "site" / "index.html").read_bytes()


# --- permissions --------------------------------------------------------------------


def test_a_catalog_is_readable_by_its_owner_only(assessed):
    assert mode(assessed) == 0o700
    for path in assessed.rglob("*"):
        assert mode(path) == (0o700 if path.is_dir() else 0o600), path
    # what is written into it later (the ledger) is owner-only too
    write_bytes_atomic(assessed / "ledger" / "r001" / "dataview.csv", b"user\n")
    assert mode(assessed / "ledger") == 0o700
    assert mode(assessed / "ledger" / "r001") == 0o700
    assert mode(assessed / "ledger" / "r001" / "dataview.csv") == 0o600


def test_files_outside_private_folders_follow_the_umask(tmp_path):
    os.chmod(tmp_path, 0o755)
    mask = os.umask(0o022)
    try:
        write_bytes_atomic(tmp_path / "out" / "a.csv", b"x")
    finally:
        os.umask(mask)
    assert mode(tmp_path / "out") == 0o755
    assert mode(tmp_path / "out" / "a.csv") == 0o644


# --- kills: stale temporary folders, a swap cut in two ------------------------------


def test_kill_9_leaves_a_temporary_folder_that_the_next_run_removes(assessed):
    project = assessed.parents[1]
    killed = cli("assess", "demo.yaml", "--quiet", cwd=project, fault="before-swap")
    assert killed.returncode == -9
    (left,) = hidden(assessed.parent)
    assert left.startswith(".e2e.tmp-")
    assert mode(assessed.parent / left) == 0o700  # raw dataviews, never readable by others
    assert run("catalog", "show", "--catalog", str(assessed)).exit_code == 0
    assert run("assess", "demo.yaml", "--quiet").exit_code == 0
    assert hidden(assessed.parent) == []


def test_kill_between_the_renames_keeps_the_catalog_and_its_ledger(assessed):
    project = assessed.parents[1]
    fake_ledger(assessed)
    before = (assessed / "catalog.json").read_text()
    killed = cli("assess", "demo.yaml", "--quiet", cwd=project, fault="after-first-rename")
    assert killed.returncode == -9
    assert not assessed.exists()  # moved aside: `.e2e.old-…`, the new one in `.e2e.tmp-…`
    assert sorted(name[:9] for name in hidden(assessed.parent)) == [".e2e.old-", ".e2e.tmp-"]
    # the next run, even one that only reads, puts the earlier catalog back
    assert run("catalog", "show", "--catalog", str(assessed)).exit_code == 0
    assert (assessed / "catalog.json").read_text() == before
    assert hidden(assessed.parent) == []
    assert run("assess", "demo.yaml", "--quiet").exit_code == 0
    assert (assessed / "ledger" / "ledger.json").exists()  # carried over, not forgotten


def test_kill_between_the_renames_then_assess_carries_the_ledger(assessed):
    project = assessed.parents[1]
    fake_ledger(assessed)
    cli("assess", "demo.yaml", "--quiet", cwd=project, fault="after-first-rename")
    assert run("assess", "demo.yaml", "--quiet").exit_code == 0
    assert (assessed / "ledger" / "ledger.json").exists()
    assert hidden(assessed.parent) == []


def test_kill_after_the_swap_keeps_the_new_catalog(assessed):
    project = assessed.parents[1]
    killed = cli("assess", "demo.yaml", "--quiet", cwd=project, fault="after-swap")
    assert killed.returncode == -9
    new = (assessed / "catalog.json").read_text()
    (left,) = hidden(assessed.parent)
    assert left.startswith(".e2e.old-")
    assert run("assess", "demo.yaml", "--quiet", "--out", str(assessed)).exit_code == 0
    assert hidden(assessed.parent) == []
    assert json.loads(new)["name"] == "e2e"


def test_a_catalog_moved_aside_by_an_earlier_version_comes_back(assessed):
    aside = assessed.parent / ".e2e.old-k2j4h5l6"
    aside.mkdir()
    assessed.rename(aside / "previous")
    assert run("catalog", "show", "--catalog", str(assessed)).exit_code == 0
    assert hidden(assessed.parent) == []


@pytest.mark.parametrize("kind", ["tmp", "old"])
def test_leftovers_of_a_live_run_are_left_alone(assessed, kind):
    live = assessed.parent / f".e2e.{kind}-{os.getppid()}-00000000-abc"
    live.mkdir()
    assert run("assess", "demo.yaml", "--quiet").exit_code == 0
    assert live.exists()  # another host, or a process still running: not ours to judge
