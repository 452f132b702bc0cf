"""Issue 26: the `sm` column shows NVML's per-process SM utilisation (a container summing its processes);
where NVML cannot measure it the column is hidden and the GPU panel says why, never a column of 0s. A lasting
throttle goes to the messages (M)."""

from __future__ import annotations

from sparktop.analysis.throttle import LASTING_S
from sparktop.core.columns import CONTAINER_COLUMN_SPECS, PROCESS_COLUMN_SPECS, SM_COLUMN
from sparktop.core.snapshot import Snapshot
from sparktop.settings.config import Config
from sparktop.sources.demo import DemoSource
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.dashboard import ContainersTable, ProcessesTable
from tests.fixtures.demo_session import demo_session
from tests.ui.frame import gpu_panel, table_cell, table_rows

WHY = "not supported on this device (both per-process utilisation calls)"
# The GPU panel's width in the dashboard's gauges column at 120x36 and at 160x40: its text is read there
# without an app (tests/ui/frame.py); the tables' columns keep one.
PANEL_AT_120, PANEL_AT_160 = 35, 80


class Unmeasured(DemoSource):
    """The demo on a driver where neither per-process utilisation call answers."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.measured = False

    def sample(self) -> Snapshot:
        snapshot = super().sample()
        if not self.measured:
            for gpu in snapshot.gpu.gpus:
                gpu.unsupported["sm_pct"] = WHY
                for proc in gpu.processes:
                    proc.sm_pct = None
            for proc in snapshot.processes:
                proc.gpu_sm_pct = None
            for container in snapshot.containers:
                container.gpu_sm_pct = None
        return snapshot


async def test_sm_column_hidden_with_the_reason_then_shown() -> None:
    """The tables' columns as the dashboard sets them (on every redraw, their tabs shown or not: showing the
    Processes tab cost a third of the test); the cells through the rows the tables draw and the panel's text
    over the app's session (tests/ui/frame.py)."""
    source = Unmeasured("default", seed=0)
    app = SparktopApp(source, Config(), auto_refresh=False, warmup=3, clock=lambda: 0.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        panel = str(gpu_panel(app.session).text_at(PANEL_AT_160))
        assert "sm %" in panel and "not supported on this device" in panel, panel
        processes, containers = app.query_one(ProcessesTable), app.query_one(ContainersTable)
        assert "sm" not in processes.columns and "gpu" in processes.columns, "sm shown while unmeasured"
        assert "sm" not in containers.columns and "gpu" in containers.columns, "sm shown while unmeasured"

        source.measured = True
        await app.refresh_once()
        await pilot.pause()
        assert "sm" in processes.columns and "sm" in containers.columns, "sm not shown once measured"
        session = app.session
    assert session.latest is not None
    container_rows, process_rows = table_rows(session)
    trainer = next(p for p in session.latest.processes if p.name == "python3" and (p.gpu_sm_pct or 0) > 50)
    sm = PROCESS_COLUMN_SPECS[SM_COLUMN]
    cells = {row.key: table_cell(sm, row) for row in process_rows if not row.minor}  # the rows shown
    assert cells[f"process:{trainer.pid}:{int(trainer.start_time)}"] == f"{trainer.gpu_sm_pct:.0f}"
    assert "—" in cells.values()  # processes without a GPU context: no figure, not 0
    train = next(c for c in session.latest.containers if c.compose_project == "ssd-tetris")
    sm = CONTAINER_COLUMN_SPECS[SM_COLUMN]
    row = next(row for row in container_rows if row.key == f"container:{train.id}")
    assert table_cell(sm, row) == f"{train.gpu_sm_pct:.0f}"
    assert "not supported" not in str(gpu_panel(session).text_at(PANEL_AT_160))


def test_a_lasting_throttle_is_kept_in_the_messages() -> None:
    # The default demo is busy and hot: power cap and thermal slowdown from the start. The session's
    # messages are what `M` lists (with the app's own: tests/ui/test_settings_ui.py shows them there).
    session = demo_session("default", warmup=int(LASTING_S) + 2).session
    slowed = [message.text for message in session.messages if message.title == "GPU slowed"]
    assert len(slowed) == 1 and "slowed under load: SM" in slowed[0] and "SW thermal slowdown" in slowed[0]
    assert "slowed" in str(gpu_panel(session).text_at(PANEL_AT_160))


def test_a_narrow_gpu_panel_cuts_no_clock_duration_or_reason() -> None:
    from sparktop.ui.widgets.gpu_panel import narrow_throttle

    # two lines at most (the panel must not push the pressure panel into the footer at 80×24)
    lines = narrow_throttle("SM 2.32 GHz of 2.42", "SW power cap, SW thermal slowdown", "for 72 s", 25)
    assert lines == ["SM 2.32 GHz of 2.42", "SW power cap +1 more"]
    wide = narrow_throttle("SM 2.32 GHz of 2.42", "SW power cap, SW thermal slowdown", "for 72 s", 40)
    assert wide == ["SM 2.32 GHz of 2.42 for 72 s", "SW power cap, SW thermal slowdown"]


def test_the_contention_demo_shows_the_whole_throttle_at_120_columns() -> None:
    # At 120×36 the panel read `SM 2.32 GHz of 2.42 for 7…` / `SW power cap, SW thermal …`.
    panel = str(gpu_panel(demo_session("contention", warmup=150).session).text_at(PANEL_AT_120))
    assert "…" not in panel, panel
    # two lines of 25 cells: whole parts only, the rest said as a count (all of it is in M and --once)
    assert "SM 2.32 GHz of 2.42" in panel and "SW power cap +1 more" in panel, panel
