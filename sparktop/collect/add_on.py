"""The add-on collector seam: something beyond the core readings (a model server's API, say) that reports
once per tick into `Snapshot.services`.

A collector is `name`, `collect(snapshot) -> list[ServiceReport]` and `close()`:

- `collect` gets this tick's core snapshot (memory, GPU, processes, containers, Docker status) to read, not to
  change: a collector may look for the ports that running containers publish, say.
- It may raise: the registry loop (`sparktop.collect.registry.AddOns`) turns the exception into one line in
  `Snapshot.errors` and runs the other collectors as usual.
- It throttles itself and must never stall a tick. A collector that does network I/O does it in its own
  background thread (`Poller` below) with short timeouts and returns the cached result from `collect`: a tick
  costs microseconds whether the server answers in 1 ms, in 5 s or never.
- `close()` stops its thread and releases its handles; it is called once, when the source closes.

Adding a collector is one new module plus one line in `sparktop/collect/registry.py`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar, runtime_checkable

from sparktop.core.safe_text import one_line
from sparktop.core.snapshot import ServiceReport, Snapshot

T = TypeVar("T")


@runtime_checkable
class Collector(Protocol):
    name: str

    def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
        """This tick's reports, from what the collector has cached; never blocks on I/O."""
        ...

    def close(self) -> None: ...

    # A collector that reads in the background may also offer `settle(timeout) -> bool`: wait (at most
    # `timeout` s) for its first readings, True when it then has something to report. A one-shot reader
    # (`sparktop --once`) uses it through AddOns.settle; the dashboard never waits.


class Poller(Generic[T]):
    """Runs `fetch()` in a daemon thread every `period` seconds (waiting up to `max_backoff` after failures,
    doubling each time) and keeps the last outcome, so a collector's `collect()` only reads `latest()`.

    `latest()` is `(value, error)`: the last value fetched (None before the first success) and one line for
    the last failure (None once a fetch succeeds). The thread starts on the first `latest()`, so making a
    collector costs nothing until a source uses it."""

    def __init__(
        self,
        fetch: Callable[[], T],
        period: float,
        max_backoff: float | None = None,
        name: str = "sparktop-poller",
    ) -> None:
        self._fetch = fetch
        self.period = period
        self.max_backoff = max_backoff if max_backoff is not None else 8 * period
        self._name = name
        self._value: T | None = None
        self._error: str | None = None
        self._fetched = threading.Event()  # set after the first attempt, good or bad
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def latest(self) -> tuple[T | None, str | None]:
        self._start()
        with self._lock:
            return self._value, self._error

    def wait_first(self, timeout: float) -> bool:
        """Block until the first fetch has finished (for tests and one-shot commands)."""
        self._start()
        return self._fetched.wait(timeout)

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        delay = self.period
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                value = self._fetch()
            except Exception as exc:  # the server's problem is reported, never raised into a tick
                with self._lock:
                    self._error = one_line(exc)
                delay = min(self.max_backoff, max(delay, self.period) * 2)
            else:
                with self._lock:
                    self._value, self._error = value, None
                delay = self.period
            self._fetched.set()
            self._stop.wait(max(0.0, delay - (time.monotonic() - started)))
