"""HistoryChart and CreepAlerts mounted in a minimal app, fed by a History of real snapshots."""

from __future__ import annotations

import copy
import functools
import re

from textual.app import App, ComposeResult
from textual.color import Color
from textual.geometry import Region
from textual.strip import Strip

from sparktop.analysis.history import History
from sparktop.analysis.trend import CreepAlert, detect_creep
from sparktop.core.snapshot import GB, Accounting, Consumer, GpuReport, HostMemory, Snapshot
from sparktop.session.session import Session
from sparktop.sources.demo import DemoSource
from sparktop.ui.widgets.creep_alerts import CreepAlerts
from sparktop.ui.widgets.history_chart import HistoryChart
from tests.ui.demo_app import make_app, screen_text

SAFE = 80 * GB
AGGRESSIVE = 100 * GB


class HistoryApp(App[None]):
    def compose(self) -> ComposeResult:
        yield CreepAlerts()
        yield HistoryChart()


def demo_history(samples: int = 600, scenario: str = "default") -> tuple[History, int]:
    """The history the dashboard would have after `samples` demo ticks (a copy: a test may add to it)."""
    if samples not in DEMO_CHECKPOINTS:
        raise ValueError(f"add {samples} to DEMO_CHECKPOINTS")
    history, pool = _demo_run(scenario).history_at(samples)
    return copy.deepcopy(history), pool


DEMO_CHECKPOINTS = (40, 100, 200, 500, 600)


class _DemoRun:
    """One demo run per scenario and worker, its history kept at each checkpoint it passes: the same
    histories as separate runs of that length (the demo is deterministic). It goes only as far as a test has
    asked: it used to run every scenario to 1,800 ticks up front, and the pool-line test paid ~2 s of CPU
    for the 100 critical ones it reads."""

    def __init__(self, scenario: str) -> None:
        self.source = DemoSource(scenario, seed=0)
        self.session = Session()  # accounts each snapshot and adds it to its history, as the dashboard does
        self.kept: dict[int, tuple[History, int]] = {}

    def history_at(self, samples: int) -> tuple[History, int]:
        while samples not in self.kept:
            snapshot = self.session.ingest(self.source.sample(), analyse=False)  # the chart reads the history
            if self.session.ingested in DEMO_CHECKPOINTS:
                self.kept[self.session.ingested] = copy.deepcopy(self.session.history), snapshot.memory.total
        return self.kept[samples]


@functools.cache
def _demo_run(scenario: str) -> _DemoRun:
    return _DemoRun(scenario)


def chart_strips(chart: HistoryChart) -> list[Strip]:
    """What the chart puts on the screen now, line by line (as the compositor asks for it)."""
    return chart.render_lines(Region(0, 0, chart.size.width, chart.size.height))


def chart_text(chart: HistoryChart) -> str:
    """What the chart draws, without colours."""
    return "\n".join(strip.text for strip in chart_strips(chart))


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

        # Decimal units, a span and a narrow widget: no crash, still drawn. (Another theme, a restyle of the
        # app: test_a_new_point_makes_only_the_rows_it_changed_and_a_theme_recolours_it.)
        chart.redraw(history, SAFE, AGGRESSIVE, pool, units="GB", span_s=120)
        await pilot.resize_terminal(40, 14)
        await pilot.pause()
        assert "used" in chart_text(chart)


async def test_a_short_history_comes_in_from_the_right_of_a_short_axis() -> None:
    """The first minutes were four dots at the edge of a ten-minute axis: the axis is now the shortest of
    1, 2, 5, 10 minutes that holds the history, the data still coming in from the right."""
    history, pool = demo_history(samples=40)
    app = HistoryApp()
    async with app.run_test(size=(120, 36)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(history, SAFE, AGGRESSIVE, pool)
        await pilot.pause()
        axis = chart_text(chart).splitlines()[-2]  # the x tick labels
        assert axis.split()[0] == "-1" and axis.split()[-1] == "now"
        assert chart.shown_span(history.times()) == 60.0
        plot_rows = chart_text(chart).splitlines()[8:-3]
        # Nothing in the left quarter (no data 40 s ago on a 60 s axis) ...
        width = max(len(row) for row in plot_rows)
        left = [row[6 : width // 4] for row in plot_rows]
        assert not any(ch in row for row in left for ch in "⠁⠂⠄⡀⠈⠐⠠⢀⣀⠤⠒⠉")
        # ... and the 40 s drawn across more than half of the plot, not a few columns at its edge.
        drawn = {i for row in plot_rows for i, ch in enumerate(row[:-2]) if "\u2800" < ch <= "\u28ff"}
        assert max(drawn) - min(drawn) > width // 2

        for samples, first_tick in ((100, "-2"), (200, "-5"), (500, "-10")):
            grown, _ = demo_history(samples=samples)
            chart.redraw(grown, SAFE, AGGRESSIVE, pool)
            await pilot.pause()
            assert chart_text(chart).splitlines()[-2].split()[0] == first_tick, samples

        # Half an hour: the whole history is drawn. The span alone sets the axis: a plain climb of 1,800
        # points a second apart (0.04 s to build) stands in for 1,800 demo ticks (~2 s of CPU).
        chart.redraw(growing(1800), SAFE, AGGRESSIVE, pool)
        await pilot.pause()
        assert chart_text(chart).splitlines()[-2].split()[0] == "-25"  # ticks every 5 min from -29.98


def test_the_readme_describes_the_axis_the_chart_draws() -> None:
    """Issue 32 item 5: README said "on an axis at least ten minutes wide" while the chart opens at one
    minute and grows 1, 2, 5, 10 minutes (as a user asked: the first minutes were four dots at the edge of
    a ten-minute axis). The README says what the chart does, from the steps the chart uses."""
    from pathlib import Path

    readme = " ".join((Path(__file__).parents[2] / "README.md").read_text().split())
    history = readme[readme.index("- **History**") :][:400]
    minutes = [f"{s / 60:g}" for s in HistoryChart.SPAN_STEPS_S]
    steps = f"{', '.join(minutes[:-1])}, then {minutes[-1]} minutes"
    assert steps in history, history[:300]
    assert "at least ten minutes" not in readme


async def test_the_pool_line_is_named() -> None:
    history, pool = demo_history(samples=100)
    app = HistoryApp()
    async with app.run_test(size=(100, 30)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(history, SAFE, AGGRESSIVE, pool)
        await pilot.pause()
        rows = chart_text(chart).splitlines()
        assert any(re.search(r"─ pool ┤$", row) for row in rows), "\n".join(rows)
        # Near exhaustion the latest data is on that row: the name would cover it (the title names the pool).
        critical, pool = demo_history(samples=100, scenario="critical")
        chart.redraw(critical, SAFE, AGGRESSIVE, pool)
        await pilot.pause()
        assert " pool ┤" not in chart_text(chart)


async def test_used_stays_drawn_where_a_consumer_shares_its_cells() -> None:
    """One consumer holding (nearly) all of `used`: its line and `used` share every cell, and the line drawn
    last takes the cell's colour; `used` was drawn first and vanished."""
    history = growing(120)
    app = HistoryApp()
    async with app.run_test(size=(100, 30)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(history, SAFE, AGGRESSIVE, 128 * GB, colors={"container:x": "#ff00ff"})
        await pilot.pause()
        colours = set()
        for strip in chart_strips(chart):
            if re.search(r"[A-Za-z]", strip.text):
                continue  # the legend, the line labels, the axes' words: only the data cells count
            for segment in strip:
                style = segment.style
                if any("\u2800" < ch <= "\u28ff" for ch in segment.text) and style and style.color:
                    colours.add(style.color.triplet.hex.lower())
        foreground = Color.parse(app.theme_variables["foreground"]).hex.lower()
        assert foreground in colours and "#ff00ff" not in colours, colours


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
        chart.redraw(history, SAFE, AGGRESSIVE, 128 * GB, colors={"c": "no such colour"})
        await pilot.pause()
        assert "comes-and-goes" in chart_text(chart)  # drawn in the frame's colour, not a failed draw


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


class LateNames(DemoSource):
    """The demo as a live machine starts: containers by id until Docker's names come (`hidden` ticks)."""

    def __init__(self, hidden: int) -> None:
        super().__init__("default", seed=0)
        self.hidden = hidden

    def sample(self) -> Snapshot:
        from sparktop.analysis.accounting import account

        snapshot = super().sample()
        if self.hidden > 0:
            self.hidden -= 1
            for container in snapshot.containers:
                container.name = None
            snapshot.accounting = account(
                snapshot.memory, snapshot.gpu, snapshot.processes, snapshot.containers
            )
        return snapshot


async def test_names_that_arrive_are_drawn_at_once_not_after_the_redraw_pause() -> None:
    from pathlib import Path

    from sparktop.settings.config import Config
    from sparktop.ui.app import SparktopApp

    app = SparktopApp(
        LateNames(hidden=4), Config(), auto_refresh=False, warmup=3, clock=lambda: 0.0,
        user_theme_dir=Path("/nonexistent/sparktop-themes"),
    )  # fmt: skip
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        chart = app.query_one(HistoryChart)
        await app.refresh_once()  # still ids: the chart keeps its pace (drawn at most every few seconds)
        await pilot.pause()
        assert "ssd-tetris-train-1" not in chart_text(chart)
        await app.refresh_once()  # the names come: drawn now
        await pilot.pause()
        assert "ssd-tetris-train-1" in chart_text(chart)


async def test_line_labels_stay_whole_when_the_chart_is_laid_out_smaller() -> None:
    """A block appearing above the chart (a creep alert) shrinks it after it was drawn: the legend kept rows
    for the old height and `aggressive 100 GB n-1` showed a consumer's name under the label (80×24)."""
    history, pool = demo_history()
    app = HistoryApp()
    async with app.run_test(size=(80, 30)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(history, SAFE, AGGRESSIVE, pool, top_n=4)
        await pilot.pause()
        for height in (24, 20, 16):
            await pilot.resize_terminal(80, height)
            await pilot.pause()
            text = chart_text(chart)
            for label in ("aggressive 100 GB ", "safe 80 GB "):
                row = next(row for row in text.splitlines() if label in row)
                rest = row.split(label, 1)[1]
                assert re.fullmatch(r"[─┤ \u2800-\u28ff]*", rest), (height, row)


async def test_the_dashboard_start_draws_the_chart_once_at_its_laid_out_size(monkeypatch) -> None:
    """The chart is the costliest view to draw: the start built it four times (twice at no size, then on the
    resize, then again after the tab's layout with the same data; later, once before the layout the first
    data gives and once after). A repeat with nothing new builds nothing; a new sample, a new size and a new
    theme each build."""
    from tests.ui.demo_app import warm_app

    sizes: list[tuple[int, int]] = []
    build = HistoryChart._build

    def counting(self: HistoryChart, args) -> object:
        sizes.append((self.size.width, self.size.height))
        return build(self, args)

    monkeypatch.setattr(HistoryChart, "_build", counting)
    app = warm_app()  # make_app()'s start, over the worker's warmed session (tests/fixtures/demo_session)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        chart = app.query_one(HistoryChart)
        assert sizes == [(chart.size.width, chart.size.height)] and chart.size.area > 0
        assert "used" in chart_text(chart)
        assert len(sizes) == 1  # reading what is on screen builds nothing
        app.dashboard._redraw_chart(force=True)  # what a switch back to the Dashboard asks for
        assert len(sizes) == 1
        await app.refresh_once()  # a new point (drawn by the tick itself or by the switch below, once)
        app.dashboard._redraw_chart(force=True)
        chart_text(chart)
        assert len(sizes) == 2
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        assert sizes[-1] == (chart.size.width, chart.size.height) != sizes[0]
        drawn = len(sizes)
        app.theme = "textual-light"
        await pilot.pause()
        assert len(sizes) > drawn


async def test_a_short_chart_keeps_two_y_ticks_and_says_its_time_unit() -> None:
    """At 60x18 under the critical banner the chart had one plot row and a lone "0" tick (issue 32, Rough):
    a short chart drops its title and "minutes ago" for plot rows, and its x ticks name the unit."""
    app = make_app(scenario="critical", warmup=5)
    async with app.run_test(size=(60, 18)) as pilot:
        await pilot.pause()
        chart = app.query_one(HistoryChart)
        assert chart.size.height < 9, chart.size  # short, as in a real 60x18 terminal
        lines = screen_text(app).splitlines()
    ticks = [m.group(1) for line in lines for m in re.finditer(r"(\d+)[├┤]", line)]
    assert len(ticks) >= 2 and "0" in ticks and "100" in ticks, "\n".join(lines)
    assert any(re.search(r"-1m\s.*now", line) for line in lines), "\n".join(lines)


async def test_a_consumer_named_in_wide_characters_is_cut_by_cells_and_keeps_the_rows_whole() -> None:
    """A process named in CJK: cut at 22 characters its label took 44 cells, and its legend row came out
    wider than the chart (a row that wraps pushes the chart's lines down)."""
    history = History()
    name = "训练任务" * 8
    for t in range(60):
        history.add(
            Snapshot(
                timestamp=1000.0 + t,
                memory=HostMemory(total=128 * GB, available=90 * GB, free=80 * GB),
                gpu=GpuReport(available=False),
                accounting=Accounting(
                    used=38 * GB,
                    consumers=[Consumer(key="p", label=name, kind="process", cpu_bytes=30 * GB)],
                    unattributed=8 * GB,
                ),
            )
        )
    app = HistoryApp()
    async with app.run_test(size=(100, 30)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(history, SAFE, AGGRESSIVE, 128 * GB)
        await pilot.pause()
        strips = chart_strips(chart)
        assert len(strips) == chart.size.height
        assert {strip.cell_length for strip in strips} == {chart.size.width}
        assert chart_text(chart).splitlines()[-1].strip() == "minutes ago"  # no row wrapped onto the next
        assert "训练任务训练任务训练…" in chart_text(chart)  # 21 cells of the name, then …


def growing(seconds: int) -> History:
    """`used` (one consumer holding nearly all of it) growing 50 MB a second from 60 GB, a point a second."""
    history = History()
    for t in range(seconds):
        nbytes = 60 * GB + t * 50_000_000
        history.add(
            Snapshot(
                timestamp=1000.0 + t,
                memory=HostMemory(total=128 * GB, available=128 * GB - nbytes, free=128 * GB - nbytes),
                gpu=GpuReport(available=False),
                accounting=Accounting(
                    used=nbytes,
                    consumers=[Consumer(key="container:x", label="hog", kind="container", cpu_bytes=nbytes)],
                    unattributed=0,
                ),
            )
        )
    return history


async def test_a_new_point_makes_only_the_rows_it_changed_and_a_theme_recolours_it(monkeypatch) -> None:
    """The chart is drawn line by line (LineDiffWidget): the next tick's draw makes strips for the rows whose
    text changed (the line's), not for the legend, the marker lines, the frame or the axes; a new theme
    recolours it."""
    app = HistoryApp()
    async with app.run_test(size=(100, 30)) as pilot:
        chart = app.query_one(HistoryChart)
        chart.redraw(growing(100), SAFE, AGGRESSIVE, 128 * GB)  # on a two-minute axis
        await pilot.pause()
        before = chart_text(chart).splitlines()
        made: list[str] = []
        strips_of = HistoryChart._dl_strips_of

        def counting(self: HistoryChart, line, width: int):
            made.append(line.plain)
            return strips_of(self, line, width)

        monkeypatch.setattr(HistoryChart, "_dl_strips_of", counting)
        chart.redraw(growing(101), SAFE, AGGRESSIVE, 128 * GB)  # the next tick
        await pilot.pause()
        after = chart_text(chart).splitlines()
        changed = [row for row, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
        assert 0 < len(made) == len(changed) <= 3, (made, changed)
        assert all("⢕⢕" not in before[row] and "GB" not in before[row] for row in changed)

        def frame_colours() -> set[str]:
            top = chart_strips(chart)[1]  # the frame's top edge
            return {seg.style.color.triplet.hex.lower() for seg in top if seg.style and seg.style.color}

        assert frame_colours() == {Color.parse(app.theme_variables["foreground"]).hex.lower()}
        app.theme = "textual-light"
        await pilot.pause()
        assert frame_colours() == {Color.parse(app.theme_variables["foreground"]).hex.lower()}
        assert Color.parse(app.theme_variables["foreground"]).brightness < 0.5  # a dark ink now
