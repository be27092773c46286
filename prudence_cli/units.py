"""Parsing and printing of the sizes and durations written in configs ("250m", "20min"),
and the printing of shares as percentages."""

from __future__ import annotations

import math
import re
from decimal import Decimal

# a number, then m or km; an exponent is read too, for catalogs written before sizes
# were labelled without one ("5e+06m")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?(?:e[+-]?\d+)?)(m|km)$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|min|h|d|w)$")
_SIZE_FACTOR = {"m": 1, "km": 1000}
# no two places on Earth are farther apart (half a meridian is 20,004 km): a larger cell
# or tolerance means nothing
MAX_SIZE_METRES = 20_000_000.0
_BYTES = re.compile(r"^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$")
_BYTE_FACTOR = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}
_DURATION_SECONDS = {"s": 1, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_size(text: object) -> float:
    """Metres from "250m" or "1.5km" (in decimal, so "4.35km" is 4350 m exactly), at most
    20,000 km; ValueError with a user-facing message otherwise."""
    match = _SIZE.match(text) if isinstance(text, str) else None
    if match is None:
        hint = " (write the unit)" if isinstance(text, (int, float)) else ""
        raise ValueError(f"{_show(text)} is not a size like 500m or 1.5km{hint}")
    metres = float(Decimal(match.group(1)) * _SIZE_FACTOR[match.group(2)])
    if metres <= 0:
        raise ValueError(f"{_show(text)} must be a positive size")
    if metres > MAX_SIZE_METRES:
        raise ValueError(
            f"{_show(text)} is too large: no two places on Earth are more than "
            f"{format_size(MAX_SIZE_METRES)} apart"
        )
    return metres


def parse_duration(text: object) -> int:
    """Whole seconds from "90s", "20min", "1h" or "1d"."""
    match = _DURATION.match(text) if isinstance(text, str) else None
    if match is None:
        hint = " (write the unit)" if isinstance(text, (int, float)) else ""
        raise ValueError(f"{_show(text)} is not a duration like 30s, 20min, 1h, 1d or 1w{hint}")
    seconds = float(match.group(1)) * _DURATION_SECONDS[match.group(2)]
    if seconds <= 0 or seconds != int(seconds):
        raise ValueError(f"{_show(text)} must be a positive whole number of seconds")
    return int(seconds)


def parse_bytes(text: object) -> int:
    """Bytes from "4GB", "512MB" or "1.5GiB" (decimal KB/MB/GB/TB, binary KiB/...)."""
    match = _BYTES.match(text) if isinstance(text, str) else None
    if match is None:
        hint = " (write the unit)" if isinstance(text, (int, float)) else ""
        raise ValueError(f"{_show(text)} is not an amount of memory like 512MB or 4GB{hint}")
    n_bytes = float(match.group(1)) * _BYTE_FACTOR[match.group(2)]
    if n_bytes < 1:
        raise ValueError(f"{_show(text)} must be a positive amount of memory")
    return int(n_bytes)


def format_size(metres: float) -> str:
    """The canonical label of a size, read back by `parse_size` as the same number:
    250m, 1500m, 12.5m; from 1,000 km, a whole number of kilometres as such (5000km).

    Sizes below 1,000 km keep the metre labels of earlier catalogs (1km is "1000m")."""
    if metres >= 1_000_000 and metres % 1000 == 0:
        return f"{int(metres) // 1000}km"
    text = repr(float(metres))
    if "e" in text or "E" in text:  # tiny or huge: written out, without an exponent
        text = format(Decimal(text), "f")
    return f"{text.removesuffix('.0')}m"


def format_duration(seconds: int) -> str:
    """The canonical label of a duration, in the largest unit that divides it."""
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("min", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _show(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def as_given(share: float) -> str:
    """A share the user gave (a policy's min_coverage) as a percentage, as precise as
    given: 0.995 is "99.5%", never rounded to "100%" nor "99%"."""
    return f"{share * 100:g}%"


def percent(share: float) -> str:
    """A share as a percentage to a tenth, never reading as none, nor as all, when it is
    not: a share below 0.1 % with two significant digits, without an exponent ("0.04%",
    "0.000033%": one person in three million), one of 99.9 % or more but short of all
    cut down to "99.9%"."""
    if 0 < share < 0.001:
        value = share * 100
        digits = 1 - math.floor(math.log10(value))  # two significant digits
        return f"{value:.{digits}f}".rstrip("0").rstrip(".") + "%"
    if 0.999 <= share < 1:
        return f"{math.floor(share * 1000) / 10:.1f}%"
    return f"{share:.1%}"
