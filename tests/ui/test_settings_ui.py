"""The user's files in the dashboard: a bad theme is skipped with a message (at start and on `t`), a plan
file that used to crash Load shows its error, a bad discovery key does not leave the What-if tab loading
forever, and every warning stays reachable on the messages screen (M) after its toast fades."""

from __future__ import annotations

import pytest
from textual.widgets import Input, OptionList, Static

from sparktop.ui.screens.messages import MessagesScreen
from sparktop.ui.screens.plan_file import PlanFileScreen
from sparktop.ui.whatif import WhatIfPane
from tests.ui.demo_app import edit_selected, make_app, shared_whatif, show_whatif

SIZE = (120, 36)

BAD_VARIABLE = (
    'name = "a-broken"\n[colors]\nprimary = "#123456"\n[variables]\nblock-cursor-background = "nope"\n'
)


# A private home (tests/conftest.py) for the tests with an app of their own; the Load and editor checks share
# one What-if tab (`whatif`: reset for each test), in the module's event loop.
pytestmark = [pytest.mark.usefixtures("private_home"), pytest.mark.asyncio(loop_scope="module")]
whatif_app = shared_whatif()


async def test_a_theme_with_a_bad_variable_is_skipped_and_t_keeps_working(tmp_path):
    themes = tmp_path / "themes"
    themes.mkdir()
    (themes / "broken.toml").write_text(BAD_VARIABLE, encoding="utf-8")
    app = make_app(warmup=3, user_theme_dir=themes)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "a-broken" not in app.available_themes
        seen = set()
        # Round the whole cycle: the bad theme is never applied. Four presses visit every other theme of a
        # cycle of five (the four shipped ones and the bad one, were it let in), wherever it sorted.
        for _ in range(4):
            await pilot.press("t")
            seen.add(app.theme)
        assert app.is_running and "a-broken" not in seen and len(seen) >= 4
        expected = f"{themes / 'broken.toml'}:5: variables.block-cursor-background: 'nope' is not a colour"
        assert any(text == expected for _when, _title, text in app.messages), app.messages
        await pilot.press("M")
        assert isinstance(app.screen, MessagesScreen)
        shown = " ".join(str(s.render()) for s in app.screen.query(Static))
        assert "'nope' is not a colour" in shown
        await pilot.press("escape")
        assert not isinstance(app.screen, MessagesScreen)


async def test_startup_messages_outlive_their_toast():
    app = make_app(warmup=3, startup_messages=["config.toml:2: safe_gb: must be a finite number, not nan"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.clear_notifications()  # the toast is gone, as after its 12 s
        await pilot.press("M")
        assert isinstance(app.screen, MessagesScreen)
        shown = " ".join(str(s.render()) for s in app.screen.query(Static))
        assert "safe_gb: must be a finite number, not nan" in shown


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"workload = [1, 2]\n", ":1: workload[0]: must be a table, not 1"),
        (b'[[workload]]\nname = "ll\xffama"\n', ":2: not UTF-8"),
        (b'[[workload]]\nkind = "other"\nmemory_gb = inf\n', ":3: memory_gb: must be finite"),
    ],
)
async def test_whatif_load_shows_what_used_to_crash(tmp_path, content, words, whatif):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(content)
    app, pilot, _pane = whatif
    await pilot.press("l")
    screen = app.screen
    assert isinstance(screen, PlanFileScreen)
    screen.query_one("#path", Input).value = str(bad)
    await pilot.press("enter")
    await pilot.pause()
    assert app.is_running and app.screen is screen
    assert str(screen.query_one("#message", Static).render()).startswith(f"{bad}{words}")


async def test_a_bad_discovery_key_still_fills_the_whatif_catalog(private_home):
    catalog = private_home / ".config" / "sparktop" / "catalog.toml"
    catalog.parent.mkdir(parents=True)
    catalog.write_text("[discovery]\nollama_models = 5\n", encoding="utf-8")
    app = make_app(warmup=3)
    async with app.run_test(size=SIZE) as pilot:
        await show_whatif(app, pilot)
        pane = app.query_one(WhatIfPane)
        options = pane.query_one("#whatif-catalog", OptionList)
        assert pane.catalog is not None and options.option_count > 10
        assert any("discovery.ollama_models: must be a string" in text for _w, _t, text in app.messages)


REFUSED_NUMBERS = [
    ("#field-memory_gb", "inf", "must be finite"),  # int(inf) in the What-if bar ended the app
    ("#field-memory_gb", "1e400", "must be finite"),
    ("#field-context", "-4", "must be at least 1"),  # was "expected an integer"
    ("#field-parallel", "nan", "expected an integer"),
]


async def test_whatif_editor_refuses_non_finite_numbers(whatif):
    """Each bad number typed into one editor of one plan item, then the field put back (the reason goes, so
    the next one is not read from a stale line); escape closes it unsaved. (It opened a fresh editor for each,
    ~0.5 s of CPU an editor.)"""
    app, pilot, pane = whatif
    pane.add("llama3.1:8b")
    await pilot.pause()
    screen = await edit_selected(app, pilot, pane)
    error = screen.query_one("#error", Static)
    for field_id, typed, words in REFUSED_NUMBERS:
        field = screen.query_one(field_id, Input)
        field.focus()
        before = field.value
        field.value = ""
        await pilot.press(*typed, "enter")
        await pilot.pause()
        assert app.is_running and app.screen is screen, (field_id, typed)  # still open, with the reason
        assert words in str(error.render()), (field_id, typed, str(error.render()))
        field.value = before
        await pilot.pause()
        assert str(error.render()) == "", (field_id, str(error.render()))
    await pilot.press("escape")
    await pilot.pause()
    assert app.screen is not screen
    assert pane.plan is not None and pane.plan.items[0].overrides == {}  # nothing refused was kept
