"""User settings: defaults, overridden by a TOML file in the XDG config dir, overridden by the command line.

The file is only ever read. A problem in it is reported as "<file> line N: <what>" and that setting (or, for a
file that does not parse, the whole file) falls back to its default, so a typo never stops the dashboard.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from sparktop.model import GB

UNITS = ("GiB", "GB")

# Columns the tables can show, in their default order; the config picks a subset and an order.
CONTAINER_COLUMNS = (
    "name", "project", "service", "status", "image", "id", "cpu", "gpu", "total", "trend", "pss",
    "anon", "file", "shmem", "limit", "pids",
)  # fmt: skip
DEFAULT_CONTAINER_COLUMNS = ("name", "project", "service", "cpu", "gpu", "total", "trend", "pss")
PROCESS_COLUMNS = (
    "pid", "name", "container", "user", "cpu_pct", "rss", "pss", "gpu", "total", "trend", "command",
)  # fmt: skip
DEFAULT_PROCESS_COLUMNS = (
    "pid", "name", "container", "rss", "gpu", "total", "trend", "pss", "cpu_pct", "command",
)  # fmt: skip


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sparktop"


def default_config_path() -> Path:
    return config_dir() / "config.toml"


@dataclass
class Config:
    interval: float = 1.0  # seconds between samples
    safe_gb: float = 80.0  # decimal GB, as NVIDIA's guidance states them
    max_gb: float = 100.0
    theme: str = "sparktop-dark"
    units: str = "GiB"  # "GiB" or "GB" for every size shown
    container_columns: list[str] = field(default_factory=lambda: list(DEFAULT_CONTAINER_COLUMNS))
    process_columns: list[str] = field(default_factory=lambda: list(DEFAULT_PROCESS_COLUMNS))
    stop_timeout: float = 10.0
    read_only: bool = False
    history_hours: float = 6.0

    @property
    def safe_bytes(self) -> int:
        return int(self.safe_gb * GB)

    @property
    def max_bytes(self) -> int:
        return int(self.max_gb * GB)


def _check_positive(value: float) -> str | None:
    return None if value > 0 else "must be greater than 0"


def _check_columns(allowed: tuple[str, ...]):
    def check(value: list[str]) -> str | None:
        if not value:
            return "needs at least one column"
        bad = [v for v in value if v not in allowed]
        if bad:
            return f"unknown column {bad[0]!r} (choose from {', '.join(allowed)})"
        return None

    return check


# key -> (accepted python types, extra check)
_SCHEMA: dict[str, tuple[tuple[type, ...], Any]] = {
    "interval": ((int, float), lambda v: None if v >= 0.1 else "must be at least 0.1 seconds"),
    "safe_gb": ((int, float), _check_positive),
    "max_gb": ((int, float), _check_positive),
    "theme": ((str,), lambda v: None if v.strip() else "must not be empty"),
    "units": ((str,), lambda v: None if v in UNITS else f"must be one of {', '.join(UNITS)}"),
    "container_columns": ((list,), _check_columns(CONTAINER_COLUMNS)),
    "process_columns": ((list,), _check_columns(PROCESS_COLUMNS)),
    "stop_timeout": ((int, float), lambda v: None if v >= 0 else "must not be negative"),
    "read_only": ((bool,), None),
    "history_hours": ((int, float), lambda v: None if 0 < v <= 48 else "must be between 0 and 48 hours"),
}
assert set(_SCHEMA) == {f.name for f in fields(Config)}

_TYPE_NAMES = {int: "a number", float: "a number", str: "a string", list: "a list", bool: "true or false"}


def _key_line(text: str, key: str) -> int | None:
    pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def _where(path: Path, text: str, key: str) -> str:
    line = _key_line(text, key)
    return f"{path} line {line}" if line else str(path)


def apply_settings(config: Config, data: dict[str, Any], path: Path, text: str = "") -> list[str]:
    """Set every valid key of `data` on `config`; return one message per key that was not used."""
    errors: list[str] = []
    for key, value in data.items():
        where = _where(path, text, key)
        if key not in _SCHEMA:
            errors.append(f"{where}: unknown setting {key!r}")
            continue
        types, check = _SCHEMA[key]
        # bool is an int in Python; `interval = true` is still a mistake.
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            errors.append(f"{where}: {key} must be {_TYPE_NAMES[types[0]]}, not {value!r}")
            continue
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            errors.append(f"{where}: {key} must be a list of column names")
            continue
        problem = check(value) if check else None
        if problem:
            errors.append(f"{where}: {key} {problem}")
            continue
        if isinstance(value, int) and float in types:
            value = float(value)
        setattr(config, key, list(value) if isinstance(value, list) else value)
    if config.max_gb < config.safe_gb:
        errors.append(
            f"{_where(path, text, 'max_gb')}: max_gb ({config.max_gb:g}) is below safe_gb "
            f"({config.safe_gb:g}); using the defaults for both"
        )
        config.safe_gb, config.max_gb = Config.safe_gb, Config.max_gb
    return errors


_TOML_LINE = re.compile(r"^(?P<msg>.*?)\s*\(at line (?P<line>\d+), column \d+\)$")


def load_config(path: Path | None = None) -> tuple[Config, list[str]]:
    """Read the config file (default: $XDG_CONFIG_HOME/sparktop/config.toml). A missing file is not an error.
    Returns the config and a list of readable problems; the file is never written."""
    explicit = path is not None
    path = path if path is not None else default_config_path()
    config = Config()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return config, ([f"{path}: no such file; using the defaults"] if explicit else [])
    except (OSError, UnicodeDecodeError) as exc:
        return config, [f"{path}: cannot read ({exc}); using the defaults"]
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_LINE.match(str(exc))
        if match:
            return config, [f"{path} line {match['line']}: {match['msg']}; using the defaults"]
        return config, [f"{path}: {exc}; using the defaults"]
    return config, apply_settings(config, data, path, text)
