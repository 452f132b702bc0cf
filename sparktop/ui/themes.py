"""Theme files: themes/*.toml shipped with sparktop plus the user's $XDG_CONFIG_HOME/sparktop/themes/*.toml.

A theme file is a Textual theme (`[colors]`, the fields of `textual.theme.Theme`) plus sparktop's own colours
(`[sparktop]`: the budget bar's segment palette and the ok/warn/critical colours). Every file is validated;
a bad one is skipped with a message naming the file and the key, never a traceback.

    name = "sparktop-dark"
    dark = true
    [colors]
    primary = "#76b900"
    background = "#101418"
    [sparktop]
    segments = ["#4e9ae6", "#e8a33d"]
    critical = "#ff4d5e"
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path

from textual.color import Color, ColorParseError
from textual.theme import Theme

from sparktop.config import config_dir

DEFAULT_THEME = "sparktop-dark"

_THEME_COLORS = ("primary", "secondary", "accent", "warning", "error", "success",
                 "foreground", "background", "surface", "panel", "boost")  # fmt: skip
_TOP_KEYS = {"name", "dark", "description", "colors", "sparktop", "variables"}


class ThemeError(ValueError):
    """One readable line: which file, which key, what is wrong."""


@dataclass(frozen=True)
class Palette:
    """Colours sparktop draws with itself (the budget bar, the pressure levels), per theme."""

    segments: tuple[str, ...]  # containers and named processes take these in turn
    host_other: str
    gpu_unexplained: str
    unattributed: str
    free: str
    ok: str
    warn: str
    critical: str
    line: str  # the safe / aggressive / pool marks on the bar
    spark: str  # sparklines

    def level(self, level: str) -> str:
        return {"ok": self.ok, "warn": self.warn, "critical": self.critical}.get(str(level), self.ok)


_PALETTE_KEYS = {f.name for f in fields(Palette)}

_DEFAULT_SEGMENTS = ("#4e9ae6", "#e8a33d", "#59c08a", "#c46fd8", "#e0635c", "#4fc4c9", "#d8c550", "#8d8de0")


@dataclass(frozen=True)
class SparkTheme:
    theme: Theme
    palette: Palette
    source: str  # the file it came from, for messages


def _hex(value: str) -> str:
    return Color.parse(value).hex


def derive_palette(theme: Theme) -> Palette:
    """A palette for a theme that has no [sparktop] table (Textual's own themes, a minimal user theme)."""
    dark = theme.dark
    return Palette(
        segments=_DEFAULT_SEGMENTS,
        host_other="#7a8591" if dark else "#8a949e",
        gpu_unexplained="#a05cc0",
        unattributed="#8c7a5a" if dark else "#b09a70",
        free="#2b3036" if dark else "#e3e6ea",
        ok=_hex(theme.success or "#4EBF71"),
        warn=_hex(theme.warning or "#ffa62b"),
        critical=_hex(theme.error or "#ba3c5b"),
        line="#ffffff" if dark else "#000000",
        spark=_hex(theme.primary),
    )


def _color(source: str, key: str, value: object) -> str:
    if not isinstance(value, str):
        raise ThemeError(f"{source}: key {key}: expected a colour string, not {value!r}")
    try:
        return _hex(value)
    except ColorParseError:
        raise ThemeError(f"{source}: key {key}: {value!r} is not a colour") from None


_TOML_LINE = re.compile(r"^(?P<msg>.*?)\s*\(at line (?P<line>\d+), column \d+\)$")


def parse_theme(text: str, source: str) -> SparkTheme:
    """Validate one theme file's text; raise ThemeError naming `source` and the offending key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_LINE.match(str(exc))
        raise ThemeError(
            f"{source} line {match['line']}: {match['msg']}" if match else f"{source}: {exc}"
        ) from None
    for key in data:
        if key not in _TOP_KEYS:
            raise ThemeError(f"{source}: unknown key {key!r} (expected {', '.join(sorted(_TOP_KEYS))})")
    name = data.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise ThemeError(f"{source}: key name: missing or not a plain name (letters, digits, - _ .)")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(f"{source}: key dark: expected true or false, not {dark!r}")
    colors = data.get("colors")
    if not isinstance(colors, dict):
        raise ThemeError(f"{source}: key colors: missing table [colors]")
    for key in colors:
        if key not in _THEME_COLORS:
            raise ThemeError(f"{source}: key colors.{key}: unknown (expected {', '.join(_THEME_COLORS)})")
    if "primary" not in colors:
        raise ThemeError(f"{source}: key colors.primary: missing")
    theme_colors = {key: _color(source, f"colors.{key}", value) for key, value in colors.items()}
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(isinstance(v, str) for v in variables.values()):
        raise ThemeError(f"{source}: key variables: expected a table of strings")
    theme = Theme(name=name, dark=dark, variables=dict(variables), **theme_colors)

    palette = derive_palette(theme)
    extra = data.get("sparktop", {})
    if not isinstance(extra, dict):
        raise ThemeError(f"{source}: key sparktop: expected a table [sparktop]")
    overrides: dict[str, object] = {}
    for key, value in extra.items():
        if key not in _PALETTE_KEYS:
            raise ThemeError(
                f"{source}: key sparktop.{key}: unknown (expected {', '.join(sorted(_PALETTE_KEYS))})"
            )
        if key == "segments":
            if not isinstance(value, list) or not value:
                raise ThemeError(f"{source}: key sparktop.segments: expected a non-empty list of colours")
            overrides[key] = tuple(_color(source, f"sparktop.segments[{i}]", v) for i, v in enumerate(value))
        else:
            overrides[key] = _color(source, f"sparktop.{key}", value)
    palette = Palette(**{**palette.__dict__, **overrides})
    return SparkTheme(theme=theme, palette=palette, source=source)


def _builtin_files() -> list[tuple[str, str]]:
    """(display path, text) of the shipped themes: the installed package data, else the repo's themes/."""
    out: list[tuple[str, str]] = []
    try:
        folder = resources.files("sparktop.themes")
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".toml"):
                out.append((f"themes/{entry.name}", entry.read_text(encoding="utf-8")))
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError, TypeError):
        pass
    if out:
        return out
    repo = Path(__file__).resolve().parents[2] / "themes"
    return [(f"themes/{p.name}", p.read_text(encoding="utf-8")) for p in sorted(repo.glob("*.toml"))]


def user_theme_dir() -> Path:
    return config_dir() / "themes"


def load_themes(user_dir: Path | None = None) -> tuple[dict[str, SparkTheme], list[str]]:
    """All valid themes by name (user files override shipped ones of the same name) and one message per
    file that was skipped."""
    themes: dict[str, SparkTheme] = {}
    errors: list[str] = []
    sources = _builtin_files()
    folder = user_dir if user_dir is not None else user_theme_dir()
    if folder.is_dir():
        for path in sorted(folder.glob("*.toml")):
            try:
                sources.append((str(path), path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                errors.append(f"{path}: cannot read ({exc})")
    for source, text in sources:
        try:
            spark = parse_theme(text, source)
        except ThemeError as exc:
            errors.append(str(exc))
            continue
        themes[spark.theme.name] = spark
    return themes, errors
