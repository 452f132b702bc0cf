"""The header says when the data is not the live machine (demo, replay) or actions are off (read-only), and
the footer offers no stop key where nothing can be stopped."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from textual.widgets import Footer

from sparktop.settings.config import Config, load_config
from sparktop.sources.demo import DemoSource
from sparktop.sources.replay import ReplaySource
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.confirm import ConfirmScreen
from sparktop.ui.stop_keys import READ_ONLY
from tests.fixtures.demo_session import demo_session
from tests.fixtures.recordings import demo_snapshots, write_recording
from tests.ui.demo_app import footer_keys, make_app, status_text
from tests.ui.frame import creep_block, pressure_panel


def recording(tmp_path: Path) -> Path:
    path = tmp_path / "rec.jsonl"
    write_recording(path, demo_snapshots(5, every=1.0))
    return path


async def test_read_only_says_so_hides_stop_and_explains_the_key() -> None:
    app = make_app(warmup=5, read_only=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert " READ-ONLY " in status_text(app)
        assert "Stop" not in footer_keys(app).values()
        await pilot.press("2")
        for key in "sSkK":
            await pilot.press(key)  # waits until the app has handled it
            assert not isinstance(app.screen, ConfirmScreen)
        assert app.stops.reports == [READ_ONLY] * 4
        footer_text = " ".join(str(w.render()) for w in app.query_one(Footer).query("*"))
        assert "Stop" not in footer_text


async def test_replay_says_replay_and_hides_stop_and_ctrl_c_quits_as_in_top(tmp_path: Path) -> None:
    """ctrl+c quits from the dashboard in any mode (it had an app of its own, on the demo)."""
    app = SparktopApp(ReplaySource(recording(tmp_path)), Config(), auto_refresh=False, warmup=3)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert " REPLAY " in status_text(app)
        assert "Stop" not in footer_keys(app).values()
        await pilot.press("2", "s")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert app.stops.reports == ["replay: nothing to stop"]
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running, "ctrl+c did not quit"


@pytest.mark.parametrize("scenario", ["default"])
async def test_demo_says_demo_offers_stop_and_marks_its_stops_demo_in_the_action_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str
) -> None:
    """One demo dashboard for what it says and what its stop does (they were two tests, an app each)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = make_app(scenario, warmup=5)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        status = status_text(app)
        assert " DEMO " in status and "READ-ONLY" not in status, f"the header does not say DEMO: {status}"
        assert footer_keys(app).get("s") == "Stop", f"the footer offers no s Stop: {footer_keys(app)}"
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("s", "y")
        await app.workers.wait_for_complete()
        await pilot.pause()
    lines = (tmp_path / "sparktop" / "actions.log").read_text().splitlines()
    assert len(lines) == 1
    _stamp, action, target, _result = lines[0].split("\t")
    assert action == "stop" and target.startswith("[demo] container ")


def test_creep_watch_says_it_is_collecting_data_until_it_can_judge() -> None:
    from sparktop.analysis.trend import MIN_COVERAGE
    from sparktop.session.session import CREEP_WINDOW_S

    # The demo samples once a second: the creep rule judges once the history spans MIN_COVERAGE of its
    # window. Warmed up to three samples short of that, the creep block under the bar (its text as the
    # dashboard draws it, over the session: no app) still says it is collecting; three ticks later it judges.
    judged_at = math.ceil(MIN_COVERAGE * CREEP_WINDOW_S) + 1
    run = demo_session("audio", warmup=judged_at - 3)
    for ticks in (0, 2):
        for _ in range(ticks):
            run.sample()
        text = creep_block(run.session)
        assert text is not None and "collecting data (~10 s to go" in text.plain, (ticks, text)
    run.sample()
    assert creep_block(run.session) is None  # enough data, and the calm audio scenario does not creep


def test_psi_numbers_are_labelled_with_their_averaging_windows() -> None:
    session = demo_session(warmup=5).session
    # The pressure panel as the dashboard draws it at 120x36 (35 cells) and, compact, at 80x24 (38 cells).
    for compact, width in ((False, 35), (True, 38)):
        lines = str(pressure_panel(session, compact=compact).text_at(width)).splitlines()
        header = next(i for i, line in enumerate(lines) if line.startswith("PSI avg"))
        assert lines[header].split()[2:] == ["10", "s", "60", "s", "300", "s"], lines
        assert lines[header + 1].startswith("PSI some") and lines[header + 2].startswith("PSI full")
        # the header's columns end where the numbers end
        end = len(lines[header].rstrip())
        assert lines[header + 2][:end].split()[-1].replace(".", "").isdigit()
        assert lines[header + 2][end : end + 1] in ("", " ")


def test_an_unreadable_read_only_setting_turns_stopping_off(tmp_path: Path) -> None:
    # `read_only = "yes"` was a toast with `s Stop` still offered (issue 23 item 10): it fails closed. The app
    # made from that config is read-only with its stop keys off; what a read-only app shows and does on `s`
    # is test_read_only_says_so_hides_stop_and_explains_the_key's.
    path = tmp_path / "config.toml"
    path.write_text('read_only = "yes"\n', encoding="utf-8")
    config, problems = load_config(path)
    assert config.read_only and any("read_only" in problem for problem in problems), problems
    app = SparktopApp(DemoSource(), config, auto_refresh=False, warmup=3, startup_messages=problems)
    assert app.read_only and not app.stops.available
