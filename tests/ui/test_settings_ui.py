"""The user's files in the dashboard: a bad theme is skipped with a message (at start and on `t`), every
warning stays reachable on the messages screen (M) after its toast fades, and a plan file that used to crash
Load shows its error. (A bad discovery key in the user's catalog, which left the What-if tab loading
forever, is test_whatif_screen's test_the_whatif_pane_is_built_the_first_time_its_tab_opens: that test opens
the tab for the first time anyway.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input, Static

from sparktop.plan import Plan
from sparktop.plan.catalog import Catalog
from sparktop.ui.screens.messages import MessagesScreen
from sparktop.ui.screens.plan_file import PlanFileScreen
from tests.ui.demo_app import make_app

SIZE = (120, 36)

BAD_VARIABLE = (
    'name = "a-broken"\n[colors]\nprimary = "#123456"\n[variables]\nblock-cursor-background = "nope"\n'
)
STARTUP_MESSAGE = "config.toml:2: safe_gb: must be a finite number, not nan"

# A private home (tests/conftest.py) for each test, in the module's event loop.
pytestmark = [pytest.mark.usefixtures("private_home"), pytest.mark.asyncio(loop_scope="module")]


async def test_bad_user_files_are_said_kept_on_the_messages_screen_and_the_app_keeps_working(tmp_path):
    """One dashboard for both (each was an app of its own): a theme with a bad variable and a message from
    the config read at start."""
    themes = tmp_path / "themes"
    themes.mkdir()
    (themes / "broken.toml").write_text(BAD_VARIABLE, encoding="utf-8")
    app = make_app(warmup=3, user_theme_dir=themes, startup_messages=[STARTUP_MESSAGE])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "a-broken" not in app.available_themes, "a bad theme is skipped"
        seen = set()
        # Round the whole cycle: the bad theme is never applied. Four presses visit every other theme of a
        # cycle of five (the four shipped ones and the bad one, were it let in), wherever it sorted.
        for _ in range(4):
            await pilot.press("t")
            seen.add(app.theme)
        assert app.is_running and "a-broken" not in seen and len(seen) >= 4, ("t keeps working", seen)
        expected = f"{themes / 'broken.toml'}:5: variables.block-cursor-background: 'nope' is not a colour"
        assert any(text == expected for _when, _title, text in app.messages), app.messages

        app.clear_notifications()  # the toasts are gone, as after their 8-12 s
        await pilot.press("M")
        assert isinstance(app.screen, MessagesScreen)
        shown = " ".join(str(s.render()) for s in app.screen.query(Static))
        assert "'nope' is not a colour" in shown, ("the theme's problem on M", shown)
        assert "safe_gb: must be a finite number, not nan" in shown, ("the startup message on M", shown)
        await pilot.press("escape")
        assert not isinstance(app.screen, MessagesScreen)


class DialogHost(App[None]):
    """Nothing but the screen the load dialog opens over (`l` opening it on the What-if tab is
    test_whatif's test_save_confirms_overwrite_and_load_reports_line)."""

    def compose(self) -> ComposeResult:
        yield Static("host")


# Plan files that used to crash Load, and the start of the line the dialog shows for each.
CRASHED_LOAD = [
    (b"workload = [1, 2]\n", ":1: workload[0]: must be a table, not 1"),
    (b'[[workload]]\nname = "ll\xffama"\n', ":2: not UTF-8"),
    (b'[[workload]]\nkind = "other"\nmemory_gb = inf\n', ":3: memory_gb: must be finite"),
]


async def test_whatif_load_shows_what_used_to_crash(tmp_path: Path) -> None:
    """Each file in turn in one load dialog (a file the loader refuses keeps it open, as Enter on a path
    does): the dialog says FILE:LINE and what is wrong, and the app keeps running."""
    app = DialogHost()
    async with app.run_test(size=SIZE) as pilot:
        screen = PlanFileScreen("load", Plan(Catalog()), tmp_path / "plan.toml")
        await app.push_screen(screen)
        for number, (content, words) in enumerate(CRASHED_LOAD):
            bad = tmp_path / f"bad-{number}.toml"
            bad.write_bytes(content)
            screen.query_one("#path", Input).value = str(bad)
            await pilot.press("enter")
            assert app.is_running and app.screen is screen, (content, "the dialog stays open")
            message = str(screen.query_one("#message", Static).render())
            assert message.startswith(f"{bad}{words}"), (content, message)
