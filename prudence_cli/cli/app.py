"""The `prudence` command line: parse, call one library function, render.

Exit codes: 0 done, 1 a policy is not met, 2 bad usage, config, input, catalog or
environment (a path that cannot be read or written, a full disk), 3 an internal error
(traceback in a log file), 128 + N stopped by signal N; see `common.handle_errors`.
Data goes to stdout, messages and progress to stderr.

This module holds the root group and names the commands, one module per group, each
imported when its command runs (`COMMANDS`); what the commands share lives in `common`,
the rich rendering in `render`.
"""

from __future__ import annotations

import atexit
import gc

import click

from prudence_cli import __version__
from prudence_cli.cli.common import LazyGroup

COMMANDS = {
    "assess": "prudence_cli.cli.assess:assess",
    "validate": "prudence_cli.cli.assess:validate",
    "catalog": "prudence_cli.cli.catalog:catalog",
    "check": "prudence_cli.cli.release:check",
    "report": "prudence_cli.cli.report:report",
    "evaluate": "prudence_cli.cli.evaluate:evaluate",
    "sanitize": "prudence_cli.cli.release:sanitize",
    "sample": "prudence_cli.cli.sample:sample",
}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="prudence")
def main() -> None:
    """Prudence: how likely is each person in a mobility dataset to be re-identified,
    and how much data is left when the risky ones are taken out (PRUDEnce)."""
    atexit.unregister(_quick_exit)  # once, however many commands ran in this process
    atexit.register(_quick_exit)


def _quick_exit() -> None:
    """At exit, after the command: leave the objects alive now out of the interpreter's
    last garbage collections. With pandas, numba and LLVM loaded, those sweep millions
    of objects for nothing (about half a second); files are closed and atexit handlers
    run as usual."""
    gc.freeze()
