"""Every command has help text and is documented in the README; the README's first
commands are the two set-up commands."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from prudence_cli.cli import main

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def commands(group: click.Group, prefix: str = "prudence") -> list[tuple[str, click.Command]]:
    found = []
    for name, command in group.commands.items():
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
