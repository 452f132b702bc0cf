"""The tables: each figure in its own unit, and the rows that hold nothing (kernel threads, empty
containers) left out until `a` asks for them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from textual.pilot import Pilot
from textual.widgets import Input, Static

from sparktop.core.columns import CONTAINER_COLUMN_SPECS, PROCESS_COLUMN_SPECS
from sparktop.core.format import fmt_cell, fmt_rate_cell
from sparktop.core.snapshot import GIB, DockerStatus, process_key
from sparktop.settings.config import Config
from sparktop.sources.live import LiveSource
from sparktop.sources.snapshot_source import SnapshotSource
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.dashboard import ContainersTable, ProcessesTable
from sparktop.ui.widgets.status_line import StatusLine
from tests.fixtures.demo_session import demo_session
from tests.fixtures.execing import wrapper_that_execs
from tests.fixtures.sources import NoDocker, NoGpu
from tests.ui.demo_app import SEVEN_MINUTES, column_cells, reset_dashboard, screen_text, warm_app
from tests.ui.frame import table_cell, table_rows

MIB = 1024**2

# The checks that read a table (at a size, on a tab) share one dashboard after seven minutes of the demo
# (the trend column filled; the worker's own run, tests/fixtures/demo_session, not sampled again), put back
# at 80x24 (more rows than fit, and a frame half the cells of 120x36) on its first tab before each; they run
# in the module's event loop (`in_module_loop`).
in_module_loop = pytest.mark.asyncio(loop_scope="module")
SIZE = (80, 24)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seven_minutes() -> AsyncIterator[tuple[SparktopApp, Pilot]]:
    app = warm_app(warmup=SEVEN_MINUTES)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        yield app, pilot


@pytest_asyncio.fixture(loop_scope="module")
async def dashboard(seven_minutes: tuple[SparktopApp, Pilot]) -> tuple[SparktopApp, Pilot]:
    await reset_dashboard(*seven_minutes, size=SIZE)
    return seven_minutes


def units_of(cells: list[str]) -> set[str]:
    return {cell.split(" ", 1)[1] for cell in cells if " " in cell}


def test_cell_helpers() -> None:
    assert fmt_cell(613 * MIB) == "613 MiB"
    assert fmt_cell(2.1 * GIB) == "2.1 GiB"
    assert fmt_cell(0) == "0 B" and fmt_cell(None) == "—"
    assert fmt_cell(300 * 1024) == "300 KiB"  # not "0 MiB"
    assert fmt_cell(40e9, "GB") == "40.0 GB" and fmt_cell(643e6, "GB") == "643 MB"
    assert fmt_rate_cell(1.3 * GIB) == "+1.3 GiB" and fmt_rate_cell(-5 * MIB) == "-5 MiB"
    assert fmt_rate_cell(0) == "0 MiB" and fmt_rate_cell(None) == "—"


def test_each_cell_has_its_own_unit() -> None:
    """A column took the unit of its largest row: beside one big row every small one read `0.00` (GiB), a
    50 MiB process as `0.05`. Each cell now names its unit, as btop writes them; no cell reads as zero that
    holds memory. (The cells' text as the tables draw it, over seven minutes of the demo: no app.)"""
    containers, processes = table_rows(demo_session(warmup=SEVEN_MINUTES).session)
    for rows, specs in ((containers, CONTAINER_COLUMN_SPECS), (processes, PROCESS_COLUMN_SPECS)):
        for spec in specs.values():
            if spec.kind not in ("bytes", "rate"):
                continue
            for row in rows:
                value, cell = row.values.get(spec.key), table_cell(spec, row)
                if value is None:
                    assert cell in ("—", "·"), (spec.key, cell)
                elif spec.kind == "bytes":
                    assert cell == fmt_cell(value), (spec.key, value, cell)
                    assert value == 0 or not cell.startswith("0 "), (spec.key, value, cell)
    cells = [table_cell(PROCESS_COLUMN_SPECS["rss"], row) for row in processes if not row.minor]
    assert any(c.endswith(" GiB") for c in cells) and any(c.endswith(" MiB") for c in cells)
    assert not any(c.startswith("0.0") for c in cells)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def live() -> AsyncIterator[tuple[SparktopApp, Pilot]]:
    """One dashboard on this machine's procfs (no GPU, no Docker), 120x36, on its Processes tab: the kernel
    threads' and the exec'ing wrapper's checks read it (each takes the samples it needs)."""
    app = SparktopApp(
        LiveSource(nvml=NoGpu(), docker=NoDocker()),
        Config(),
        auto_refresh=False,
        warmup=1,
        user_theme_dir=Path("/nonexistent/sparktop-themes"),
    )
    async with app.run_test(size=(120, 36)) as pilot:  # the command column has 12 cells or more there
        await pilot.press("3")
        await pilot.pause()
        yield app, pilot


@in_module_loop
async def test_kernel_threads_and_empty_rows_hidden_until_a(live: tuple[SparktopApp, Pilot]) -> None:
    app, pilot = live  # `a` twice: it leaves the empty rows hidden, as it found them
    table = app.query_one(ProcessesTable)
    assert app.session.latest is not None
    procs = {p.pid: p for p in app.session.latest.processes}
    kernel = {pid for pid, p in procs.items() if p.ppid == 2 or pid == 2}
    assert kernel, "this machine has kernel threads"
    shown = {int(cell) for cell in column_cells(table, "pid")}
    assert not shown & kernel
    assert all(cell != "0 B" for cell in column_cells(table, "total"))
    status = str(app.query_one(StatusLine).render())
    assert f"{table.minor_hidden} empty rows hidden (a: all)" in status and table.minor_hidden >= len(kernel)
    await pilot.press("a")
    await pilot.pause()
    shown = {int(cell) for cell in column_cells(table, "pid")}
    assert kernel <= shown
    assert "hidden" not in str(app.query_one(StatusLine).render())
    await pilot.press("a")
    await pilot.pause()
    assert not {int(cell) for cell in column_cells(table, "pid")} & kernel


def test_a_stale_pss_is_shown_dim_and_the_total_is_the_fresh_rss() -> None:
    from sparktop.session.rows import process_rows
    from sparktop.sources.demo import DemoSource

    snapshot = DemoSource().sample()
    proc = next(p for p in snapshot.processes if not p.container_id and p.rss > 100 * MIB)
    proc.pss, proc.pss_stale = proc.rss // 3, True
    row = next(r for r in process_rows(snapshot, lambda key: None) if r.item is proc)
    assert row.values["pss"] == proc.rss // 3 and row.styles.get("pss") == "dim"
    assert row.values["total"] == proc.rss + (proc.gpu_bytes or 0)
    proc.pss_stale = False
    row = next(r for r in process_rows(snapshot, lambda key: None) if r.item is proc)
    assert row.values["total"] == proc.rss // 3 + (proc.gpu_bytes or 0) and "pss" not in row.styles


@in_module_loop
async def test_a_process_that_execs_is_shown_by_what_it_runs_now(
    tmp_path: Path, live: tuple[SparktopApp, Pilot]
) -> None:
    """A real `sh wrapper.sh` that execs `sleep`: its row (same PID, same key) says sleep from the tick after
    the exec, in the name and the command columns, on the dashboard fed by the real procfs collector."""
    app, pilot = live
    with wrapper_that_execs(tmp_path, "sleep 3600", "sleep") as wrapper:
        await app.refresh_once()  # the tick that first sees the wrapper
        await pilot.pause()
        table = app.query_one(ProcessesTable)
        assert app.session.latest is not None
        key = next(process_key(p) for p in app.session.latest.processes if p.pid == wrapper.pid)
        assert table.get_cell(key, "name").plain == "sh"
        command = table.get_cell(key, "command").plain  # cut with "…" to the column's width
        assert command.startswith("sh /") and f"sh {wrapper.script}".startswith(command.rstrip("…"))
        wrapper.exec()
        await app.refresh_once()
        await pilot.pause()
        assert table.get_cell(key, "name").plain == "sleep"
        assert table.get_cell(key, "command").plain == "sleep 3600"


@in_module_loop
async def test_home_end_g_and_G_move_to_the_first_and_last_row(dashboard: tuple[SparktopApp, Pilot]) -> None:
    """Home and End scrolled the table sideways and g / G did nothing. (On the shared dashboard: it leaves
    the cursor on the first row, where it starts.)"""
    app, pilot = dashboard
    await pilot.press("3")
    await pilot.pause()
    table = app.query_one(ProcessesTable)
    table.focus()
    assert table.row_count > table.size.height  # more rows than fit: the view must follow
    for last_key, first_key in (("end", "home"), ("G", "g")):
        await pilot.press(last_key)
        await pilot.pause()
        assert table.cursor_row == table.row_count - 1
        assert table.scroll_y == table.max_scroll_y > 0 and table.scroll_x == 0
        await pilot.press(first_key)
        await pilot.pause()
        assert table.cursor_row == 0 and table.scroll_y == 0


@in_module_loop
async def test_a_new_sort_shows_the_top_rows_with_the_cursor_on_the_first(
    dashboard: tuple[SparktopApp, Pilot],
) -> None:
    """After `o` the cursor, left on the first row, followed that row wherever the new order put it, and the
    view went with it: the top rows of the new order were out of sight."""
    app, pilot = dashboard
    await pilot.press("3")
    await pilot.pause()
    table = app.query_one(ProcessesTable)
    table.focus()
    await pilot.press("o")
    assert table.cursor_row == 0 and table.scroll_y == 0, table.sort_column
    # Every other column in turn, by what `o` runs (a key press draws a frame: ~25 ms each).
    for _ in range(len(table.column_keys) - 1):
        app.dashboard.action_sort_next()
        assert table.cursor_row == 0 and table.scroll_y == 0, table.sort_column
    await pilot.press("O")
    assert table.cursor_row == 0 and table.scroll_y == 0
    # A row the user chose stays chosen through a sort, and in view.
    await pilot.press("G")
    chosen = table.selected_key
    for _ in range(3):
        await pilot.press("o")
        assert table.selected_key == chosen
        assert table.scroll_y <= table.cursor_row < table.scroll_y + table.scrollable_content_region.height


class NoContainers(SnapshotSource):
    """The demo machine with no container in its snapshots, and Docker in the state `docker` says."""

    def __init__(self, docker: DockerStatus) -> None:
        from sparktop.sources.demo import DemoSource

        self.demo, self.docker = DemoSource(seed=0), docker
        self.name = "demo"

    def sample(self):
        snapshot = self.demo.sample()
        return snapshot.model_copy(update={"containers": [], "docker": self.docker})

    def close(self) -> None:
        self.demo.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def no_containers():
    """One dashboard with no container for the three states of Docker: each test sets the state it checks and
    takes a sample, so the tab shows that state whatever ran before (nothing else on it changes)."""
    source = NoContainers(DockerStatus(available=True))
    app = SparktopApp(source, Config(), auto_refresh=False, warmup=1,
                      user_theme_dir=Path("/nonexistent/sparktop-themes"))  # fmt: skip
    async with app.run_test(size=(120, 36)) as pilot:
        yield app, pilot, source


@in_module_loop
@pytest.mark.parametrize(
    ("docker", "says"),
    [
        (DockerStatus(available=True), "no containers running"),
        (
            DockerStatus(available=False, reason="Docker socket /var/run/docker.sock not found"),
            "no containers seen: Docker socket /var/run/docker.sock not found",
        ),
        (
            DockerStatus(available=False, reason="permission denied on /var/run/docker.sock"),
            "no containers seen: permission denied on /var/run/docker.sock",
        ),
    ],
)
async def test_an_empty_containers_tab_says_why(docker: DockerStatus, says: str, no_containers) -> None:
    """No container showed an empty table and no line: none running, no Docker socket, no permission."""
    app, pilot, source = no_containers
    source.docker = docker
    await app.refresh_once()
    assert app.session.latest is not None and app.session.latest.docker == docker
    await pilot.press("2")
    await pilot.pause()
    assert app.query_one(ContainersTable).row_count == 0
    note = app.query_one("#containers-empty", Static)
    assert note.display and str(note.render()) == says
    assert note.region.height >= 1 and note.region.width >= len(says)  # on screen, whole


@in_module_loop
async def test_a_filter_that_matches_nothing_says_so(dashboard: tuple[SparktopApp, Pilot]) -> None:
    app, pilot = dashboard  # the shared one: Esc takes the filter off again
    await pilot.press("3", "slash")
    app.query_one("#filter", Input).value = "zqx"  # as typed: test_app's test_filter_with_slash types one
    await pilot.press("enter")
    note = app.query_one("#processes-empty", Static)
    assert note.display and "no processes match the filter 'zqx'" in str(note.render())
    await pilot.press("escape")
    await pilot.pause()
    assert not note.display and app.query_one(ProcessesTable).filter_text == ""


@in_module_loop
async def test_a_narrow_terminal_shows_whole_columns_with_the_total_and_120_has_room_for_the_command(
    dashboard: tuple[SparktopApp, Pilot],
) -> None:
    """At 60x18 the Processes table was cut in its total column ("tot", "36"), and at 60 the Containers table
    showed names and no size (issue 32, Rough): the text columns give up width (with "…") and the columns
    that still do not fit go whole, so every column shown fits and the memory columns stay. 60x18, then a
    wide terminal (every column back), then the shared 80x24 (where the next test's reset finds it); both
    tables at each size (the tabs taken in turn there and back: one resize per size, a restyle each).

    On the way, 120 columns: there the command column was 9 characters wide (units in every cell, wide name
    columns). A unit in every cell again (issue 23: `0.00` beside a big row) and the sm column leave it 13:
    more than the 9 of old, and a start of the command to recognise (the trend column is filled)."""
    app, pilot = dashboard
    for size, tabs in (((60, 18), "23"), ((120, 24), "3"), ((200, 24), "32"), ((80, 24), "23")):
        # 24 lines at 120 and 200: the widths are the width's, and 24 lines draw fewer rows than 36.
        await pilot.resize_terminal(*size)
        for tab in tabs:
            await pilot.press(tab)
            await pilot.pause()
            table_type = ContainersTable if tab == "2" else ProcessesTable
            table = app.query_one(table_type)
            where = (size, table_type.__name__)
            if size == (120, 24):
                command = table.columns["command"].width
                assert command >= 12, f"120 columns: the command column is {command} wide"
                assert any(cell.startswith("python3 train.py") for cell in column_cells(table, "command")), (
                    where
                )
                continue
            if size == (200, 24):
                # In a wide terminal every configured column is there again (24 lines: the columns are the
                # width's).
                assert table.column_keys == [k for k in table.configured_keys if k not in table.hidden], where
                continue
            widths = sum(column.get_render_width(table) for column in table.columns.values())
            assert widths <= table.size.width - table.styles.scrollbar_size_vertical, (
                where,
                widths,
                table.size,
            )
            essentials = (
                ["name", "cpu", "gpu", "total"] if tab == "2" else ["pid", "name", "rss", "gpu", "total"]
            )
            assert all(key in table.column_keys for key in essentials), (where, table.column_keys)
            screen = screen_text(app)
            assert "total ▼" in screen, (where, screen)
            totals = column_cells(table, "total")
            assert totals and all(re.fullmatch(r"\d+(\.\d)? (GiB|MiB|KiB|B)", t) for t in totals), (
                where,
                totals,
            )
            # A name cut to its column says so with "…", and the whole name is still what the row holds.
            names = column_cells(table, "name")
            name_width = table.columns["name"].get_render_width(table) - 2 * table.cell_padding
            assert all(len(n) <= 32 for n in names) and name_width >= 8, (where, names, name_width)
