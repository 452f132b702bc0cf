"""A tick repaints only the widgets whose picture changed: a refresh of a widget showing the same thing (or
of one in a hidden tab) costs a repaint of its lines and a compositor pass over its region, every second.

Deterministic: the demo source with a fixed seed and clock, ticks driven by `refresh_once`, and a widget's
picture read back through its own line cache after each tick."""

from __future__ import annotations

from collections import Counter

import pytest
from textual._styles_cache import StylesCache
from textual.geometry import Region
from textual.widget import Widget

from sparktop.ui.app import SparktopApp
from tests.ui.demo_app import SEVEN_MINUTES, WARMUP, warm_app

# Each tab is watched for five ticks after two that settle the switch (it cost 3 + 12 a tab): a widget
# repainted on every tick shows in the first; on the half-minute scenarios five hold one of the chart's
# redraws (every CHART_MIN_REDRAW_S = 5 s there), and the hidden tabs' fifteen, two settling ticks apart, hold
# at least one 10 s step of the creep watch's countdown.
SETTLE = 2
TICKS = 5


def pictures(app: SparktopApp) -> dict[Widget, tuple[str, ...]]:
    """What every widget on screen paints now (hidden ones are absent)."""
    return {
        widget: tuple(strip.text for strip in widget.render_lines(Region(0, 0, region.width, region.height)))
        for widget, (region, _clip) in app.screen._compositor.visible_widgets.items()
    }


class RepaintCounter:
    """Counts, per widget, the refresh() calls and the lines its line cache painted again."""

    def __init__(self, app: SparktopApp, monkeypatch: pytest.MonkeyPatch) -> None:
        self.on = False
        self.refreshes: Counter[Widget] = Counter()
        self.lines: Counter[Widget] = Counter()
        self.owners: dict[int, Widget] = {}  # id of a line cache -> its widget, found again on a miss
        refresh = Widget.refresh
        render_line = StylesCache.render_line
        counter = self

        def counting_refresh(widget: Widget, *regions: Region, **kwargs: bool) -> Widget:
            if counter.on:
                counter.refreshes[widget] += 1
            return refresh(widget, *regions, **kwargs)

        def counting_line(cache: StylesCache, *args: object, **kwargs: object) -> object:
            if counter.on:
                owner = counter.owners.get(id(cache))
                if owner is None or owner._styles_cache is not cache:  # a widget new since the last look
                    counter.owners = {id(w._styles_cache): w for w in app.screen.walk_children(Widget)}
                    owner = counter.owners.get(id(cache))
                if owner is not None:
                    counter.lines[owner] += 1
            return render_line(cache, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Widget, "refresh", counting_refresh)
        monkeypatch.setattr(StylesCache, "render_line", counting_line)

    def clear(self) -> None:
        self.refreshes.clear()
        self.lines.clear()


def name(widget: Widget) -> str:
    return f"{type(widget).__name__}#{widget.id}" if widget.id else type(widget).__name__


async def wasted_repaints(app: SparktopApp, pilot, counter: RepaintCounter) -> Counter[str]:
    """Refreshes and repainted lines, over TICKS ticks, of widgets whose picture did not change."""
    wasted: Counter[str] = Counter()
    before = pictures(app)
    for _ in range(TICKS):
        counter.clear()
        counter.on = True
        await app.refresh_once()
        await pilot.pause()
        counter.on = False
        after = pictures(app)
        for widget in {*counter.refreshes, *counter.lines}:
            if before.get(widget) == after.get(widget):  # unchanged, or hidden before and after
                wasted[name(widget)] += counter.refreshes[widget] + counter.lines[widget]
        before = after
    return wasted


@pytest.mark.parametrize(
    ("scenario", "warmup"),
    [("default", WARMUP), ("idle", WARMUP), ("training", SEVEN_MINUTES)],
)
async def test_a_tick_repaints_no_unchanged_widget(
    scenario: str, warmup: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On every tab, one after the other in one app (an app for each tab cost a start each, and a tab is
    watched the same after another tab as at the start): the creep watch's "collecting data" line (the first
    minutes) and creep alerts (later) in the Dashboard tab were repainted every tick while another tab was
    shown."""
    app = warm_app(scenario, warmup=warmup)
    async with app.run_test(size=(120, 36)) as pilot:
        counter = RepaintCounter(app, monkeypatch)
        for tab in "1235":
            await pilot.press(tab)
            for _ in range(SETTLE):  # the switch itself repaints, and so may the first tick on a new tab
                await app.refresh_once()
                await pilot.pause()
            wasted = await wasted_repaints(app, pilot, counter)
            assert not wasted, f"tab {tab}: repaints of widgets that showed the same thing: {dict(wasted)}"


# A step of the creep watch's countdown (10 s), and past the passing fast-growth alert that a session analysed
# every tick shows 10-15 s in and a warm-up's one analysis (the fresh app compared) does not: 16 (was 25).
HIDDEN_TICKS = 16


async def test_a_hidden_tab_shows_the_latest_data_when_it_comes_back() -> None:
    """What a hidden tab skips is drawn when it is shown: every panel of the Dashboard tab shows what a
    dashboard that never hid it shows (the creep watch's countdown, the bar, the gauges)."""
    app = warm_app(warmup=WARMUP)
    async with app.run_test(size=(120, 36)) as pilot:
        left = {name(w): picture for w, picture in pictures(app).items()}
        await pilot.press("3")
        for _ in range(HIDDEN_TICKS):  # the creep watch's countdown moves in steps of 10 s
            await app.refresh_once()
            await pilot.pause()
        await pilot.press("1")
        await pilot.pause()
        await pilot.pause()
        drawn = {name(w): picture for w, picture in pictures(app).items()}
    fresh = warm_app(warmup=WARMUP + HIDDEN_TICKS)  # the same data, never hidden
    async with fresh.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        expected = {name(w): picture for w, picture in pictures(fresh).items()}
    assert drawn["CreepAlerts#creep"] != left["CreepAlerts#creep"]  # it did change while hidden
    for widget in ("CreepAlerts#creep", "BudgetBar#bar", "GpuPanel#gpu", "PressurePanel#pressure"):
        assert drawn[widget] == expected[widget], widget


async def test_the_chart_waits_for_its_cadence_when_the_largest_consumers_swap_places(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a busy machine the largest consumers change places most ticks: the chart (the costliest view to
    draw) was drawn on each of those ticks; a name arriving for a consumer it shows is still drawn at once."""
    app = warm_app(warmup=400)  # a ten-minute axis: several seconds a column
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        history = app.session.history
        top_keys = history.top_keys
        label = history.label
        shown = next(iter(app.dashboard._chart_labels))
        tick = [0]

        def churning(n: int) -> list[str]:  # a different order every tick
            keys = top_keys(n + 1)
            return (keys[tick[0] % len(keys) :] + keys[: tick[0] % len(keys)])[:n]

        def counting(key: str) -> str:  # a count in a name moves every tick ("other host processes (112)")
            return f"{label(key)} ({100 + tick[0]})" if key == shown else label(key)

        monkeypatch.setattr(history, "top_keys", churning)
        monkeypatch.setattr(history, "label", counting)
        app.dashboard.forget_chart()  # drawn with the counting names
        await app.refresh_once()
        drawn_at = app.dashboard._chart_drawn_at
        for tick[0] in range(1, 4):
            await app.refresh_once()
            await pilot.pause()
        assert app.dashboard._chart_drawn_at == drawn_at, "drawn again before a column's worth of time"
        named = {shown: "ssd-tetris-train-1"}
        monkeypatch.setattr(history, "label", lambda key: named.get(key) or label(key))
        await app.refresh_once()
        assert app.dashboard._chart_drawn_at != drawn_at, "a new name on the chart waits"
