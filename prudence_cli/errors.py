"""Domain errors. The CLI turns every one of them into a message and exit code 2.

A message quotes what it is about (a value, a key, a column name) through `shown`, so
that no quote is ever longer than a line, whatever the file holds.
"""

from __future__ import annotations

import re
import reprlib
from pathlib import Path

SHOWN_WIDTH = 60  # characters of a quoted value, ellipsis included
_MESSAGE_LIMIT = 400  # a message's last resort bound, should a quote escape `shown`
_LONG_WORD = re.compile(rf"\S{{{2 * SHOWN_WIDTH + 1},}}")

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 6
_REPR.maxstring = _REPR.maxother = SHOWN_WIDTH


def shown(value: object, width: int = SHOWN_WIDTH) -> str:
    """`value` quoted as repr() does, cut to `width` characters with an ellipsis: a
    single line (line breaks escaped) that costs the same whatever the value's size.
    Booleans and null as YAML writes them (true, false, null), not as Python does."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    text = repr(value[: width + 1]) if isinstance(value, str) else _REPR.repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _bounded(message: str) -> str:
    """The last resort, for a quote that did not go through `shown` (e.g. a library's
    own message quoting its input): long words cut, then the message itself."""
    message = _LONG_WORD.sub(lambda m: m.group()[: 2 * SHOWN_WIDTH - 1] + "…", message)
    if len(message) <= _MESSAGE_LIMIT:
        return message
    keep = _MESSAGE_LIMIT // 2
    return f"{message[:keep]} … {message[-keep:]}"


class PrudenceError(Exception):
    """An error the user can act on: bad config, bad input, bad catalog.

    Errors raised on a Dask worker reach the assessing process pickled: each one is
    rebuilt from its message as it was made (not from the arguments of its class)."""

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuilt, (type(self), str(self), self.__dict__))


class ConfigError(PrudenceError):
    """A config value is wrong; names the file and the key path."""

    def __init__(self, file: Path | str, key: str, message: str) -> None:
        self.file = Path(file)
        self.key = key
        shown_key = key if len(key) <= 2 * SHOWN_WIDTH else key[: 2 * SHOWN_WIDTH - 1] + "…"
        where = f"{self.file.name}: {shown_key}: " if key else f"{self.file.name}: "
        super().__init__(where + _bounded(message))


class InputError(PrudenceError):
    """An input file is unusable or holds an invalid row; names the file and line."""

    def __init__(self, file: Path | str, message: str, line: int | None = None) -> None:
        # a file in an object store keeps its URL (a Path would fold its `//`)
        self.file: Path | str = file if "://" in str(file) else Path(file)
        self.line = line
        self.reason = message  # the message without the file and line (to name another)
        name = str(self.file)
        if len(name) > _MESSAGE_LIMIT // 2:  # keep the file's own name, cut its folders
            name = "…" + name[-(_MESSAGE_LIMIT // 2) :]
        where = f"{name}:{line}: " if line is not None else f"{name}: "
        super().__init__(where + _bounded(message))


def _rebuilt(kind: type[PrudenceError], message: str, state: dict[str, object]) -> PrudenceError:
    error = Exception.__new__(kind)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class CatalogError(PrudenceError):
    """A catalog folder is missing, incomplete or from another tool version."""


class BudgetError(PrudenceError):
    """An attack would enumerate more knowledge instances than the engine budget allows."""
