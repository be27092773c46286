"""Hostile configs through the command line (issue 15, Config): repeated keys, alias
bombs, impossible dates and deep nesting end in exit code 2 with a message naming the
key (and lines), quickly; `validate` refuses everything `assess` refuses."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from prudence_cli.cli import main
from prudence_cli.config.loader import MAX_BYTES, MAX_DEPTH, MAX_VALUES
from tests.conftest import MINIMAL_CONFIG, gps_rows

ROWS = [
    ("a", "2011-06-01T08:00:00", 43.7, 10.4),
    ("b", "2011-06-01T09:00:00", 43.71, 10.41),
]
COMMANDS = ["validate", "assess"]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "points.csv").write_text(gps_rows(ROWS), encoding="utf-8")
    return tmp_path


def run(folder: Path, command: str, text: str):
    (folder / "config.yaml").write_text(text, encoding="utf-8")
    args = [command, "config.yaml"] + (["--quiet"] if command == "assess" else [])
    return CliRunner().invoke(main, args, catch_exceptions=False)


def line_of(text: str, start: str, nth: int = 1) -> int:
    """1-based number of the nth line of `text` that starts with `start`."""
    found = [i + 1 for i, line in enumerate(text.splitlines()) if line.startswith(start)]
    return found[nth - 1]


def refused(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert all(len(line) < 400 for line in result.stderr.splitlines())


def bomb(levels: int = 9) -> str:
    """A "billion laughs": each anchor is a list of nine aliases of the one before."""
    parts = ['&l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        parts.append(f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "[" + ", ".join(parts) + "]"


def test_the_minimal_config_is_valid(folder):
    result = run(folder, "validate", MINIMAL_CONFIG)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_a_second_attacks_block_is_refused_naming_both_lines(folder, command):
    text = MINIMAL_CONFIG + "attacks:\n  - attack: presence\n    knowledge: {h: [1]}\n"
    first, second = line_of(text, "attacks:"), line_of(text, "attacks:", 2)
    refused(
        run(folder, command, text),
        f"config.yaml: attacks: is given twice (lines {first} and {second})",
    )
    assert not (folder / "out").exists()


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (  # a block mapping
            "  timezone: Europe/Rome\n",
            "  timezone: Europe/Rome\n  timezone: UTC\n",
            "input.timezone: is given twice (lines 5 and 6)",
        ),
        (  # a flow mapping: both on one line
            "{user: uid, time: datetime,",
            "{user: uid, user: id, time: datetime,",
            "input.columns.user: is given twice (line 4)",
        ),
        (  # inside a list
            "knowledge: {h: [1, 2], visits: [exact]}",
            "knowledge: {h: [1, 2], visits: [exact], h: [3]}",
            "attacks[0].knowledge.h: is given twice (line 13)",
        ),
    ],
)
def test_a_repeated_nested_key_is_refused_naming_its_path(folder, command, old, new, message):
    assert MINIMAL_CONFIG.splitlines()[12].strip().startswith("knowledge:")
    refused(run(folder, command, MINIMAL_CONFIG.replace(old, new)), f"config.yaml: {message}")


def test_anchors_aliases_and_merge_keys_stay_allowed(folder):
    text = MINIMAL_CONFIG.replace(
        "    knowledge: {h: [1, 2], visits: [exact]}\n",
        "    knowledge: &known {h: [1], visits: &visits [exact]}\n"
        "  - attack: presence\n"
        "    knowledge: {<<: *known, h: [2]}\n"  # a merge key may override: not a repeat
        "  - attack: presence\n"
        "    knowledge: {h: [3], visits: *visits}\n",
    )
    result = run(folder, "validate", text)
    assert result.exit_code == 0, result.output
    assert "3 attack levels" in result.stderr


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("where", "key"),
    [  # the first anchor past the limit: 9**5 values
        ("name", "name[4]"),  # the value an error message would have printed
        ("seed", "seed[4]"),
        ("engine", "engine.sample[4]"),
    ],
)
def test_an_alias_bomb_is_refused_at_once(folder, command, where, key):
    if where == "engine":
        text = MINIMAL_CONFIG + f"engine: {{sample: {bomb()}}}\n"
    else:
        text = f"{where}: {bomb()}\n" + MINIMAL_CONFIG.replace("name: tiny\n", "")
    assert len(text.split("\n", 1)[0]) < 700  # a few hundred bytes ...
    started = time.perf_counter()
    result = run(folder, command, text)
    assert time.perf_counter() - started < 2  # ... never expanded to gigabytes
    refused(result, f"config.yaml: {key}: holds more than {MAX_VALUES:,} values")
    assert "lol" not in result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_an_alias_inside_its_own_value_is_refused(folder, command):
    text = "seed: &me [1, *me]\n" + MINIMAL_CONFIG
    refused(run(folder, command, text), "config.yaml: seed[1]: *me (line 1) is inside the value")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("written", "reason"),
    [
        ("2011-13-45", "month must be in 1..12"),
        ("2011-02-30", "day is out of range for month"),
        ("2011-06-01T25:00:00", "hour must be in 0..23"),
        ('"2011-13-45"', "month must be in 1..12"),
    ],
)
def test_an_impossible_date_names_its_key(folder, command, written, reason):
    text = MINIMAL_CONFIG + f"select:\n  period:\n    start: {written}\n"
    refused(
        run(folder, command, text),
        f"config.yaml: select.period.start: '{written.strip(chr(34))}' is not a date or time "
        f"({reason})",
    )


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("value", "key"),
    [
        ("[" * 5000 + "]" * 5000, "seed[0][0]…"),
        ("{a: " * 5000 + "1" + "}" * 5000, "seed.a.a…"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "seed[0][0]…"),
    ],
)
def test_deep_nesting_names_its_key(folder, command, value, key):
    text = MINIMAL_CONFIG + f"seed: {value}\n"
    result = run(folder, command, text)
    refused(result, f"config.yaml: {key}: is nested more than {MAX_DEPTH} levels deep")


def test_nesting_up_to_the_limit_is_only_a_wrong_value(folder):
    value = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    refused(run(folder, "validate", MINIMAL_CONFIG + f"seed: {value}\n"), "must be a whole number")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("seed: !!int abc", "seed: 'abc' (line {line}) cannot be read as int"),
        ("seed: !!float x", "seed: 'x' (line {line}) cannot be read as float"),
        ("seed: !!bool maybe", "seed: 'maybe' (line {line}) cannot be read as bool"),
    ],
)
def test_a_value_yaml_cannot_build_names_its_key(folder, command, written, message):
    text = MINIMAL_CONFIG + written + "\n"
    refused(run(folder, command, text), message.format(line=line_of(text, "seed:")))


LONG = "x" * 100_000


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("name: tiny", f"name: {LONG} y", "config.yaml: name: 'xxxxx"),
        ("name: tiny", f"name: [{', '.join(['lol'] * 5000)}]", "config.yaml: name: ['lol',"),
        ("name: tiny", f"name: tiny\n{LONG[:1000]}: 1", "config.yaml: 'xxxx"),
        ("timezone: Europe/Rome", f"timezone: {LONG}", "input.timezone: 'xxx"),
        ("grid: [500m]", f"grid: [{LONG}]", "dataview.dimensions.grid[0]: "),
        ("frequency: [1]", f"frequency: [{LONG}]", "dataview.dimensions.frequency[0]: 'xxx"),
        ("visits: [exact]", f"visits: [{LONG}]", "attacks[0].knowledge.visits[0]: 'xxx"),
        ("output: out", f"output: out\ncrs: {LONG}", "crs: 'xxx"),
        ("output: out", f"output: out\nseed: {LONG}", "seed: 'xxx"),
        # a library's own message that quotes the value (GEOS): the last resort cuts it
        ("output: out", f"output: out\nselect: {{area: {{wkt: '{LONG}'}}}}", "not valid WKT"),
    ],
)
def test_messages_never_quote_more_than_a_line(folder, command, old, new, message):
    result = run(folder, command, MINIMAL_CONFIG.replace(old, new))
    refused(result, message)
    assert len(result.stderr) < 400
    assert "…" in result.stderr or "...]" in result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_the_data_file_given_as_config_is_refused_at_once(folder, command):
    big = folder / "points.csv"
    big.write_text(gps_rows(ROWS * 20_000))
    assert big.stat().st_size > MAX_BYTES
    started = time.perf_counter()
    result = CliRunner().invoke(main, [command, "points.csv"], catch_exceptions=False)
    assert time.perf_counter() - started < 2
    refused(result, f"points.csv: is {big.stat().st_size:,} bytes, more than a config's")
