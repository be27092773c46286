"""The catalog's records: each round-trips through its JSON form, and the files a real
catalog and release hold parse into records that write back the same dicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prudence_cli.catalog import open_catalog
from prudence_cli.catalog.records import (
    AttackEntry,
    DataviewEntry,
    EngineEntry,
    InputFile,
    InvalidRows,
    LevelEntry,
    Manifest,
    RandomizeEntry,
    SelectionEntry,
)
from prudence_cli.catalog.release_records import (
    AttackResult,
    CatalogRef,
    DataCounts,
    MechanismEntry,
    PassEntry,
    ProfileCounts,
    RacEntry,
    RandomizedReport,
    ReleasedView,
    ReleaseReport,
    UserCounts,
    UtilityEntry,
)
from prudence_cli.cli import main

ROOT = Path(__file__).parent.parent.parent

VIEW = DataviewEntry(
    id="v001",
    format="presence",
    dimensions={"frequency": "1"},
    users_in_view=10,
    locations=4,
    rows=20,
    visits=35,
    file="dataviews/v001.csv.gz",
    risks="risks/v001.csv.gz",
)
ATTACK = AttackEntry(
    "presence",
    ("h", "visits"),
    (LevelEntry((("h", 1), ("visits", "exact"))), LevelEntry((("h", "all"), ("visits", "half")))),
)
RANDOMIZE = RandomizeEntry(
    users=100,
    leak={"users": 0.5, "locations": 0.5},
    max_error=0.1,
    split="middle",
    settings=({"mechanism": "rr", "epsilon": 1.0, "neighbourhood": "all", "p": 0.27},),
    sampler="numpy PCG64",
)
MANIFEST = Manifest(
    format="prudence-catalog",
    format_version=1,
    tool="prudence",
    tool_version="0.1",
    created="2026-01-01T00:00:00+00:00",
    name="demo",
    config_file="/x/demo.yaml",
    config={"name": "demo", "seed": 0},
    seed=0,
    inputs=(InputFile("/x/data.csv", "ab" * 32, 123),),
    invalid_rows=InvalidRows("drop", {"time": 2}),
    input_cache={"used": False, "reason": "input.cache: auto"},
    selection=SelectionEntry({"rows_read": 100, "points": 90, "users": 10}, "EPSG:32632"),
    coverage="visits",
    format_of_dataviews="presence",
    dimensions=("frequency",),
    dataviews=(VIEW, DataviewEntry(**{**VIEW.__dict__, "id": "v002", "split": "2020-01-01"})),
    attacks=(ATTACK,),
    engine=EngineEntry({"backend": "local", "jobs": 1}, "2GB", 1000, None, 2),
    sampling=({"dataview": "v001", "level": "presence[h=all]"},),
    timings_seconds={"read_and_select": 0.1, "total": 1.5},
    platform={"python": "3.11", "machine": "x86_64"},
    files={"irac.csv": "cd" * 32},
)
RELEASE = ReleaseReport(
    format="prudence-release",
    format_version=1,
    tool="prudence",
    tool_version="0.1",
    created="2026-01-01T00:00:00+00:00",
    release="r001",
    recipient="acme",
    met=True,
    threshold=0.5,
    method="suppress-users",
    catalog=CatalogRef("demo", "ef" * 32),
    dataview=ReleasedView("v001", "presence", {"frequency": "1"}),
    levels_counted=("presence[h=1,visits=exact]",),
    combined_with=("r000",),
    users=UserCounts(10, 9, 7, 2),
    data=DataCounts("visits", 35.0, 30.0, 5.0, 20, 17),
    iterations=(PassEntry(1, 2, 1.0, 2, 3),),
    max_risk_after=0.5,
    sampled=False,
    i_rac_before=RacEntry(0.4, 0.5, 0.6, 0.1),
    i_rac_after=RacEntry(0.7, 0.8, 0.3, 0.0),
    curves={"before": {"risk": [0.0, 1.0]}, "after": {"risk": [0.0, 0.5]}},
    inputs=(InputFile("/x/data.csv", "ab" * 32, 123),),
    seed=0,
    pseudonymized=True,
    files={"dataview.csv": "12" * 32},
)
RANDOMIZED = RandomizedReport(
    format="prudence-release",
    kind="randomized profiles",
    tool_version="0.1",
    created="2026-01-01T00:00:00+00:00",
    catalog_name="demo",
    catalog_path="/x/catalog",
    dataview_id="v001",
    dataview_format="profiles",
    profile="boolean",
    mechanism=MechanismEntry("rr", 1.0, 0.27, "all", "d-privacy", "numpy PCG64"),
    seed=4,
    profiles=ProfileCounts(10, 12, 4, 17),
    utility=UtilityEntry("f1", 0.1, 2.0, 0.05, 0.1, True),
    attack_sample="all",
    leak={"users": 0.5, "locations": 0.5},
    attacks=(AttackResult("presence", {"h": "1"}, {"success_rate": 0.2, "targets": 10}),),
)


@pytest.mark.parametrize(
    "record",
    [
        MANIFEST,
        Manifest(**{**MANIFEST.__dict__, "randomize": RANDOMIZE, "files": None}),
        RELEASE,
        ReleaseReport(**{**RELEASE.__dict__, "recipient": None, "files": None}),
        RANDOMIZED,
        VIEW,
        ATTACK,
    ],
    ids=lambda r: type(r).__name__,
)
def test_round_trip(record):
    assert type(record).from_json(record.to_json()) == record
    # what is written is plain JSON, and reads back to the same record
    text = json.dumps(record.to_json())
    assert type(record).from_json(json.loads(text)).to_json() == json.loads(text)


def test_key_order_and_optional_parts():
    keys = list(MANIFEST.to_json())
    assert keys[-3:] == ["timings_seconds", "platform", "files"]
    with_randomize = Manifest(**{**MANIFEST.__dict__, "randomize": RANDOMIZE})
    assert list(with_randomize.to_json())[-2:] == ["randomize", "files"]
    assert "split" not in VIEW.to_json()
    split = DataviewEntry(**{**VIEW.__dict__, "split": "2020-01-01"}).to_json()
    assert list(split)[-3:] == ["split", "file", "risks"]
    assert list(RELEASE.to_json())[-1] == "files"
    assert MANIFEST.selection.users == 10
    assert MANIFEST.knowledge_names == ["h", "visits"]
    assert RANDOMIZED.attacks[0].success_rate == 0.2


def test_real_catalog_and_release(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "catalog"
    run = CliRunner().invoke
    config = str(ROOT / "configs" / "demo_cdr.yaml")
    result = run(main, ["assess", config, "--out", str(out), "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    written = json.loads((out / "catalog.json").read_text())
    record = Manifest.from_json(written)
    assert record.to_json() == written
    assert list(record.to_json()) == list(written)
    assert json.dumps(record.to_json(), indent=2) == json.dumps(written, indent=2)
    assert open_catalog(out).record == record
    assert record.selection.users > 0 and len(record.dataviews) == 3

    result = run(
        main,
        ["sanitize", "--catalog", str(out), "--threshold", "1", "--out", "rel"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "rel" / "report.json").read_text())
    parsed = ReleaseReport.from_json(report)
    assert json.dumps(parsed.to_json(), indent=2) == json.dumps(report, indent=2)
