"""Recording to JSONL and playing back, including the damage a crash or a stray editor leaves behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from sparktop.commands.record import record
from sparktop.core.snapshot import Snapshot
from sparktop.session.runner import SessionRunner
from sparktop.sources.demo import DemoSource
from sparktop.sources.recording import Recorder
from sparktop.sources.replay import EmptyRecording, ReplayEnded, ReplaySource
from sparktop.sources.snapshot_source import SnapshotSource, SourceExhausted
from tests.fixtures.signals import ctrl_c_raises


def write_demo(path: Path, n: int, seed: int = 0, mode: str = "new") -> list[Snapshot]:
    source = DemoSource("default", seed=seed)
    snapshots = [source.sample() for _ in range(n)]
    with Recorder(path, mode=mode) as recorder:
        for snapshot in snapshots:
            recorder.write(snapshot)
    return snapshots


def as_recorded(snapshot: Snapshot) -> Snapshot:
    return snapshot.model_copy(update={"source": "replay"})


def test_round_trip(tmp_path):
    path = tmp_path / "rec.jsonl"
    written = write_demo(path, 5)
    assert len(path.read_text().splitlines()) == 5
    with ReplaySource(path) as replay:
        assert isinstance(replay, SnapshotSource) and replay.name == "replay"
        read = []
        for _ in range(5):
            assert not replay.finished
            read.append(replay.sample())
        assert replay.finished  # known as soon as the last one is handed out
        assert replay.position == 5
        assert [s.source for s in read] == ["replay"] * 5
        assert read == [as_recorded(s) for s in written]
        assert read[0].accounting == written[0].accounting
        assert replay.warnings == []
        # exhausted: the end is reported, with the recording's length, every time it is asked again
        for _ in range(2):
            with pytest.raises(ReplayEnded, match=r"end of recording \(0:04, 5 snapshots\)"):
                replay.sample()


def test_truncated_last_line_after_a_crash(tmp_path):
    path = tmp_path / "recording.jsonl"
    written = write_demo(path, 4)
    text = path.read_text()
    path.write_text(text[: len(text) - 2000])  # the last line was being written when the machine froze
    replay = ReplaySource(path)
    read = [replay.sample() for _ in range(3)]
    assert read == [as_recorded(s) for s in written[:3]]
    assert replay.finished
    assert len(replay.warnings) == 1
    warning = replay.warnings[0]
    assert warning.startswith("recording.jsonl line 4: not a snapshot (")
    assert "cut off" in warning
    # the warning reaches the screen with the end of the recording, and stays there
    for _ in range(2):
        with pytest.raises(ReplayEnded) as ended:
            replay.sample()
        assert warning in str(ended.value)
    assert replay.warnings == [warning]


def test_garbage_line_in_the_middle(tmp_path):
    path = tmp_path / "recording.jsonl"
    written = write_demo(path, 3)
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(1, "this is not JSON\n")
    lines.insert(3, '{"timestamp": 5}\n')  # JSON, but not a snapshot
    lines.insert(4, "\n")  # blank lines are ignored silently
    path.write_text("".join(lines))
    replay = ReplaySource(path)
    first, second, third = (replay.sample() for _ in range(3))
    assert first == as_recorded(written[0])
    assert [s.timestamp for s in (first, second, third)] == [s.timestamp for s in written]
    assert len(replay.warnings) == 2
    assert replay.warnings[0].startswith("recording.jsonl line 2: not a snapshot (invalid JSON")
    assert replay.warnings[1].startswith("recording.jsonl line 4: not a snapshot (memory: Field required")
    # the warnings ride on the snapshot that follows the bad line
    assert second.errors == [replay.warnings[0]]
    assert third.errors == [replay.warnings[1]]
    assert first.errors == []


def test_file_without_any_snapshot(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(EmptyRecording, match="empty"):
        ReplaySource(empty)
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\nworld\n")
    with pytest.raises(SourceExhausted, match="2 lines, none valid"):
        ReplaySource(junk)
    with pytest.raises(ValueError, match=r"junk.jsonl line 1: not a snapshot"):
        ReplaySource(junk)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        ReplaySource(tmp_path / "nope.jsonl")


def test_existing_file_is_not_overwritten(tmp_path):
    path = tmp_path / "rec.jsonl"
    write_demo(path, 2)
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="already exists") as info:
        Recorder(path)
    assert "--append" in str(info.value) and "--overwrite" in str(info.value)
    assert path.read_bytes() == before
    # an existing but empty file is fine
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    with Recorder(empty) as recorder:
        recorder.write(DemoSource().sample())
    assert len(empty.read_text().splitlines()) == 1


def test_overwrite(tmp_path):
    path = tmp_path / "rec.jsonl"
    write_demo(path, 3)
    write_demo(path, 1, seed=9, mode="overwrite")
    replay = ReplaySource(path)
    replay.sample()
    assert replay.finished


def test_append(tmp_path):
    path = tmp_path / "rec.jsonl"
    first = write_demo(path, 2, seed=1)
    second = write_demo(path, 2, seed=2, mode="append")
    replay = ReplaySource(path)
    read = [replay.sample() for _ in range(4)]
    assert read == [as_recorded(s) for s in first + second]
    assert replay.finished and replay.warnings == []


def test_append_after_a_crash_starts_on_a_new_line(tmp_path):
    path = tmp_path / "rec.jsonl"
    write_demo(path, 2)
    text = path.read_text()
    path.write_text(text[:-500])  # second line cut off
    write_demo(path, 1, seed=3, mode="append")
    replay = ReplaySource(path)
    replay.sample()
    appended = replay.sample()
    assert appended.errors and "line 2: not a snapshot" in appended.errors[0]
    assert replay.finished


def test_recorder_flushes_every_line(tmp_path):
    path = tmp_path / "rec.jsonl"
    source = DemoSource()
    recorder = Recorder(path)
    recorder.write(source.sample())
    recorder.write(source.sample())
    # not closed: a reader (or a crash) already sees both lines complete
    assert len(path.read_text().splitlines()) == 2
    assert recorder.count == 2
    recorder.close()
    with pytest.raises(ValueError, match="closed"):
        recorder.write(source.sample())


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_record_for_a_duration(tmp_path):
    path = tmp_path / "rec.jsonl"
    clock = FakeClock()
    ticks: list[float] = []
    count = record(
        DemoSource(),
        path,
        interval=2.0,
        duration=10.0,
        on_tick=lambda s: ticks.append(s.timestamp),
        monotonic=clock,
        wait=clock.sleep,
    )
    assert count == 5 == len(ticks)
    assert clock.sleeps == [2.0] * 4
    assert len(path.read_text().splitlines()) == 5


def test_record_refuses_an_existing_file(tmp_path):
    path = tmp_path / "rec.jsonl"
    write_demo(path, 1)
    with pytest.raises(FileExistsError):
        record(DemoSource(), path, duration=1)
    assert len(path.read_text().splitlines()) == 1


def test_record_stops_cleanly_on_ctrl_c(tmp_path):
    path = tmp_path / "rec.jsonl"
    clock = FakeClock()
    lines = 0

    def interrupt_on_third(snapshot: Snapshot) -> None:
        nonlocal lines
        lines += 1
        if lines == 3:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: KeyboardInterrupt on the main thread, in record()

    with ctrl_c_raises():
        count = record_or_fail(
            DemoSource(),
            path,
            on_tick=interrupt_on_third,
            monotonic=clock,
            wait=clock.sleep,
            duration=UNHEARD,
        )
    assert 3 <= count < UNHEARD  # the ticks taken before the main thread had the signal, each written whole
    replay = ReplaySource(path)
    for _ in range(count):
        replay.sample()
    assert replay.finished and replay.warnings == []


# Ticks on a fake clock come back to back: the main thread hears a Ctrl-C within its next second's slice of
# join(), a few hundred ticks at most even on a loaded machine. A recording this long (a fake 5000 s) means
# it never did: the test fails instead of recording for ever.
UNHEARD = 5000


def record_or_fail(*args, **kwargs) -> int:
    """record(), with a Ctrl-C that escapes it failing the test (not ending the whole pytest worker)."""
    try:
        return record(*args, **kwargs)
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped record()")


def test_record_stops_cleanly_on_ctrl_c_while_its_thread_starts(tmp_path, monkeypatch):
    """The sampling thread may write its first lines before start() returns on the main thread (it did,
    in 22 of 100 tries): a Ctrl-C then is the same clean stop, not a KeyboardInterrupt out of record()."""
    path = tmp_path / "rec.jsonl"
    clock = FakeClock()
    start = SessionRunner.start

    def start_then_ctrl_c(self: SessionRunner, max_ticks: int | None = None) -> SessionRunner:
        started = start(self, max_ticks)
        os.kill(os.getpid(), signal.SIGINT)  # to this (the main) thread: raised before start returns
        time.sleep(5)  # the signal interrupts the sleep at once
        return started

    monkeypatch.setattr(SessionRunner, "start", start_then_ctrl_c)
    with ctrl_c_raises():
        count = record_or_fail(DemoSource(), path, monotonic=clock, wait=clock.sleep, duration=UNHEARD)
    assert count >= 1
    replay = ReplaySource(path)
    for _ in range(count):
        replay.sample()
    assert replay.finished and replay.warnings == []


def test_record_a_replay_stops_at_its_end(tmp_path):
    original = tmp_path / "a.jsonl"
    write_demo(original, 4)
    copy = tmp_path / "b.jsonl"
    clock = FakeClock()
    assert record(ReplaySource(original), copy, monotonic=clock, wait=clock.sleep) == 4
    assert len(copy.read_text().splitlines()) == 4
