"""Moved to `sparktop.settings.config` (one pydantic model for the file and the command line); this name
stays so imports written before the move keep working."""

from sparktop.settings.config import (
    CONTAINER_COLUMNS,
    DEFAULT_CONTAINER_COLUMNS,
    DEFAULT_PROCESS_COLUMNS,
    PROCESS_COLUMNS,
    UNITS,
    Config,
    apply_overrides,
    config_from_mapping,
    load_config,
)
from sparktop.settings.files import config_dir, default_config_path

__all__ = [
    "CONTAINER_COLUMNS",
    "DEFAULT_CONTAINER_COLUMNS",
    "DEFAULT_PROCESS_COLUMNS",
    "PROCESS_COLUMNS",
    "UNITS",
    "Config",
    "apply_overrides",
    "config_dir",
    "config_from_mapping",
    "default_config_path",
    "load_config",
]
