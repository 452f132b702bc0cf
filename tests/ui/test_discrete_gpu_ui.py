"""The dashboard on a discrete GPU (the demo's H100 workstation): a GPU memory bar of its own next to the
host pool's, in the same colours, GPU memory in the tables, and the machine's kind in the header
(issue 12 item 7)."""

from __future__ import annotations

import re

import pytest
from textual.pilot import Pilot

from sparktop.analysis.served import served_split, split_models
from sparktop.core.columns import CONTAINER_COLUMN_SPECS
from sparktop.session.rows import cell_text, container_rows
from sparktop.ui.app import SparktopApp
from sparktop.ui.widgets.budget_bar import BudgetBar
from sparktop.ui.widgets.gpu_memory_bar import GpuMemoryBar
from sparktop.ui.widgets.status_line import StatusLine
from tests.fixtures.demo_session import default_palette, demo_session
from tests.ui.demo_app import reset_dashboard, shared_app

# The checks that read the discrete machine's dashboard (at a size) share one; they run in the module's event
# loop (`in_module_loop`).
in_module_loop = pytest.mark.asyncio(loop_scope="module")
discrete = shared_app("discrete", warmup=30)


@in_module_loop
async def test_discrete_gpu_has_a_memory_bar_of_its_own(discrete: tuple[SparktopApp, Pilot]) -> None:
    app, pilot = discrete
    await reset_dashboard(app, pilot, (120, 36))
    snapshot = app.session.latest
    assert snapshot is not None and snapshot.accounting is not None
    assert "h100-demo · discrete GPU" in str(app.query_one(StatusLine).render())
    gpu_bar = app.query_one(GpuMemoryBar)
    assert gpu_bar.display and gpu_bar.region.height >= 3
    text = str(gpu_bar.render())
    [device] = snapshot.accounting.gpu_memory
    assert f"GPU 0 memory {device.used / 1024**3:.1f} GiB used of 79.6 GiB" in text
    assert "ssd-tetris-train-1" in text and "other (driver, unlisted) 530 MiB" in text
    # The same consumer has the same colour in both bars.
    pool_colors = {seg.key: seg.color for seg in app.query_one(BudgetBar).segments}
    shares = [seg for seg in gpu_bar.segments[0] if seg.key.startswith("container:")]
    assert shares and all(seg.color == pool_colors[seg.key] for seg in shares)
    # The pool bar holds host memory only: the GPU's memory is not drawn there.
    assert snapshot.memory.used < device.used + sum(c.cpu_bytes for c in snapshot.accounting.consumers)
    assert all(c.gpu_bytes == 0 for c in snapshot.accounting.consumers)


def test_containers_table_shows_gpu_memory_on_a_discrete_gpu() -> None:
    """The Containers table's row and GPU cell, through the row and cell functions the table draws with, on
    the session the dashboard holds after its warm-up (no app: tests/fixtures/demo_session.py)."""
    session = demo_session("discrete", warmup=30).session
    snapshot = session.latest
    assert snapshot is not None and snapshot.accounting is not None
    consumers = {c.label: c for c in snapshot.accounting.consumers}
    training = consumers["ssd-tetris-train-1"]
    assert training.device_gpu_bytes > 10 * 1024**3
    served = served_split(snapshot, split_models(snapshot) or snapshot.accounting)  # as DashboardScreen does
    rows = container_rows(snapshot, session.rate_per_min, served)
    (row,) = [r for r in rows if r.key.startswith("container:") and r.values["name"] == "ssd-tetris-train-1"]
    spec = CONTAINER_COLUMN_SPECS["gpu"]
    shown = cell_text(spec, row.values["gpu"], "GiB", "", warn_rate=1e18, warn_color="red").text
    assert shown == f"{training.device_gpu_bytes / 1024**3:.1f} GiB", shown  # not 0.0


def test_a_spark_has_no_second_bar_and_says_unified_memory() -> None:
    """On a Spark the GPU memory bar hides itself (its `-show` class: the discrete check above sees it drawn
    with it) and the header says unified memory: the widgets fed as the dashboard feeds them over the
    session, no app."""
    from sparktop.core.machine import machine_label

    snapshot = demo_session("default", warmup=3).session.latest
    assert snapshot is not None and snapshot.accounting is not None
    gpu_bar = GpuMemoryBar()
    gpu_bar.show(snapshot.accounting.gpu_memory, {}, "GiB", default_palette())
    assert not gpu_bar.has_class("-show")
    status = StatusLine()
    status.show(snapshot=snapshot, source="demo", interval=1.0, paused=False, stale=None, filter_text="",
                modes=["demo"], machine=machine_label(snapshot.gpu))  # fmt: skip
    assert "spark-demo · unified memory" in str(status.render())


@in_module_loop
async def test_on_a_short_terminal_the_gpu_bar_keeps_the_top_holder_and_free(
    discrete: tuple[SparktopApp, Pilot],
) -> None:
    app, pilot = discrete
    await reset_dashboard(app, pilot, (80, 24))
    gpu_bar = app.query_one(GpuMemoryBar)
    lines = str(gpu_bar.render()).splitlines()
    assert len(lines) == 3 and gpu_bar.region.height == 3  # title, bar, one legend line
    assert all(len(line) <= gpu_bar.size.width for line in lines)
    legend = lines[2]
    assert legend.startswith("■ ssd-tetris-train-1 11.") and "more" in legend and "■ free" in legend


@in_module_loop
async def test_at_60_columns_the_gpu_legend_keeps_whole_items(discrete: tuple[SparktopApp, Pilot]) -> None:
    """At 60x18 the GPU memory bar's legend was one line cut at "■ free 5…" (issue 32, Rough): the items
    that fit are shown whole, the largest holder and free first."""
    app, pilot = discrete
    await reset_dashboard(app, pilot, (60, 18))
    gpu_bar = app.query_one(GpuMemoryBar)
    lines = str(gpu_bar.render()).splitlines()
    legend = lines[2:]
    assert legend and not any("…" in line for line in legend), lines
    assert "■ ssd-tetris-train-1" in legend[0] and re.search(r"■ free \d+\.\d GiB", legend[0]), lines


@in_module_loop
async def test_at_60_columns_the_status_line_drops_whole_parts(discrete: tuple[SparktopApp, Pilot]) -> None:
    """At 60 columns the status line ended in "· e…" (issue 32, Rough): a part that does not fit goes whole
    ("every 1 s"), and the line says so with " …"."""
    app, pilot = discrete
    await reset_dashboard(app, pilot, (60, 18))
    line = str(app.query_one(StatusLine).render()).splitlines()[0]
    assert len(line) <= 60 and line.endswith(" …"), line
    assert re.search(r"· \d\d:\d\d:\d\d …$", line), line
