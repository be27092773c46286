"""Every command has help text and is documented in the README; the README's first
commands are the two set-up commands; every console example of the README and docs/ runs,
in order, on a fresh copy of the shipped data, and prints what it shows."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from prudence_cli.cli import main

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def subcommand(group: click.Group, name: str) -> click.Command | None:
    """The command `name` of `group` (imported now if the group imports its commands
    lazily)."""
    return group.get_command(click.Context(group), name)


def commands(group: click.Group, prefix: str = "prudence") -> list[tuple[str, click.Command]]:
    found = []
    for name in group.list_commands(click.Context(group)):
        command = subcommand(group, name)
        assert command is not None, name
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            found += commands(command, path)
        else:
            found.append((path, command))
    return found


@pytest.mark.parametrize(("path", "command"), commands(main), ids=lambda x: str(x))
def test_command_has_help_and_is_in_readme(path, command):
    assert command.help, f"{path} has no help text"
    assert f"`{path}" in README, f"{path} is not documented in README.md"
    result = CliRunner().invoke(main, [*path.split()[1:], "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_readme_starts_with_the_two_setup_commands():
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    assert [line.split()[0:2] for line in first_block.strip().splitlines()] == [
        ["make", "demo"],
        ["make", "test"],
    ]


def test_every_config_example_validates():
    import yaml

    from prudence_cli.config import load_config
    from prudence_cli.config.evaluate import load_evaluate_config

    for path in (Path(__file__).parent.parent / "configs").glob("*.yaml"):
        if "evaluate" in yaml.safe_load(path.read_text()):
            load_evaluate_config(path)
        else:
            load_config(path)


# --- every console example of the README and docs/, run in order --------------------------

ROOT = Path(__file__).parent.parent
PAGES = [
    "README.md",
    "docs/walkthrough.md",
    "docs/releasing.md",
    "docs/randomized.md",
    "docs/evaluate.md",
    "docs/mobility.md",
    "docs/catalog.md",
    "docs/config.md",
    "docs/attacks.md",
    "docs/scaling.md",
]
TIMING = re.compile(r"\b\d+(\.\d+)? s\b")


def console_examples(text: str) -> list[tuple[str, list[str]]]:
    """(command, the output lines shown under it) of every ```console block."""
    found: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                found.append((line[2:], []))
            elif found:
                found[-1][1].append(line)
    return found


def _normal(line: str, folder: Path) -> str:
    line = line.replace(f"{folder}/", "").replace(str(folder), ".")
    return " ".join(TIMING.sub("<t> s", line).split())


def _as_on_a_terminal(args: list[str]) -> list[str]:
    """The output format a terminal gets: tables and charts, as the examples show."""
    command: click.Command = main
    ctx_args = list(args)
    while isinstance(command, click.Group) and ctx_args:
        found = subcommand(command, ctx_args[0])
        if found is None:
            break
        command = found
        ctx_args.pop(0)
    choices = next(
        (p.type.choices for p in command.params if "--format" in getattr(p, "opts", [])), ()
    )
    if "--format" in args:
        return args
    for fmt in ("table", "chart"):
        if fmt in choices:
            return [*args, "--format", fmt]
    return args


def test_every_console_example_runs_in_order_with_the_output_shown(tmp_path, monkeypatch):
    """On a copy of the shipped configs and sample data, every `$ prudence ...` line of
    the README and docs/ runs, in the order of PAGES, and every line shown under it
    (but `...`) is printed, in that order (whitespace and timings aside)."""
    for name in ("configs", "sample_data"):
        shutil.copytree(ROOT / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    ran = 0
    for page in PAGES:
        for command, shown in console_examples((ROOT / page).read_text(encoding="utf-8")):
            words = shlex.split(command.split(" | ")[0])
            assert words[0] == "prudence", f"{page}: `{command}` is not a prudence command"
            result = CliRunner().invoke(main, _as_on_a_terminal(words[1:]))
            printed = [_normal(x, tmp_path) for x in result.output.splitlines()]  # as interleaved
            head = re.search(r"\| head -(\d+)$", command)
            if head:
                printed = [_normal(x, tmp_path) for x in result.stdout.splitlines()]
                printed = printed[: int(head.group(1))]
            failing = any(x.startswith(("FAIL", "Cannot release")) for x in shown)
            assert result.exit_code in ((0, 1) if failing else (0,)), (
                f"{page}: `{command}` exited {result.exit_code}:\n{result.output}"
            )
            position = 0
            for line in shown:
                want = _normal(line, tmp_path)
                if not want or want == "...":
                    continue
                # `...` inside a line stands for the part of it that is left out
                pattern = re.compile(".*".join(map(re.escape, want.split("..."))))
                at = next(
                    (i for i in range(position, len(printed)) if pattern.fullmatch(printed[i])),
                    None,
                )
                assert at is not None, (
                    f"{page}: `{command}` did not print, in order:\n{line}\n"
                    f"it printed:\n" + "\n".join(printed)
                )
                position = at + 1
            ran += 1
    assert ran >= 15
