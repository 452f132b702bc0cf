"""Playing a recording back as it was recorded: its end, its own pace, its length, its size on disk, and lines
too long to hold (issue 12 item 5, issue 13 item 11, recordings' size)."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from sparktop.sources.recording import Recorder
from sparktop.sources.replay import ReplaySource
from tests.fixtures.recordings import T0, demo_snapshots, play_all, write_recording


def test_the_end_of_a_recording_is_reported_with_its_length(tmp_path: Path) -> None:
    path = tmp_path / "half-second.jsonl"
    write_recording(path, demo_snapshots(21, 0.5))
    replay = ReplaySource(path)
    assert replay.recorded_interval == 0.5
    # The length is known at open, from the file's last line, before anything is played.
    assert replay.progress().length_s == 10.0
    played, end = play_all(replay)
    assert len(played) == 21 and replay.finished
    assert str(end) == "end of recording (0:10, 21 snapshots)"
    progress = replay.progress()
    assert (progress.position_s, progress.length_s, progress.ended) == (10.0, 10.0, True)
    assert progress.describe() == "0:10 / 0:10 · recorded every 0.5 s"
    assert replay.progress(played[4]).describe().startswith("0:02 / 0:10")


def test_a_line_too_long_is_skipped_without_holding_it(tmp_path: Path) -> None:
    path = tmp_path / "huge-line.jsonl"
    first, second = demo_snapshots(2, 1.0)
    limit = 1024**2
    with path.open("wb") as f:
        f.write(first.model_dump_json().encode() + b"\n")
        f.write(b"x" * (16 * limit) + b"\n")  # 16 MiB of garbage on one line
        f.write(second.model_dump_json().encode() + b"\n")
    tracemalloc.start()
    try:
        replay = ReplaySource(path, max_line_bytes=limit)
        played, _ = play_all(replay)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [s.timestamp for s in played] == [first.timestamp, second.timestamp]
    # Memory follows the limit, not the line: a few times the limit, never the 16 MiB.
    assert peak < 8 * limit, f"peak {peak / 1024**2:.1f} MiB while skipping a 16 MiB line"
    assert replay.warnings == ["huge-line.jsonl line 2: skipped, longer than 1 MiB (16 MiB): not a snapshot"]
    assert played[1].errors == replay.warnings  # shown with the next snapshot


def test_compressed_recording_round_trip_and_size(tmp_path: Path) -> None:
    snapshots = demo_snapshots(40, 1.0, "everything")  # 120 were 0.3 s of CPU for the same ratio
    plain, packed = tmp_path / "run.jsonl", tmp_path / "run.jsonl.gz"
    write_recording(plain, snapshots)
    write_recording(packed, snapshots)
    with gzip.open(packed, "rt") as f:  # a standard gzip file: zcat and friends read it
        assert f.readline().startswith('{"version"')
    per_snapshot = {p.name: p.stat().st_size / len(snapshots) for p in (plain, packed)}
    assert per_snapshot["run.jsonl.gz"] < per_snapshot["run.jsonl"] / 10, per_snapshot
    played, end = play_all(ReplaySource(packed))
    assert played == [s.model_copy(update={"source": "replay"}) for s in snapshots]
    assert str(end) == "end of recording (0:39, 40 snapshots)"


def test_compressed_recording_cut_off_by_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl.gz"
    snapshots = demo_snapshots(10, 1.0)
    recorder = Recorder(path, mode="new", fsync=True)
    for snapshot in snapshots:
        recorder.write(snapshot)
    # The machine froze: no gzip trailer, and the last line only partly on disk.
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    replay = ReplaySource(path)
    # A compressed file's length is counted in the background: not known yet, or known up to the cut.
    assert replay.progress().length_s in (None, 8.0)
    played, end = play_all(replay)
    assert 8 <= len(played) <= 9
    assert "the compressed recording ends abruptly" in str(end) or "cut off" in str(end)
    assert replay.warnings
    recorder.close()


def test_append_to_a_compressed_recording(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    first, second = demo_snapshots(3, 1.0), demo_snapshots(6, 1.0)[3:]
    write_recording(path, first)
    with Recorder(path, mode="append", fsync=False) as recorder:
        for snapshot in second:
            recorder.write(snapshot)
    played, _ = play_all(ReplaySource(path))
    assert [s.timestamp for s in played] == [s.timestamp for s in first + second]


def test_record_ends_cleanly_on_sigterm(tmp_path: Path) -> None:
    """`timeout 60 sparktop record x.jsonl.gz`: the file is closed properly, the count is reported."""
    path = tmp_path / "run.jsonl.gz"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparktop", "record", str(path), "--demo", "--interval", "0.1"],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not path.exists() or path.stat().st_size < 5000):
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "sparktop record: wrote" in err
    replay = ReplaySource(path)
    played, end = play_all(replay)
    assert len(played) > 1 and replay.warnings == []  # gzip end marker written: nothing cut off
    assert f"{len(played)} snapshots" in str(end)


@pytest.mark.parametrize("every", [0.5, 2.0])
def test_the_recordings_interval_is_the_median_gap(tmp_path: Path, every: float) -> None:
    path = tmp_path / "r.jsonl"
    snapshots = demo_snapshots(8, every)
    snapshots[3] = snapshots[3].model_copy(update={"timestamp": snapshots[3].timestamp + 0.3})  # a late tick
    write_recording(path, snapshots)
    assert ReplaySource(path).recorded_interval == every


def _length_when_known(replay: ReplaySource, within_s: float = 5.0) -> float | None:
    deadline = time.monotonic() + within_s
    while replay.progress().length_s is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return replay.progress().length_s


def test_a_compressed_recordings_length_is_known_without_playing_it(tmp_path: Path) -> None:
    """A `.gz` recording's length showed `?` until its end was played."""
    path = tmp_path / "run.jsonl.gz"
    write_recording(path, demo_snapshots(40, 1.0))
    with ReplaySource(path) as replay:
        assert _length_when_known(replay) == 39.0
        assert replay.progress().describe().startswith("0:00 / 0:39")
        assert replay.sample().timestamp == T0  # playing from the start, as before


def test_a_compressed_recording_cut_off_by_a_crash_has_the_length_up_to_the_cut(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl.gz"
    write_recording(path, demo_snapshots(40, 1.0))
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) * 3 // 4])
    with ReplaySource(path) as replay:
        length = _length_when_known(replay)
        assert length is not None and 0 < length < 39


def test_once_on_a_recording_prints_its_last_snapshot_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--replay X --once` printed the first snapshot; a post-mortem wants the last."""
    from sparktop.commands.main import main

    snapshots = demo_snapshots(12, 0.5, scenario="critical")
    for name in ("run.jsonl", "run.jsonl.gz"):
        path = tmp_path / name
        write_recording(path, snapshots)
        assert main(["--replay", str(path), "--once", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["timestamp"] == snapshots[-1].timestamp
        assert main(["--replay", str(path), "--once"]) == 0
        first = capsys.readouterr().out.splitlines()[0]
        assert first.startswith("replay  the last snapshot: 0:06 / 0:06"), first
