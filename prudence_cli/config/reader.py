"""Typed accessors over a loaded YAML document that fail with the file and key path.

The document comes from config/loader.py. Every message quotes a value through
`errors.shown`: one line at most, whatever the config holds.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from prudence_cli.errors import SHOWN_WIDTH, ConfigError, shown
from prudence_cli.io.remote import is_url, local_path

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")


class Reader:
    """Typed accessors that fail with the file and key path."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.folder = file.resolve().parent

    def fail(self, key: str, message: str) -> NoReturn:
        raise ConfigError(self.file, key, message)

    def mapping(
        self,
        value: object,
        key: str,
        required: set[str] | None = None,
        allowed: set[str] | None = None,
    ) -> dict[str, Any]:
        where = key or "the config"
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            self.fail(key, f"{where} must be a mapping of keys to values")
        for k in value:
            if not isinstance(k, str):
                self.fail(key, f"key {shown(k)} must be text")
            if allowed is not None and k not in allowed:
                self.fail(_join(key, k), f"unknown key; known keys: {', '.join(sorted(allowed))}")
        for k in sorted(required or ()):
            if k not in value:
                self.fail(_join(key, k), "is required")
        return dict(value)

    def string(self, value: object, key: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(key, f"{shown(value)} must be non-empty text")
        return value

    def choice(self, value: object, key: str, options: Sequence[str]) -> str:
        if not isinstance(value, str) or value not in options:
            self.fail(key, f"{shown(value)} is not one of: {', '.join(options)}")
        return value

    def integer(self, value: object, key: str, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"{shown(value)} must be a whole number")
        if minimum is not None and value < minimum:
            self.fail(key, f"{value} must be at least {minimum}")
        return value

    def number(self, value: object, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"{shown(value)} must be a number")
        return float(value)

    def path(self, value: object, key: str) -> Path:
        """A local file's path (a `file://` URL too), relative to the config's folder."""
        text = self.string(value, key)
        if is_url(text):
            self.fail(
                key,
                f"{shown(text)}: only input.path may name an object store (a URL); "
                "name a local path here (copy the file to this machine)",
            )
        p = Path(local_path(text)).expanduser()
        return p if p.is_absolute() else (self.folder / p).resolve()

    def convert(self, value: object, key: str, parse: Callable[[object], T]) -> T:
        try:
            return parse(value)
        except ValueError as exc:
            self.fail(key, _quoted_once(str(exc), value))

    def timestamp(self, value: object, key: str, timezone: str) -> pd.Timestamp:
        """A date or time (naive ones in `timezone`) as a UTC Timestamp. An impossible
        date such as 2011-13-45 reaches here as text (config/loader.py) and fails here,
        naming its key."""
        import pandas as pd  # here: reading a catalog's config imports no pandas

        if not isinstance(value, (dt.date, str)):
            self.fail(key, f"{shown(value)} is not an ISO-8601 date or time")
        try:
            ts = pd.Timestamp(value.isoformat() if type(value) is dt.date else value)
            if ts is not pd.NaT and ts.tzinfo is None:
                ts = ts.tz_localize(timezone, ambiguous=True, nonexistent="shift_forward")
        except (ValueError, OverflowError) as exc:
            reason = str(exc).split(": ")[0] if isinstance(value, str) else str(exc)
            self.fail(
                key,
                f"{shown(value)} is not a date or time ({_quoted_once(reason, value)}); "
                "write it as ISO-8601, e.g. 2011-06-01 or 2011-06-01T08:00",
            )
        if ts is pd.NaT:
            self.fail(key, f"{shown(value)} is not an ISO-8601 date or time")
        return ts.tz_convert("UTC")


def _join(prefix: str, key: str) -> str:
    if len(key) > SHOWN_WIDTH or not key.isprintable():
        key = shown(key)
    return f"{prefix}.{key}" if prefix else key


def _quoted_once(message: str, value: object) -> str:
    """A parser's message with the value it quotes in full (repr or "text") shortened
    by `shown`: the parsers (units, knowledge, dimensions) quote what they were given."""
    if len(message) <= 2 * SHOWN_WIDTH:
        return message
    for full in (repr(value), f'"{value}"', str(value)):
        if len(full) > SHOWN_WIDTH and full in message:
            message = message.replace(full, shown(value))
    return message
