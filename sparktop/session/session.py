"""A dashboard session without the dashboard: what every view of sparktop shows, fed one snapshot at a time.

`Session.ingest(snapshot)` is the one place a snapshot becomes what the views draw:

- accounting (`analysis.accounting.account`) when the source left it out — every source does; a recording
  carries the accounting it was made with;
- the history (budget chart, creep), the memory-pressure level and its reasons, creep alerts;
- per-process growth (the processes table's trend column) and the sparkline series (GPU metrics,
  MemAvailable, PSI);
- the freshness of the data: the last good time, a stale reason (a failed or late sample), the end of a
  recording;
- the messages (`messages`, the dashboard's `M`): every creep alert raised and cleared, the exhaustion
  warning, pressure levels, GPU throttles, problems in the data, stale data and the end, with their times.

The Textual dashboard draws a Session; `--once`, `record`, an exporter, a guard and tests use the same one, so
they all show the same numbers. `SessionRunner` (sparktop/session/runner.py) samples a source into a Session
on a thread for the headless commands.

Thread safety: `ingest` and the other changes hold `lock`; a reader on another thread (an exporter's HTTP
handler) that needs several fields from the same tick takes `lock` too. `latest` is replaced, never changed,
once ingested, so reading it alone needs no lock.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import replace

from sparktop.analysis.accounting import fill_accounting
from sparktop.analysis.forecast import Forecast, forecast
from sparktop.analysis.history import History
from sparktop.analysis.last_minutes import summarize_last_minutes
from sparktop.analysis.lines import SPARK_POOL, LineChoice, Lines
from sparktop.analysis.pressure import PressureAssessment, PressureLevel, PressureTracker
from sparktop.analysis.row_trends import RowTrends
from sparktop.analysis.series import GpuSeries, PoolSeries
from sparktop.analysis.throttle import ThrottleWatch
from sparktop.analysis.trend import CreepAlert, CreepHold, at_pool_rate, detect_creep, rate_per_min
from sparktop.core.snapshot import Snapshot
from sparktop.session.message_log import MessageLog

CREEP_WINDOW_S = 300.0  # the slope behind creep alerts and the tables' growth column
LATE_AFTER_S = 5.0  # a sample this late (or 3 intervals, if longer) makes the data stale
CATCH_UP_ANALYSED_APART_S = 1.0  # catch_up analyses the hold's last seconds this far apart at the closest


class Session:
    """See the module docstring. `safe_bytes` / `max_bytes`: the user's lines (None: the reference's
    80/100 GB, scaled to the pool on a machine smaller than a Spark — analysis/lines.py); `lines` is where
    they are on the machine being watched, for every view. `history_hours`: how much history is kept;
    `clock`: wall time (tests and screenshots fix it); `views` False: a command with no screen (`serve`,
    `guard`, `record`), which keeps no series that only a screen draws."""

    def __init__(
        self,
        safe_bytes: float | None = None,
        max_bytes: float | None = None,
        history_hours: float = 6.0,
        clock: Callable[[], float] | None = None,
        creep_window_s: float = CREEP_WINDOW_S,
        units: str = "GiB",
        views: bool = True,
    ) -> None:
        self.line_choice = LineChoice(safe_bytes, max_bytes)
        self.clock = clock or time.time
        self.creep_window_s = creep_window_s
        self.units = units  # of the figures in the messages
        self.lock = threading.RLock()
        self.latest: Snapshot | None = None
        self.assessment: PressureAssessment | None = None
        self.creep: list[CreepAlert] = []
        self.history = History(max_age_s=history_hours * 3600)
        self.pressure = PressureTracker()
        # What only a screen draws: the processes table's growth column (a point every 5 s for every process,
        # ~0.4 MiB after 5 minutes with ~100 processes) and the sparklines' series. Without `views` (a command
        # with no screen) they are kept empty.
        self.views = views
        self.process_trends = RowTrends(window_s=creep_window_s)
        self.gpu_series = GpuSeries()
        self.pool_series = PoolSeries()
        self.stale_reason: str | None = None
        self.source_ended = False
        self.end_message = "end of recording"  # what a finite source said when it ended
        self.last_good_at: float | None = None  # clock() when the last good snapshot came in
        self.ingested = 0
        self._creep_hold = CreepHold(window_s=creep_window_s)  # held while the climb goes on
        self.forecast: Forecast | None = None  # when the pool runs out on this trend (the guard's rule)
        self._psi_full: deque[tuple[float, float]] = deque(maxlen=900)  # (time, PSI full avg10)
        self._announced_level: PressureLevel | None = None
        # Every alert raised and cleared, banner, pressure level, throttle and problem, with its time (M).
        self.messages = MessageLog()
        self._throttles = ThrottleWatch()  # says when a GPU throttle has lasted, and when it is over
        self._logged_level = PressureLevel.OK
        self._logged_errors: frozenset[str] = frozenset()

    @classmethod
    def for_config(cls, config: object, clock: Callable[[], float] | None = None) -> Session:
        """A session with a config's lines (those it sets; LineChoice.of) and history length."""
        choice = LineChoice.of(config)
        return cls(
            safe_bytes=choice.safe,
            max_bytes=choice.aggressive,
            history_hours=float(getattr(config, "history_hours", 6.0)),
            clock=clock,
            units=str(getattr(config, "units", "GiB")),
        )

    @property
    def lines(self) -> Lines:
        """The safe and aggressive lines on the machine being watched (a Spark's until the first sample)."""
        latest = self.latest
        return self.line_choice.at(float(latest.memory.total) if latest is not None else SPARK_POOL)

    @property
    def safe_bytes(self) -> int:
        return self.lines.safe_bytes

    @property
    def max_bytes(self) -> int:
        return self.lines.max_bytes

    # -- feeding it ----------------------------------------------------------------------------------------

    def ingest(self, snapshot: Snapshot, analyse: bool = True) -> Snapshot:
        """Take one good snapshot in (accounting filled in if missing) and return it. `analyse` False leaves
        the creep alerts and the forecast as they were: a warm-up feeding many past samples at once needs
        them only for the last (a function of the history, read afresh by `analyse()`, and of the creep
        hold's memory of the ticks analysed in the last `creep_hold_s`: `catch_up` analyses those)."""
        with self.lock:
            fill_accounting(snapshot)  # the one place a snapshot is accounted
            self.history.add(snapshot)
            self.assessment = self.pressure.update(snapshot.memory, snapshot.timestamp)
            self._log_data(snapshot)
            if self.views:
                self.process_trends.add_snapshot(snapshot)
                self.gpu_series.push(snapshot.gpu)
                self.pool_series.push(snapshot.memory)
            if analyse:
                self._analyse(snapshot)
            full = snapshot.memory.pressure.full if snapshot.memory.pressure else None
            if full is not None:
                self._psi_full.append((snapshot.timestamp, full.avg10))
            self.latest = snapshot
            self.stale_reason = None
            self.last_good_at = self.clock()
            self.ingested += 1
            return snapshot

    @property
    def creep_hold_s(self) -> float:
        """How far back the creep alerts on show depend on ticks analysed one by one (CreepHold)."""
        return self._creep_hold.hold_s

    def catch_up(self, snapshots: Iterable[Snapshot], until: float) -> None:
        """Take in at once snapshots that ticking would have taken one by one (a replay's seek), up to
        `until`, and end as ticking would have: analysed, with the alerts the creep hold keeps. Those older
        than the hold's reach are taken in with analyse=False; the rest are analysed as they come, at most one
        a second of their time (~3 ms each: a 0.1-s recording costs no more than a 1-s one)."""
        analyse_from = until - self.creep_hold_s
        analysed, analysed_at = False, -math.inf
        for snapshot in snapshots:
            at = snapshot.timestamp
            analysed = at >= analyse_from and at - analysed_at >= CATCH_UP_ANALYSED_APART_S
            self.ingest(snapshot, analyse=analysed)
            if analysed:
                analysed_at = at
        if not analysed:
            self.analyse()

    def analyse(self) -> None:
        """Creep alerts and the forecast from the history as it is now (after ingest with analyse=False)."""
        with self.lock:
            if self.latest is not None:
                self._analyse(self.latest)

    def _analyse(self, snapshot: Snapshot) -> None:
        total = snapshot.memory.total
        lines = self.line_choice.at(total)
        raised = detect_creep(self.history, lines.safe_bytes, lines.max_bytes, total, self.creep_window_s)
        held = self._creep_hold.update(raised, self.history, snapshot.timestamp, total)
        # A held alert keeps the label it was raised with: name its consumer as this tick does (a process
        # that exec'd another program is the same consumer under another name).
        creep = [
            a if a.label == self.history.label(a.key) else replace(a, label=self.history.label(a.key))
            for a in held
        ]
        was = self.forecast
        fc = forecast(self.history, snapshot.memory, previous=was, growers=creep)
        self.forecast = fc
        if creep and fc.rate_bytes_per_s:
            # One rate for the banner and the creep lines: every line says when the pool, filling at the
            # forecast's rate (all growers together), crosses it (analysis/forecast.py).
            creep = [at_pool_rate(a, fc.rate_bytes_per_s, total, fc.reserve_bytes) for a in creep]
        before, self.creep = self.creep, creep
        self._log_alerts(snapshot.timestamp, before, was)

    # -- the messages (M) ------------------------------------------------------------------------------------

    def _log_data(self, snapshot: Snapshot) -> None:
        """What every snapshot may say, analysed or not: throttles, pressure levels, new problems."""
        at = snapshot.timestamp
        slowed, over = self._throttles.update(snapshot.gpu.gpus, at)
        for line in (*slowed, *over):
            self.messages.add(at, "GPU slowed", line)
        level = self.level
        if level != self._logged_level:
            reasons = self.assessment.reasons if self.assessment is not None else []
            why = f": {'; '.join(reasons)}" if reasons and level != PressureLevel.OK else ""
            self.messages.add(at, "pressure", f"memory pressure {self._logged_level} → {level}{why}")
            self._logged_level = level
        errors = frozenset(snapshot.errors)
        for error in snapshot.errors:
            if error not in self._logged_errors:  # said once while it lasts, again if it comes back
                self.messages.add(at, "problem", error)
        self._logged_errors = errors

    def _log_alerts(self, at: float, before: list[CreepAlert], was: Forecast | None) -> None:
        """Creep alerts raised and cleared, and the exhaustion warning (the banner) raised, nearer, over."""
        old = {a.key: a for a in before}
        new = {a.key for a in self.creep}
        for alert in self.creep:
            if alert.key not in old:
                self.messages.add(at, "creep", alert.message(self.units))
        for key, alert in old.items():
            if key not in new:
                self.messages.add(at, "creep over", f"{alert.label} no longer creeps")
        now = self.forecast
        if now is None:
            return
        warned_before = was.warned_horizon if was is not None else None
        if now.warned_horizon is not None and (warned_before is None or now.warned_horizon < warned_before):
            self.messages.add(at, "exhaustion", f"▲ {now.message()}")
        elif now.warned_horizon is None and warned_before is not None:
            self.messages.add(at, "exhaustion over", now.message())

    # -- saving and restoring it (a replay's seek) -------------------------------------------------------

    # How it was made, not what it has seen: not saved, and kept by the session restored into.
    _NOT_STATE = frozenset({"lock", "clock", "line_choice", "creep_window_s", "units", "views"})

    def checkpoint(self) -> bytes:
        """Everything this session has taken in, as bytes (`restore` puts it back): a replay keeps one every
        so many snapshots, so a seek back starts from the nearest instead of the recording's start."""
        import pickle  # here, not at the top: only a replay's seek needs it (~0.4 MiB in `serve`)

        with self.lock:
            state = {k: v for k, v in vars(self).items() if k not in self._NOT_STATE}
            return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, checkpoint: bytes) -> None:
        """Become what `checkpoint` saved (a session made with the same settings)."""
        import pickle

        state = pickle.loads(checkpoint)  # bytes this process made itself, never from a file
        with self.lock:
            vars(self).update(state)

    def fail(self, reason: str) -> None:
        """A sample failed: the last good snapshot stays, marked stale with this one-line reason."""
        with self.lock:
            reason = reason or "no data"
            if reason != self.stale_reason:
                self.messages.add(self.clock(), "stale", reason)
            self.stale_reason = reason

    def end(self, message: str = "") -> None:
        """A finite source (a recording) has nothing more: the last snapshot stays, marked as the end, with
        what the source said about it (`SourceExhausted`'s text) or "end of recording"."""
        with self.lock:
            self.source_ended = True
            self.end_message = message or "end of recording"
            summary = self.last_minutes()
            if summary:
                self.end_message += f" — {summary}"
            end = self.history.latest_time
            self.messages.add(self.clock() if end is None else end, "end", self.end_message)

    def last_minutes(self, minutes: float = 5.0) -> str | None:
        """Who grew, which line was crossed and how hard memory pressed in the last `minutes` of the data:
        at the end of a replayed black box, the story of the minutes before the machine hung."""
        end = self.history.latest_time
        if end is None:
            return None
        peaks = [v for t, v in self._psi_full if t >= end - minutes * 60]
        return summarize_last_minutes(
            self.history, self.safe_bytes, self.max_bytes, minutes, max(peaks) if peaks else None
        )

    def check_late(self, interval: float) -> bool:
        """Called when a sample is still outstanding: once it is clearly late (5 s, or 3 intervals if longer)
        the data is marked stale. True if it is."""
        with self.lock:
            if self.last_good_at is None:
                return False
            late = self.clock() - self.last_good_at
            if late > max(LATE_AFTER_S, 3 * interval):
                if self.stale_reason is None:  # said once, not each second it grows
                    self.messages.add(self.clock(), "stale", f"no data for {late:.0f} s (the source is slow)")
                self.stale_reason = f"no data for {late:.0f} s (the source is slow)"
                return True
            return False

    # -- reading it ----------------------------------------------------------------------------------------

    @property
    def level(self) -> PressureLevel:
        return self.assessment.level if self.assessment is not None else PressureLevel.OK

    @property
    def stale(self) -> str | None:
        """Why the data on show is not current (None: it is)."""
        return self.stale_reason or (self.end_message if self.source_ended else None)

    def rate_per_min(self, key: str) -> float | None:
        """A consumer's growth (bytes per minute) over the creep window, from the history."""
        return rate_per_min(self.history, key, self.creep_window_s)

    def process_rate_per_min(self, key: str) -> float | None:
        """A process row's growth (bytes per minute), for processes the history does not keep too."""
        return self.process_trends.rate_per_min(key)

    def entered_critical(self) -> bool:
        """True once per entry into CRITICAL: the first call after the level became critical (the dashboard
        rings the bell there). Any other level re-arms it."""
        with self.lock:
            level = self.level
            entered = level == PressureLevel.CRITICAL and self._announced_level != PressureLevel.CRITICAL
            self._announced_level = level
            return entered
