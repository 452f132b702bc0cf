"""The dashboard on a real recording: where the playback is, its end, its own pace, and problems in the file
that stay on screen (issue 12 item 5, issue 13 item 11)."""

from __future__ import annotations

from pathlib import Path

from sparktop.settings.config import Config
from sparktop.sources.replay import ReplaySource
from sparktop.ui.app import SparktopApp
from tests.fixtures.recordings import demo_snapshots, write_recording
from tests.ui.demo_app import status_text

# The least height the dashboard draws at (terminal_check.MIN_HEIGHT): these tests read the status line, the
# session and the creep watch's text, and each tick draws a third less than at 36 rows. WIDE: the status line
# with a problem in the file on one line.
SIZE = (160, 18)
WIDE = (200, 18)


def make(path: Path) -> SparktopApp:
    return SparktopApp(ReplaySource(path), Config(), auto_refresh=False, clock=lambda: 0.0)


async def test_position_length_and_end_of_a_real_recording_and_the_creep_watch_there(tmp_path: Path) -> None:
    """Where the playback is, the recording's length and pace, its end said once; and at the end of a
    recording shorter than the creep window, `creep watch: collecting data (~3 min to go)` stayed on screen:
    no data would ever come."""
    from sparktop.ui.widgets.creep_alerts import CreepAlerts

    path = tmp_path / "run.jsonl"
    write_recording(path, demo_snapshots(9, 0.5))
    app = make(path)
    async with app.run_test(size=SIZE) as pilot:
        await app.refresh_once()
        await pilot.pause()
        assert "0:00 / 0:04 · 1× · recorded every 0.5 s" in status_text(app), "position, length and pace"
        watch = app.query_one(CreepAlerts)
        assert watch.display and "collecting data" in str(watch.render()), "the creep watch counts down"
        for _ in range(4):
            await app.refresh_once()
        await pilot.pause()
        assert "0:02 / 0:04" in status_text(app), "the position as it plays"
        for _ in range(10):  # past the end: the last frame stays, the end is said, nothing is counted twice
            await app.refresh_once()
        await pilot.pause()
        assert app.session.source_ended
        assert "end of recording (0:04, 9 snapshots)" in status_text(app), "the end said"
        assert "0:04 / 0:04" in status_text(app), "the last frame stays"
        assert len(app.session.history.times()) == 9, "nothing counted twice past the end"
        assert not watch.display or "collecting data" not in str(watch.render()), "counting down at the end"


async def test_a_bad_line_in_the_middle_and_a_cut_off_last_line_stay_on_screen(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    write_recording(path, demo_snapshots(8, 1.0))
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(2, "not json\n")
    text = "".join(lines)
    path.write_text(text[: len(text) - 2000])  # and the machine froze while the last line was written
    app = make(path)
    async with app.run_test(size=WIDE) as pilot:
        for _ in range(5):
            await app.refresh_once()
        await pilot.pause()
        assert "1 problem in the source: crash.jsonl line 3: not a snapshot" in status_text(app), (
            "a bad line in the middle stays visible after its tick"
        )
        for _ in range(5):
            await app.refresh_once()
            await pilot.pause()
            if app.session.source_ended:
                assert "2 problems in the source: crash.jsonl line 9: not a snapshot (cut off" in status_text(
                    app
                ), "the cut-off last line is said when the recording ends"
        assert app.session.source_ended
