"""The data catalog: its folder, written atomically, and read back."""

from prudence_cli.catalog.folder import (
    CATALOG_FORMAT,
    CATALOG_VERSION,
    RANDOMIZED,
    Catalog,
    find_catalog,
    is_catalog,
    open_catalog,
)
from prudence_cli.catalog.records import AttackEntry, DataviewEntry, LevelEntry, Manifest
from prudence_cli.catalog.writer import CatalogWriter

__all__ = [
    "AttackEntry",
    "DataviewEntry",
    "LevelEntry",
    "Manifest",
    "CATALOG_FORMAT",
    "CATALOG_VERSION",
    "RANDOMIZED",
    "Catalog",
    "CatalogWriter",
    "find_catalog",
    "is_catalog",
    "open_catalog",
]
