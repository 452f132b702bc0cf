"""A steady tick repaints only the widgets whose picture changed and lays nothing out: a refresh of a widget
showing the same thing (or of one in a hidden tab) costs a repaint of its lines and a compositor pass over its
region, every second; a layout pass is the whole screen's, and one on every tick (a hidden GPU memory bar, a
panel in a hidden tab) doubled the dashboard's idle CPU.

Deterministic: the demo source with a fixed seed and clock, ticks driven by `refresh_once`, and a widget's
picture read back through its own line cache after each tick."""

from __future__ import annotations

from collections import Counter

import pytest
from textual._styles_cache import StylesCache
from textual.geometry import Region
from textual.widget import Widget

from sparktop.ui.app import SparktopApp
from tests.ui.demo_app import WARMUP, warm_app
from tests.ui.frame import creep_block

# Each tab settles one tick after the switch (the switch itself repaints and lays out), then two are watched:
# a widget repainted or laid out on every tick shows in the first. The watched window holds a history-chart
# redraw wherever the chart's cadence falls (forget_chart: the chart is drawn on the next tick shown; a
# five-tick window once missed the chart's layout request). The Dashboard tab's panels are off screen on the
# others: default's creep alerts move their ETAs every tick (a repaint of the hidden block shows on the
# first), the collecting line of idle and discrete stays the same (a repaint of unchanged text shows).
SETTLE = 1
WATCHED = 2


def pictures(app: SparktopApp) -> dict[Widget, tuple[str, ...]]:
    """What every widget on screen paints now (hidden ones are absent)."""
    return {
        widget: tuple(strip.text for strip in widget.render_lines(Region(0, 0, region.width, region.height)))
        for widget, (region, _clip) in app.screen._compositor.visible_widgets.items()
    }


class RepaintCounter:
    """Counts, per widget, the refresh() calls, those asking for a layout pass, and the lines its line cache
    painted again."""

    def __init__(self, app: SparktopApp, monkeypatch: pytest.MonkeyPatch) -> None:
        self.on = False
        self.refreshes: Counter[Widget] = Counter()
        self.layouts: Counter[Widget] = Counter()
        self.lines: Counter[Widget] = Counter()
        self.owners: dict[int, Widget] = {}  # id of a line cache -> its widget, found again on a miss
        refresh = Widget.refresh
        render_line = StylesCache.render_line
        counter = self

        def counting_refresh(widget: Widget, *regions: Region, **kwargs: bool) -> Widget:
            if counter.on:
                counter.refreshes[widget] += 1
                counter.layouts[widget] += bool(kwargs.get("layout"))
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
        self.layouts.clear()
        self.lines.clear()


def name(widget: Widget) -> str:
    return f"{type(widget).__name__}#{widget.id}" if widget.id else type(widget).__name__


async def watch_ticks(
    app: SparktopApp, pilot, counter: RepaintCounter, until: str | None = None
) -> tuple[Counter[str], Counter[str]]:
    """Over WATCHED ticks, and on until widget `until` has repainted a changed picture (its own repaint, and
    the layout it might ask for, are then in the window): refreshes and repainted lines of widgets whose
    picture did not change, and the widgets that asked for a layout pass."""
    wasted: Counter[str] = Counter()
    laid_out: Counter[str] = Counter()
    before = pictures(app)
    changed = until is None
    ticks = 0
    while ticks < WATCHED or not changed:
        assert ticks < WATCHED + UNTIL_AT_MOST, f"{until} showed nothing new in {ticks} ticks"
        ticks += 1
        counter.clear()
        counter.on = True
        await app.refresh_once()
        await pilot.pause()
        counter.on = False
        after = pictures(app)
        for widget in {*counter.refreshes, *counter.lines}:
            if before.get(widget) == after.get(widget):  # unchanged, or hidden before and after
                wasted[name(widget)] += counter.refreshes[widget] + counter.lines[widget]
            elif name(widget) == until:
                changed = True
        laid_out.update({name(widget): n for widget, n in counter.layouts.items() if n})
        before = after
    return wasted, laid_out


# On the Dashboard tab, the widget whose change the watched window must hold: default's creep alerts (their
# ETAs move every tick, the block keeps its height), discrete's GPU memory bar (its legend moves most ticks,
# not all: a bar laying out whenever it repaints shows only on a tick that changed it).
UNTIL = {"default": "CreepAlerts#creep", "discrete": "GpuMemoryBar#gpu-bar"}
UNTIL_AT_MOST = 10
# The tabs each scenario shows in turn: the Processes tab (the costliest to show, ~0.2 s) on default only,
# whose table idle and discrete fill the same way; idle for its empty Containers tab, discrete its GPU ones.
TABS = {"default": "1235", "idle": "125", "discrete": "125"}


@pytest.mark.parametrize("scenario", ["default", "idle", "discrete"])
async def test_a_steady_tick_repaints_no_unchanged_widget_and_lays_nothing_out(
    scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the tabs, one after the other in one app (a tab is watched the same after another tab as at the
    start), half a minute in: default's creep alerts (their ETAs moving), idle's empty Containers tab and
    collecting creep watch, discrete's GPU memory bar (shown, and measuring its lines once a tick). The
    creep watch's "collecting data" line and creep alerts in the Dashboard tab were repainted every tick while
    another tab was shown; the GPU memory bar and the chart asked for a layout on steady ticks. The
    Processes tab may lay out (its rows come and go); what it repaints is still checked."""
    app = warm_app(scenario, warmup=WARMUP)
    async with app.run_test(size=(120, 36)) as pilot:
        counter = RepaintCounter(app, monkeypatch)
        for tab in TABS[scenario]:
            await pilot.press(tab)
            for _ in range(SETTLE):  # the switch itself repaints and lays out, and so may the first tick
                await app.refresh_once()
                await pilot.pause()
            app.dashboard.forget_chart()  # drawn on the next tick the Dashboard tab shows, as at its cadence
            until = UNTIL.get(scenario) if tab == "1" else None
            wasted, laid_out = await watch_ticks(app, pilot, counter, until)
            assert not wasted, f"tab {tab}: repaints of widgets that showed the same thing: {dict(wasted)}"
            if tab != "3":
                assert not laid_out, (
                    f"tab {tab}: widgets asked for a layout pass on a steady tick: {dict(laid_out)}"
                )


# Two ticks off screen: default's creep alerts move their ETAs every tick half a minute in (asserted below).
HIDDEN_TICKS = 2


async def test_a_hidden_tab_shows_the_latest_data_when_it_comes_back() -> None:
    """What a hidden tab skips is drawn when it is shown: every panel of the Dashboard tab shows what the
    dashboard draws of the same data on screen (its views drawn again and every widget repainted whole: what
    a dashboard that never hid it shows) — the creep block, the bar, the gauges."""
    app = warm_app(warmup=WARMUP)
    async with app.run_test(size=(120, 36)) as pilot:
        left = creep_block(app.session)
        await pilot.press("5")
        for _ in range(HIDDEN_TICKS):
            await app.refresh_once()
            await pilot.pause()
        assert creep_block(app.session) != left, (
            "the creep block's text did not change while its tab was hidden"
        )
        await pilot.press("1")
        await pilot.pause()
        await pilot.pause()
        drawn = {name(w): picture for w, picture in pictures(app).items()}
        app.dashboard.redraw()
        for widget in app.screen.walk_children(Widget):
            widget.refresh()
        await pilot.pause()
        expected = {name(w): picture for w, picture in pictures(app).items()}
        for widget in ("CreepAlerts#creep", "BudgetBar#bar", "GpuPanel#gpu", "PressurePanel#pressure"):
            assert drawn[widget] == expected[widget], f"{widget} shows stale data after its tab came back"


async def test_the_chart_waits_for_its_cadence_when_the_largest_consumers_swap_places(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a busy machine the largest consumers change places most ticks: the chart (the costliest view to
    draw) was drawn on each of those ticks; a name arriving for a consumer it shows is still drawn at once."""
    # Half a minute in, as the other tests here: the three ticks below are under the chart's shortest wait
    # (CHART_MIN_REDRAW_S, 5 s) as under the seven-minute axis's column (8.45 s) that it had.
    app = warm_app(warmup=WARMUP)
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
