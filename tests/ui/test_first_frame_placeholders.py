"""The first frame of a live dashboard comes from a quick sample (issue 33): /proc, cgroups and NVML, with
Docker discovery and the model servers left for the next. What those have not said yet is shown as "…" on
that frame (container names, images and status, the Models tab, an empty containers tab), never as blank,
0 or "none found"; the next sample fills it in.

The source is the real LiveSource on a fixture machine (tests/fixtures/machine.py), its Docker discovery at
its seam (FakeDocker: what the engine lists) and the real model-server collector; the app samples with its
own timer, whose first tick defers the slow parts as a user's start does.
"""

from __future__ import annotations

import socket
from pathlib import Path

from sparktop.collect.servers.collector import ServersCollector
from sparktop.core.snapshot import DockerStatus, Snapshot
from sparktop.settings.config import Config
from sparktop.sources.live import LiveSource
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.dashboard import ContainersTable, ProcessesTable
from sparktop.ui.widgets.budget_bar import BudgetBar
from sparktop.ui.widgets.models_panel import ModelsPanel
from tests.fixtures.machine import META, A, B, build_machine
from tests.fixtures.sources import FakeDocker, NoDocker, NoGpu
from tests.fixtures.trees import CgroupTree, ProcTree, meminfo_text, psi_text
from tests.ui.demo_app import column_cells

SIZE = (160, 18)  # the least height the dashboard draws at: the tests read cells, segments and texts
NO_THEMES = Path("/nonexistent/sparktop-themes")


def started(source: LiveSource) -> SparktopApp:
    # The timer's interval is an hour: the first frame is the quick first tick's, nothing after it.
    return SparktopApp(source, Config(interval=3600), auto_refresh=True, user_theme_dir=NO_THEMES)


async def first_frame(app: SparktopApp, pilot: object) -> Snapshot:
    for _ in range(500):  # the first tick samples on a worker thread
        if app.session.latest is not None:
            break
        await pilot.pause(0.01)  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    assert app.session.latest is not None, "no first sample"
    return app.session.latest


def models_text(app: SparktopApp) -> str:
    panel = app.query_one(ModelsPanel)
    return panel._build(150).plain  # what the panel draws at this width


async def test_first_frame_says_names_and_servers_are_coming(tmp_path: Path) -> None:
    proc, cg, _ = build_machine(tmp_path, 2)
    servers = ServersCollector(defaults=False)  # the real collector; no endpoint to probe in this test
    source = LiveSource(
        proc_root=proc.root, cgroup_root=cg.root, nvml=NoGpu(), docker=FakeDocker(META), collectors=[servers]
    )
    app = started(source)
    async with app.run_test(size=SIZE) as pilot:
        snapshot = await first_frame(app, pilot)
        assert snapshot.pending == ["docker", "servers"]
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one(ContainersTable)
        names = column_cells(table, "name")
        # Docker containers by id with "…" (their names are on the way); Kubernetes' is not Docker's to name.
        assert f"{A[:12]} …" in names and f"{B[:12]} …" in names
        assert "whisper" not in names
        project = dict(zip(names, column_cells(table, "project"), strict=True))
        assert project[f"{A[:12]} …"] == "…"
        assert any(seg.label == f"{A[:12]} …" for seg in app.query_one(BudgetBar).segments)
        await pilot.press("3")
        await pilot.pause()
        assert f"{A[:12]} …" in column_cells(app.query_one(ProcessesTable), "container")
        text = models_text(app)
        assert "…" in text and "No model server found" not in text

        await app.refresh_once()  # the next tick: Docker and the add-ons answer
        await pilot.pause()
        assert app.session.latest is not None and app.session.latest.pending == []
        await pilot.press("2")
        await pilot.pause()
        names = column_cells(app.query_one(ContainersTable), "name")
        assert "whisper" in names and not any("…" in n for n in names)
        assert not any("…" in seg.label for seg in app.query_one(BudgetBar).segments)
        assert "No model server found" in models_text(app)


async def test_no_container_seen_yet_is_not_no_containers(tmp_path: Path) -> None:
    # A machine with no container cgroup at all: before Docker answered, the tab says it is asking.
    proc = ProcTree(
        tmp_path / "proc",
        meminfo=meminfo_text(total_kb=125_000_000, free_kb=10_000_000, available_kb=60_000_000),
        psi=psi_text((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0, 0),
    )
    cg = CgroupTree(tmp_path / "cgroup", 2)
    source = LiveSource(
        proc_root=proc.root,
        cgroup_root=cg.root,
        nvml=NoGpu(),
        docker=NoDocker(DockerStatus(available=True)),
        collectors=[],
    )
    app = started(source)
    async with app.run_test(size=SIZE) as pilot:
        snapshot = await first_frame(app, pilot)
        assert snapshot.pending == ["docker"]  # no add-on collector: nothing else to wait for
        await pilot.press("2")
        await pilot.pause()
        note = str(app.screen.query_one("#containers-empty").render())
        assert note.startswith("…") and "no containers" not in note
        await app.refresh_once()
        await pilot.pause()
        assert str(app.screen.query_one("#containers-empty").render()) == "no containers running"


def test_model_servers_not_probed_yet_are_pending_then_answered(tmp_path: Path) -> None:
    # A configured endpoint that takes the connection and says nothing (a server starting up): "…" while
    # its first probe waits; once the listener goes away the probe fails, and the endpoint is shown.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    collector = ServersCollector(endpoints=[f"http://127.0.0.1:{port}"], defaults=False, timeout=60.0)
    try:
        proc, cg, _ = build_machine(tmp_path, 2)
        source = LiveSource(
            proc_root=proc.root, cgroup_root=cg.root, nvml=NoGpu(), docker=FakeDocker(META), collectors=[]
        )
        snapshot = source.sample()
        assert collector.collect(snapshot) == [] and snapshot.pending == ["servers"]
        listener.close()  # the waiting probe's connection is reset
        assert collector.settle(60.0)  # probed: a configured endpoint that failed is shown
        later = source.sample()
        reports = collector.collect(later)
        assert later.pending == [] and reports and reports[0].error
    finally:
        listener.close()
        collector.close()
