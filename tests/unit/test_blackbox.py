"""The black box: replayable segments, the size bound kept through rotation, a segment per start (a crash's
segment is never appended to), a kill -9 mid-write loses nothing flushed, and a full or read-only disk gives
one clear line instead of an exception."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sparktop.guard.blackbox import BlackBox, latest_segment, segments
from sparktop.sources.demo import DemoSource
from sparktop.sources.replay import ReplayEnded, ReplaySource

REPO = Path(__file__).resolve().parents[2]


def replay_all(path: Path) -> list[float]:
    stamps = []
    with ReplaySource(path) as source:
        while True:
            try:
                stamps.append(source.sample().timestamp)
            except ReplayEnded:
                return stamps


def test_what_is_written_replays_in_order(tmp_path: Path) -> None:
    demo = DemoSource(seed=3)
    box = BlackBox(tmp_path, fsync_every_s=0)
    written = [demo.sample() for _ in range(20)]
    for snapshot in written:
        assert box.write(snapshot)
    box.close()
    (segment,) = segments(tmp_path)
    assert segment.name.startswith("blackbox-") and segment.name.endswith(".jsonl.gz")
    assert oct(segment.stat().st_mode & 0o777) == oct(0o600)  # it holds every command line on the machine
    assert replay_all(segment) == [s.timestamp for s in written]


def test_rotation_keeps_the_size_bound_and_the_newest_data(tmp_path: Path) -> None:
    demo = DemoSource(seed=4)
    clock = iter(range(1_000_000)).__next__
    box = BlackBox(
        tmp_path, max_bytes=16_000, segment_bytes=4_000, fsync_every_s=0, clock=lambda: float(clock())
    )
    last = demo.sample()
    box.write(last)
    first = box.current
    # 40 snapshots of ~20 KB (~2 KB compressed): about twenty segments of 4 KB, the oldest deleted for the
    # 16 KB bound (400 into 10 KB segments were 0.6 s of CPU for twenty rotations of the same kind; 120 into
    # 10 KB segments, 0.18 s for ten).
    for _ in range(40):
        last = demo.sample()
        box.write(last)
        total = sum(p.stat().st_size for p in segments(tmp_path))
        assert total <= 16_000 + 5_000  # the bound, plus at most the line just written
    box.close()
    assert len(segments(tmp_path)) >= 3, "it rotated"
    assert first is not None and not first.exists(), "the oldest segment was deleted"
    newest = latest_segment(tmp_path)
    assert newest is not None and replay_all(newest)[-1] == last.timestamp


def test_a_new_start_never_appends_to_the_segment_a_crash_left(tmp_path: Path) -> None:
    demo = DemoSource(seed=5)
    first = BlackBox(tmp_path, fsync_every_s=0)
    first.write(demo.sample())
    # no close(): the process died
    second = BlackBox(tmp_path, fsync_every_s=0)
    second.write(demo.sample())
    second.close()
    assert len(segments(tmp_path)) == 2


def test_kill_9_mid_write_loses_at_most_the_unsynced_line(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from sparktop.guard.blackbox import BlackBox
        from sparktop.sources.demo import DemoSource
        demo, box = DemoSource(seed=6), BlackBox({str(tmp_path)!r}, fsync_every_s=0.5)
        n = 0
        while True:
            box.write(demo.sample())
            n += 1
            print(n, flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None
    reported = 0
    deadline = time.monotonic() + 30
    while reported < 40 and time.monotonic() < deadline:
        reported = int(proc.stdout.readline() or 0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert reported >= 40
    segment = latest_segment(tmp_path)
    assert segment is not None
    # Every line flushed before the kill reads back; the one being written may be cut off.
    assert len(replay_all(segment)) >= reported - 1


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)], capture_output=True
    )
    assert done.returncode == 0, f"cannot mount a tmpfs for the test (run as root): {done.stderr!r}"
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_gives_one_clear_line_and_no_exception(tiny_tmpfs: Path) -> None:
    demo = DemoSource(seed=7)
    box = BlackBox(tiny_tmpfs, fsync_every_s=0, retry_s=0)
    results = [box.write(demo.sample()) for _ in range(60)]  # 16 KiB are full at the 20th (compressed)
    assert results[0] is True and results[-1] is False
    assert box.problem is not None and "No space left on device" in box.problem
    assert "\n" not in box.problem and str(tiny_tmpfs) in box.problem
    box.close()


def test_a_read_only_directory_gives_one_clear_line(tiny_tmpfs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_tmpfs)], check=True)
    box = BlackBox(tiny_tmpfs / "blackbox", fsync_every_s=0)
    assert box.write(DemoSource(seed=8).sample()) is False
    assert box.problem is not None and "Read-only file system" in box.problem
    # it retries later instead of on every tick
    assert box.write(DemoSource(seed=8).sample()) is False
