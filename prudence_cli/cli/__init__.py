"""The command line: one thin module per command group."""

from prudence_cli.cli.app import main

__all__ = ["main"]
