"""Theme files: the shipped ones load, and a bad file is skipped with a message naming the file and key."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.theme import Theme

from sparktop.ui.themes import ThemeError, derive_palette, load_themes, parse_theme

SHIPPED = {"sparktop-dark", "sparktop-light", "sparktop-high-contrast", "sparktop-nvidia"}

MINIMAL = """
name = "mine"
[colors]
primary = "#112233"
"""


def test_shipped_themes_load_without_errors(tmp_path):
    themes, errors = load_themes(tmp_path / "none")
    assert errors == []
    assert set(themes) >= SHIPPED
    for spark in themes.values():
        assert isinstance(spark.theme, Theme)
        assert len(spark.palette.segments) >= 6
        # Every colour sparktop draws with is a parsed hex colour.
        for value in (spark.palette.free, spark.palette.ok, spark.palette.warn, spark.palette.critical):
            assert value.startswith("#")
    assert themes["sparktop-light"].theme.dark is False
    assert themes["sparktop-dark"].theme.dark is True


def test_shipped_theme_files_are_all_valid():
    folder = Path(__file__).resolve().parents[2] / "themes"
    files = sorted(folder.glob("*.toml"))
    assert len(files) >= 4
    for path in files:
        parse_theme(path.read_text(encoding="utf-8"), str(path))


def test_user_theme_is_added_and_can_override(tmp_path):
    (tmp_path / "mine.toml").write_text(MINIMAL, encoding="utf-8")
    (tmp_path / "dark.toml").write_text(
        'name = "sparktop-dark"\n[colors]\nprimary = "red"\n[sparktop]\nfree = "#000000"\n', encoding="utf-8"
    )
    themes, errors = load_themes(tmp_path)
    assert errors == []
    assert themes["mine"].theme.primary == "#112233"
    # No [sparktop] table: the palette is derived from the theme.
    assert themes["mine"].palette == derive_palette(themes["mine"].theme)
    assert themes["sparktop-dark"].theme.primary == "#FF0000"
    assert themes["sparktop-dark"].palette.free == "#000000"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'name = "x"\n[colors]\nprimary = "not-a-colour"\n',
            "key colors.primary: 'not-a-colour' is not a colour",
        ),
        ('name = "x"\n[colors]\nsecondary = "#fff"\n', "key colors.primary: missing"),
        ('name = "x"\n[colors]\nprimary = "#fff"\nshiny = "#fff"\n', "key colors.shiny: unknown"),
        ('[colors]\nprimary = "#fff"\n', "key name: missing"),
        ('name = "x"\n', "key colors: missing table [colors]"),
        ('name = "x"\ndark = "yes"\n[colors]\nprimary = "#fff"\n', "key dark: expected true or false"),
        ('name = "x"\nfoo = 1\n[colors]\nprimary = "#fff"\n', "unknown key 'foo'"),
        ('name = "x"\n[colors]\nprimary = "#fff"\n[sparktop]\nsegments = []\n', "key sparktop.segments"),
        (
            'name = "x"\n[colors]\nprimary = "#fff"\n[sparktop]\nsegments = ["#fff", "nope"]\n',
            "key sparktop.segments[1]: 'nope' is not a colour",
        ),
        ('name = "x"\n[colors]\nprimary = "#fff"\n[sparktop]\nglow = "#fff"\n', "key sparktop.glow: unknown"),
        (
            'name = "x"\n[colors]\nprimary = "#fff"\n[sparktop]\nwarn = 3\n',
            "key sparktop.warn: expected a colour",
        ),
        ('name = "x"\n[colors\n', "line 2"),
    ],
)
def test_bad_theme_names_file_and_key(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ThemeError) as info:
        parse_theme(text, str(path))
    assert str(info.value).startswith(str(path))
    assert message in str(info.value)
    # Loading skips it with the same message and keeps the shipped themes.
    themes, errors = load_themes(tmp_path)
    assert errors == [str(info.value)]
    assert set(themes) >= SHIPPED
