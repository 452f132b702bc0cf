"""The dashboard screen: what `sparktop` shows, and the keys that act on it.

The app (sparktop/ui/app.py) samples the source into the Session and tells this screen to redraw (`redraw`,
`update_status`); the screen lays out the tabs, draws every view from the session, and answers the keys of
the tables and tabs (filter, sort, all rows, the stop keys' selected row, the What-if pane). It is the app's
default screen; every other screen of the app is a modal dialog over it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Protocol

from textual.actions import SkipAction
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Input, Static, TabbedContent, TabPane

from sparktop.analysis.headroom import engine_headroom
from sparktop.analysis.lines import LineChoice
from sparktop.analysis.pressure import PressureLevel
from sparktop.analysis.served import ModelPart, model_rows, served_split, split_models
from sparktop.analysis.slowdown import slowdown_lines
from sparktop.analysis.trend import collecting_s
from sparktop.core.columns import CONTAINER_COLUMN_SPECS, PROCESS_COLUMN_SPECS
from sparktop.core.format import fmt_available_pct, fmt_size
from sparktop.core.machine import machine_label
from sparktop.core.snapshot import ContainerInfo, ProcessInfo, Snapshot
from sparktop.session.rows import Row, container_rows, process_rows, unmeasurable_columns
from sparktop.session.session import Session
from sparktop.settings.config import Config
from sparktop.sources.snapshot_source import SnapshotSource
from sparktop.ui.stop_keys import StopActions
from sparktop.ui.terminal_check import MIN_HEIGHT, MIN_WIDTH
from sparktop.ui.themes import Palette
from sparktop.ui.widgets.budget_bar import BudgetBar
from sparktop.ui.widgets.consumer_summary import ConsumerSummary
from sparktop.ui.widgets.creep_alerts import CreepAlerts
from sparktop.ui.widgets.footer import Footer
from sparktop.ui.widgets.gpu_memory_bar import GpuMemoryBar
from sparktop.ui.widgets.gpu_panel import GpuPanel
from sparktop.ui.widgets.history_chart import HistoryChart
from sparktop.ui.widgets.models_panel import ModelsPanel
from sparktop.ui.widgets.pressure_panel import PressurePanel
from sparktop.ui.widgets.status_line import StatusLine
from sparktop.ui.widgets.tables import ConsumerTable, empty_note

# Imported when used, not before the first frame: a replay's player, the What-if tab (and its catalog).
if TYPE_CHECKING:
    from sparktop.session.playback import Playback
    from sparktop.ui.whatif import WhatIfContext, WhatIfPane

# The chart costs a few ms a draw (braille cells: ~3.5 ms at 120x36, where plotext took 25-30), the most of
# any view: it (minutes to hours wide) is drawn again when new data moves it by a column, and never more
# often than this.
CHART_MIN_REDRAW_S = 5.0
CHART_TOP_N = 4  # consumers drawn in the history chart
_DIGITS = re.compile(r"\d+")
STOP_ACTIONS = frozenset({"stop_container", "stop_project", "terminate", "kill"})


class Banner(NamedTuple):
    text: str
    forecast: bool  # the freeze forecast's warning, not critical pressure


def pressure_banner(session: Session, units: str) -> Banner | None:
    """The line over every tab that no one may miss: critical memory pressure with its facts, or, short of
    critical, the freeze forecast while there is still time to act (10 min, 2 min); None when neither."""
    latest, assessment = session.latest, session.assessment
    if latest is None:
        return None
    if session.level == PressureLevel.CRITICAL and assessment is not None:
        available = fmt_size(latest.memory.available, units)
        facts = [f"{available} available ({fmt_available_pct(assessment.available_pct)})"]
        if assessment.full_avg10 is not None:
            facts.append(f"PSI full {assessment.full_avg10:.0f} %")
        return Banner(
            f"■ CRITICAL MEMORY PRESSURE: {', '.join(facts)} — free memory now, before the machine freezes",
            False,
        )
    forecast = session.forecast
    if session.level != PressureLevel.CRITICAL and forecast is not None and forecast.warning:
        return Banner(f"▲ {forecast.message()} — act before the machine freezes", True)
    return None


class ContainersTable(ConsumerTable[ContainerInfo | ModelPart]):
    pass


class ProcessesTable(ConsumerTable[ProcessInfo | ModelPart]):
    pass


class DashboardHost(Protocol):
    """What the dashboard reads from its app (SparktopApp): the data, and the app's own state it shows."""

    config: Config
    session: Session
    source: SnapshotSource
    stops: StopActions
    read_only: bool
    paused: bool
    frozen: Snapshot | None  # paused: the snapshot the views were frozen on
    interval: float
    playback: Playback | None  # a recording's player: speed and seek

    @property
    def palette(self) -> Palette: ...

    def dashboard_ready(self) -> None:
        """The dashboard's widgets are mounted: the app may feed and draw it."""


class DashboardScreen(Screen[None]):
    # Every key of the dashboard, in the order the footer shows them; the app's own actions (quit, help,
    # pause, interval, theme, messages, history, a replay's player) are named `app.…`. The app's other
    # screens are modal dialogs, which keep an app's keys from reaching past them, so these keys act on this
    # screen only.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "app.quit", "Quit"),
        Binding("question_mark", "app.help", "Help"),
        # Priority: it runs as `/` arrives, before the keys typed after it are handed out, so they reach
        # the box it opens (`/ollama` in one go lost `o`, a sort, and `a`, all rows).
        Binding("slash", "filter", "Filter", priority=True),
        Binding("o", "sort_next", "Sort"),
        Binding("O", "sort_reverse", "Reverse sort", show=False),
        Binding("p", "app.toggle_pause", "Pause"),
        Binding("plus,equals_sign", "app.faster", "Interval", key_display="+/-"),
        Binding("minus", "app.slower", "Slower", show=False),
        Binding("t", "app.next_theme", "Theme", show=False),
        Binding("M", "app.messages", "Messages", show=False),
        Binding("1", "show_tab('dashboard')", "Dashboard", show=False),
        Binding("2", "show_tab('containers')", "Containers", show=False),
        Binding("3", "show_tab('processes')", "Processes", show=False),
        Binding("4,w", "show_tab('whatif')", "What-if", show=False),
        Binding("5", "show_tab('models')", "Models", show=False),
        Binding("B", "app.write_history", "Write history", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("a", "toggle_minor", "All rows", show=False),
        Binding("s", "stop_container", "Stop"),
        Binding("S", "stop_project", "Stop project", show=False),
        Binding("k", "terminate", "SIGTERM", show=False),
        Binding("K", "kill", "Kill", show=False),
        # Read-only or a replay: the keys above are off (and out of the footer); these say why.
        Binding("s,S,k,K", "explain_no_stop", "Stop", show=False),
        # A replay's player (the app's check_action: off, and out of the footer, on every other source).
        Binding("right_square_bracket", "app.replay_faster", "Speed", key_display="[/]"),
        Binding("left_square_bracket", "app.replay_slower", "Slower", show=False),
        Binding("right,full_stop", "app.seek(10)", "Seek", key_display="←/→"),
        Binding("left,comma", "app.seek(-10)", "Back 10 s", show=False),
        Binding("greater_than_sign", "app.seek(60)", "On 1 min", show=False),
        Binding("less_than_sign", "app.seek(-60)", "Back 1 min", show=False),
        Binding("right_curly_bracket", "app.seek(600)", "On 10 min", show=False),
        Binding("left_curly_bracket", "app.seek(-600)", "Back 10 min", show=False),
        Binding("home", "app.seek_to('start')", "Start", show=False),
        Binding("end", "app.seek_to('end')", "End", show=False),
        Binding("j", "app.goto_time", "Go to", show=False),
    ]
    # The actions above that are this screen's: Screen's own (ctrl+c copies a selection) stay as Textual has
    # them.
    OWN_ACTIONS = frozenset(
        binding.action.partition("(")[0]
        for binding in BINDINGS
        if isinstance(binding, Binding) and not binding.action.startswith("app.")
    )

    def __init__(self, host: DashboardHost) -> None:
        super().__init__()
        self.host = host
        self._chart_drawn_at: float | None = None
        self._chart_labels: dict[str, str] = {}  # consumer key -> its name, as the chart on show has them
        self._whatif: WhatIfPane | None = None  # built when its tab first opens (whatif_pane)

    # -- layout --------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        config = self.host.config
        with Vertical(id="top"):
            yield StatusLine(id="status")
            yield Static("", id="critical-banner", markup=False)
        with TabbedContent(initial="dashboard", id="tabs"):
            with TabPane("Dashboard", id="dashboard"):
                yield BudgetBar(id="bar")
                yield GpuMemoryBar(id="gpu-bar")
                yield CreepAlerts(id="creep")
                with Horizontal(id="panels"):
                    with Vertical(id="gauges"):
                        yield GpuPanel(id="gpu")
                        yield PressurePanel(id="pressure")
                        yield ConsumerSummary(id="summary")
                    yield HistoryChart(id="history")
            with TabPane("Containers", id="containers"):
                yield Static("", id="containers-empty", classes="empty-note", markup=False)
                yield ContainersTable(
                    CONTAINER_COLUMN_SPECS, config.container_columns, "total", id="containers-table"
                )
            with TabPane("Processes", id="processes"):
                yield Static("", id="processes-empty", classes="empty-note", markup=False)
                yield ProcessesTable(
                    PROCESS_COLUMN_SPECS, config.process_columns, "total", id="processes-table"
                )
            # Empty until first opened (whatif_pane): its catalog, lists and bar were a fifth of the start's
            # work and memory, for a tab many sessions never open.
            yield TabPane("What-if", id="whatif")
            with TabPane("Models", id="models"), VerticalScroll():
                yield ModelsPanel(id="models-panel")
        yield Input(placeholder="filter containers and processes (Enter keeps, Esc clears)", id="filter")
        yield Static("", id="too-small", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._on_theme_changed)
        self.query_one(ConsumerSummary).border_title = "Consumers"
        self.apply_size(self.app.size.width, self.app.size.height)
        self.host.dashboard_ready()

    def apply_size(self, width: int, height: int) -> None:
        """Layout classes by terminal size, on the app (app.tcss; the dialogs follow them too): the CSS
        collapses panels; below the minimum only a message."""
        app = self.app
        too_small = width < MIN_WIDTH or height < MIN_HEIGHT
        before = app.classes
        # One restyle of the whole screen for all of them, not one each (~40 ms at an 80×24 start).
        app.set_class(too_small, "-too-small", update=False)
        app.set_class(height < 32, "-short", update=False)
        app.set_class(height >= 44, "-tall", update=False)
        app.set_class(width < 100, "-narrow", update=False)
        app.set_class(width >= 160, "-wide", update=False)
        if app.classes != before:
            app.update_node_styles()
        if too_small:
            self.query_one("#too-small", Static).update(
                f"Terminal too small: {width}×{height}.\nsparktop needs at least {MIN_WIDTH}×{MIN_HEIGHT}."
                "\nEnlarge the window, or press q to quit."
            )
        bar = self.query_one(BudgetBar)
        bar.bar_rows = 2 if height >= 44 else 1
        bar.legend_lines = 4 if height >= 44 else (3 if height >= 32 else 2)
        bar.detailed = width >= 140
        bar.show_scale = height >= 32
        self.query_one(GpuMemoryBar).legend_lines = 1 if height < 32 else 2
        self.query_one(PressurePanel).compact = height < 32
        self.forget_chart()
        if self.host.session.latest is not None:
            self.redraw()

    # -- drawing -------------------------------------------------------------------------------------------

    def redraw(self) -> None:
        """Redraw every view from the session's latest snapshot (the banner and status always; the rest unless
        paused)."""
        host = self.host
        session = host.session
        snapshot = session.latest
        if snapshot is None:
            return
        self.set_stale(False)
        self._update_banner()
        if host.paused:
            self.update_status()
            return
        units, palette = host.config.units, host.palette
        accounting = snapshot.accounting
        assert accounting is not None
        total = snapshot.memory.total
        bar = self.query_one(BudgetBar)
        # A model server's slice is split into one segment per loaded model (the rest stays the server's);
        # the tables split its row the same way, from the same split.
        split = split_models(snapshot) or accounting
        lines = session.lines  # on this machine's pool, as every view has them (analysis/lines.py)
        bar.show(split, total, lines.safe_bytes, lines.max_bytes, units, palette)
        colors = {seg.key: seg.color for seg in bar.segments}
        self.query_one(GpuMemoryBar).show(accounting.gpu_memory, colors, units, palette)
        if self._whatif is not None:
            self._whatif.refresh_baseline(snapshot)
        if self.app.has_class("-tall"):
            self.query_one(ConsumerSummary).show(bar.segments, self._rate, units, palette.warn)
        collecting = collecting_s(session.history, session.creep_window_s)
        self.query_one(CreepAlerts).show_alerts(session.creep, units, collecting)
        self.query_one(GpuPanel).show(
            snapshot.gpu, session.gpu_series, units, palette.spark, now=snapshot.timestamp
        )
        assessment = session.assessment
        if assessment is not None:
            series = session.pool_series
            self.query_one(PressurePanel).show(
                snapshot.memory,
                series,
                assessment.level,
                assessment.reasons,
                units,
                palette,
                engine=engine_headroom(snapshot.memory) if snapshot.gpu.unified_memory else None,
            )
        self.query_one(ModelsPanel).show(
            *model_rows(snapshot),
            units,
            palette.warn,
            slowdowns=slowdown_lines(snapshot),
            asking="servers" in snapshot.pending,
        )
        if self.query_one(TabbedContent).active == "dashboard":
            self._redraw_chart()
        active = self.query_one(TabbedContent).active

        served = functools.cache(lambda: served_split(snapshot, split))  # for either table, made once

        def containers() -> list[Row[ContainerInfo | ModelPart]]:
            return host.stops.mark_rows(container_rows(snapshot, self._rate, served()))

        def processes() -> list[Row[ProcessInfo | ModelPart]]:
            return process_rows(snapshot, session.process_rate_per_min, served())

        hidden = unmeasurable_columns(snapshot)
        for table, rows in ((self.query_one(ContainersTable), containers),
                            (self.query_one(ProcessesTable), processes)):  # fmt: skip
            table.warn_color = palette.warn
            table.set_hidden(hidden)
            # A table on a hidden tab makes its rows only when shown or asked for a row.
            table.set_rows(rows, units, visible=active == table.parent.id)  # type: ignore[arg-type, union-attr]
        self.update_status()  # last: the count of hidden rows comes from the tables just drawn

    def _redraw_chart(self, force: bool = False) -> None:
        """The history chart, its consumers in the same colours as their bar segments. Redrawn when the new
        data moves it by at least a column, and at most every CHART_MIN_REDRAW_S (the costliest view to
        draw)."""
        session = self.host.session
        assert session.latest is not None
        chart = self.query_one(HistoryChart)
        history = session.history
        times = history.times()
        # A name that arrived for a consumer on the chart (a container shown by id until Docker answered) is
        # drawn at once. Consumers swapping places among the largest are not, nor a count in a name moving
        # ("other host processes (112)"): on a busy machine either happens most ticks, and drew the chart
        # (the costliest view) every tick instead of every few seconds.
        renamed = any(
            _DIGITS.sub("#", history.label(key)) != _DIGITS.sub("#", label)
            for key, label in self._chart_labels.items()
        )
        if not force and times and self._chart_drawn_at is not None and not renamed:
            per_column = chart.seconds_per_column(times)
            interval = self.host.interval
            if times[-1] - self._chart_drawn_at < max(interval, per_column, CHART_MIN_REDRAW_S) * 0.999:
                return
        self._chart_drawn_at = times[-1] if times else None
        self._chart_labels = {key: history.label(key) for key in history.top_keys(CHART_TOP_N)}
        colors = {seg.key: seg.color for seg in self.query_one(BudgetBar).segments}
        total = session.latest.memory.total
        safe, aggressive = session.safe_bytes, session.max_bytes
        chart.redraw(
            session.history, safe, aggressive, total, self.host.config.units, top_n=CHART_TOP_N, colors=colors
        )

    def forget_chart(self) -> None:
        """The next redraw draws the history chart whatever the data moved (a new size, theme or session)."""
        self._chart_drawn_at = None

    def _redraw_chart_if_shown(self) -> None:
        shown = self.query_one(TabbedContent).active == "dashboard"
        if shown and self.host.session.latest is not None and not self.host.paused:
            self._redraw_chart(force=True)

    def _rate(self, key: str) -> float | None:
        return self.host.session.rate_per_min(key)

    def set_stale(self, stale: bool) -> None:
        self.query_one("#tabs").set_class(stale, "-stale")

    def show_source_ended(self) -> None:
        # No more data will come: the creep watch's "collecting data (~3 min to go)" would wait forever.
        self.query_one(CreepAlerts).show_alerts(self.host.session.creep, self.host.config.units, None)

    def _update_banner(self) -> None:
        session = self.host.session
        banner = self.query_one("#critical-banner", Static)
        shown = pressure_banner(session, self.host.config.units)
        if shown is not None:
            banner.update(Content(shown.text))
        banner.set_class(shown is not None, "-show")
        banner.set_class(shown is not None and shown.forecast, "-forecast")
        if session.entered_critical():
            self.app.bell()

    def update_status(self) -> None:
        host, session = self.host, self.host.session
        source = host.source.name
        modes = [m for m, on in (("demo", source == "demo"), ("replay", source == "replay"),
                                 ("read-only", host.read_only)) if on]  # fmt: skip
        if self.app.is_web:
            # `sparktop web`: the header says whether this browser session can act on the machine.
            modes = ["browser", *modes] if host.read_only else ["browser", *modes, "actions allowed"]
        progress = (
            host.playback.progress(session.latest)
            if host.playback is not None
            else host.source.progress(session.latest)
        )
        if progress is not None:  # a recording: where in it, its length, speed and its own interval
            source = progress.describe()
        if host.playback is not None and host.playback.pending_s is not None:
            from sparktop.sources.replay import format_clock

            source += f" · seeking to {format_clock(host.playback.pending_s)}…"
        shown, age = session.latest, None
        if host.paused and host.frozen is not None:  # the views show the frozen snapshot: so does the clock
            shown = host.frozen
            age = (session.latest.timestamp if session.latest else shown.timestamp) - shown.timestamp
        self.query_one(StatusLine).show(
            snapshot=shown,
            data_age_s=age,
            source=source,
            modes=modes,
            machine=machine_label(session.latest.gpu) if session.latest is not None else None,
            interval=host.interval,
            paused=host.paused,
            stale=session.stale,
            filter_text=self.query_one(ContainersTable).filter_text,
            hidden_rows=self._hidden_rows(),
            source_problems=host.source.warnings,
        )
        docker = session.latest.docker if session.latest is not None else None
        asking = session.latest is not None and session.latest.names_pending
        for table, things, why in ((self.query_one(ContainersTable), "containers", docker),
                                   (self.query_one(ProcessesTable), "processes", None)):  # fmt: skip
            note = self.query_one(f"#{table.parent.id}-empty", Static)  # type: ignore[union-attr]
            text = (
                empty_note(table, things, why, asking and why is not None)
                if session.latest is not None
                else ""
            )
            if note.display != bool(text) or (text and str(note.render()) != text):  # steady: no layout
                note.update(text)
                note.display = bool(text)

    def _hidden_rows(self) -> int:
        """Rows the table on screen leaves out because they hold no memory (`a` shows them)."""
        table = self._active_table()
        return table.minor_hidden if table is not None and not table.show_minor else 0

    def _on_theme_changed(self, _theme: object) -> None:
        self.forget_chart()
        if self.host.session.latest is not None:
            self.redraw()

    # -- selection (for actions that act on a row) ---------------------------------------------------------

    def selected_container(self) -> ContainerInfo | None:
        item = self.query_one(ContainersTable).selected_item()
        return item if isinstance(item, ContainerInfo) else None

    def selected_process(self) -> ProcessInfo | None:
        item = self.query_one(ProcessesTable).selected_item()
        return item if isinstance(item, ProcessInfo) else None

    def _selected_row(self) -> ContainerInfo | ProcessInfo | ModelPart | None:
        """The row the stop and signal keys act on: the selection of the table on screen (a model's row
        is passed as it is: the keys refuse it, saying why)."""
        table = self._active_table()
        return table.selected_item() if table is not None else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in self.OWN_ACTIONS:
            return True
        if self.app.has_class("-too-small"):
            # Only the "too small" message is on screen: no key may act on the tabs and tables behind it.
            return False
        if action in ("filter", "sort_next") and self._on_whatif():
            return False  # the tables' keys: off the What-if footer (its own `/` finds in the catalog)
        if action in STOP_ACTIONS:
            return self.host.stops.available
        if action == "explain_no_stop":
            return not self.host.stops.available
        return True

    def _on_whatif(self) -> bool:
        try:
            return self.query_one(TabbedContent).active == "whatif"
        except Exception:  # before the tabs are mounted
            return False

    def action_explain_no_stop(self) -> None:
        self.host.stops.explain_unavailable()

    def action_stop_container(self) -> None:
        self.host.stops.stop(self._selected_row())

    def action_stop_project(self) -> None:
        self.host.stops.stop_project(self._selected_row())

    def action_terminate(self) -> None:
        self.host.stops.terminate(self._selected_row())

    def action_kill(self) -> None:
        self.host.stops.kill(self._selected_row())

    def _active_table(self) -> ConsumerTable | None:
        active = self.query_one(TabbedContent).active
        if active == "containers":
            return self.query_one(ContainersTable)
        if active == "processes":
            return self.query_one(ProcessesTable)
        return None

    # -- actions -------------------------------------------------------------------------------------------

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "whatif":
            self.whatif_pane()
        if event.pane.id == "dashboard" and self.host.session.latest is not None and not self.host.paused:
            # After the layout: a pane that was hidden has no size yet, and the chart's axes follow its size.
            self.call_after_refresh(self._redraw_chart_if_shown)
        self.refresh_bindings()  # the footer follows the tab (What-if hides the tables' keys)
        table = self._active_table()
        if table is not None:
            table.flush()
        self.update_status()
        if table is not None and not self.query_one("#filter").has_class("-show"):
            table.focus()

    def action_show_tab(self, tab: str) -> None:
        tabs = self.query_one(TabbedContent)
        if tabs.active == tab:
            return  # already shown: `w` on the What-if tab took the keys away from its catalog
        focused = self.focused
        # A widget keeping focus inside the pane being left (the What-if catalog) would pull the tabs back
        # to its own pane; the Dashboard has nothing focusable to take the focus over.
        leaving = self.query_one(f"#{tabs.active}") if tabs.active else None
        if focused is not None and leaving is not None and focused in leaving.walk_children():
            self.set_focus(None)
        tabs.active = tab

    def action_filter(self) -> None:
        if isinstance(self.focused, Input) or len(self.app.screen_stack) > 1:
            raise SkipAction  # typed into a text box, or on a dialog: not ours
        box = self.query_one("#filter", Input)
        box.add_class("-show")
        if self.query_one(TabbedContent).active == "dashboard":
            self.query_one(TabbedContent).active = "containers"
        self.set_focus(box)  # at once: the letters typed right after `/` are the filter's

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if box.value or box.has_class("-show"):
            box.value = ""
            self._apply_filter("")
            box.remove_class("-show")
            table = self._active_table()
            if table is not None:
                table.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self._apply_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.input.remove_class("-show")
            table = self._active_table()
            if table is not None:
                table.focus()

    def _apply_filter(self, text: str) -> None:
        self.query_one(ContainersTable).set_filter(text)
        self.query_one(ProcessesTable).set_filter(text)
        self.update_status()

    def action_toggle_minor(self) -> None:
        """Show or hide the rows that hold no memory (kernel threads, empty containers)."""
        show = not self.query_one(ProcessesTable).show_minor
        for table in (self.query_one(ContainersTable), self.query_one(ProcessesTable)):
            table.set_show_minor(show)
        self.update_status()

    def action_sort_next(self) -> None:
        table = self._active_table()
        if table is not None:
            table.next_sort_column()

    def action_sort_reverse(self) -> None:
        table = self._active_table()
        if table is not None:
            table.reverse_sort()

    def whatif_pane(self) -> WhatIfPane:
        """The What-if pane, mounted into its tab the first time it is asked for (opening the tab asks)."""
        if self._whatif is None:
            from sparktop.ui.whatif import WhatIfPane

            self._whatif = WhatIfPane(context=self._whatif_context, id="whatif-pane")
            self.query_one("#whatif", TabPane).mount(self._whatif)
        return self._whatif

    def _whatif_context(self) -> WhatIfContext:
        from sparktop.ui.whatif import WhatIfContext

        cfg = self.host.config
        return WhatIfContext(self.host.session.latest, LineChoice.of(cfg), cfg.units, self.host.palette)

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The command palette's entries for the tables and tabs (the app lists them among its own)."""
        yield SystemCommand(
            "Filter tables", "Filter containers and processes by text (/)", self.action_filter
        )
        yield SystemCommand(
            "Sort by next column", "On the Containers / Processes tab (o)", self.action_sort_next
        )
        yield SystemCommand("Reverse sort", "On the Containers / Processes tab (O)", self.action_sort_reverse)
        yield SystemCommand("Show dashboard", "The budget bar, GPU, pressure and history (1)",
                            lambda: self.action_show_tab("dashboard"))  # fmt: skip
        yield SystemCommand(
            "Show containers", "The containers table (2)", lambda: self.action_show_tab("containers")
        )
        yield SystemCommand(
            "Show processes", "The processes table (3)", lambda: self.action_show_tab("processes")
        )
        yield SystemCommand(
            "Show what-if planner", "Plan workloads against the memory budget (w)",
            lambda: self.action_show_tab("whatif"),
        )  # fmt: skip
