"""Every shipped config gives the catalog it gave before: the same risks, i-RAC tables,
curves, tables and dataviews, and the same releases and evaluation.

The fingerprints in tests/golden/ were made by the code before the package was restructured;
a behaviour-preserving change keeps them. A change that means to alter results regenerates
them on purpose (PRUDENCE_GOLDEN=update) and says why in its commit.

Each table is fingerprinted by its content, not its bytes: it is read back into a frame and
written in one canonical text form, so a catalog that stores the same numbers in another
file format still matches. Floats, in tables and manifests, count to 12 significant
digits: their last bits depend on the CPU (numpy's vectorized sums and math functions
round differently on different instruction sets), and a fingerprint must belong to the
code, not to the machine that ran it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from prudence_cli.catalog import open_catalog
from prudence_cli.catalog.tables import write_table
from prudence_cli.cli import main
from tests.sanitize.test_check import assert_reads_as_rebuilt

ROOT = Path(__file__).parent.parent
CONFIGS = ROOT / "configs"
GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("PRUDENCE_GOLDEN") == "update"

ASSESSED = sorted(
    p.stem for p in CONFIGS.glob("*.yaml") if "evaluate:" not in p.read_text(encoding="utf-8")
)
# manifest keys (at any depth) that say when, where and how fast, not what was found
VOLATILE = {
    "created",
    "tool_version",
    "timings_seconds",
    "platform",
    "files",
    "config_file",
    "input_cache",
    "manifest_sha256",
}
TABLE_SUFFIXES = (".csv.gz", ".csv", ".parquet")
DIGITS = 12  # significant digits of a float in a fingerprint (see the module docstring)


def _stem(path: Path) -> str | None:
    for suffix in TABLE_SUFFIXES:
        if path.name.endswith(suffix):
            return path.name[: -len(suffix)]
    return None


def _table_digest(path: Path) -> str:
    if path.name.endswith(".parquet"):
        frame = pd.read_parquet(path)
    else:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    text = frame.to_csv(index=False, float_format=f"%.{DIGITS}g", lineterminator="\n")
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(value: Any, root: Path) -> Any:
    """A manifest value without the machine's paths (file names stay)."""
    if isinstance(value, dict):
        return {k: _plain(v, root) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_plain(v, root) for v in value]
    if isinstance(value, str) and value.startswith("/"):
        return Path(value).name
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}")
    return value


def fingerprint(folder: Path) -> dict[str, Any]:
    """{relative table name: content digest} and the manifest's stable part."""
    tables: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        stem = _stem(path)
        if not path.is_file() or stem is None:
            continue
        name = str(path.parent.relative_to(folder) / stem)
        tables[name] = _table_digest(path)
    result: dict[str, Any] = {"tables": tables}
    for manifest in ("catalog.json", "report.json", "evaluation.json"):
        if (folder / manifest).is_file():
            data = json.loads((folder / manifest).read_text(encoding="utf-8"))
            result[manifest] = _plain(data, ROOT)
    return result


def _run(args: list[str]) -> None:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _compare(name: str, folder: Path) -> None:
    got = fingerprint(folder)
    file = GOLDEN / f"{name}.json"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        file.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    want = json.loads(file.read_text(encoding="utf-8"))
    assert sorted(got["tables"]) == sorted(want["tables"]), "the catalog's tables differ"
    changed = [t for t in want["tables"] if got["tables"][t] != want["tables"][t]]
    assert not changed, f"{name}: these tables changed: {changed}"
    for manifest in ("catalog.json", "report.json", "evaluation.json"):
        assert got.get(manifest) == want.get(manifest), f"{name}: {manifest} changed"


@pytest.mark.parametrize("name", ASSESSED)
def test_shipped_config_gives_the_same_catalog(name: str, tmp_path: Path) -> None:
    out = tmp_path / name
    _run(["assess", str(CONFIGS / f"{name}.yaml"), "--out", str(out), "-q"])
    _compare(name, out)
    assert_reads_as_rebuilt(out)  # what `prudence check` reads of it (sanitize/check.py)


def test_demo_release_is_the_same(tmp_path: Path) -> None:
    catalog = tmp_path / "demo"
    _run(["assess", str(CONFIGS / "demo.yaml"), "--out", str(catalog), "-q"])
    release = tmp_path / "release"
    _run(
        [
            "sanitize",
            "--catalog",
            str(catalog),
            "--threshold",
            "0.3",
            "--where",
            "visits=half",
            "--out",
            str(release),
            "-q",
        ]
    )
    _compare("release_demo", release)


def test_segments_release_and_evaluation_are_the_same(tmp_path: Path) -> None:
    catalog = tmp_path / "segments"
    _run(["assess", str(CONFIGS / "segments.yaml"), "--out", str(catalog), "-q"])
    release = tmp_path / "release"
    _run(
        [
            "sanitize",
            "--catalog",
            str(catalog),
            "--dataview",
            "d3",
            "--threshold",
            "0.5",
            "--where",
            "h=1",
            "--method",
            "suppress-locations",
            "--out",
            str(release),
            "-q",
        ]
    )
    _compare("release_segments", release)
    # the original as a CSV (what evaluate reads), written as catalogs of format version 1
    # held it: evaluation.json records the file's name and sha256
    original = tmp_path / "d3.csv.gz"
    open_catalog(catalog).dataview_table("d3").to_csv(
        original, index=False, compression={"method": "gzip", "compresslevel": 1, "mtime": 0}
    )
    released = next(p for p in release.iterdir() if p.name.startswith("dataview."))
    evaluation = tmp_path / "evaluation"
    _run(
        [
            "evaluate",
            "--original",
            str(original),
            "--released",
            str(released),
            "--config",
            str(CONFIGS / "evaluate.yaml"),
            "--out",
            str(evaluation),
        ]
    )
    _compare("evaluation_segments", evaluation)


def test_fingerprint_sees_a_changed_risk(tmp_path: Path) -> None:
    """The fingerprint is not blind: one risk changed in one file changes it."""
    table = tmp_path / "risks" / "d1.csv.gz"
    table.parent.mkdir()
    with gzip.open(table, "wt") as f:
        f.write("user,risk\na,0.5\nb,0.25\n")
    before = fingerprint(tmp_path)
    with gzip.open(table, "wt") as f:
        f.write("user,risk\na,0.5\nb,0.2500001\n")
    assert fingerprint(tmp_path)["tables"] != before["tables"]


def test_fingerprint_is_the_same_for_the_same_table_in_parquet(tmp_path: Path) -> None:
    """The fingerprint reads contents: the same risks as CSV.gz (format version 1) and as
    Parquet (version 2) give the same digest under the same name; another risk does not."""
    frame = pd.DataFrame({"user": ["a", "007"], "presence[h=1]": [0.5, 1 / 3]})
    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        (folder / "risks").mkdir(parents=True)
    frame.to_csv(old / "risks" / "d1.csv.gz", index=False, compression="gzip")
    write_table(frame, new / "risks" / "d1.parquet", ("user",))
    assert fingerprint(old)["tables"] == fingerprint(new)["tables"]
    write_table(frame.assign(user=["a", "7"]), new / "risks" / "d1.parquet", ("user",))
    assert fingerprint(old)["tables"] != fingerprint(new)["tables"]


def test_fingerprint_ignores_the_last_bits_of_a_float(tmp_path: Path) -> None:
    """Not machine-bound: the same number rounded otherwise in its last bits (as another
    CPU's vectorized sum gives it) keeps the fingerprint."""
    table = tmp_path / "risks" / "d1.csv.gz"
    table.parent.mkdir()
    with gzip.open(table, "wt") as f:
        f.write(f"user,risk\na,{0.1 + 0.2!r}\n")
    before = fingerprint(tmp_path)
    with gzip.open(table, "wt") as f:
        f.write("user,risk\na,0.3\n")
    assert fingerprint(tmp_path)["tables"] == before["tables"]
