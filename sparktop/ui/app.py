"""The live dashboard: one Textual app over any snapshot source (live, demo, replay).

Data flow: a timer asks a thread worker for `source.sample()` every `config.interval` seconds; the snapshot
comes back to the event loop with `call_from_thread`, goes into the Session (sparktop/session/session.py:
accounting, history, pressure, creep, trends, sparkline series, staleness), and the views are redrawn from the
session by the app's one screen (sparktop/ui/screens/dashboard.py: layout, views, the tables' and tabs' keys).
A failing or slow source never blocks the loop: the last good snapshot stays on screen, marked stale with the
reason.

Tests and screenshots drive it without timers: `SparktopApp(..., auto_refresh=False, warmup=N)` feeds N
samples before the first frame, and `await app.refresh_once()` takes one more sample synchronously.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import get_current_worker

from sparktop.analysis.lines import LineChoice
from sparktop.core.safe_text import error_line
from sparktop.core.snapshot import Snapshot
from sparktop.session.message_log import MessageLog
from sparktop.session.session import Session
from sparktop.settings.config import Config
from sparktop.sources.snapshot_source import SnapshotSource, SourceExhausted, take_sample
from sparktop.stopping.stop_book import StopBook
from sparktop.ui.exit_signals import end_on_signals
from sparktop.ui.screens.dashboard import DashboardScreen
from sparktop.ui.stop_keys import StopActions
from sparktop.ui.styles_cache_leak import release_retained_styles
from sparktop.ui.themes import DEFAULT_THEME, Palette, SparkTheme, derive_palette, load_themes
from sparktop.ui.toasts import PlainToastApp

if TYPE_CHECKING:
    from sparktop.session.playback import Batch, Playback

INTERVALS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
# A read-only browser session (`sparktop web`): its user is whoever has the page, not this machine's user.
NO_FILES = "read-only browser session: no files on the server"


def tick_failure(exc: BaseException, interval: float) -> str:
    """One line for the status bar when a tick failed: what, and that it is tried again."""
    return f"this update failed ({error_line(exc)}); retrying every {interval:g} s"


class SparktopApp(PlainToastApp):
    CSS_PATH = "app.tcss"
    TITLE = "sparktop"
    ENABLE_COMMAND_PALETTE = True
    AUTO_FOCUS = None  # nothing to type into at start; the keys are the dashboard screen's bindings
    first_frame_wait_s = 5.0  # `on_first_frame` runs by then even if no data came

    BINDINGS: ClassVar[list[BindingType]] = [
        # Textual's ctrl+c only says "press ctrl+q"; in a top-like tool it quits (a selection is copied: the
        # screen's own ctrl+c comes first). Every other key is the dashboard screen's (DashboardScreen).
        Binding("ctrl+c", "quit", "Quit", show=False),
    ]
    REPLAY_ACTIONS = frozenset({"replay_faster", "replay_slower", "seek", "seek_to", "goto_time"})

    def __init__(
        self,
        source: SnapshotSource,
        config: Config | None = None,
        read_only: bool = False,
        clock: Callable[[], float] | None = None,
        *,
        auto_refresh: bool = True,
        warmup: int = 0,
        startup_messages: Iterable[str] = (),
        user_theme_dir: Path | None = None,
        on_first_frame: Callable[[], None] | None = None,
        exit_on_signals: Iterable[int] = (),
        files_allowed: bool = True,
        replay_speed: int = 1,
        replay_start: float | None = None,
    ) -> None:
        """`on_first_frame`: called once, when the first frame with data is on screen (or after
        `first_frame_wait_s` without data): the CLI turns the garbage collector back on there.
        `exit_on_signals` (the CLI passes SIGTERM, SIGHUP, SIGINT): these end the app the way `q` does, so
        the terminal is restored, and it returns 128 + the signal number as a killed process would.
        `files_allowed` False (a read-only `sparktop web` session, whose user is not this machine's): no key
        reads or writes a file here (plan save / load, `B`). `replay_speed`: snapshots a tick at the start
        (sparktop/session/playback.py), `replay_start`: seconds into the recording to start at (negative:
        before its end); a replay only."""
        super().__init__()
        self._exit_signals = tuple(exit_on_signals)
        self.source = source
        self.config = config or Config()
        self.read_only = read_only or self.config.read_only
        self.files_allowed = files_allowed
        self.clock = clock or time.time
        self.auto_sample = auto_refresh
        self.warmup = max(0, int(warmup))
        self.interval = self.config.interval
        self.paused = False
        self.frozen: Snapshot | None = None  # paused: the snapshot the views were frozen on
        self.session = self._new_session()
        self.playback: Playback | None = None  # a recording's player: speed and seek
        # The player only for a recording: a live or demo start does not import it before its first frame.
        if source.name == "replay":
            from sparktop.session.playback import Playback
            from sparktop.sources.replay import ReplaySource

            if isinstance(source, ReplaySource):
                self.playback = Playback(source, self._new_session, speed=replay_speed)
        self._replay_start = replay_start
        self._index_problem_said = False
        self._startup_messages = list(startup_messages)
        # What the app itself said (toasts that warned, actions): the session keeps what the data said.
        self._said = MessageLog()
        self._on_first_frame = on_first_frame
        self._spark_themes, theme_errors = load_themes(user_theme_dir)
        self._startup_messages.extend(theme_errors)
        for spark in self._spark_themes.values():
            self.register_theme(spark.theme)
        wanted = self.config.theme
        if wanted not in self.available_themes:
            self._startup_messages.append(f"theme {wanted!r} not found; using {DEFAULT_THEME}")
            wanted = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
        self.theme = wanted
        self._polling = False
        self._timer: Timer | None = None
        cfg = self.config
        book = StopBook(source, timeout=cfg.stop_timeout, read_only=self.read_only, units=cfg.units)
        self.dashboard = DashboardScreen(self)
        self.stops = StopActions(self, book, on_change=self.dashboard.redraw)

    def toast_shown(self, message: str, title: str, severity: SeverityLevel) -> None:
        if severity in ("warning", "error"):  # kept for the messages screen (M): toasts fade
            self.remember(message, title)

    def remember(self, message: str, title: str = "") -> None:
        """Keep a message for the messages screen (M) without a toast (the 4th and later of a burst, an
        action's outcome)."""
        self._said.add(self.clock(), title, message)

    @property
    def messages(self) -> list[tuple[str, str, str]]:
        """(time, title, text) of every message, oldest first: the app's own (toasts that warned, actions)
        and the session's (alerts raised and cleared, the exhaustion banner, pressure, throttles, problems:
        sparktop/session/message_log.py)."""
        merged = sorted([*self._said, *self.session.messages], key=lambda m: m.at)
        return [(time.strftime("%H:%M:%S", time.localtime(m.at)), m.title, m.text) for m in merged]

    # -- the screen ----------------------------------------------------------------------------------------

    def get_default_screen(self) -> DashboardScreen:
        return self.dashboard

    def on_load(self) -> None:
        # Before the driver takes the terminal over (alternate screen, mouse, hidden cursor): from here on a
        # signal's default action (die at once) would leave all of that behind for the user to `reset`.
        end_on_signals(self, self._exit_signals, release=self.source.close)

    def dashboard_ready(self) -> None:
        """Called by the dashboard once its widgets are mounted (its on_mount, which comes after the app's):
        the start-up messages, the warm-up samples, the first frame, the timer."""
        for message in self._startup_messages:
            self.notify(message, title="sparktop", severity="warning", timeout=12, markup=False)
        if self._startup_messages:
            self.notify("M shows these messages again", timeout=12, markup=False)
        for _ in range(self.warmup):
            sampled = take_sample(self.source)
            if sampled.snapshot is None:  # the recording's end, or a failed sample: said as a tick says it
                self._receive(None, sampled.error, sampled.ended)
                break
            self._ingest(sampled.snapshot, analyse=False)  # creep and forecast once, for the last (below)
        if self.warmup:
            self.session.analyse()
        if self.session.latest is not None:
            self.dashboard.redraw()
        self.dashboard.update_status()
        if self._on_first_frame is not None:
            self.set_timer(self.first_frame_wait_s, self._first_frame_done)
        if self.playback is not None and self._replay_start is not None:
            self._request_seek(self._replay_start)
        if self.auto_sample:
            self._start_timer()
            if self.warmup == 0 and not self._polling:
                # A live source may leave the Docker SDK, the engine and the add-on collectors (model
                # servers, footprints, the guard's state) for the next tick: the first frame shows
                # containers by id for one interval instead of waiting ~0.2 s for the rest.
                self.source.defer_slow_parts()
                self._tick()

    def on_unmount(self) -> None:
        if self.playback is not None:
            self.playback.close()
        release_retained_styles()  # what Textual's cache keeps of this app's widgets goes with it

    def on_resize(self, event: Resize) -> None:
        # Here, not on the screen: a resize reaches only the screen on top (a dialog), and the dashboard
        # behind it must follow too. The first one comes before the dashboard is mounted (its on_mount
        # sizes it).
        if self.dashboard.is_mounted:
            self.dashboard.apply_size(event.size.width, event.size.height)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.has_class("-too-small") and action not in ("quit", "help"):
            # Only the "too small" message is on screen: no key may act on the tabs and tables behind it.
            return False
        if action in self.REPLAY_ACTIONS:
            return self.playback is not None
        return True

    # -- sampling ------------------------------------------------------------------------------------------

    def _start_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_interval(self.interval, self._tick, name="sample")

    def _new_session(self) -> Session:
        return Session.for_config(self.config, clock=self.clock)

    def _tick(self) -> None:
        release_retained_styles()  # every interval, sampling or not (paused, ended, late)
        if self.session.source_ended:
            return
        seeking = self.playback is not None and self.playback.seek_wanted
        if self._polling:
            # The previous sample has not come back: say so once it is clearly late, keep the last data.
            if not seeking and self.session.check_late(self.interval):
                self.dashboard.update_status()
            return
        if self.paused and self.playback is not None:
            return  # a paused replay stays where it is
        self._polling = True
        self._poll()

    @work(thread=True, exclusive=True, group="sample", exit_on_error=False)
    def _poll(self) -> None:
        worker = get_current_worker()
        if self.playback is not None:  # a replay: a seek asked for, or the next tick's batch
            if self.playback.seek_wanted:
                session, problem = self._seek(cancelled=lambda: worker.is_cancelled)
                if not worker.is_cancelled:
                    with contextlib.suppress(RuntimeError):
                        self.call_from_thread(self._adopt_session, session, problem)
                return
            batch = self.playback.take_batch()
            if not worker.is_cancelled:
                with contextlib.suppress(RuntimeError):
                    self.call_from_thread(self._receive_batch, batch)
            return
        sampled = take_sample(self.source)  # a source must not take the dashboard down
        if worker.is_cancelled:
            return
        with contextlib.suppress(RuntimeError):  # the app is shutting down
            self.call_from_thread(self._receive, sampled.snapshot, sampled.error, sampled.ended)

    def _receive_batch(self, batch: Batch) -> None:
        """A replay's tick: every snapshot goes into the session (history, creep, trends see them all);
        only the last is analysed and drawn."""
        earlier, last = batch.snapshots[:-1], (batch.snapshots[-1] if batch.snapshots else None)
        try:
            for snapshot in earlier:
                self._ingest(snapshot, analyse=False)
        except Exception as exc:  # as in _receive: say it, keep what was drawn
            self._polling = False
            self.log.error("tick failed", exc_info=exc)
            self._show_stale(tick_failure(exc, self.interval))
            return
        if last is not None:
            self._receive(last, None)
        if batch.ended is not None or batch.error is not None:
            self._receive(None, batch.ended or batch.error, ended=batch.ended is not None)
        self._polling = False
        self._seek_if_wanted()

    def _request_seek(self, target_s: float) -> None:
        """Go to `target_s` seconds into the recording (see Playback.request_seek): on the sampling worker,
        now if it is idle, else as soon as its sample is in."""
        assert self.playback is not None  # check_action: replay keys only
        self.playback.request_seek(target_s)
        self.dashboard.update_status()
        self._seek_if_wanted()

    def _seek_if_wanted(self) -> None:
        if self.playback is not None and self.playback.seek_wanted and not self._polling:
            self._polling = True
            self._poll()

    def _seek(self, cancelled: Callable[[], bool] = lambda: False) -> tuple[Session | None, str | None]:
        """The session at the seek asked for, or why there is none (the recording cannot be read there)."""
        assert self.playback is not None
        try:
            return self.playback.seek(cancelled), None
        except Exception as exc:
            return None, f"seek failed ({error_line(exc)})"

    def _adopt_session(self, session: Session | None, problem: str | None = None) -> None:
        """A seek is done: its session (everything up to the target) replaces the one on show, and is drawn
        even while paused (a paused replay shows where a seek went)."""
        self._polling = False
        if problem is not None:
            self.notify(problem, severity="error", markup=False)
        index_problem = self.playback.index.problem if self.playback is not None else None
        if index_problem is not None and not self._index_problem_said:
            self._index_problem_said = True  # seeks still work, from the start of the recording: slower
            self.notify(f"replay: no checkpoints past this point ({index_problem}); seeks are slower",
                        severity="warning", markup=False)  # fmt: skip
        if session is not None:
            self.session = session
            self.dashboard.forget_chart()
            if self.paused:
                self.frozen = session.latest
            paused, self.paused = self.paused, False
            try:
                self.dashboard.redraw()
            finally:
                self.paused = paused
            if self._on_first_frame is not None:  # --start: the first frame is the seek's
                self.call_after_refresh(self._first_frame_done)
            if self._timer is not None:
                # Where the seek went stays a whole tick: a tick due just after it played on at once, so
                # Home showed 0:02 at 2x, never the start.
                self._timer.reset()
        self.dashboard.update_status()
        self._seek_if_wanted()

    def _receive(self, snapshot: Snapshot | None, error: str | None, ended: bool = False) -> None:
        self._polling = False
        if ended:
            self._source_ended(SourceExhausted(error) if error else SourceExhausted())
            return
        if snapshot is None:
            self._show_stale(error or "no data")
            return
        try:
            self._ingest(snapshot)
            self.dashboard.redraw()
        except Exception as exc:
            # A bug in one tick (analysis, a view) must not leave the screen blank or frozen without a word:
            # say what failed, keep what was drawn, and let the next tick try again from scratch.
            self.log.error("tick failed", exc_info=exc)
            self._show_stale(tick_failure(exc, self.interval))
            return
        if self._on_first_frame is not None:
            self.call_after_refresh(self._first_frame_done)

    def _source_ended(self, exc: SourceExhausted) -> None:
        self.session.end(str(exc))
        self.dashboard.show_source_ended()
        self.dashboard.update_status()

    def _show_stale(self, reason: str) -> None:
        self.session.fail(reason)
        self.dashboard.update_status()
        self.dashboard.set_stale(True)

    def _first_frame_done(self) -> None:
        callback, self._on_first_frame = self._on_first_frame, None
        if callback is not None:
            callback()

    async def refresh_once(self) -> None:
        """Take one sample now, on the event loop (for tests and screenshots, with auto_refresh=False): a tick
        without the timer."""
        release_retained_styles()
        if self.playback is not None:
            if self.playback.seek_wanted:
                self._adopt_session(*self._seek())
            else:
                self._receive_batch(self.playback.take_batch())
            return
        sampled = take_sample(self.source)
        self._receive(sampled.snapshot, sampled.error, sampled.ended)

    def _ingest(self, snapshot: Snapshot, analyse: bool = True) -> None:
        """Every sample, shown or not, goes into the session (and the stop flow, which watches containers
        leave)."""
        self._follow_stated_lines()
        self.session.ingest(snapshot, analyse)
        # A throttle that lasts under load goes to the messages (M) through the session, as does its end;
        # no toast: the GPU panel already says it, in yellow, while it lasts.
        self.stops.observe(snapshot)

    def _follow_stated_lines(self) -> None:
        """On another machine's exporter (`--exporter`, and `sparktop web`'s sessions) a line the user did
        not set here is the one that exporter states (its X-Sparktop-*-Bytes): the browser and /metrics then
        name the same lines."""
        stated_safe = self.source.safe_bytes
        stated_max = self.source.max_bytes
        if stated_safe is None and stated_max is None:
            return
        own = LineChoice.of(self.config)
        self.session.line_choice = LineChoice(own.safe or stated_safe, own.aggressive or stated_max)

    # -- themes --------------------------------------------------------------------------------------------

    @property
    def palette(self) -> Palette:
        spark: SparkTheme | None = self._spark_themes.get(self.theme)
        return spark.palette if spark else derive_palette(self.current_theme)

    # -- the app's own actions -----------------------------------------------------------------------------

    def action_write_history(self) -> None:
        """Write the in-memory history (the dashboard's own short black box) to the state dir."""
        from sparktop.session.history_export import default_history_path, write_history

        if not self.files_allowed:
            self.explain_no_files()
            return
        path = default_history_path()
        try:
            with self.session.lock:
                points = write_history(self.session.history, path, self.session.latest)
        except OSError as exc:
            self.notify(f"could not write the history to {path}: {exc.strerror or exc}", severity="error",
                        markup=False)  # fmt: skip
            return
        self.notify(f"history written: {points} points to {path} (sparktop --replay it)", markup=False)

    def explain_no_files(self) -> None:
        self.notify(NO_FILES, severity="warning", markup=False)

    def action_help(self) -> None:
        # Imported here: Markdown costs ~0.1 s at start-up, before the first frame.
        from sparktop.ui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self.frozen = self.session.latest if self.paused else None  # what the frozen views keep showing
        if self.paused:
            self.dashboard.update_status()
        else:
            self.dashboard.redraw()

    def _set_interval(self, interval: float) -> None:
        self.interval = interval
        if self.auto_sample:
            self._start_timer()
        self.dashboard.update_status()

    def action_faster(self) -> None:
        faster = [i for i in INTERVALS if i < self.interval - 1e-9]
        self._set_interval(faster[-1] if faster else self.interval)

    def action_slower(self) -> None:
        slower = [i for i in INTERVALS if i > self.interval + 1e-9]
        self._set_interval(slower[0] if slower else self.interval)

    def action_replay_faster(self) -> None:
        assert self.playback is not None  # check_action
        self.playback.faster()
        self.dashboard.update_status()

    def action_replay_slower(self) -> None:
        assert self.playback is not None  # check_action
        self.playback.slower()
        self.dashboard.update_status()

    def action_seek(self, seconds: float) -> None:
        """Seek `seconds` on (back when negative) from the snapshot on show (or the seek under way)."""
        assert self.playback is not None  # check_action
        self._request_seek(max(0.0, self.playback.position_s(self.session.latest) + seconds))

    def action_seek_to(self, where: str) -> None:
        """`start` or `end` of the recording."""
        self._request_seek(0.0 if where == "start" else math.inf)

    def action_goto_time(self) -> None:
        """Ask for a time to go to (ui/screens/goto_time.py)."""
        from sparktop.sources.replay import format_clock
        from sparktop.ui.screens.goto_time import GotoTimeScreen

        assert self.playback is not None  # check_action
        if len(self.screen_stack) > 1:
            return  # on a dialog already
        progress = self.playback.progress(self.session.latest)
        position = format_clock(progress.position_s)
        length = format_clock(progress.length_s) if progress.length_s is not None else "?"

        def go(seconds: float | None) -> None:
            if seconds is not None:
                self._request_seek(seconds)

        self.push_screen(GotoTimeScreen(position, length), callback=go)

    def action_messages(self) -> None:
        from sparktop.ui.screens.messages import MessagesScreen

        if not isinstance(self.screen, MessagesScreen):
            self.push_screen(MessagesScreen(self.messages))

    def action_next_theme(self) -> None:
        names = list(self._spark_themes)
        if not names:
            return
        index = names.index(self.theme) + 1 if self.theme in names else 0
        self.theme = names[index % len(names)]
        self.notify(f"theme: {self.theme}", timeout=2, markup=False)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        # One way to pick a theme: Textual's own "Theme" picker lists its built-in themes too, which `t`
        # does not cycle through.
        builtin = super().get_system_commands(screen)
        yield from (command for command in builtin if command.callback != self.action_change_theme)
        yield SystemCommand(
            "Pause / resume", "Freeze the display (sampling goes on)", self.action_toggle_pause
        )
        yield SystemCommand("Refresh faster", "Shorter sampling interval (+)", self.action_faster)
        yield SystemCommand("Refresh slower", "Longer sampling interval (-)", self.action_slower)
        yield SystemCommand("Next sparktop theme", "Cycle the themes in name order (t)",
                            self.action_next_theme)  # fmt: skip
        yield from self.dashboard.palette_commands()  # the tables and tabs
        yield SystemCommand("Help", "Keys and how to read the dashboard (?)", self.action_help)
        yield SystemCommand(
            "Messages", "Every alert raised and cleared, problem, action and warning since start (M)",
            self.action_messages,
        )  # fmt: skip
