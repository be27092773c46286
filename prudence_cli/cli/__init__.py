"""The command line: one thin module per command group."""

from prudence_cli.cli.main import main

__all__ = ["main"]
