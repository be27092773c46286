"""Prudence: empirical re-identification risk vs utility of mobility data (PRUDEnce)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("prudence-cli")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
