"""`sparktop --replay` in a real terminal plays a recording at the pace it was recorded (issue 12 item 5)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.fixtures.load import wall_limit
from tests.fixtures.recordings import demo_snapshots, write_recording
from tests.terminal.tmux import TmuxPane, sparktop_command


@pytest.fixture
def pane_size() -> tuple[int, int]:
    return 160, 36  # the status line's whole progress text on one line


def test_a_half_second_recording_plays_at_half_a_second(pane: TmuxPane, tmp_path: Path) -> None:
    path = tmp_path / "half.jsonl.gz"
    write_recording(path, demo_snapshots(13, 0.5))  # 6 s of recording
    pane.run(sparktop_command("--replay", str(path)))
    assert pane.wait_for(lambda: "Memory pool" in pane.screen()), pane.screen()
    started = time.monotonic()
    first = pane.screen().splitlines()[0]
    assert "every 0.5 s" in first and "recorded every 0.5 s" in first
    assert re.search(r"0:0\d / (\?|0:06)", first), first  # a compressed file's length: read in the background
    assert pane.wait_for(lambda: " / 0:06" in pane.screen().splitlines()[0], timeout=5), pane.screen()
    assert pane.wait_for(lambda: "end of recording" in pane.screen(), timeout=30), pane.screen()
    elapsed = time.monotonic() - started
    assert "0:06 / 0:06" in pane.screen() and "end of recording (0:06, 13 snapshots)" in pane.screen()
    # at 1 s a tick: 12 s
    assert elapsed < wall_limit(11, defect=12), f"6 s of recording took {elapsed:.1f} s to play"
    pane.keys("q")
    assert pane.wait_for(lambda: pane.exit_status() == 0)


def test_speed_start_and_seek_keys_in_a_real_terminal(pane: TmuxPane, tmp_path: Path) -> None:
    """`--start=-0:30 --speed 5` opens half a minute before the end at 5×; the keys as a terminal sends them
    (`[`, `<`, Home) slow it down and seek (issue 23)."""
    path = tmp_path / "long.jsonl"
    write_recording(path, demo_snapshots(121, 1.0))  # 2:00 of recording
    pane.run(sparktop_command("--replay", str(path), "--start=-0:30", "--speed", "5"))

    def header() -> str:
        return pane.screen().splitlines()[0] if pane.screen() else ""

    assert pane.wait_for(lambda: re.search(r"1:[3-5]\d / 2:00 · 5×", header()) is not None), pane.screen()
    pane.keys("p", "[")  # paused: it stays where it is
    assert pane.wait_for(lambda: "· 2× ·" in header() and "PAUSED" in header()), pane.screen()
    at = re.search(r"(\d:\d\d) / 2:00", header())
    assert at is not None
    pane.keys("<")
    minutes, seconds = map(int, at.group(1).split(":"))
    back = minutes * 60 + seconds - 60
    assert pane.wait_for(lambda: f"{back // 60}:{back % 60:02} / 2:00" in header()), pane.screen()
    pane.keys("Home")
    assert pane.wait_for(lambda: "0:00 / 2:00" in header()), pane.screen()
    pane.keys("q")
    assert pane.wait_for(lambda: pane.exit_status() == 0)
