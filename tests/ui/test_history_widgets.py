"""HistoryChart and CreepAlerts mounted in a minimal app, fed by a History of real snapshots."""

from __future__ import annotations

import re

from rich.text import Text
from textual.app import App, ComposeResult

from sparktop.analysis.history import History
from sparktop.analysis.trend import CreepAlert, detect_creep
from sparktop.collect.demo import DemoSource
from sparktop.model import GB, Accounting, Consumer, GpuReport, HostMemory, Snapshot
from sparktop.session import Session
from sparktop.ui.widgets.creep_alerts import CreepAlerts
from sparktop.ui.widgets.history_chart import HistoryChart

SAFE = 80 * GB
AGGRESSIVE = 100 * GB


class HistoryApp(App[None]):
    def compose(self) -> ComposeResult:
        yield CreepAlerts()
        yield HistoryChart()


def demo_history(samples: int = 600, scenario: str = "default") -> tuple[History, int]:
    source = DemoSource(scenario, seed=0)
    session = Session()  # accounts each snapshot and adds it to its history, as the dashboard does
    for _ in range(samples):
        snapshot = session.ingest(source.sample())
    return session.history, snapshot.memory.total


def chart_text(chart: HistoryChart) -> str:
    """What the chart draws, without colours (plotext's own output at the widget's size)."""
    chart.plt.plotsize(chart.size.width, chart.size.height)
    return Text.from_ansi(chart.plt.build()).plain


async def test_chart_draws_used_top_consumers_and_lines_from_demo_snapshots() -> None:
    history, pool = demo_history()
    app = HistoryApp()
    async with app.run_test(size=(120, 36)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(history, SAFE, AGGRESSIVE, pool, units="GiB", top_n=3)
        await pilot.pause()
        text = chart_text(chart)
        assert "used" in text
        assert "safe 80 GB" in text and "aggressive 100 GB" in text
        for key in history.top_keys(3):
            assert history.label(key)[:20] in text
        assert "minutes ago" in text and "now" in text
        assert f"pool {pool / 1024**3:.1f} GiB" in text

        # Decimal units, a span, another theme and a narrow widget: no crash, still drawn.
        chart.redraw(history, SAFE, AGGRESSIVE, pool, units="GB", span_s=120)
        app.theme = "textual-light"
        await pilot.pause()
        await pilot.resize_terminal(40, 14)
        await pilot.pause()
        assert "used" in chart_text(chart)


async def test_a_short_history_comes_in_from_the_right_of_a_ten_minute_axis() -> None:
    history, pool = demo_history(samples=60)
    app = HistoryApp()
    async with app.run_test(size=(120, 36)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(history, SAFE, AGGRESSIVE, pool)
        await pilot.pause()
        axis = chart_text(chart).splitlines()[-2]  # the x tick labels
        assert axis.split()[0] == "-10" and axis.split()[-1] == "now"
        times = history.times()
        assert chart.shown_span(times) == HistoryChart.MIN_SPAN_S
        # The data fills the right end only: nothing is drawn in the left half of the plot.
        plot_rows = chart_text(chart).splitlines()[8:-3]
        left_half = [row[6 : chart.size.width // 2] for row in plot_rows]
        assert not any(ch in row for row in left_half for ch in "⠁⠂⠄⡀⠈⠐⠠⢀⣀⠤⠒⠉")

        longer, _ = demo_history(samples=1800)  # half an hour (1,799 s): the whole history is drawn
        chart.redraw(longer, SAFE, AGGRESSIVE, pool)
        await pilot.pause()
        assert chart_text(chart).splitlines()[-2].split()[0] == "-25"  # ticks every 5 min from -29.98


async def test_a_short_chart_labels_only_the_consumers_above_the_lines() -> None:
    history, pool = demo_history()
    app = HistoryApp()
    async with app.run_test(size=(80, 16)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(history, SAFE, AGGRESSIVE, pool, top_n=4)
        await pilot.pause()
        text = chart_text(chart)
        labels = [history.label(key) for key in history.top_keys(4)]
        shown = [label for label in labels if label[:20] in text]
        assert "used" in text and 0 < len(shown) < 4  # the others are drawn, unlabelled
        # The line labels are whole, and no legend entry is left half-covered beside them.
        for label in ("aggressive 100 GB ", "safe 80 GB "):
            row = next(row for row in text.splitlines() if f"├ {label}" in row)
            rest = row.split(label, 1)[1]
            assert re.fullmatch(r"[─┤ \u2800-\u28ff]*", rest), row


async def test_lines_above_the_pool_are_left_out_of_the_chart() -> None:
    history = History()
    for t in range(30):
        history.add(
            Snapshot(
                timestamp=1000.0 + t,
                memory=HostMemory(total=24 * GB, available=20 * GB, free=19 * GB),
                gpu=GpuReport(available=False),
                accounting=Accounting(used=4 * GB, consumers=[], unattributed=4 * GB),
            )
        )
    app = HistoryApp()
    async with app.run_test(size=(100, 30)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(history, SAFE, AGGRESSIVE, 24 * GB, units="GB")
        await pilot.pause()
        text = chart_text(chart)
        assert "safe 80 GB" not in text and "aggressive 100 GB" not in text
        y_labels = [float(m.group(1)) for m in re.finditer(r"^\s*(\d+(?:\.\d+)?)┤", text, re.MULTILINE)]
        assert y_labels and max(y_labels) <= 25  # the axis ends at the pool, not at 100 GB


async def test_chart_without_data_says_collecting() -> None:
    app = HistoryApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(History(), SAFE, AGGRESSIVE, 128 * GB)
        await pilot.pause()
        assert "collecting" in chart_text(chart)


async def test_chart_with_one_point_and_a_consumer_that_came_and_went() -> None:
    history = History()
    for t in range(5):
        consumers = (
            [Consumer(key="c", label="comes-and-goes", kind="container", cpu_bytes=5 * GB)] if t != 2 else []
        )
        history.add(
            Snapshot(
                timestamp=1000.0 + t,
                memory=HostMemory(total=128 * GB, available=100 * GB, free=90 * GB),
                gpu=GpuReport(available=False),
                accounting=Accounting(used=28 * GB, consumers=consumers, unattributed=23 * GB),
            )
        )
    app = HistoryApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(HistoryChart)
        one = History()
        one.add(
            Snapshot(
                timestamp=1.0,
                memory=HostMemory(total=128 * GB, available=100 * GB, free=90 * GB),
                gpu=GpuReport(available=False),
            )
        )
        chart.redraw(one, SAFE, AGGRESSIVE, 128 * GB)
        await pilot.pause()
        chart.redraw(history, SAFE, AGGRESSIVE, 128 * GB, colors={"c": "#ff00ff"})
        await pilot.pause()
        assert "comes-and-goes" in chart_text(chart)


async def test_creep_alerts_show_and_hide() -> None:
    history, pool = demo_history()  # the default demo's training run creeps ~1.3 GB/min
    alerts = detect_creep(history, SAFE, AGGRESSIVE, pool)
    assert alerts, "the demo's creeping training run should be detected"
    app = HistoryApp()
    async with app.run_test(size=(120, 30)) as pilot:
        widget = app.query_one(CreepAlerts)
        assert widget.display is False  # nothing yet

        widget.show_alerts(alerts, units="GB")
        await pilot.pause()
        assert widget.display is True
        shown = str(widget.render())
        assert shown.startswith("⚠ creep")
        assert alerts[0].label in shown
        assert alerts[0].message("GB") in shown
        assert widget.region.height >= 2

        widget.show_alerts([])
        await pilot.pause()
        assert widget.display is False
        assert widget.region.height == 0


async def test_creep_alerts_severity_and_markup_safe_labels() -> None:
    calm = CreepAlert("k", "[bold]odd[/] name", 1e9 / 60, GB, 3000.0, 6000.0, 9000.0, SAFE, AGGRESSIVE)
    close = CreepAlert("k2", "train.py", 2e9 / 60, GB, 0.0, 300.0, 900.0, SAFE, AGGRESSIVE)
    app = HistoryApp()
    async with app.run_test(size=(120, 30)) as pilot:
        widget = app.query_one(CreepAlerts)
        widget.show_alerts([calm])
        await pilot.pause()
        assert "[bold]odd[/] name" in str(widget.render())  # shown as written, not parsed as markup
        assert not widget.has_class("-severe")
        widget.show_alerts([close, calm])
        await pilot.pause()
        assert widget.has_class("-severe")  # the aggressive line is 5 min away
