"""The help screen: reachable by keyboard alone, and lists every key the app answers to (issue 12 item 4)."""

from __future__ import annotations

import pytest
from textual.binding import Binding

from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.confirm import ConfirmScreen
from sparktop.ui.screens.dashboard import DashboardScreen
from sparktop.ui.screens.goto_time import GotoTimeScreen
from sparktop.ui.screens.help import HELP, HelpScreen
from sparktop.ui.screens.plan_edit import PlanEditScreen
from sparktop.ui.screens.plan_file import PlanFileScreen
from sparktop.ui.whatif import WhatIfPane
from sparktop.ui.widgets.plan_board import CatalogList, PlanList
from tests.ui.demo_app import make_app

# How the help writes a key Textual names otherwise.
SHOWN_AS = {
    "question_mark": "?",
    "slash": "/",
    "plus": "+",
    "equals_sign": "=",
    "minus": "-",
    "escape": "Esc",
    "delete": "Delete",
    "backspace": "Backspace",
    "space": "Space",
    "enter": "Enter",
    "left": "←",
    "right": "→",
    "home": "Home",
    "end": "End",
    "comma": ",",
    "full_stop": ".",
    "less_than_sign": "<",
    "greater_than_sign": ">",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "left_curly_bracket": "{",
    "right_curly_bracket": "}",
}

WIDGETS_WITH_KEYS = [SparktopApp, DashboardScreen, WhatIfPane, CatalogList, PlanList, ConfirmScreen,
                     PlanEditScreen, PlanFileScreen, HelpScreen, GotoTimeScreen]  # fmt: skip


def _own_keys(cls: type) -> list[str]:
    keys = []
    for binding in cls.__dict__.get("BINDINGS", []):
        assert isinstance(binding, Binding)
        keys.extend(k.strip() for k in binding.key.split(","))
    return keys


@pytest.mark.parametrize("cls", WIDGETS_WITH_KEYS, ids=lambda c: c.__name__)
def test_help_names_every_key(cls: type) -> None:
    missing = [key for key in _own_keys(cls) if f"`{SHOWN_AS.get(key, key)}`" not in HELP]
    assert not missing, f"{cls.__name__}: keys missing from the help: {missing}"


def test_help_has_the_whatif_keys() -> None:
    section = HELP[HELP.index("## What-if tab") :]
    for key, action in (("e", "edit"), ("b", "clean machine"), ("s", "save"), ("l", "load"),
                        ("Delete", "remove"), ("Space", "add")):  # fmt: skip
        line = next(line for line in section.splitlines() if f"`{key}`" in line)
        assert action in line


async def test_help_scrolls_by_keyboard_alone() -> None:
    app = make_app(warmup=0)  # the help is the same with or without data
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        scroll = app.screen.query_one("#help-scroll")
        assert scroll.max_scroll_y > 0  # at 80×24 the help is taller than its box
        await pilot.press("pagedown")
        await pilot.pause()
        assert scroll.scroll_y > 0
        first_page = scroll.scroll_y
        await pilot.press("down")
        await pilot.pause()
        assert scroll.scroll_y == first_page + 1
        await pilot.press("end")
        await pilot.pause()
        assert scroll.scroll_y == scroll.max_scroll_y
        await pilot.press("home")
        await pilot.pause()
        assert scroll.scroll_y == 0
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
