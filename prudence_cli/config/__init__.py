"""The config: YAML → frozen, typed objects, every error naming the file and key path."""

from prudence_cli.config.parse import load_config, parse_config
from prudence_cli.config.schema import (
    Aggregate,
    Area,
    AttackConfig,
    Config,
    DataviewConfig,
    EngineConfig,
    InputConfig,
    RandomizeConfig,
    SegmentsConfig,
    SelectConfig,
    TowersConfig,
)
from prudence_cli.io.specs import ColumnMap

__all__ = [
    "Aggregate",
    "Area",
    "AttackConfig",
    "ColumnMap",
    "Config",
    "DataviewConfig",
    "EngineConfig",
    "InputConfig",
    "RandomizeConfig",
    "SegmentsConfig",
    "SelectConfig",
    "TowersConfig",
    "load_config",
    "parse_config",
]
