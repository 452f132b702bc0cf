"""`sparktop record` as a user runs it: a real process writing a real file, stopped by a real signal.

It samples through the one headless loop (`SessionRunner`): on a fixed grid however long a sample takes,
the tick in progress when SIGTERM comes is finished and written, and footprints are recorded as every
headless command records them (issue 23.3)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sparktop.commands.record import record, ticks_within
from sparktop.core.snapshot import Snapshot
from sparktop.sources.replay import ReplayEnded, ReplaySource
from tests.fixtures.cli import run_main
from tests.fixtures.sources import FailingEvery
from tests.fixtures.trees import CgroupTree, ProcTree

GIB = 1024**3

SAMPLE_S = 0.3  # a slow sample (a loaded machine, Docker answering late)
INTERVAL_S = 0.5

# `sparktop record --demo` whose samples take SAMPLE_S and carry the wall time they started at, as a live
# sample does; it says on stdout when each sample starts.
SLOW_RECORD = f"""
import sys, time
from sparktop.sources.demo import DemoSource
from sparktop.commands.main import main

plain = DemoSource.sample

def slow(self):
    started = time.time()
    print("sampling", flush=True)
    time.sleep({SAMPLE_S})
    return plain(self).model_copy(update={{"timestamp": started}})

DemoSource.sample = slow
sys.exit(main(sys.argv[1:]))
"""


def played(path: Path) -> tuple[list[Snapshot], list[str]]:
    replay = ReplaySource(path)
    snapshots: list[Snapshot] = []
    with pytest.raises(ReplayEnded):
        while True:
            snapshots.append(replay.sample())
    return snapshots, list(replay.warnings)


def test_record_samples_on_the_grid_and_sigterm_keeps_the_tick_in_progress(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl.gz"  # compressed: a stop that skipped the close would leave no end marker
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_RECORD, "record", str(path), "--demo", "--interval", str(INTERVAL_S)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for started, line in enumerate(proc.stdout, start=1):
            assert line == "sampling\n"
            if started == 4:
                break
        os.kill(proc.pid, signal.SIGTERM)  # while the 4th sample is being taken
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    # The sample in progress is finished and written: a stop never loses the last tick (the old loop raised
    # KeyboardInterrupt into the sample and reported 3).
    assert err.strip().splitlines()[-1] == f"sparktop record: wrote 4 snapshots to {path}", err
    snapshots, warnings = played(path)
    assert len(snapshots) == 4 and warnings == []  # every line whole; a .gz file has its end marker
    # On the grid: a tick starts every INTERVAL_S however long a sample takes. A loop that waited the interval
    # after each sample would start one every INTERVAL_S + SAMPLE_S.
    times = [s.timestamp for s in snapshots]
    mean_gap = (times[-1] - times[0]) / (len(times) - 1)
    assert INTERVAL_S - 0.05 < mean_gap < INTERVAL_S + SAMPLE_S / 2, times


def test_duration_counts_the_ticks_of_the_grid_that_start_before_it() -> None:
    assert ticks_within(10.0, 2.0) == 5  # at 0, 2, 4, 6, 8
    assert ticks_within(0.35, 0.1) == 4  # 0.35 / 0.1 is 3.4999…
    assert ticks_within(0.05, 0.01) == 5  # 0.05 / 0.01 is 5.000…1
    assert ticks_within(0.3, 0.1) == 3
    assert ticks_within(0.01, 5.0) == 1  # one snapshot at least
    assert ticks_within(10 * 365 * 86400, 0.01) == 10 * 365 * 86400 * 100


def footprint_rows(path: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT kind, name, peak_bytes FROM footprint").fetchall()


@pytest.mark.parametrize("damage", [None, "corrupt"])
def test_record_records_footprints_or_says_once_why_not(
    tmp_path: Path, damage: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23.3: every headless command records footprints; a database it cannot use is one stderr line.
    A host under --root with one long-running 2 GiB process, as the live source reads it."""
    host = tmp_path / "host"
    ProcTree(host / "proc").add(4242, "trainer", cmdline=["python3", "train.py"], rss_pages=(2 * GIB) // 4096)
    CgroupTree(host / "sys" / "fs" / "cgroup", version=2)
    state = tmp_path / "xdg" / "sparktop"
    state.mkdir(parents=True, mode=0o700)
    db = state / "footprints.sqlite3"
    if damage == "corrupt":
        db.write_bytes(b"not a database" * 100)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    out = tmp_path / "run.jsonl"
    # In this process: what it writes and says is the point (the signal and the exit: the test above).
    done = run_main("record", str(out), "--root", str(host), "--interval", "0.25", "--duration", "0.75")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "measured footprints" in line]
    snapshots, _ = played(out)
    assert len(snapshots) == 3 and [p.name for p in snapshots[-1].processes] == ["trainer"]
    if damage is None:
        assert said == [], done.stderr
        assert footprint_rows(db) == [("process", "trainer", 2 * GIB)]  # flushed when the source closed
    else:
        assert len(said) == 1 and said[0].startswith("sparktop record: measured footprints:"), done.stderr
        assert str(db) in said[0]


def test_a_failed_sample_is_one_line_and_the_recording_goes_on(tmp_path: Path) -> None:
    """The old loop let the exception out: a traceback, or `FILE: Input/output error` and exit 2 as if the
    recording could not be written."""
    path = tmp_path / "run.jsonl"
    said: list[str] = []
    count = record(FailingEvery(3), path, interval=0.001, duration=0.006, on_error=said.append)
    assert said == ["sample: OSError: /proc/meminfo: Input/output error"] * 2
    snapshots, warnings = played(path)
    assert count == len(snapshots) == 4 and warnings == []  # 6 ticks on the grid, 2 of them failed
