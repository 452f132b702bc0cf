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
from dataclasses import dataclass, fields
from pathlib import Path

from textual.color import Color, ColorParseError
from textual.css.styles import Styles
from textual.theme import Theme

from sparktop.settings.files import SettingsError
from sparktop.settings.theme import PALETTE_KEYS, ThemeChecks, read_theme, theme_sources

DEFAULT_THEME = "sparktop-dark"


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


assert {f.name for f in fields(Palette)} == set(PALETTE_KEYS)

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


def _colour(value: str) -> str:
    try:
        return _hex(value)
    except ColorParseError:
        raise ValueError(f"{value!r} is not a colour") from None


_VARIABLE_REF = re.compile(r"\$[A-Za-z0-9_-]+")


def _variable(name: str, value: str) -> None:
    """A CSS variable's value must parse where Textual will put it: a text style for `*-style*`, else a colour
    (`auto 87%`, `initial` and `$other` references included). Checked here, so a bad one never reaches the
    stylesheet, where it would end the app."""
    if any(ch in value for ch in ";{}\n"):
        raise ValueError(f"{value!r} is not a single value")
    prop = "text-style" if "style" in name.split("-") else "color"
    try:
        Styles.parse(f"{prop}: {_VARIABLE_REF.sub('red', value)};", ("theme", name))
    except Exception:  # the tokenizer, the parser or the property refusing it: not a value here
        what = "text style" if prop == "text-style" else "colour"
        raise ValueError(f"{value!r} is not a {what}") from None


_CHECKS = ThemeChecks(colour=_colour, variable=_variable)


def parse_theme(text: str, source: str) -> SparkTheme:
    """Validate one theme file's text (every colour and variable); raise ThemeError naming `source`, the line
    and the offending key."""
    try:
        spec = read_theme(text, source, _CHECKS)
    except SettingsError as exc:
        raise ThemeError(str(exc)) from None
    c = spec.colors  # an absent colour is None, as Theme's default is
    theme = Theme(
        name=spec.name,
        dark=spec.dark,
        variables=dict(spec.variables),
        primary=c.primary,
        secondary=c.secondary,
        accent=c.accent,
        warning=c.warning,
        error=c.error,
        success=c.success,
        foreground=c.foreground,
        background=c.background,
        surface=c.surface,
        panel=c.panel,
        boost=c.boost,
    )
    palette = Palette(**{**derive_palette(theme).__dict__, **spec.palette_overrides()})
    return SparkTheme(theme=theme, palette=palette, source=source)


def load_themes(user_dir: Path | None = None) -> tuple[dict[str, SparkTheme], list[str]]:
    """All valid themes by name, in name order (the order `t` cycles them and the command palette lists
    them; user files override shipped ones of the same name), and one message per file that was skipped."""
    themes: dict[str, SparkTheme] = {}
    sources, errors = theme_sources(user_dir)
    for source, text in sources:
        try:
            spark = parse_theme(text, source)
        except ThemeError as exc:
            errors.append(str(exc))
            continue
        themes[spark.theme.name] = spark
    return dict(sorted(themes.items())), errors
