"""The dashboard's creep banner follows the growth (issue 23 item 2): a fast grower is named within seconds,
and once it stops the banner drops it within a few ticks (it stayed 30 s, and a stopped slow grower for
six minutes)."""

from __future__ import annotations

from pathlib import Path

from sparktop.core.snapshot import GIB, MIB, GpuReport, HostMemory, ProcessInfo, Snapshot
from sparktop.settings.config import Config
from sparktop.sources.snapshot_source import SnapshotSource
from sparktop.ui.app import SparktopApp
from sparktop.ui.widgets.creep_alerts import CreepAlerts
from tests.fixtures.demo_session import demo_session

TOTAL = int(23.5 * GIB)
START = 1_700_000_000.0


class Grower(SnapshotSource):
    """A 24 GB machine where `hog` (pid 4242) grows 100 MiB a second while `growing`; one sample a second."""

    name = "grower"

    def __init__(self, calm_s: int) -> None:
        self.t = START
        self.ticks = 0
        self.calm_s = calm_s
        self.hog = 1 * GIB
        self.growing = True

    def sample(self) -> Snapshot:
        self.t += 1.0
        self.ticks += 1
        if self.growing and self.ticks > self.calm_s:
            self.hog += 100 * MIB
        procs = [ProcessInfo(pid=4242, name="hog", rss=self.hog + (self.ticks % 2) * 4096, start_time=START)]
        used = 3 * GIB + self.hog
        return Snapshot(
            timestamp=self.t,
            memory=HostMemory(total=TOTAL, available=TOTAL - used, free=TOTAL - used),
            gpu=GpuReport(available=False, reason="test"),
            processes=procs,
        )

    def close(self) -> None:
        pass


async def test_the_banner_names_a_fast_grower_and_drops_it_within_seconds_of_the_stop() -> None:
    source = Grower(calm_s=30)
    app = SparktopApp(
        source,
        Config(),
        clock=lambda: source.t,
        auto_refresh=False,
        warmup=30 + 14,  # a calm half minute, then 14 s of growth at 100 MiB/s
        user_theme_dir=Path("/nonexistent/sparktop-themes"),
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        banner = app.query_one(CreepAlerts)
        assert banner.display and "hog (4242)" in str(banner.render()), str(banner.render())
        source.growing = False
        for _ in range(6):
            await app.refresh_once()
        await pilot.pause()
        assert app.session.creep == []
        assert "hog" not in str(banner.render())


async def test_the_exhaustion_banner_and_the_creep_lines_name_the_same_time_on_screen() -> None:
    """Issue 32 item 1, as a user reads it: the banner said "pool exhausted in ~2 min" while the creep line
    under it said "the pool in ~5 min", and the banner went and came back while the growth went on."""
    import re

    from textual.widgets import Static

    from tests.fixtures.hogs import growing_machine

    source = growing_machine(seed=2)
    app = SparktopApp(
        source,
        Config(),
        clock=lambda: source.t,
        auto_refresh=False,
        warmup=60,
        user_theme_dir=Path("/nonexistent/sparktop-themes"),
    )
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        banner = app.screen.query_one("#critical-banner", Static)
        creep = app.query_one(CreepAlerts)
        # Forty ticks: a whole cycle of the suite's allocate-and-free (37 s), which broke the warning's fit.
        # Each tick's texts are read from the two widgets (what they draw), not from a repaint of the screen
        # each tick (two thirds of the test's CPU); they are on screen, checked once at the end.
        for _ in range(40):
            await app.refresh_once()
            said = str(banner.render())
            assert banner.has_class("-show") and said.startswith("▲ pool exhausted in ~"), said
            when = re.search(r"exhausted in ~(\d+ (?:s|min))", said)
            assert when is not None, said
            lines = str(creep.render()).splitlines()[1:]
            assert lines and all(f"the pool in ~{when.group(1)}" in line for line in lines), (said, lines)
        await pilot.pause()
        assert banner.is_on_screen and creep.is_on_screen, "the banner and the creep lines are not on screen"


def test_no_creep_alert_when_nothing_grows():
    """The creep block over the session the dashboard holds once the audio scenario has filled the creep
    window (one sample a second: a window and one more; it was seven minutes, ~0.5 s more of CPU), given
    what the dashboard gives it (no app: tests/fixtures/demo_session.py)."""
    from sparktop.analysis.trend import collecting_s
    from sparktop.session.session import CREEP_WINDOW_S

    session = demo_session("audio", warmup=int(CREEP_WINDOW_S) + 1).session
    assert session.history.times()[-1] - session.history.times()[0] >= CREEP_WINDOW_S, "a full window"
    assert session.creep == []  # nothing was judged creeping
    alerts = CreepAlerts()
    alerts.show_alerts(session.creep, "GiB", collecting_s(session.history, session.creep_window_s))
    assert not alerts.display
