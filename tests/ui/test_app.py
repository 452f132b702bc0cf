"""Pilot tests: the dashboard driven like a user drives it, on the deterministic demo source."""

from __future__ import annotations

import re
import threading
import time

import pytest
import pytest_asyncio
from textual.pilot import Pilot
from textual.widgets import Input, TabbedContent

from sparktop.core.snapshot import Snapshot
from sparktop.session.session import Session
from sparktop.settings.config import Config
from sparktop.sources.demo import DemoSource
from sparktop.sources.snapshot_source import SnapshotSource, SourceExhausted
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.dashboard import ContainersTable, ProcessesTable, pressure_banner
from sparktop.ui.widgets.budget_bar import BarState, BudgetBar
from sparktop.ui.widgets.gpu_panel import GpuPanel
from sparktop.ui.widgets.history_chart import HistoryChart
from sparktop.ui.widgets.pressure_panel import PressurePanel
from sparktop.ui.widgets.status_line import StatusLine
from tests.fixtures.demo_session import default_palette, demo_session
from tests.fixtures.load import wall_limit
from tests.fixtures.sources import NoGpuDemo
from tests.ui.demo_app import SEVEN_MINUTES, make_app, reset_dashboard, shared_app, warm_app
from tests.ui.frame import budget_bar, creep_block, pressure_panel

# `dashboard` below: one app for the module. The checks without an app are async too, as the module's
# mark asks.
pytestmark = pytest.mark.asyncio(loop_scope="module")


def rendered(widget) -> str:
    return str(widget.render())


def table_keys(table) -> list[str]:
    return [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]


# One dashboard on the demo for the checks that drive it with keys (its structure does not change as it
# ticks: the same containers and processes, ollama the largest). A test that ticks it, pauses it or changes
# its interval leaves it running at 1 s; `dashboard` puts the rest back before each.
demo = shared_app(warmup=3)


@pytest_asyncio.fixture(loop_scope="module")
async def dashboard(demo: tuple[SparktopApp, Pilot]) -> tuple[SparktopApp, Pilot]:
    """The shared dashboard as it starts (reset_dashboard), not paused."""
    app, pilot = demo
    if app.paused:
        app.action_toggle_pause()
    await reset_dashboard(app, pilot)
    return demo


async def test_dashboard_shows_pool_state_and_segments() -> None:
    """The budget bar over seven minutes of the demo, drawn by its own show() as the dashboard feeds it
    (tests/ui/frame.py; the SVG snapshots check the dashboard's wiring)."""
    session = demo_session(warmup=SEVEN_MINUTES).session
    bar = budget_bar(session)
    assert session.latest is not None
    # The default scenario sits between the lines: over 80 GB, under 100 GB.
    assert bar.state is BarState.BETWEEN
    text = rendered(bar)
    assert "over safe 80 GB" in text
    assert "safe 80 GB ▼" in text and "aggressive 100 GB" in text
    assert "pool 121.7 GiB" in text
    keys = [s.key for s in bar.segments]
    assert keys[-1] == "free" and "unattributed" in keys
    assert sum(s.nbytes for s in bar.segments) == session.latest.memory.total
    # Every container has its own segment.
    assert {f"container:{c.id}" for c in session.latest.containers} <= set(keys)


async def test_creep_alert_names_the_training_run() -> None:
    session = demo_session(warmup=SEVEN_MINUTES).session  # past the creep window
    text = creep_block(session)
    assert text is not None, "the creep block is hidden"
    assert "ssd-tetris-train-1" in text.plain
    assert "GiB/min" in text.plain
    assert "aggressive 100 GB in ~" in text.plain
    # Nothing else creeps: one-off steps and noise stay quiet.
    assert [a.label for a in session.creep] == ["ssd-tetris-train-1"]


async def test_critical_pressure_is_impossible_to_miss():
    # Three samples: the critical scenario is critical from its first (MemAvailable 3 %, PSI full 25 %); the
    # minute it warmed up for (0.1 s of CPU) only added "for 59 s" to a reason no check reads.
    app = make_app("critical", warmup=3)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        banner = app.query_one("#critical-banner")
        assert banner.has_class("-show") and banner.display
        assert "CRITICAL MEMORY PRESSURE" in str(banner.render())
        # The banner's share is the pressure panel's, rounded the same way (not "(10 %)" beside "9.5 %").
        assert app.session.assessment is not None
        shown = re.search(r"available \(([\d.]+ %)\)", str(banner.render()))
        assert shown is not None and any(shown[1] in r for r in app.session.assessment.reasons), (
            app.session.assessment.reasons
        )
        assert app.query_one(PressurePanel).has_class("-critical")
        assert "CRITICAL" in rendered(app.query_one(PressurePanel))
        # The banner stays on every tab.
        await pilot.press("2")
        assert banner.display and banner.region.height >= 1


async def test_ok_pressure_has_no_banner() -> None:
    session = demo_session("audio", warmup=3).session
    assert pressure_banner(session, "GiB") is None
    assert "OK" in rendered(pressure_panel(session))


async def test_sort_by_keys_and_header_click(dashboard: tuple[SparktopApp, Pilot]):
    app, pilot = dashboard
    await pilot.press("2")
    table = app.query_one(ContainersTable)
    assert table.sort_column == "total" and table.sort_reverse
    # A model server's row sorts by what it holds with its models' rows (drawn under it).
    rows = table._rows
    totals = [
        sum(r.values["total"] for r in rows.values() if k in (r.key, r.parent))
        for k in table_keys(table)
        if rows[k].parent is None
    ]
    assert totals == sorted(totals, reverse=True)

    await pilot.press("o")  # next column after total: trend
    assert table.sort_column == "trend"
    await pilot.press("O")
    assert table.sort_column == "trend" and not table.sort_reverse

    # Click the "container" header: sorts by name, A→Z.
    await pilot.click(ContainersTable, offset=(3, 0))
    await pilot.pause()
    assert table.sort_column == "name" and not table.sort_reverse
    names = [table._rows[k].values["name"] for k in table_keys(table) if table._rows[k].parent is None]
    assert names == sorted(names, key=str.lower)
    await pilot.click(ContainersTable, offset=(3, 0))
    assert table.sort_reverse
    assert "▼" in str(table.columns["name"].label)  # type: ignore[index]


async def test_filter_with_slash(dashboard: tuple[SparktopApp, Pilot]):
    app, pilot = dashboard
    await pilot.press("slash")
    box = app.query_one("#filter", Input)
    assert box.has_focus
    assert app.query_one(TabbedContent).active == "containers"
    for ch in "audio":
        await pilot.press(ch)
    await pilot.press("enter")
    containers = app.query_one(ContainersTable)
    assert containers.row_count == 2
    assert all("audio" in containers._rows[k].values["name"] for k in table_keys(containers))
    processes = app.query_one(ProcessesTable)
    assert 0 < processes.row_count < len(app.session.latest.processes)
    assert "filter: 'audio'" in str(app.query_one(StatusLine).render())
    # The filter holds across refreshes.
    await app.refresh_once()
    assert containers.row_count == 2
    # Esc clears it.
    await pilot.press("slash", "escape")
    models = sum(len(r.models) for r in app.session.latest.services)  # a row each, under its server's
    assert models == 1 and containers.row_count == len(app.session.latest.containers) + models


async def test_selection_survives_refreshes_and_resort(dashboard: tuple[SparktopApp, Pilot]):
    app, pilot = dashboard
    await pilot.press("3")
    table = app.query_one(ProcessesTable)
    assert table.has_focus
    # gnome-shell: a host process in the middle of the table.
    chosen = next(k for k in table_keys(table) if table._rows[k].values["name"] == "gnome-shell")
    table.move_cursor(row=table_keys(table).index(chosen))
    chosen_pid = app.dashboard.selected_process().pid
    assert chosen_pid == 1039
    for _ in range(5):
        await app.refresh_once()
    await pilot.pause()
    assert table.selected_key == chosen
    assert app.dashboard.selected_process().pid == chosen_pid
    await pilot.press("o")  # re-sort: the row moves, the cursor follows it
    assert table.selected_key == chosen


async def test_tables_update_rows_in_place(dashboard: tuple[SparktopApp, Pilot]):
    app, pilot = dashboard
    await pilot.press("2")
    table = app.query_one(ContainersTable)
    calls = {"add": 0, "clear": 0}
    original_add, original_clear = table.add_row, table.clear

    def add_row(*args, **kwargs):
        calls["add"] += 1
        return original_add(*args, **kwargs)

    def clear(*args, **kwargs):
        calls["clear"] += 1
        return original_clear(*args, **kwargs)

    table.add_row, table.clear = add_row, clear  # type: ignore[method-assign]
    try:
        await app.refresh_once()
    finally:
        del table.add_row, table.clear  # the shared table's own methods again
    assert calls == {"add": 0, "clear": 0}


async def test_hidden_tables_make_their_rows_only_when_needed(dashboard: tuple[SparktopApp, Pilot]):
    app, pilot = dashboard
    table = app.query_one(ProcessesTable)
    made = []
    original = table._all_rows

    def all_rows():
        made.append(table._rows_pending is not None)
        return original()

    table._all_rows = all_rows  # type: ignore[method-assign]
    try:
        for _ in range(3):
            await app.refresh_once()  # on the dashboard: no process rows made
        assert made == []
        latest_pids = {p.pid for p in app.session.latest.processes}
        await pilot.press("3")  # shown: made once, from the latest snapshot
    finally:
        del table._all_rows  # the shared table's own method again
    assert made and made[0] is True
    assert {table.item(k).pid for k in table_keys(table)} <= latest_pids
    assert app.dashboard.selected_process() is not None


async def test_selected_container_lookup(dashboard: tuple[SparktopApp, Pilot]):
    app, pilot = dashboard
    await pilot.press("2")
    container = app.dashboard.selected_container()
    assert container is not None
    assert container.name == "ollama"  # the largest, first by total
    await pilot.press("down")  # its model's row: no container
    assert app.dashboard.selected_container() is None
    await pilot.press("down")
    assert app.dashboard.selected_container().name == "ssd-tetris-train-1"


async def test_pause_freezes_the_views_but_not_the_history(dashboard: tuple[SparktopApp, Pilot]):
    app, pilot = dashboard
    bar = app.query_one(BudgetBar)
    before = rendered(bar)
    points = len(app.session.history)
    await pilot.press("p")
    assert app.paused
    assert "PAUSED" in str(app.query_one(StatusLine).render())
    for _ in range(5):  # a frozen view that drew again would do it on the first tick
        await app.refresh_once()
    assert rendered(bar) == before
    assert len(app.session.history) == points + 5
    await pilot.press("p")
    assert not app.paused
    assert rendered(bar) != before


async def test_paused_the_header_says_when_the_frozen_data_is_from(dashboard: tuple[SparktopApp, Pilot]):
    # The header clock kept ticking over frozen numbers (issue 23 item 11): paused, it names the time of
    # the data on screen and how old it has grown, and the clock runs again on resume.
    app, pilot = dashboard
    assert app.session.latest is not None
    frozen = time.strftime("%H:%M:%S", time.localtime(app.session.latest.timestamp))
    await pilot.press("p")
    for _ in range(7):
        await app.refresh_once()
    later = time.strftime("%H:%M:%S", time.localtime(app.session.latest.timestamp))
    status = str(app.query_one(StatusLine).render())
    assert f"PAUSED — data from {frozen}, 7 s ago" in status, status
    assert later not in status  # no clock of a sample the views do not show
    await pilot.press("p")
    status = str(app.query_one(StatusLine).render())
    assert later in status and "PAUSED" not in status and "ago" not in status


async def test_history_chart_is_redrawn_when_data_moves_it_a_column():
    # A ten-minute axis: past 300 s of history the axis steps from 5 to 10 minutes, 8.45 s a column at 120
    # columns, over CHART_MIN_REDRAW_S (5 s), so a redraw at the 5 s floor fails the check. Seven minutes of
    # the demo, the worker's own (tests/fixtures/demo_session: the frame checks above read it too), not
    # sampled again. 10 ticks see one redraw, a column's seconds after the first draw: at the floor its gap
    # would be 5 s, every tick 1 s (each a redraw too soon, and two or ten of them).
    app = warm_app(warmup=SEVEN_MINUTES)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        chart = app.query_one(HistoryChart)
        drawn_at = app.dashboard._chart_drawn_at
        assert drawn_at is not None
        per_column = chart.seconds_per_column(app.session.history.times())
        assert per_column > 1.0  # ten minutes over ~70 columns: several seconds a column
        redraws = []
        for _ in range(TICKS := 10):
            await app.refresh_once()
            if app.dashboard._chart_drawn_at != drawn_at:
                redraws.append(app.dashboard._chart_drawn_at - drawn_at)
                drawn_at = app.dashboard._chart_drawn_at
        assert redraws and all(gap >= per_column * 0.999 for gap in redraws)
        assert len(redraws) <= TICKS / per_column + 1


async def test_interval_keys(dashboard: tuple[SparktopApp, Pilot]):
    app, pilot = dashboard  # the shared one: its interval is put back, whatever the checks found
    assert app.interval == 1.0
    try:
        await pilot.press("minus")
        assert app.interval == 2.0
        await pilot.press("plus", "plus")
        assert app.interval == 0.5
        assert "every 0.5 s" in str(app.query_one(StatusLine).render())
    finally:
        app._set_interval(1.0)


async def test_theme_switch_recolours_the_bar(dashboard: tuple[SparktopApp, Pilot]):
    app, pilot = dashboard  # the shared one: four themes go round the cycle back to where it started
    assert app.theme == "sparktop-dark"
    dark_free = app.query_one(BudgetBar).segments[-1].color
    await pilot.press("t")
    await pilot.pause()
    assert app.theme != "sparktop-dark"
    await pilot.pause()
    assert app.query_one(BudgetBar).segments[-1].color != dark_free
    seen = {app.theme}
    for _ in range(3):  # round the cycle by what `t` runs: a restyle of the whole app each, not a frame too
        app.action_next_theme()
        seen.add(app.theme)
    assert {"sparktop-dark", "sparktop-light", "sparktop-high-contrast", "sparktop-nvidia"} <= seen
    await pilot.pause()
    assert app.theme == "sparktop-dark" and app.query_one(BudgetBar).segments[-1].color == dark_free


async def test_command_palette_lists_the_apps_actions(demo: tuple[SparktopApp, Pilot]):
    app, _pilot = demo
    titles = {command.title for command in app.get_system_commands(app.screen)}
    assert {"Pause / resume", "Refresh faster", "Refresh slower", "Next sparktop theme", "Filter tables",
            "Help", "Show containers"} <= titles  # fmt: skip


async def test_the_palette_offers_one_way_to_pick_a_theme(dashboard: tuple[SparktopApp, Pilot]):
    """The palette listed Textual's `Theme` (every built-in theme) beside `Next sparktop theme` (t)."""
    from textual.command import CommandList, CommandPalette

    app, pilot = dashboard
    await pilot.press("ctrl+p")
    await pilot.press(*"theme")
    await pilot.pause(0.3)
    palette = app.screen
    assert isinstance(palette, CommandPalette)
    found = palette.query_one(CommandList)
    prompts = [str(found.get_option_at_index(i).prompt) for i in range(found.option_count)]
    assert any("Next sparktop theme" in p for p in prompts), prompts
    assert not any(p.split("\n")[0].strip() == "Theme" for p in prompts), prompts


def _no_overlap(app: SparktopApp) -> None:
    screen = app.screen.region
    visible = [
        w for w in app.screen.query("#bar, #creep, #gpu, #pressure, #history, Footer, #status") if w.display
    ]
    regions = [(w, w.region) for w in visible if w.region.area]
    for widget, region in regions:
        assert screen.contains_region(region), f"{widget} outside the screen"
    for i, (a, ra) in enumerate(regions):
        for b, rb in regions[i + 1 :]:
            assert not ra.overlaps(rb), f"{a} overlaps {b}"


async def test_too_small_terminal_shows_a_message_and_80x24_and_200x60_fit():
    # An app of its own, started too small, then the smallest size that is not (80x24) and a tall one: on
    # the shared one the resizes there and back (each restyling the whole app) cost twice an app's start.
    app = make_app(warmup=3)
    async with app.run_test(size=(50, 14)) as pilot:
        await pilot.pause()
        assert app.has_class("-too-small")
        message = app.query_one("#too-small")
        assert message.display and "too small" in str(message.render()), "50x14: no too-small message"
        await app.refresh_once()  # ticks go on without errors

        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.has_class("-short") and not app.has_class("-too-small"), "80x24: too small or not short"
        _no_overlap(app)
        # The essentials are on screen at 80×24: the bar with its state, GPU and pressure.
        for selector in ("#bar", "#gpu", "#pressure"):
            assert app.query_one(selector).region.height > 0, f"80x24: {selector} not on screen"
        assert app.query_one(BudgetBar).region.height >= 4, "80x24: the bar is cut"
        await pilot.press("2")
        assert app.query_one(ContainersTable).region.height >= 5, "80x24: the containers table is cut"

        await pilot.resize_terminal(200, 60)
        await pilot.press("1")
        await pilot.pause()
        assert app.has_class("-tall") and app.has_class("-wide"), "200x60: not tall and wide"
        _no_overlap(app)
        assert app.query_one("#summary").region.height > 5, "200x60: the summary is cut"


class FlakySource(SnapshotSource):
    """Demo snapshots until `fail` is set, then an exception per sample."""

    name = "flaky"

    def __init__(self) -> None:
        self.demo = DemoSource()
        self.fail = False

    def sample(self) -> Snapshot:
        if self.fail:
            raise OSError("docker socket timed out")
        return self.demo.sample()

    def close(self) -> None:
        pass


async def test_source_error_keeps_last_data_marked_stale():
    source = FlakySource()
    app = SparktopApp(source, Config(), auto_refresh=False, warmup=3, clock=lambda: 0.0)
    async with app.run_test(size=(120, 36)) as pilot:
        good = app.session.latest
        before = rendered(app.query_one(BudgetBar))
        source.fail = True
        await app.refresh_once()
        await pilot.pause()
        assert app.session.latest is good
        assert rendered(app.query_one(BudgetBar)) == before
        assert "stale: OSError: docker socket timed out" in str(app.query_one(StatusLine).render())
        assert app.query_one("#tabs").has_class("-stale")
        source.fail = False
        await app.refresh_once()
        assert app.session.stale_reason is None and not app.query_one("#tabs").has_class("-stale")


class SlowSource(SnapshotSource):
    """Blocks in sample() until released: the UI must keep answering meanwhile."""

    name = "slow"

    def __init__(self) -> None:
        self.demo = DemoSource()
        self.release = threading.Event()
        self.calls = 0

    def sample(self) -> Snapshot:
        self.calls += 1
        if self.calls > 1:
            self.release.wait(5)
        return self.demo.sample()

    def close(self) -> None:
        self.release.set()


async def test_sampling_runs_off_the_event_loop():
    source = SlowSource()
    now = [100.0]
    app = SparktopApp(source, Config(interval=0.1), clock=lambda: now[0])
    async with app.run_test(size=(80, 24)) as pilot:  # no check here reads a width
        # The first sample arrives through the worker.
        for _ in range(50):
            await pilot.pause(0.05)
            if app.session.latest is not None:
                break
        assert app.session.latest is not None
        # The second blocks in its thread; the UI still handles keys, and says the data is late.
        started = time.monotonic()
        await pilot.press("p")
        assert app.paused and time.monotonic() - started < wall_limit(2, defect=30)  # the sample never ends
        now[0] += 60
        for _ in range(50):  # the next timer tick notices, however loaded the machine
            await pilot.pause(0.05)
            if app.session.stale_reason:
                break
        assert app.session.stale_reason and "no data for" in app.session.stale_reason
        source.release.set()
        for _ in range(50):
            await pilot.pause(0.05)
            if app.session.stale_reason is None:
                break
        assert app.session.stale_reason is None


async def test_on_first_frame_runs_once_when_data_is_on_screen():
    calls = []
    app = SparktopApp(DemoSource(), Config(), on_first_frame=lambda: calls.append(app.session.latest))
    async with app.run_test(size=(80, 24)) as pilot:  # no check here reads a width
        for _ in range(40):
            await pilot.pause(0.05)
            if calls:
                break
        assert len(calls) == 1 and calls[0] is not None  # after a sample was drawn
        assert "Memory pool" in rendered(app.query_one(BudgetBar))
        await app.refresh_once()
        await pilot.pause()
        assert len(calls) == 1


async def test_on_first_frame_runs_even_when_no_data_comes():
    source = SlowSource()
    source.calls = 1  # every sample blocks until released
    calls = []
    app = SparktopApp(source, Config(), on_first_frame=lambda: calls.append(app.session.latest))
    app.first_frame_wait_s = 0.2
    async with app.run_test(size=(80, 24)) as pilot:  # no check here reads a width
        for _ in range(100):  # the 0.2 s timer, however loaded the machine
            await pilot.pause(0.05)
            if calls:
                break
        assert calls == [None]
        source.release.set()


class EndingSource(SnapshotSource):
    name = "replay"

    def __init__(self, n: int) -> None:
        self.demo = DemoSource()
        self.left = n

    def sample(self) -> Snapshot:
        if self.left <= 0:
            raise SourceExhausted()
        self.left -= 1
        return self.demo.sample()

    def close(self) -> None:
        pass


async def test_replay_end_keeps_the_last_frame():
    app = SparktopApp(EndingSource(10), Config(), auto_refresh=False, warmup=20, clock=lambda: 0.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert app.session.source_ended and app.session.latest is not None
        assert "end of recording" in str(app.query_one(StatusLine).render())


async def test_no_gpu_is_explained_in_one_line() -> None:
    """The GPU panel's text on a machine without NVML, drawn by the panel's own show() as the dashboard calls
    it, over the session a dashboard holds after five samples (warmed up as SparktopApp warms up: each sample
    ingested, then analysed once); no app: what is checked is the panel's text and the session."""
    source = NoGpuDemo("audio")
    session = Session.for_config(Config(), clock=lambda: 0.0)
    for _ in range(5):
        session.ingest(source.sample(), analyse=False)
    session.analyse()
    snapshot = session.latest
    assert snapshot is not None
    panel = GpuPanel()
    panel.show(snapshot.gpu, session.gpu_series, "GiB", default_palette().spark, now=snapshot.timestamp)
    text = rendered(panel)
    assert text.startswith("No NVIDIA GPU / NVML: libnvidia-ml.so.1 not found")
    assert "\n" not in text
    assert snapshot.accounting is not None  # computed when a source leaves it out


async def test_units_gb_and_thresholds_from_config() -> None:
    session = demo_session(warmup=3, config=Config(units="GB", safe_gb=60, max_gb=90)).session
    text = rendered(budget_bar(session, units="GB"))
    assert "pool 130.7 GB" in text
    assert "safe 60 GB" in text and "aggressive 90 GB" in text
    assert "GiB" not in text


async def test_bad_theme_name_is_reported_and_default_used() -> None:
    """The theme is chosen as the app is made; the messages it keeps for the start are shown as toasts and
    on `M` (tests/ui/test_settings_ui.py::
    test_bad_user_files_are_said_kept_on_the_messages_screen_and_the_app_keeps_working)."""
    app = make_app(warmup=3, config=Config(theme="no-such-theme"))
    assert app.theme == "sparktop-dark"
    assert any("no-such-theme" in message for message in app._startup_messages)
