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
            ":3: colors.primary: 'not-a-colour' is not a colour",
        ),
        ('name = "x"\n[colors]\nsecondary = "#fff"\n', ":2: colors.primary: missing"),
        ('name = "x"\n[colors]\nprimary = "#fff"\nshiny = "#fff"\n', ":4: colors.shiny: unknown key"),
        ('[colors]\nprimary = "#fff"\n', ": name: missing"),
        ('name = "x y"\n[colors]\nprimary = "#fff"\n', ":1: name: must be a plain name"),
        ('name = "x"\n', ": colors: missing"),
        ('name = "x"\ndark = "yes"\n[colors]\nprimary = "#fff"\n', ":2: dark: must be true or false"),
        ('name = "x"\nfoo = 1\n[colors]\nprimary = "#fff"\n', ":2: foo: unknown key"),
        (
            'name = "x"\n[colors]\nprimary = "#fff"\n[sparktop]\nsegments = []\n',
            ":5: sparktop.segments: must not",
        ),
        (
            'name = "x"\n[colors]\nprimary = "#fff"\n[sparktop]\nsegments = ["#fff", "nope"]\n',
            ":5: sparktop.segments[1]: 'nope' is not a colour",
        ),
        ('name = "x"\n[colors]\nprimary = "#fff"\n[sparktop]\nglow = "#fff"\n', ":5: sparktop.glow: unknown"),
        (
            'name = "x"\n[colors]\nprimary = "#fff"\n[sparktop]\nwarn = 3\n',
            ":5: sparktop.warn: must be a string, not 3",
        ),
        ('name = "x"\n[colors\n', ":2: invalid TOML"),
        # A bad CSS variable used to pass here, then end the app when the stylesheet was built.
        (
            'name = "x"\n[colors]\nprimary = "#fff"\n[variables]\nblock-cursor-background = "notacolour"\n',
            ":5: variables.block-cursor-background: 'notacolour' is not a colour",
        ),
        (
            'name = "x"\n[colors]\nprimary = "#fff"\n[variables]\nfooter-key-foreground = "red; } X {"\n',
            ":5: variables.footer-key-foreground: 'red; } X {' is not a single value",
        ),
        (
            'name = "x"\n[colors]\nprimary = "#fff"\n[variables]\nblock-cursor-text-style = "fancy"\n',
            ":5: variables.block-cursor-text-style: 'fancy' is not a text style",
        ),
        ('name = "x"\n[colors]\nprimary = "#fff"\n[variables]\nx = 1\n', ":5: variables.x: must be a string"),
        (
            'name = "x"\n[colors]\nprimary = "#fff"\n[variables]\nblock-cursor-background = "[/b]nope"\n',
            ":5: variables.block-cursor-background: '[/b]nope' is not a colour",
        ),
    ],
)
def test_bad_theme_names_file_and_key(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ThemeError) as info:
        parse_theme(text, str(path))
    assert str(info.value).startswith(f"{path}{message}")
    # Loading skips it with the same message and keeps the shipped themes.
    themes, errors = load_themes(tmp_path)
    assert errors == [str(info.value)]
    assert set(themes) >= SHIPPED


def test_good_variables_pass(tmp_path):
    text = (
        'name = "x"\n[colors]\nprimary = "#fff"\n[variables]\nblock-cursor-background = "$primary 50%"\n'
        'block-cursor-foreground = "auto 87%"\nlink-background = "initial"\n'
        'link-style-hover = "bold not underline"\n'
    )
    assert parse_theme(text, "x.toml").theme.variables["link-background"] == "initial"


def test_themes_come_in_name_order(tmp_path):
    # `t` cycles them in this order and the command palette lists them in it (Textual sorts by name).
    (tmp_path / "aaa.toml").write_text('name = "zz-mine"\n[colors]\nprimary = "#123456"\n', encoding="utf-8")
    (tmp_path / "zzz.toml").write_text('name = "aa-mine"\n[colors]\nprimary = "#123456"\n', encoding="utf-8")
    themes, _errors = load_themes(tmp_path)
    assert list(themes) == sorted(themes)
