"""Typed accessors over a loaded YAML document that fail with the file and key path."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pandas as pd

from prudence_cli.errors import ConfigError

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
                self.fail(key, f"key {k!r} must be text")
            if allowed is not None and k not in allowed:
                self.fail(_join(key, k), f"unknown key; known keys: {', '.join(sorted(allowed))}")
        for k in sorted(required or ()):
            if k not in value:
                self.fail(_join(key, k), "is required")
        return dict(value)

    def string(self, value: object, key: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(key, f"{value!r} must be non-empty text")
        return value

    def choice(self, value: object, key: str, options: Sequence[str]) -> str:
        if not isinstance(value, str) or value not in options:
            self.fail(key, f"{value!r} is not one of: {', '.join(options)}")
        return value

    def integer(self, value: object, key: str, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"{value!r} must be a whole number")
        if minimum is not None and value < minimum:
            self.fail(key, f"{value} must be at least {minimum}")
        return value

    def number(self, value: object, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"{value!r} must be a number")
        return float(value)

    def path(self, value: object, key: str) -> Path:
        text = self.string(value, key)
        p = Path(text).expanduser()
        return p if p.is_absolute() else (self.folder / p).resolve()

    def convert(self, value: object, key: str, parse: Callable[[object], T]) -> T:
        try:
            return parse(value)
        except ValueError as exc:
            self.fail(key, str(exc))

    def timestamp(self, value: object, key: str, timezone: str) -> pd.Timestamp:
        if isinstance(value, dt.datetime):
            ts = pd.Timestamp(value)
        elif isinstance(value, dt.date):
            ts = pd.Timestamp(value.isoformat())
        elif isinstance(value, str):
            try:
                ts = pd.Timestamp(value)
            except ValueError:
                self.fail(key, f"{value!r} is not an ISO-8601 date or time")
        else:
            self.fail(key, f"{value!r} is not an ISO-8601 date or time")
        if ts is pd.NaT:
            self.fail(key, f"{value!r} is not an ISO-8601 date or time")
        if ts.tzinfo is None:
            ts = ts.tz_localize(timezone, ambiguous=True, nonexistent="shift_forward")
        return ts.tz_convert("UTC")


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key
