"""The one headless sampling loop: a thread that takes `source.sample()` every `interval` seconds and feeds it
to a Session, for every command without a dashboard (the exporter and `sparktop web`'s shared collector
through `exporter/state.SamplingLoop`, which publishes each tick for scrapes; the guard and `sparktop record`
through their `on_snapshot`).

    session = Session.for_config(config)
    runner = SessionRunner(source, session, interval=1.0, on_snapshot=publish)
    runner.start()
    ...                      # session.latest, session.assessment ... are current
    runner.stop()

`start(max_ticks=n)` stops after n samples (`record --duration`); `join()` waits for the thread to end.
Ticks follow a fixed schedule (a slow sample does not make later ones drift; one that takes longer than the
interval makes the next start at once, never a burst of catch-up ticks). A sample that raises marks the
session stale with one line (`last_error`) and the runner goes on; a finite source that ends
(`SourceExhausted`, or a replay whose `finished` is set) marks the session ended and the thread stops.
Callbacks run on the runner's thread, after the session has the snapshot; an exception in a callback is
reported through `on_error` and never stops the runner. The footprint database failing (once when it starts,
once when it ends) goes to `warn` (default: `on_error`): a headless command has no screen to show it on.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable

from sparktop.core.safe_text import error_line
from sparktop.core.snapshot import Snapshot
from sparktop.footprints.store import ProblemWatch
from sparktop.session.session import Session
from sparktop.sources.snapshot_source import SnapshotSource, take_sample

RECENT_TICKS = 256  # tick start times and costs kept (tests and /healthz read the loop's pace from them)


class SessionRunner:
    def __init__(
        self,
        source: SnapshotSource,
        session: Session,
        interval: float = 1.0,
        on_snapshot: Callable[[Snapshot], object] | None = None,  # its return value is not used
        on_error: Callable[[str], None] | None = None,
        *,
        warn: Callable[[str], None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        clock: Callable[[], float] = time.time,
        thread_name: str = "sparktop-runner",
        wait: Callable[[float], object] | None = None,
    ) -> None:
        """`monotonic` and `wait` are the schedule's clock and how the thread waits for the next tick (tests
        give a fake clock and its sleep); the default wait ends at once on stop()."""
        if interval <= 0:
            raise ValueError("interval must be greater than 0")
        self.source = source
        self.session = session
        self.interval = interval
        self.on_snapshot = on_snapshot
        self.on_error = on_error
        self.warn = warn if warn is not None else on_error
        self.clock = clock
        self._monotonic = monotonic
        self._thread_name = thread_name
        self._stop = threading.Event()
        self._wait = wait if wait is not None else self._stop.wait
        self._done = threading.Event()  # the thread's loop has returned
        self._thread: threading.Thread | None = None
        self.ticks = 0  # samples attempted
        self.last_error: str | None = None  # why the last sample failed; None once one succeeds
        self.tick_starts: deque[float] = deque(maxlen=RECENT_TICKS)  # wall clock
        self.tick_costs: deque[float] = deque(maxlen=RECENT_TICKS)  # seconds, successful ticks
        self.footprints = ProblemWatch()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def ended(self) -> bool:
        """The source has nothing more (a recording's end): the thread has stopped or is stopping."""
        return self.session.source_ended

    def start(self, max_ticks: int | None = None) -> SessionRunner:
        """Sample on a thread of its own until stop(), the source's end, or `max_ticks` samples attempted."""
        if self._thread is not None:
            raise RuntimeError("runner already started")
        self._thread = threading.Thread(
            target=self._run, args=(max_ticks,), name=self._thread_name, daemon=True
        )
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread's loop to end (the source's end, `max_ticks`, or stop()); True when it has.
        A signal interrupts the wait (Ctrl-C raises here). Not `Thread.join`: on Python 3.11 a
        KeyboardInterrupt in it marks the thread as ended while it still runs, and stop() would then not
        wait for the tick in progress."""
        return self._thread is None or self._done.wait(timeout)

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop after the sample in progress (if any); does not close the source."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def wait_for(self, ticks: int, timeout: float) -> bool:
        """Block until `ticks` samples were attempted (or the source ended); for tests and one-shot use."""
        deadline = self._monotonic() + timeout
        while self.ticks < ticks and not self.session.source_ended and self._monotonic() < deadline:
            time.sleep(0.01)
        return self.ticks >= ticks

    def tick(self) -> Snapshot | None:
        """One sample into the session, now, on the caller's thread. Returns the snapshot, or None when the
        sample failed (the session says why) or the source has ended."""
        started = self._monotonic()
        self.tick_starts.append(self.clock())
        self.ticks += 1
        sampled = take_sample(self.source)
        if sampled.ended:
            self.session.end(sampled.error or "")
            return None
        if sampled.snapshot is None:
            self.last_error = sampled.error or "no data"
            self.session.fail(self.last_error)
            self._report(self.on_error, f"sample: {self.last_error}")
            return None
        self.ingest(sampled.snapshot)
        self.last_error = None
        self.tick_costs.append(self._monotonic() - started)
        return sampled.snapshot

    def ingest(self, snapshot: Snapshot) -> None:
        """One snapshot into the session and on to `on_snapshot`, whoever sampled it (the cluster view feeds
        the snapshots another machine's exporter serves)."""
        self.session.ingest(snapshot)
        problem = self.footprints.update(snapshot)
        if problem is not None:
            self._report(self.warn, problem)
        if self.source.finished:  # a recording handed out its last snapshot
            self.session.end()
        if self.on_snapshot is not None:
            try:
                self.on_snapshot(snapshot)
            except Exception as exc:
                self._report(self.on_error, f"on_snapshot: {error_line(exc)}")

    @staticmethod
    def _report(to: Callable[[str], None] | None, line: str) -> None:
        if to is not None:
            with contextlib.suppress(Exception):  # nowhere left to report to
                to(line)

    def _run(self, max_ticks: int | None) -> None:
        try:
            self._loop(max_ticks)
        finally:
            self._done.set()

    def _loop(self, max_ticks: int | None) -> None:
        start = self._monotonic()
        n = 0
        if self.ticks:  # a tick was taken before start() (the exporter's first state): the next is due later
            n = 1
            self._wait(self.interval)
        while not self._stop.is_set() and not self.session.source_ended:
            self.tick()
            if self._stop.is_set() or self.session.source_ended:
                return
            if max_ticks is not None and self.ticks >= max_ticks:
                return
            n += 1
            now = self._monotonic()
            next_at = start + n * self.interval
            if next_at < now:  # late: start again from now instead of catching up in a burst
                start, n = now, 0
                next_at = now
            self._wait(max(0.0, next_at - now))
