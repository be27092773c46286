"""Domain errors. The CLI turns every one of them into a message and exit code 2."""

from __future__ import annotations

from pathlib import Path


class PrudenceError(Exception):
    """An error the user can act on: bad config, bad input, bad catalog."""


class ConfigError(PrudenceError):
    """A config value is wrong; names the file and the key path."""

    def __init__(self, file: Path | str, key: str, message: str) -> None:
        self.file = Path(file)
        self.key = key
        where = f"{self.file.name}: {key}: " if key else f"{self.file.name}: "
        super().__init__(where + message)


class InputError(PrudenceError):
    """An input file is unusable or holds an invalid row; names the file and line."""

    def __init__(self, file: Path | str, message: str, line: int | None = None) -> None:
        self.file = Path(file)
        self.line = line
        where = f"{self.file}:{line}: " if line is not None else f"{self.file}: "
        super().__init__(where + message)


class CatalogError(PrudenceError):
    """A catalog folder is missing, incomplete or from another tool version."""


class BudgetError(PrudenceError):
    """An attack would enumerate more knowledge instances than the engine budget allows."""
