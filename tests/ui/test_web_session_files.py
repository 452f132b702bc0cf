"""A read-only `sparktop web` session (SparktopApp(files_allowed=False)) reads and writes no file on the
server (issue #27 item 1): the browser user is not this machine's user. A page driving the WebSocket saved
plan TOML over a root 0600 file through the What-if save dialog, and `B` wrote a history file.

The same keys in a terminal session (files_allowed, the default) do their work, so this test can tell the
two apart: `B` writes the recording (test_history_key.test_b_writes_a_recording_that_replays), the
footer offers `s Save`/`l Load` and both open their dialog
(test_whatif.test_save_confirms_overwrite_and_load_reports_line).
Here each key is also seen arriving: it says why it did nothing (NO_FILES, once per key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktop.ui.app import NO_FILES
from sparktop.ui.screens.plan_file import PlanFileScreen
from tests.ui.demo_app import footer_keys, make_app, show_whatif


async def test_plan_dialogs_and_history_key_touch_no_file_in_a_read_only_browser_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = make_app(warmup=1, read_only=True, files_allowed=False)  # B would write what there is
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("B")
        await pilot.pause()
        assert list(tmp_path.rglob("history-*.jsonl")) == [], "B writes no history file"
        pane = await show_whatif(app, pilot)
        pane.add("qwen3:8b")  # a plan there is to save
        await pilot.pause()
        footer = footer_keys(app)  # what the footer offers on the What-if tab
        for key in ("s", "l"):
            await pilot.press(key)
            await pilot.pause()
            assert not isinstance(app.screen, PlanFileScreen), f"{key} opens no file dialog"
        warnings = [text for _when, _title, text in app.messages]  # every warning shown
    assert list(tmp_path.rglob("*")) == [], "no file at all under the session's state home"
    assert warnings.count(NO_FILES) == 3, ("each key says why it did nothing", warnings)
    # ... and the footer offers neither (issue 32, Rough: it showed `s Save  l Load`), nor `s` Stop.
    assert "Save" not in footer.values() and "Load" not in footer.values(), footer
    assert "s" not in footer and "l" not in footer, footer
