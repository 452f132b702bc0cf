"""What `B` writes (help: "the dashboard's black box") plays back with `sparktop --replay` (issue 23.9): it
was a summary format that replay refused ("no snapshot in this recording ... timestamp: Field required")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from sparktop.commands.main import main
from sparktop.core.snapshot import Snapshot
from sparktop.session.history_export import WHAT_IS_MISSING
from sparktop.settings.config import Config
from sparktop.settings.files import state_dir
from sparktop.sources.replay import ReplayEnded, ReplaySource
from sparktop.ui.app import SparktopApp
from tests.ui.demo_app import make_app, status_text

pytestmark = pytest.mark.asyncio(loop_scope="module")

# The least height the dashboard draws at (terminal_check.MIN_HEIGHT): the tests read files and a status line.
SIZE = (200, 18)


@dataclass
class Written:
    """The file `B` wrote, and the history the dashboard held when it was pressed."""

    path: Path
    times: list[float]
    used: list[int]
    latest: Snapshot | None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """`B` pressed once for the module's two tests (each pressed it in an app of its own), in a state folder
    of the fixture's own."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
        app = make_app(warmup=20)
        async with app.run_test(size=SIZE) as pilot:
            await app.refresh_once()
            await pilot.press("B")
            await pilot.pause()
            times, used = app.session.history.times(), app.session.history.used()
            latest = app.session.latest
        (path,) = sorted(Path(state_dir()).glob("history-*.jsonl"))
    return Written(path, times, used, latest)


async def test_b_writes_a_recording_that_replays(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    path, times, used, latest = written.path, written.times, written.used, written.latest
    assert path.stat().st_mode & 0o777 == 0o600

    replayed: list[Snapshot] = []
    with ReplaySource(path) as source:
        while True:
            try:
                replayed.append(source.sample())
            except ReplayEnded:
                break
    assert [s.timestamp for s in replayed] == times
    assert [s.memory.used for s in replayed] == used
    assert latest is not None and replayed[-1].memory.total == latest.memory.total
    last = replayed[-1].accounting
    assert last is not None and sum(c.total for c in last.consumers) + last.unattributed == used[-1]

    capsys.readouterr()
    assert main(["--replay", str(path), "--once", "--json"]) == 0  # the command that refused it
    shown = Snapshot.model_validate(json.loads(capsys.readouterr().out))
    # --replay --once prints the recording's last snapshot (what a post-mortem wants)
    assert shown.memory.used == used[-1] and shown.accounting is not None and shown.accounting.consumers


async def test_b_file_replays_with_a_note_not_a_problem(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its replay said "⚠ 1 problem: written by the dashboard's B key…" (issue 32, Rough): what the file
    leaves out is a note, shown as one, and counted with no error (serve's sparktop_collect_errors)."""
    path = written.path
    replay = SparktopApp(ReplaySource(path), Config(), auto_refresh=False, clock=lambda: 0.0)
    async with replay.run_test(size=SIZE) as pilot:
        await replay.refresh_once()
        await pilot.pause()
        status = status_text(replay)
        latest = replay.session.latest
    assert "problem" not in status and "⚠" not in status, status
    assert "note: written by the dashboard's B key" in status, status
    assert latest is not None and latest.errors == [] and latest.notes == [WHAT_IS_MISSING]
    capsys.readouterr()
    assert main(["--replay", str(path), "--once"]) == 0
    out = capsys.readouterr().out
    assert "note   written by the dashboard's B key" in out and "error" not in out, out
