"""A steady tick repaints what changed and lays nothing out: a layout pass is the whole screen's, and one on
every tick (a hidden GPU memory bar, a panel in a hidden tab) doubled the dashboard's idle CPU."""

from __future__ import annotations

import pytest
from textual.widget import Widget

from tests.ui.demo_app import SEVEN_MINUTES, WARMUP, warm_app

# Steady ticks watched on each tab, after two that settle the switch (it was 3 + 12 on every tab): a layout on
# every tick shows in the first; the Dashboard tab's nine hold one redraw of the history chart wherever it
# falls (a column is 8.45 s on the seven-minute axis at 120x36, and the chart is drawn only while shown).
SETTLE = 2
STEADY = {"1": 9}
OTHER_TABS = 3


@pytest.mark.parametrize(
    ("scenario", "warmup", "tabs"), [("default", SEVEN_MINUTES, "215"), ("discrete", WARMUP, "21")]
)
async def test_steady_ticks_lay_nothing_out(scenario: str, warmup: int, tabs: str, monkeypatch) -> None:
    """On each of these tabs in turn, past the creep window (creep alerts, their ETAs moving); also on a
    discrete GPU, where the GPU memory bar is shown (and measures its lines once a tick), half a minute in as
    the other discrete-GPU tests have it (the creep watch collecting, its countdown moving)."""
    app = warm_app(scenario, warmup=warmup)
    async with app.run_test(size=(120, 36)) as pilot:
        laid_out: list[str] = []
        refresh = Widget.refresh

        def counting(self, *regions, layout: bool = False, **kwargs):
            if layout:
                laid_out.append(type(self).__name__)
            return refresh(self, *regions, layout=layout, **kwargs)

        monkeypatch.setattr(Widget, "refresh", counting)
        for tab in tabs:
            await pilot.press(tab)
            for _ in range(SETTLE):  # the switch itself lays out, and so may the first ticks on a new tab
                await app.refresh_once()
                await pilot.pause()
            laid_out.clear()
            for _ in range(STEADY.get(tab, OTHER_TABS)):
                await app.refresh_once()
                await pilot.pause()
            assert laid_out == [], (
                f"tab {tab}: widgets asked for a layout pass on a steady tick: {sorted(set(laid_out))}"
            )
