"""Reading the user's TOML files, once for all of them: where they live (XDG, via platformdirs), reading and
parsing them, which line a key is on, and the one way a problem in them is worded:

    FILE:LINE: key: what is wrong

(`FILE:LINE:` as compilers write it, so editors and terminals can jump to it). A file that cannot be read or
parsed, or a value that a pydantic model refuses, becomes a `SettingsError` with that text.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs
from pydantic import ValidationError

if TYPE_CHECKING:
    import tomllib

APP_NAME = "sparktop"


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/sparktop` (usually ~/.config/sparktop): config.toml, catalog.toml, themes/."""
    return platformdirs.user_config_path(APP_NAME)


def state_dir() -> Path:
    """`$XDG_STATE_HOME/sparktop` (usually ~/.local/state/sparktop): the action log."""
    return platformdirs.user_state_path(APP_NAME)


def default_config_path() -> Path:
    return config_dir() / "config.toml"


def user_catalog_path() -> Path:
    return config_dir() / "catalog.toml"


def user_theme_dir() -> Path:
    return config_dir() / "themes"


# --- the one wording of a problem ---


def format_problem(file: str | Path | None, line: int | None, key: str | None, message: str) -> str:
    """`FILE:LINE: key: message`, leaving out what is not known. One line: the message is flattened."""
    where = f"{file}:{line}" if file is not None and line else (str(file) if file is not None else "")
    text = " ".join(str(message).split())
    parts = [p for p in (where, key, text) if p]
    return ": ".join(parts)


@dataclass
class SettingsError(ValueError):
    """A problem in a user file, with where it is."""

    file: str | None
    line: int | None
    key: str | None
    message: str

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        return format_problem(self.file, self.line, self.key, self.message)


# --- reading ---

_TOML_POS = re.compile(r"\s*\(at (?:line (\d+), column \d+|end of document)\)")


def toml_error(exc: tomllib.TOMLDecodeError, text: str) -> tuple[int | None, str]:
    """(line, message) of a TOML syntax error; "end of document" is the last line."""
    found = _TOML_POS.search(str(exc))
    message = _TOML_POS.sub("", str(exc)).strip()
    if found is None:
        return None, message
    return (int(found.group(1)) if found.group(1) else max(1, len(text.splitlines()))), message


def parse_toml(text: str, file: str | Path) -> dict[str, Any]:
    import tomllib  # here: a command run without a config file never parses TOML (`serve`: ~0.1 MiB)

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, message = toml_error(exc, text)
        raise SettingsError(str(file), line, None, f"invalid TOML: {message}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise SettingsError(
            str(file), None, None, "invalid TOML: arrays or tables nested too deeply"
        ) from None


def decode(raw: bytes, file: str | Path) -> str:
    """UTF-8 text, or a SettingsError naming the line of the first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise SettingsError(
            str(file), line, None, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None


# Every file sparktop reads for the user (config, catalog, plans, themes) is small; a cap keeps a wrong path
# (/dev/zero, a log, a disk image) from filling the memory before anything could be said about it.
MAX_FILE_BYTES = 1024 * 1024


def read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; SettingsError (one line) for anything else: a
    device, a FIFO or a socket (which would hang or never end), a directory, a file too big."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SettingsError(str(path), None, None, f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _FILE_KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise SettingsError(str(path), None, None, f"cannot read: {kind}, not a regular file")
        if info.st_size > limit:
            raise SettingsError(str(path), None, None, f"cannot read: {_too_big(info.st_size, limit)}")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 65536):  # the file may grow after fstat: count what is read
            size += len(chunk)
            if size > limit:
                raise SettingsError(str(path), None, None, f"cannot read: {_too_big(None, limit)}")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise SettingsError(str(path), None, None, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


_FILE_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
}


def _too_big(size: int | None, limit: int) -> str:
    """`size` None: the file grew past the cap while being read."""
    cap = f"the {limit / 1024 / 1024:g} MiB a settings file may have"
    return f"{size / 1024 / 1024:.1f} MiB, over {cap}" if size is not None else f"larger than {cap}"


def read_text(path: Path) -> str:
    return decode(read_bytes(path), path)


def read_toml(path: Path) -> tuple[dict[str, Any], str]:
    """(data, text) of a TOML file; SettingsError if it cannot be read, is not UTF-8 or not TOML."""
    text = read_text(path)
    return parse_toml(text, path), text


# --- which line a key is on ---

_ARRAY_HEADER = re.compile(r"^\s*\[\[\s*([^\]]+?)\s*\]\]")
_TABLE_HEADER = re.compile(r"^\s*\[\s*([^\]\[]+?)\s*\]")
_KEY = re.compile(
    r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*="""
)

Loc = tuple[str | int, ...]


def _dotted(text: str) -> list[str]:
    return [part.strip().strip("\"'") for part in re.findall(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""", text)]


class KeyLines:
    """Where each key and table of a TOML text starts, by its path as pydantic reports it:
    ("interval",), ("colors", "primary"), ("workload", 2, "batch"), ("model", 0, "ollama", 1, "quant")."""

    def __init__(self, text: str) -> None:
        self._lines: dict[Loc, int] = {}
        counters: dict[Loc, int] = {}
        table: Loc = ()
        for number, line in enumerate(text.splitlines(), start=1):
            if match := _ARRAY_HEADER.match(line):
                parent, name = self._resolve(_dotted(match[1])[:-1], counters), _dotted(match[1])[-1]
                array = (*parent, name)
                counters[array] = counters.get(array, -1) + 1
                table = (*array, counters[array])
                self._lines.setdefault(array, number)
                self._lines[table] = number
            elif match := _TABLE_HEADER.match(line):
                table = self._resolve(_dotted(match[1]), counters)
                self._lines.setdefault(table, number)
            elif match := _KEY.match(line):
                self._lines.setdefault((*table, *_dotted(match[1])), number)

    @staticmethod
    def _resolve(parts: Sequence[str], counters: dict[Loc, int]) -> Loc:
        """A dotted table name with each array of tables replaced by its latest element."""
        path: Loc = ()
        for part in parts:
            path = (*path, part)
            if path in counters:
                path = (*path, counters[path])
        return path

    def line(self, loc: Iterable[str | int]) -> int | None:
        """The line of `loc`, else of the nearest enclosing key or table that has one."""
        path = tuple(loc)
        while path:
            if path in self._lines:
                return self._lines[path]
            path = path[:-1]
        return None


def key_name(loc: Sequence[str | int]) -> str:
    """How a key is named in a message: the part after the last array-of-tables index, with a list index
    kept (`batch`, `colors.primary`, `container_columns[2]`)."""
    parts = list(loc)
    cut = max((i for i, p in enumerate(parts[:-1]) if isinstance(p, int)), default=-1)
    parts = parts[cut + 1 :]
    name = ".".join(str(p) for p in parts if isinstance(p, str))
    if parts and isinstance(parts[-1], int):
        name += f"[{parts[-1]}]"
    return name


_TYPE_WORDS = {
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "finite_number": "must be a finite number",
}


def _pydantic_message(error: Any) -> str:
    """pydantic's wording made ours: `must be a number, not 'fast'`."""
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "missing (required)"
    if kind in _TYPE_WORDS:
        return f"{_TYPE_WORDS[kind]}, not {error.get('input')!r}"
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    if kind == "literal_error":
        return f"{message[0].lower()}{message[1:]}, not {error.get('input')!r}".replace(
            "input should be", "must be"
        )
    return message


def problems_from(
    exc: ValidationError, file: str | Path | None, lines: KeyLines | None, prefix: Loc = ()
) -> list[SettingsError]:
    """One SettingsError per problem pydantic found; `prefix`: where the validated table sits in the file."""
    out: list[SettingsError] = []
    for error in exc.errors():
        loc: Loc = (*prefix, *(p for p in error["loc"] if isinstance(p, str | int)))
        line = lines.line(loc) if lines else None
        out.append(SettingsError(None if file is None else str(file), line, key_name(loc) or None,
                                 _pydantic_message(error)))  # fmt: skip
    return out


__all__ = [
    "KeyLines",
    "SettingsError",
    "config_dir",
    "decode",
    "default_config_path",
    "format_problem",
    "key_name",
    "parse_toml",
    "problems_from",
    "read_bytes",
    "read_text",
    "read_toml",
    "state_dir",
    "user_catalog_path",
    "user_theme_dir",
]
