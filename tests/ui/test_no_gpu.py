"""Without a GPU no GPU figure reads as a measured 0: the containers table, the stop dialog and `--once`
dash it, as the processes table always did."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from sparktop.commands.main import main
from sparktop.core.columns import PROCESS_COLUMN_SPECS
from sparktop.session.session import Session
from sparktop.settings.config import Config
from sparktop.sources.demo import DemoSource
from sparktop.sources.recording import Recorder
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.confirm import ConfirmScreen
from sparktop.ui.screens.dashboard import ContainersTable
from tests.fixtures.sources import NoGpuDemo, without_gpu
from tests.ui.demo_app import column_cells
from tests.ui.frame import table_cell, table_rows


def test_the_processes_table_dashes_the_gpu_side() -> None:
    """Its GPU cells as the table draws them, from the rows over a session of five samples (no app)."""
    source = NoGpuDemo("audio")
    session = Session.for_config(Config(), clock=lambda: 0.0)
    for _ in range(5):
        session.ingest(source.sample(), analyse=False)
    session.analyse()
    _containers, processes = table_rows(session)
    cells = {table_cell(PROCESS_COLUMN_SPECS["gpu"], row) for row in processes}
    assert processes and cells == {"—"}, cells


async def test_containers_table_and_stop_dialog_dash_the_gpu_side() -> None:
    app = SparktopApp(NoGpuDemo("audio"), Config(), auto_refresh=False, warmup=5, clock=lambda: 0.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        containers = app.query_one(ContainersTable)
        assert containers.row_count and set(column_cells(containers, "gpu")) == {"—"}
        await pilot.press("s")
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
