"""A theme file's model (themes/*.toml and $XDG_CONFIG_HOME/sparktop/themes/*.toml), without Textual:

    name = "sparktop-dark"
    dark = true
    [colors]          # the fields of textual.theme.Theme; primary is required
    primary = "#76b900"
    [variables]       # Textual CSS variables, e.g. block-cursor-background = "#333"
    [sparktop]        # sparktop's own colours: the budget bar's segments, the ok/warn/critical levels
    segments = ["#4e9ae6", "#e8a33d"]

Whether a string is a colour (or a valid value for a CSS variable) is Textual's to say: the caller passes
those checks in (`ThemeChecks`), so the whole file is validated — and a bad one skipped with
`FILE:LINE: key: what is wrong` — before anything is applied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from sparktop.settings.files import (
    KeyLines,
    SettingsError,
    parse_toml,
    problems_from,
    read_text,
    user_theme_dir,
)

THEME_COLORS = ("primary", "secondary", "accent", "warning", "error", "success",
                "foreground", "background", "surface", "panel", "boost")  # fmt: skip
PALETTE_KEYS = ("segments", "host_other", "gpu_unexplained", "unattributed", "free", "ok", "warn", "critical",
                "line", "spark")  # fmt: skip


@dataclass(frozen=True)
class ThemeChecks:
    """colour(value) -> normalised colour; variable(name, value) -> None. Both raise ValueError."""

    colour: Callable[[str], str]
    variable: Callable[[str, str], None]


def _check_colour(value: str, info: ValidationInfo) -> str:
    return value if info.context is None else info.context.colour(value)


Colour = Annotated[str, AfterValidator(_check_colour)]


class ColorsTable(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    primary: Colour
    secondary: Colour | None = None
    accent: Colour | None = None
    warning: Colour | None = None
    error: Colour | None = None
    success: Colour | None = None
    foreground: Colour | None = None
    background: Colour | None = None
    surface: Colour | None = None
    panel: Colour | None = None
    boost: Colour | None = None


class PaletteTable(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    segments: Annotated[list[Colour], Field(min_length=1)] | None = None
    host_other: Colour | None = None
    gpu_unexplained: Colour | None = None
    unattributed: Colour | None = None
    free: Colour | None = None
    ok: Colour | None = None
    warn: Colour | None = None
    critical: Colour | None = None
    line: Colour | None = None
    spark: Colour | None = None


class ThemeFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
    dark: bool = True
    description: str = ""
    colors: ColorsTable
    variables: dict[str, str] = {}
    sparktop: PaletteTable = PaletteTable()

    @field_validator("variables")
    @classmethod
    def _variables(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        if info.context is not None:
            for name, text in value.items():
                try:
                    info.context.variable(name, text)
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from None
        return value

    def palette_overrides(self) -> dict[str, Any]:
        return {k: (tuple(v) if isinstance(v, list) else v) for k, v in self.sparktop if v is not None}


_WORDS = {
    "string_pattern_mismatch": "must be a plain name (letters, digits, - _ .)",
    "too_short": "must not be empty",
}


def read_theme(text: str, source: str, checks: ThemeChecks) -> ThemeFile:
    """The theme in `text`, all values checked; SettingsError (`FILE:LINE: key: ...`) at the first problem."""
    data = parse_toml(text, source)
    try:
        return ThemeFile.model_validate(data, context=checks)
    except ValidationError as exc:
        error, lines = exc.errors()[0], KeyLines(text)
        problem = problems_from(exc, source, lines)[0]
        problem.message = _WORDS.get(error["type"], problem.message)
        if error["loc"] == ("variables",) and ": " in problem.message:  # name the variable, on its line
            name, problem.message = problem.message.split(": ", 1)
            problem.key, problem.line = f"variables.{name}", lines.line(("variables", name))
        raise problem from None


def builtin_theme_files() -> list[tuple[str, str]]:
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


def theme_sources(user_dir: Path | None = None) -> tuple[list[tuple[str, str]], list[str]]:
    """(source, text) of the shipped theme files, then the user's (which override them by name), and one
    message per user file that could not be read."""
    sources = builtin_theme_files()
    errors: list[str] = []
    folder = user_dir if user_dir is not None else user_theme_dir()
    if folder.is_dir():
        for path in sorted(folder.glob("*.toml")):
            try:
                sources.append((str(path), read_text(path)))
            except SettingsError as exc:
                errors.append(str(exc))
    return sources, errors


def theme_names(user_dir: Path | None = None) -> list[str]:
    """The names the shipped and the user's theme files give themselves, sorted, without Textual (shell
    completion offers them; the dashboard still checks each file whole when it loads it)."""
    sources, _unreadable = theme_sources(user_dir)
    names: set[str] = set()
    for source, text in sources:
        try:
            name = parse_toml(text, source).get("name")
        except SettingsError:
            continue
        if isinstance(name, str) and name.strip():
            names.add(name)
    return sorted(names)


__all__ = [
    "PALETTE_KEYS", "THEME_COLORS", "SettingsError", "ThemeChecks", "ThemeFile", "builtin_theme_files",
    "read_theme", "theme_names",
]  # fmt: skip
