"""A read-only `sparktop web` session (SparktopApp(files_allowed=False)) reads and writes no file on the
server (issue #27 item 1): the browser user is not this machine's user. A page driving the WebSocket saved
plan TOML over a root 0600 file through the What-if save dialog, and `B` wrote a history file. The same keys
in a terminal session (files_allowed, the default) still do their work: the test can tell the two apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktop.ui.app import NO_FILES
from sparktop.ui.screens.plan_file import PlanFileScreen
from tests.ui.demo_app import footer_keys, make_app, show_whatif


@pytest.mark.parametrize("files_allowed", [False, True], ids=["browser-read-only", "terminal"])
async def test_plan_dialogs_and_history_key_touch_no_file_in_a_read_only_browser_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files_allowed: bool
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = make_app(warmup=1, read_only=True, files_allowed=files_allowed)  # B writes what there is
    warnings: list[str] = []
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("B")
        await pilot.pause()
        history_files = list(tmp_path.rglob("history-*.jsonl"))
        pane = await show_whatif(app, pilot)
        pane.add("qwen3:8b")
        await pilot.pause()
        footer = footer_keys(app)  # what the footer offers on the What-if tab
        offered = []
        for key in ("s", "l"):
            await pilot.press(key)
            await pilot.pause()
            offered.append(isinstance(app.screen, PlanFileScreen))
            if offered[-1]:
                await pilot.press("escape")
                await pilot.pause()
        warnings = [text for _when, _title, text in app.messages]  # every warning shown
    if files_allowed:
        assert len(history_files) == 1 and offered == [True, True]
        assert NO_FILES not in warnings
        assert footer.get("s") == "Save" and footer.get("l") == "Load", footer
    else:
        assert history_files == [] and offered == [False, False]
        assert warnings.count(NO_FILES) == 3  # each key says why it did nothing
        # ... and the footer offers neither (issue 32, Rough: it showed `s Save  l Load`), nor `s` Stop.
        assert "Save" not in footer.values() and "Load" not in footer.values(), footer
        assert "s" not in footer and "l" not in footer, footer
