"""What the dashboard draws before its first frame with data (issue 33: a btop-class start): the history
chart (the costliest view) is built once, at the size the layout gives it once the first data has
filled the panels above it, and the footer builds its keys once, however often the bindings signal fires
while the screen mounts.

Deterministic: it counts chart builds and footer rebuilds up to the app's first-frame hook, started as the
command line starts it (its own timer, the first tick on a worker thread), never how long they took."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktop.settings.config import Config
from sparktop.sources.demo import DemoSource
from sparktop.ui.app import SparktopApp
from sparktop.ui.widgets.footer import Footer
from sparktop.ui.widgets.history_chart import HistoryChart


async def test_chart_and_footer_are_built_once_before_the_first_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts = {"chart builds": 0, "footer rebuilds": 0}
    at_first_frame: dict[str, int] = {}
    build, recompose = HistoryChart._build, Footer.recompose

    def counting_build(chart: HistoryChart, args) -> object:
        counts["chart builds"] += 1
        return build(chart, args)

    async def counting_recompose(footer: Footer) -> None:
        counts["footer rebuilds"] += 1
        await recompose(footer)

    monkeypatch.setattr(HistoryChart, "_build", counting_build)
    monkeypatch.setattr(Footer, "recompose", counting_recompose)
    app = SparktopApp(
        DemoSource(seed=0),
        Config(interval=3600),  # the first tick only
        auto_refresh=True,
        user_theme_dir=Path("/nonexistent/sparktop-themes"),
        on_first_frame=lambda: at_first_frame.update(counts),
    )
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(1000):
            if at_first_frame:
                break
            await pilot.pause(0.01)
        assert app.session.latest is not None, "no first sample"
        assert at_first_frame == {"chart builds": 1, "footer rebuilds": 1}
        chart_lines = [
            strip.text
            for strip in app.query_one("HistoryChart").render_lines(
                app.query_one("HistoryChart").region.reset_offset
            )
        ]
        assert any("memory" in line for line in chart_lines)  # the one build is the figure on screen
