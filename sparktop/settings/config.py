"""The dashboard's settings: defaults, overridden by config.toml, overridden by the command line — one
pydantic model, so the file and the flags obey the same rules (`interval = 0.05` and `--interval 0.05` are
refused alike; so is a safe line at or above the aggressive one, from either place).

The file is only ever read. A problem in it is reported as `FILE:LINE: key: what is wrong` and that key (both
lines, for safe_gb/max_gb that contradict each other; the whole file, when it does not parse) keeps its
default, so a typo never stops the dashboard. A bad flag is refused (exit 3) with the flag's name.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from sparktop.core.columns import CONTAINER_COLUMN_SPECS, PROCESS_COLUMN_SPECS
from sparktop.core.format import GB
from sparktop.core.server_kinds import CONFIG_NAMES
from sparktop.settings.files import (
    KeyLines,
    SettingsError,
    decode,
    default_config_path,
    parse_toml,
    problems_from,
    read_bytes,
)
from sparktop.settings.guard import GuardSettings

UNITS = ("GiB", "GB")

# Columns the tables can show, in their default order (their one definition: sparktop/core/columns.py); the
# config picks a subset and an order.
CONTAINER_COLUMNS = tuple(CONTAINER_COLUMN_SPECS)
DEFAULT_CONTAINER_COLUMNS = ("name", "project", "service", "cpu", "gpu", "sm", "total", "trend", "pss")
PROCESS_COLUMNS = tuple(PROCESS_COLUMN_SPECS)
DEFAULT_PROCESS_COLUMNS = (
    "pid", "name", "container", "rss", "gpu", "sm", "total", "trend", "pss", "cpu_pct", "command",
)  # fmt: skip

# Bounds that keep every later computation finite and meaningful. Below 0.1 s a tick costs more than it shows;
# above an hour the dashboard is not a dashboard. Lines beyond a petabyte are a typo, not a machine.
INTERVAL_RANGE = (0.1, 3600.0)
MAX_LINE_GB = 1_000_000.0
STOP_TIMEOUT_RANGE = (0.0, 3600.0)
HISTORY_HOURS_RANGE = (0.0, 48.0)


def finite_between(low: float, high: float, unit: str = "", *, low_open: bool = False) -> AfterValidator:
    """A check for a number in [low, high] ((low, high] with low_open), never nan or inf, in plain words."""
    return AfterValidator(finite_check(low, high, unit, low_open=low_open))


def finite_check(
    low: float, high: float, unit: str = "", *, low_open: bool = False
) -> Callable[[float], float]:
    """finite_between's check as a plain function (for a command-line flag): raises ValueError."""
    suffix = f" {unit}" if unit else ""

    def check(value: float) -> float:
        if not math.isfinite(value):
            raise ValueError(f"must be a finite number, not {value}")
        too_low = value <= low if low_open else value < low
        if too_low or value > high:
            lower = f"above {low:g}" if low_open else f"at least {low:g}"
            raise ValueError(f"must be {lower} and at most {high:g}{suffix}, not {value:g}")
        return float(value)

    return check


def _columns(allowed: tuple[str, ...]) -> AfterValidator:
    def check(value: list[str]) -> list[str]:
        if not value:
            raise ValueError("needs at least one column")
        bad = [v for v in value if v not in allowed]
        if bad:
            raise ValueError(f"unknown column {bad[0]!r} (choose from {', '.join(allowed)})")
        return value

    return AfterValidator(check)


def _theme_name(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _server_url(value: str) -> str:
    """An `http(s)://host:port[/prefix]` URL, refused in plain words: sparktop probes exactly this."""
    if not value.isprintable() or any(c.isspace() for c in value):
        raise ValueError("must not contain spaces or control characters")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not value.startswith(f"{parts.scheme}://"):
        raise ValueError(f"must start with http:// or https://, not {value!r}")
    if not parts.hostname:
        raise ValueError(f"names no host: {value!r}")
    if parts.username is not None or parts.password is not None:
        # sparktop sends no credentials, and would show them on screen in every error about this server
        raise ValueError("must not hold a user name or password")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port is None:
        # Without it the URL means port 80, which is rarely what a model server listens on.
        raise ValueError(f"needs a port ({parts.scheme}://{parts.netloc}:11434, say), not {value!r}")
    if not 0 < port < 65536:
        raise ValueError(f"port must be 1-65535, not {value!r}")
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        raise ValueError("must not have a query or fragment")
    return value


def _server_kind(value: str) -> str:
    """One of the config names of core/server_kinds.SERVER_KINDS (`llamacpp`: one word, as users type it)."""
    if value not in CONFIG_NAMES:
        *first, last = (repr(name) for name in CONFIG_NAMES)
        raise ValueError(f"must be {', '.join(first)} or {last}, not {value!r}")
    return value


class ServerEndpoint(BaseModel):
    """One `[[servers]]` table: a model server to probe besides those found without configuration (default
    ports, OLLAMA_HOST, ports that containers publish). Without `kind` it is identified by what it answers."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    url: Annotated[str, AfterValidator(_server_url)]
    kind: Annotated[str, AfterValidator(_server_kind)] | None = None


Interval = Annotated[float, Field(allow_inf_nan=True), finite_between(*INTERVAL_RANGE, "seconds")]
LineGB = Annotated[float, Field(allow_inf_nan=True), finite_between(0, MAX_LINE_GB, "GB", low_open=True)]


class Config(BaseModel):
    """Every setting, validated on creation and on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True)

    interval: Interval = 1.0  # seconds between samples
    safe_gb: LineGB = 80.0  # decimal GB, as NVIDIA's guidance states them
    max_gb: LineGB = 100.0
    theme: Annotated[str, AfterValidator(_theme_name)] = "sparktop-dark"
    units: Literal["GiB", "GB"] = "GiB"  # for every size shown
    container_columns: Annotated[list[str], _columns(CONTAINER_COLUMNS)] = Field(
        default_factory=lambda: list(DEFAULT_CONTAINER_COLUMNS)
    )
    process_columns: Annotated[list[str], _columns(PROCESS_COLUMNS)] = Field(
        default_factory=lambda: list(DEFAULT_PROCESS_COLUMNS)
    )
    stop_timeout: Annotated[
        float, Field(allow_inf_nan=True), finite_between(*STOP_TIMEOUT_RANGE, "seconds")
    ] = 10.0
    read_only: bool = False
    history_hours: Annotated[
        float, Field(allow_inf_nan=True), finite_between(*HISTORY_HOURS_RANGE, "hours", low_open=True)
    ] = 6.0
    # `sparktop guard`: forecast, black box and the opt-in stop policy (settings/guard.py).
    guard: GuardSettings = Field(default_factory=GuardSettings)
    # `[[servers]]`: model servers to probe besides the ones found without configuration.
    servers: list[ServerEndpoint] = Field(default_factory=list)
    # `--root`: the host's filesystem mounted here (sparktop in a container: collect/host_paths.py).
    host_root: str = "/"

    @field_validator("host_root")
    @classmethod
    def _a_directory(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must be an absolute path (the host's / mounted in this container, e.g. /host)")
        if not os.path.isdir(os.path.join(value, "proc")):
            raise ValueError(f"{value}/proc is not a directory: mount the host's /proc there")
        return value

    @model_validator(mode="after")
    def _lines_in_order(self) -> Config:
        if self.safe_gb >= self.max_gb:
            raise ValueError(
                f"the safe line ({self.safe_gb:g} GB) must be below the aggressive line ({self.max_gb:g} GB)"
            )
        return self

    @property
    def safe_bytes(self) -> int:
        return int(self.safe_gb * GB)

    @property
    def max_bytes(self) -> int:
        return int(self.max_gb * GB)


DEFAULTS = Config()
_LINE_KEYS = ("safe_gb", "max_gb")


def _good_servers(
    entries: list[Any], file: str | None, lines: KeyLines | None
) -> tuple[list[Any], list[SettingsError]]:
    """The `[[servers]]` entries that are valid, and one error per bad one: a typo in one server's table
    leaves that server out, not the others."""
    good: list[Any] = []
    problems: list[SettingsError] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            line = lines.line(("servers", index)) if lines else None
            message = f"each entry must be a table (url = ..., kind = ...), not {entry!r}"
            problems.append(SettingsError(file, line, "servers", message))
            continue
        try:
            ServerEndpoint.model_validate(entry)
        except ValidationError as exc:
            first = problems_from(exc, file, lines, prefix=("servers", index))[0]  # one line per entry
            problems.append(SettingsError(first.file, first.line, f"servers.{first.key}", first.message))
        else:
            good.append(entry)
    return good, problems


def _validate_keeping_good(
    data: dict[str, Any], file: str | None, lines: KeyLines | None
) -> tuple[Config, list[SettingsError]]:
    """The config from `data`, with every key pydantic refuses left at its default; one error per refusal."""
    problems: list[SettingsError] = []
    data = dict(data)
    if isinstance(data.get("servers"), list):
        data["servers"], problems = _good_servers(data["servers"], file, lines)
    while True:
        try:
            return Config.model_validate(data), problems
        except ValidationError as exc:
            found = problems_from(exc, file, lines)
            for problem, error in zip(found, exc.errors(), strict=True):
                if error["loc"]:
                    key = str(error["loc"][0])
                    if key in data:  # one message per key, though a list may hold several bad items
                        data.pop(key)
                        problems.append(problem)
                    continue
                # safe_gb/max_gb contradict each other: both go back to their defaults.
                key = next((k for k in reversed(_LINE_KEYS) if k in data), "max_gb")
                line = lines.line((key,)) if lines else None
                problems.append(
                    SettingsError(file, line, key, f"{problem.message}; using the defaults for both")
                )
                for k in _LINE_KEYS:
                    data.pop(k, None)


# A safety setting that cannot be read fails closed: the user meant to turn stopping off, or at least said
# something about it, and a typo must not leave the stop keys armed.
_FAILS_CLOSED = "read-only mode is on (stopping and signals are off) until it is fixed"
_MENTIONS_READ_ONLY = re.compile(rb"^\s*read_only\s*=", re.MULTILINE)


def config_from_mapping(
    data: Mapping[str, Any], file: str | None = None, text: str = ""
) -> tuple[Config, list[str]]:
    config, problems = _validate_keeping_good(dict(data), file, KeyLines(text) if text else None)
    for index, problem in enumerate(problems):
        if problem.key == "read_only":
            config = config.model_copy(update={"read_only": True})
            problems[index] = SettingsError(problem.file, problem.line, problem.key,
                                            f"{problem.message}; {_FAILS_CLOSED}")  # fmt: skip
    return config, [str(p) for p in sorted(problems, key=lambda p: p.line or 0)]  # in the file's order


def load_config(path: Path | None = None) -> tuple[Config, list[str]]:
    """Read the config file (default: $XDG_CONFIG_HOME/sparktop/config.toml). A missing default file is not an
    error; a file the user named (`--config`) that is missing or cannot be read raises SettingsError (a bad
    flag). Returns the config and one readable line per problem; the file is never written."""
    explicit = path is not None
    path = path if path is not None else default_config_path()
    if not explicit and not path.exists():
        return Config(), []
    if explicit and not path.exists():
        raise SettingsError(str(path), None, None, "no such file (named by --config)")
    try:
        raw = read_bytes(path)
    except SettingsError as exc:  # missing rights, not a regular file, too big
        if explicit:
            raise
        return Config(), [f"{exc}; using the defaults"]
    try:
        text = decode(raw, path)
        data = parse_toml(text, path)
    except SettingsError as exc:
        if _MENTIONS_READ_ONLY.search(raw):
            return Config(read_only=True), [f"{exc}; using the defaults, and {_FAILS_CLOSED}"]
        return Config(), [f"{exc}; using the defaults"]
    return config_from_mapping(data, str(path), text)


def apply_overrides(config: Config, overrides: Mapping[str, tuple[str, Any]]) -> Config:
    """`config` with command-line values on top: {key: (flag, value)}; a value of None is not given.
    Raises SettingsError naming the flag (`--max: ...`) when the result breaks a rule."""
    given = {key: (flag, value) for key, (flag, value) in overrides.items() if value is not None}
    # Only what was set (in the file or here) is passed on, so `model_fields_set` still tells a line the user
    # chose from a default (plan scales default lines to a small machine, never the user's).
    merged = {
        **config.model_dump(exclude_unset=True),
        **{key: value for key, (_flag, value) in given.items()},
    }
    try:
        return Config.model_validate(merged)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else None
        message = problems_from(exc, None, None)[0].message
        if key is None:  # the two lines contradict each other: name the flag the user gave
            key = next((k for k in reversed(_LINE_KEYS) if k in given), "max_gb")
        flag = given[key][0] if key in given else key
        origin = "" if key in given else " (from the config file)"
        raise SettingsError(None, None, flag, message + origin) from None


__all__ = [
    "CONTAINER_COLUMNS",
    "DEFAULTS",
    "DEFAULT_CONTAINER_COLUMNS",
    "DEFAULT_PROCESS_COLUMNS",
    "PROCESS_COLUMNS",
    "UNITS",
    "Config",
    "ServerEndpoint",
    "apply_overrides",
    "config_from_mapping",
    "default_config_path",
    "finite_between",
    "load_config",
]
