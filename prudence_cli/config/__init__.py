"""The config: YAML → frozen, typed objects, every error naming the file and key path."""

from prudence_cli.config.parse import (
    Aggregate,
    Area,
    AttackConfig,
    ColumnMap,
    Config,
    DataviewConfig,
    EngineConfig,
    InputConfig,
    RandomizeConfig,
    SegmentsConfig,
    SelectConfig,
    TowersConfig,
    load_config,
    parse_config,
)

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
