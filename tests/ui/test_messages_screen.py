"""The messages screen (M) holds every alert raised and cleared with its time, beside the toasts' warnings
(issue 32 item 3: after creep alerts, exhaustion banners and a SIGTERM it read "Messages (0)")."""

from __future__ import annotations

import time
from pathlib import Path

from textual.widgets import Static

from sparktop.settings.config import Config
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.messages import MessagesScreen
from tests.fixtures.hogs import LEAK_STOPS_S, START, leaking_machine


def clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


async def test_m_lists_the_alerts_raised_and_cleared_with_their_times() -> None:
    source = leaking_machine()
    app = SparktopApp(
        source,
        Config(),
        clock=lambda: source.t,
        auto_refresh=False,
        user_theme_dir=Path("/nonexistent/sparktop-themes"),
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        while source.elapsed < LEAK_STOPS_S + 15:
            await app.refresh_once()
        app.remember("sent SIGTERM to leak (5000)", "stop")  # what the stop flow says of an action it took
        await pilot.press("M")
        assert isinstance(app.screen, MessagesScreen)
        assert app.screen.query_one("VerticalScroll").border_title.startswith("Messages (6)")
        shown = str(app.screen.query_one(".messages", Static).render()).split("\n\n")
        titles = [line.split(" ", 1)[1].split(":", 1)[0] for line in shown]
        assert titles == ["creep", "exhaustion", "problem", "creep over", "exhaustion over", "stop"], shown
        raised = next(iter(app.session.messages)).at  # the time of the sample that raised it, as shown
        assert shown[0].startswith(f"{clock(raised)} creep: leak (5000) +3.0 GiB/min")
        assert shown[2] == f"{clock(START + 50)} problem: docker: permission denied"
        await pilot.press("escape")
        assert not isinstance(app.screen, MessagesScreen)
