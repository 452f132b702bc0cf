"""SVG snapshots of the main views on the deterministic demo (fixed seed, fixed simulated clock, no timers).
Each picture's app is warm_app's: make_app's dashboard with the demo's warm-up simulated once per worker, not
once per picture (the pictures are the same bytes).

The five pictures of the same seven minutes at 120x36 (the four themes, the Containers tab) share one app
(`wide`): each test puts the theme and the tab it pictures on it, and the picture is taken as snap_compare
takes it (`compare_running`); an app of its own started in that theme on that tab draws the same bytes,
which the stored baselines (made that way) check. (A second shared app at 80x24, running beside it in the
module's loop, once drew the light theme wrongly: the other sizes keep snap_compare's app of their own.)

Update the baselines after a deliberate visual change with `pytest tests/ui --snapshot-update` and look at
the report (snapshot_report.html) before committing them.
"""

from __future__ import annotations

import inspect
import pickle
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio
from pytest_textual_snapshot import PseudoApp, PseudoConsole, SVGImageExtension, node_to_report_path
from rich.console import Console
from syrupy import SnapshotAssertion
from textual.pilot import Pilot

from sparktop.ui.app import SparktopApp
from tests.ui.demo_app import SEVEN_MINUTES, warm_app

# The shared app's pictures run in the module's event loop, with their app.
in_module_loop = pytest.mark.asyncio(loop_scope="module")
DARK = "sparktop-dark"


def pictured(**kwargs):
    """The dashboard as a user sees it seven minutes in."""
    return warm_app(warmup=SEVEN_MINUTES, **kwargs)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def wide() -> AsyncIterator[tuple[SparktopApp, Pilot]]:
    """pictured()'s dashboard at 120x36, for the pictures of the themes and the Containers tab."""
    app = pictured()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        yield app, pilot


Compare = Callable[[SparktopApp, Pilot, str, str], Awaitable[bool]]


@pytest.fixture
def compare_running(snapshot: SnapshotAssertion, request: pytest.FixtureRequest) -> Compare:
    """snap_compare for an app already running: puts `theme` and the tab of key `tab` on it, takes its
    picture as snap_compare does (textual._doc.take_svg_screenshot: the same pauses, the same export) and
    compares it with the test's stored baseline, writing what snap_compare writes for the report."""
    snapshot = snapshot.use_extension(SVGImageExtension)

    async def compare(app: SparktopApp, pilot: Pilot, theme: str, tab: str) -> bool:
        app.theme = theme
        await pilot.pause()
        await pilot.press(tab)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        actual = app.export_screenshot(title=app.title, simplify=True)
        result = snapshot == actual
        console = Console(legacy_windows=False, force_terminal=True)
        node = request.node
        full_path, line_number, name = node.reportinfo()
        data = (result, str(snapshot), actual, PseudoApp(PseudoConsole(console.legacy_windows, console.size)),
                full_path, line_number, name, inspect.getdoc(node.function) or "", "",
                snapshot.executions.get(snapshot.num_executions - 1) is not None)  # fmt: skip
        node_to_report_path(node).write_bytes(pickle.dumps(data))
        return result

    return compare


@in_module_loop
async def test_dashboard_dark(wide, compare_running: Compare):
    assert await compare_running(*wide, DARK, "1")


@in_module_loop
async def test_dashboard_light(wide, compare_running: Compare):
    assert await compare_running(*wide, "sparktop-light", "1")


@in_module_loop
async def test_dashboard_high_contrast(wide, compare_running: Compare):
    assert await compare_running(*wide, "sparktop-high-contrast", "1")


@in_module_loop
async def test_dashboard_nvidia(wide, compare_running: Compare):
    assert await compare_running(*wide, "sparktop-nvidia", "1")


def test_dashboard_80x24(snap_compare):
    assert snap_compare(pictured(), terminal_size=(80, 24))


def test_dashboard_200x60(snap_compare):
    assert snap_compare(pictured(), terminal_size=(200, 60))


@in_module_loop
async def test_containers_tab(wide, compare_running: Compare):
    assert await compare_running(*wide, DARK, "2")


def test_processes_tab_80x24(snap_compare):
    assert snap_compare(pictured(), terminal_size=(80, 24), press=["3"])


def test_critical_pressure(snap_compare):
    assert snap_compare(warm_app("critical", warmup=120), terminal_size=(120, 36))


def test_help_screen(snap_compare):
    assert snap_compare(pictured(), terminal_size=(100, 36), press=["question_mark"])


def test_too_small(snap_compare):
    assert snap_compare(warm_app(warmup=5), terminal_size=(50, 14))


def test_models_tab(snap_compare):
    assert snap_compare(warm_app("servers", warmup=26), terminal_size=(120, 36), press=["5"])
