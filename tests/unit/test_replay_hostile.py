"""Recordings someone else wrote: millions of bad or blank lines, and timestamps that are not numbers
(issue 32 items 7 and 8). A bad line is counted, a few are described; blank lines are read past in bulk; a
NaN or Inf timestamp makes its line not a snapshot."""

from __future__ import annotations

import gzip
import json
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from sparktop.core.snapshot import Snapshot
from sparktop.sources.replay import START, ReplaySource, format_clock
from tests.fixtures.cli import run_main
from tests.fixtures.recordings import T0, demo_snapshots, play_all, write_recording

BLANK_MIB = 8  # twice: before the bad line and after the last snapshot


def within(seconds: float, job: threading.Thread) -> bool:
    """Runs `job` and says whether it ended within `seconds` (a hang must fail the test, not stall it)."""
    job.start()
    job.join(seconds)
    return not job.is_alive()


def line_of(snapshot: Snapshot) -> bytes:
    return snapshot.model_dump_json().encode() + b"\n"


def write_with_bad_lines(path: Path, bad: int) -> list[Snapshot]:
    """A compressed recording: a snapshot, `bad` lines of `x`, another snapshot."""
    first, second = demo_snapshots(2, 1.0)
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(line_of(first))
        for _ in range(bad // 100_000):
            f.write(b"x\n" * 100_000)
        f.write(b"x\n" * (bad % 100_000))
        f.write(line_of(second))
    return [first, second]


def replay_peak(path: Path) -> tuple[list[Snapshot], ReplaySource, int]:
    """Plays `path` through (its length not looked for: this measures the player) and gives the peak of
    memory allocated while doing it."""
    tracemalloc.start()
    try:
        replay = ReplaySource(path, find_length=False)
        played, _ = play_all(replay)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return played, replay, peak


def test_a_million_bad_lines_are_counted_and_a_few_described(tmp_path: Path) -> None:
    """A million bad lines cost a GB when each kept its message; 12,000 show the bound as well (a message
    kept for each would be ~1.6 MB more here than for 1,000, over the 1 MiB bound; the peak is ~0.26 MiB
    at either size). Under tracemalloc each bad line costs ~7 µs: the sizes are what the bound needs."""
    small, large = tmp_path / "small.jsonl.gz", tmp_path / "large.jsonl.gz"
    write_with_bad_lines(small, 1_000)
    written = write_with_bad_lines(large, 12_000)
    played_small, _, peak_small = replay_peak(small)
    played, replay, peak = replay_peak(large)
    assert [s.timestamp for s in played] == [s.timestamp for s in written]
    # Memory does not follow the number of bad lines (each message kept: ~150 bytes a line).
    assert peak < peak_small + 1024**2, f"{peak_small / 1024**2:.1f} MiB → {peak / 1024**2:.1f} MiB"
    assert len(played_small) == 2
    # A few described with their line numbers, the rest counted in one line.
    errors = played[1].errors
    assert 2 <= len(errors) <= 6, errors
    assert (
        errors[0] == "large.jsonl.gz line 2: not a snapshot (invalid JSON: expected value at line 1 column 1)"
    )
    assert errors[-1] == (
        "large.jsonl.gz lines 2–12001: 12,000 lines that are not snapshots (the first 3 described above)"
    )
    assert replay.warnings == errors


def test_bad_lines_between_many_snapshots_keep_a_bounded_list_of_warnings(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    # 120 problems: 100 listed, 20 counted; one demo snapshot restamped (what it holds is not the point)
    first = demo_snapshots(1, 1.0)[0]
    snapshots = [first.model_copy(update={"timestamp": T0 + i}) for i in range(120)]
    with path.open("wb") as f:
        for snapshot in snapshots:
            f.write(b"garbage\n" + line_of(snapshot))
    replay = ReplaySource(path)
    played, _ = play_all(replay)
    assert len(played) == 120
    assert all(len(s.errors) == 1 for s in played)  # each snapshot still says what preceded it
    assert len(replay.warnings) <= 101
    assert replay.warnings[-1] == "mixed.jsonl: 20 more problems not listed"
    # Read again after a seek back: nothing counted twice.
    replay.rewind_to(START)
    play_all(replay)
    assert replay.warnings[-1] == "mixed.jsonl: 20 more problems not listed"


def test_a_gigabyte_of_blank_lines_is_read_past_in_bulk(tmp_path: Path) -> None:
    """1 GiB of newlines in a 1 MB .gz never finished: a readline call per newline, and the length finder
    split the tail into one object per blank line. 16 MiB of them show it as well, by the CPU it takes: read
    past in bulk ~0.2 s; a readline call per newline (the defect, as a mutation) 60 s."""
    path = tmp_path / "blank.jsonl.gz"
    first, second = demo_snapshots(2, 30.0)
    blank = b"\n" * 1024**2
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(line_of(first))
        for _ in range(BLANK_MIB):
            f.write(blank)
        f.write(b"x\n")  # a bad line after the blanks: its number is still right
        f.write(line_of(second))
        for _ in range(BLANK_MIB):
            f.write(blank)
    result: dict[str, object] = {}

    def play() -> None:
        tracemalloc.start()
        started = time.process_time()  # this process's: the length is found on another thread
        try:
            replay = ReplaySource(path)
            result["played"], result["end"] = play_all(replay)
            deadline = time.monotonic() + 60
            while replay.last_timestamp is None and time.monotonic() < deadline:  # found in the background
                time.sleep(0.05)
            result["length"] = replay.progress().length_s
            result["peak"] = tracemalloc.get_traced_memory()[1]
            result["cpu"] = time.process_time() - started
        finally:
            tracemalloc.stop()

    assert within(90, threading.Thread(target=play, daemon=True)), "still reading blank lines after 90 s"
    assert isinstance(result["cpu"], float) and result["cpu"] < 5.0, f"{result['cpu']:.1f} s of CPU"
    played = result["played"]
    assert isinstance(played, list) and [s.timestamp for s in played] == [first.timestamp, second.timestamp]
    bad_line = 1 + BLANK_MIB * 1024**2 + 1
    assert played[1].errors == [
        f"blank.jsonl.gz line {bad_line}: not a snapshot (invalid JSON: expected value at line 1 column 1)"
    ]
    assert result["length"] == 30.0
    assert isinstance(result["peak"], int) and result["peak"] < BLANK_MIB * 1024**2  # not one per line


def test_blank_lines_at_the_end_of_a_plain_file_leave_its_length_readable(tmp_path: Path) -> None:
    path = tmp_path / "tail.jsonl"
    snapshots = demo_snapshots(3, 5.0)
    write_recording(path, snapshots)
    with path.open("ab") as f:
        f.write(b"\n" * (8 * 1024**2))
    tracemalloc.start()
    try:
        replay = ReplaySource(path, max_line_bytes=16 * 1024**2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert replay.progress().length_s == 10.0
    assert peak < 64 * 1024**2, f"{peak / 1024**2:.0f} MiB to read 8 MiB of newlines"


def test_the_command_line_prints_a_few_lines_for_many_bad_ones(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl.gz"
    write_with_bad_lines(path, 5_000)
    done = run_main("--replay", str(path), "--once")
    assert done.returncode == 0, done.stderr
    errors = [line for line in done.stdout.splitlines() if line.startswith("error ")]
    assert 2 <= len(errors) <= 6, done.stdout[-2000:]
    assert "5,000 lines that are not snapshots" in errors[-1]


# -- item 8: timestamps that are not numbers ----------------------------------------------------------------

NOT_A_TIME = [float("nan"), float("inf"), float("-inf")]


def with_timestamp(snapshot: Snapshot, value: float) -> str:
    data = json.loads(snapshot.model_dump_json())
    data["timestamp"] = value
    return json.dumps(data)  # Python writes NaN, Infinity and -Infinity, as a hostile file would hold them


@pytest.mark.parametrize("value", NOT_A_TIME, ids=str)
def test_a_timestamp_that_is_not_a_number_on_the_last_line(tmp_path: Path, value: float) -> None:
    path = tmp_path / "last.jsonl"
    snapshots = demo_snapshots(4, 10.0)
    write_recording(path, snapshots[:3])
    with path.open("a") as f:
        f.write(with_timestamp(snapshots[3], value) + "\n")
    replay = ReplaySource(path)
    assert replay.progress().length_s == 20.0  # the last readable time
    played, end = play_all(replay)
    assert [s.timestamp for s in played] == [T0, T0 + 10, T0 + 20]
    assert "last.jsonl line 4: not a snapshot (timestamp:" in str(end)
    assert replay.progress().describe().startswith("0:20 / 0:20")
    done = run_main("--replay", str(path), "--once")
    assert done.returncode == 0, done.stderr
    assert "replay  the last snapshot: 0:20 / 0:20" in done.stdout


@pytest.mark.parametrize("value", NOT_A_TIME, ids=str)
def test_a_timestamp_that_is_not_a_number_in_the_middle(tmp_path: Path, value: float) -> None:
    path = tmp_path / "middle.jsonl.gz"
    snapshots = demo_snapshots(9, 10.0)
    write_recording(path, snapshots)
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    lines[4] = with_timestamp(snapshots[4], value)
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    played, _ = play_all(ReplaySource(path))
    assert [s.timestamp for s in played] == [s.timestamp for i, s in enumerate(snapshots) if i != 4]
    assert played[4].errors[0].startswith("middle.jsonl.gz line 5: not a snapshot (timestamp:")


def test_format_clock_says_so_for_a_time_that_is_not_a_number() -> None:
    assert [format_clock(v) for v in NOT_A_TIME] == ["?", "?", "?"]
    assert format_clock(65.4) == "1:05"


def test_other_times_that_are_not_numbers_make_the_line_not_a_snapshot(tmp_path: Path) -> None:
    """Siblings of item 8: a process's start time feeds its key (int()), a throttle's start an age."""
    path = tmp_path / "times.jsonl"
    snapshots = demo_snapshots(3, 10.0)
    data = json.loads(snapshots[1].model_dump_json())
    data["processes"][0]["start_time"] = float("inf")
    data["gpu"]["gpus"][0]["throttle_since"] = float("nan")
    write_recording(path, snapshots)
    lines = path.read_text().splitlines()
    lines[1] = json.dumps(data)
    path.write_text("\n".join(lines) + "\n")
    played, _ = play_all(ReplaySource(path))
    assert [s.timestamp for s in played] == [T0, T0 + 20]
    assert played[1].errors == [
        "times.jsonl line 2: not a snapshot (gpu.gpus.0.throttle_since: Input should be a finite number "
        "and 1 more)"
    ]
