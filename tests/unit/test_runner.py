"""SessionRunner: a thread that samples a source into a session, for the headless commands."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from sparktop.core.snapshot import Snapshot
from sparktop.session.runner import SessionRunner
from sparktop.session.session import Session
from sparktop.sources.demo import DemoSource
from sparktop.sources.replay import ReplaySource
from tests.fixtures.recordings import demo_snapshots, write_recording
from tests.fixtures.sources import FailingEvery


def test_runner_feeds_the_session_and_calls_back_on_its_thread() -> None:
    session = Session()
    seen: list[tuple[float, str]] = []
    runner = SessionRunner(
        DemoSource("default", seed=1),
        session,
        interval=0.01,
        on_snapshot=lambda s: seen.append((s.timestamp, threading.current_thread().name)),
    )
    runner.start()
    try:
        assert runner.wait_for(5, timeout=5.0)
    finally:
        runner.stop()
    assert not runner.running
    assert len(seen) >= 5 and {name for _, name in seen} == {"sparktop-runner"}
    assert session.ingested == len(seen) and session.latest is not None
    assert session.latest is not None and session.latest.accounting is not None
    stopped_at = runner.ticks
    time.sleep(0.05)
    assert runner.ticks == stopped_at


def test_a_failing_sample_or_callback_marks_stale_and_the_runner_goes_on() -> None:
    session = Session()
    errors: list[str] = []

    def boom(_snapshot: Snapshot) -> None:
        raise ValueError("exporter bug")

    runner = SessionRunner(FailingEvery(2), session, interval=0.01, on_snapshot=boom, on_error=errors.append)
    assert runner.tick() is not None and session.stale is None
    assert runner.tick() is None
    assert session.stale == "OSError: /proc/meminfo: Input/output error" and session.latest is not None
    assert errors == [
        "on_snapshot: ValueError: exporter bug",
        "sample: OSError: /proc/meminfo: Input/output error",
    ]
    runner.start()
    try:
        assert runner.wait_for(8, timeout=5.0)
    finally:
        runner.stop()
    assert session.ingested >= 4


def test_a_recording_ends_the_runner(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    write_recording(path, demo_snapshots(3, every=1.0))
    session = Session()
    runner = SessionRunner(ReplaySource(path), session, interval=0.001).start()
    runner._thread.join(5.0)  # type: ignore[union-attr]
    assert not runner.running
    assert session.source_ended and session.ingested == 3
    assert session.stale is not None and session.stale.startswith("end of recording — last 2 s before")


def test_a_slow_sample_does_not_make_a_burst_of_ticks() -> None:
    class Slow(FailingEvery):
        def sample(self) -> Snapshot:
            self.n += 1
            if self.n == 2:
                time.sleep(0.3)
            return self.demo.sample()

    source = Slow(2)
    runner = SessionRunner(source, Session(), interval=0.1).start()
    try:
        time.sleep(0.55)
    finally:
        runner.stop()
    # ticks at 0, 0.1 (takes 0.3 s), then at once at 0.4, then 0.5: no catching up on the missed ones
    assert 3 <= source.n <= 5


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval must be greater than 0"):
        SessionRunner(DemoSource(), Session(), interval=0)
