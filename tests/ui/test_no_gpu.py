"""Without a GPU no GPU figure reads as a measured 0: the containers table, the stop dialog and `--once`
dash it, as the processes table always did."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from sparktop.commands.main import main
from sparktop.settings.config import Config
from sparktop.sources.demo import DemoSource
from sparktop.sources.recording import Recorder
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.confirm import ConfirmScreen
from sparktop.ui.screens.dashboard import ContainersTable, ProcessesTable
from tests.fixtures.sources import NoGpuDemo, without_gpu
from tests.ui.demo_app import column_cells


async def test_tables_and_stop_dialog_dash_the_gpu_side() -> None:
    app = SparktopApp(NoGpuDemo("audio"), Config(), auto_refresh=False, warmup=5, clock=lambda: 0.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        containers = app.query_one(ContainersTable)
        assert containers.row_count and set(column_cells(containers, "gpu")) == {"—"}
        await pilot.press("3")
        await pilot.pause()
        assert set(column_cells(app.query_one(ProcessesTable), "gpu")) == {"—"}
        await pilot.press("2", "s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        body = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "GPU side —" in body and "GPU side 0" not in body


def test_once_dashes_the_gpu_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nogpu.jsonl"
    demo = DemoSource("audio")
    with Recorder(path) as rec:
        rec.write(without_gpu(demo.sample()))
    assert main(["--replay", str(path), "--once"]) == 0
    out = capsys.readouterr().out
    consumers = [line for line in out.splitlines() if " cpu " in line]
    assert consumers and all(line.rstrip().endswith("gpu          —") for line in consumers), out
