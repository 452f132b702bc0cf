"""Build the dashboard on the deterministic demo source (fixed seed, fixed simulated clock, no timers), open
its What-if tab, and read back what it puts on the terminal: the helpers the UI tests share."""

from __future__ import annotations

import html
import os
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import pytest_asyncio
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, OptionList, TabbedContent

from sparktop.settings.config import Config
from sparktop.sources.demo import DemoSource
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.plan_edit import PlanEditScreen
from sparktop.ui.whatif import DEFAULT_PLAN_FILE, WhatIfPane
from sparktop.ui.widgets.status_line import StatusLine
from tests.fixtures.home import use_private_home

# The status line shows the snapshot's time of day: make it the same on every machine.
os.environ["TZ"] = "UTC"
time.tzset()

FIXED_NOW = 1_767_225_600.0 + 3600.0
WARMUP = 30  # half a minute: every table, the bar and the sparklines have data
# Seven minutes: past the creep window (300 s), the tables' trend column filled, the chart's axis as a user
# sees it. Pictures and tests about creep and trends ask for it; the others do not pay for it (0.2 s each).
SEVEN_MINUTES = 420


def make_app(
    scenario: str = "default",
    warmup: int = WARMUP,
    config: Config | None = None,
    user_theme_dir: Path | None = None,
    **kwargs,
) -> SparktopApp:
    """A dashboard on the demo with `warmup` samples already taken; no timers (refresh_once drives it)."""
    app = SparktopApp(
        DemoSource(scenario=scenario, seed=0),
        config or Config(),
        clock=lambda: FIXED_NOW,
        auto_refresh=False,
        warmup=warmup,
        user_theme_dir=user_theme_dir or Path("/nonexistent/sparktop-themes"),
        **kwargs,
    )
    app.animation_level = "none"  # the tab underline slides: no half-way frames in pictures
    return app


def warm_app(scenario: str = "default", warmup: int = WARMUP, theme: str | None = None) -> SparktopApp:
    """make_app(scenario, warmup)'s dashboard (in `theme`) without taking its warm-up again: the demo and the
    session it fed come from tests/fixtures/demo_session.py, simulated once per worker per (scenario, warm-up)
    and copied (420 demo samples cost ~0.45 s of CPU an app). Its first frame and its next ticks are
    make_app's (tests/ui/test_demo_session.py); for tests about what is drawn and how a tick repaints, not
    about the warm-up itself (make_app's own)."""
    from tests.fixtures.demo_session import demo_session

    run = demo_session(scenario, warmup)
    app = SparktopApp(
        run.source,  # what the next tick samples: the demo, where the warm-up left it
        Config(theme=theme) if theme else Config(),
        clock=lambda: FIXED_NOW,
        auto_refresh=False,
        user_theme_dir=Path("/nonexistent/sparktop-themes"),
    )
    app.session = run.session  # dashboard_ready draws a session that holds a snapshot, as after a warm-up
    app.animation_level = "none"
    return app


async def show_whatif(app: SparktopApp, pilot, wait: bool = True) -> WhatIfPane:
    """Press `w` like a user; with `wait`, return once the pane's catalog is in (wait_for_catalog)."""
    await pilot.press("w")
    pane = app.query_one(WhatIfPane)
    if wait:
        await wait_for_catalog(app, pilot, pane)
    return pane


async def wait_for_catalog(app: SparktopApp, pilot, pane: WhatIfPane) -> None:
    """The pane is mounted the first time its tab opens and loads the catalog in a thread that may not have
    started yet: wait until the catalog is in (at most ~10 s; a test about a catalog that fails to load
    waits on the workers itself)."""
    for _ in range(200):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if pane.catalog is not None:
            return
        await pilot.pause(0.05)
    raise AssertionError("the What-if catalog never came in")


@asynccontextmanager
async def open_whatif(wait: bool = True) -> AsyncIterator[tuple[SparktopApp, Pilot, WhatIfPane]]:
    """The dashboard on the demo source (5 samples: a live baseline needs one), 120×36, switched to the
    What-if tab with `w` like a user would."""
    app = make_app(warmup=5)
    async with app.run_test(size=(120, 36)) as pilot:
        pane = await show_whatif(app, pilot, wait)
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "whatif"
        yield app, pilot, pane


_SVG_TEXT = re.compile(r'<text [^>]*clip-path="url\(#terminal-\d+-line-(\d+)\)"[^>]*>([^<]*)</text>')


async def edit_selected(app: SparktopApp, pilot, pane: WhatIfPane) -> PlanEditScreen:
    """`e` on the plan's selected item: its editor, once it has composed its fields (they come after the push:
    read at once, a loaded machine once found none)."""
    pane.query_one("#whatif-plan", OptionList).focus()
    await pilot.press("e")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, PlanEditScreen)
    return screen


def screen_text(app: SparktopApp) -> str:
    """Every character the app would put on the terminal now, line by line (from its SVG screenshot)."""
    lines: dict[int, list[str]] = {}
    for number, text in _SVG_TEXT.findall(app.export_screenshot()):
        lines.setdefault(int(number), []).append(html.unescape(text).replace("\xa0", " "))
    return "\n".join("".join(parts) for _, parts in sorted(lines.items()))


def footer_keys(app: SparktopApp) -> dict[str, str]:
    """Key -> description of the bindings the footer shows."""
    return {
        key: active.binding.description
        for key, active in app.screen.active_bindings.items()
        if active.binding.show
    }


def status_text(app: SparktopApp) -> str:
    """What the status line at the top says now."""
    return str(app.query_one(StatusLine).render())


def column_cells(table: DataTable, key: str) -> list[str]:
    """The plain text of every row's cell in column `key`, top to bottom."""
    index = table.get_column_index(key)
    return [table.get_cell_at((row, index)).plain for row in range(table.row_count)]


def shared_app(scenario: str = "default", warmup: int = WARMUP, size: tuple[int, int] = (120, 36)):
    """A module-scoped fixture: one dashboard on the demo, its first frame drawn, for the module's checks
    that only read it (each would otherwise start and warm up an app of its own). The module's async tests
    run in the module's event loop: `pytestmark = pytest.mark.asyncio(loop_scope="module")`. A test that
    presses a key must leave the app as it found it.

        seven_minutes = shared_app(warmup=SEVEN_MINUTES)

        async def test_x(seven_minutes): app, pilot = seven_minutes
    """

    @pytest_asyncio.fixture(scope="module", loop_scope="module")
    async def fixture() -> AsyncIterator[tuple[SparktopApp, Pilot]]:
        app = make_app(scenario, warmup=warmup)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            yield app, pilot

    return fixture


async def reset_dashboard(app: SparktopApp, pilot: Pilot, size: tuple[int, int] = (120, 36)) -> None:
    """A shared dashboard (shared_app) as it starts: no dialog or toast, the terminal at `size`, no filter,
    the tables sorted by total with their empty rows hidden and the cursor on the first row, the first tab
    shown. For a module's tests that change those and nothing else (a test that takes a sample, pauses or
    changes the session keeps an app of its own: the others read its first frame)."""
    from sparktop.ui.screens.dashboard import ContainersTable, ProcessesTable

    while app.screen is not app.dashboard:
        app.pop_screen()
    app.clear_notifications()
    if tuple(app.size) != size:
        await pilot.resize_terminal(*size)
    dashboard = app.dashboard
    dashboard.action_clear_filter()
    for table in (dashboard.query_one(ContainersTable), dashboard.query_one(ProcessesTable)):
        if (table.sort_column, table.sort_reverse) != ("total", True):
            table.sort_by("total", True)
        if table.show_minor:
            table.set_show_minor(False)
        if table.row_count:
            table.move_cursor(row=0, animate=False, scroll=True)
    await pilot.press("1")
    await pilot.pause()


WHATIF_SIZE = (120, 36)


def shared_whatif(app_factory: Callable[[Path], SparktopApp] | None = None):
    """A module-scoped fixture: open_whatif()'s dashboard (120×36, the built-in catalog in a private home of
    the module's own), shared by the module's What-if tests; take it through the `whatif` fixture below, which
    gives it back to each test as a fresh tab would be. The module's async tests run in the module's event
    loop: `pytestmark = pytest.mark.asyncio(loop_scope="module")`. `app_factory(folder)` makes another app
    than the demo's (a folder of the module's own for its files).

        whatif_app = shared_whatif()

        async def test_x(whatif): app, pilot, pane = whatif
    """

    @pytest_asyncio.fixture(scope="module", loop_scope="module")
    async def fixture(
        tmp_path_factory: pytest.TempPathFactory,
    ) -> AsyncIterator[tuple[SparktopApp, Pilot, WhatIfPane]]:
        folder = tmp_path_factory.mktemp("whatif")
        with pytest.MonkeyPatch.context() as monkeypatch:
            use_private_home(monkeypatch, folder / "home")
            app = app_factory(folder) if app_factory is not None else make_app(warmup=5)
            async with app.run_test(size=WHATIF_SIZE) as pilot:
                pane = await show_whatif(app, pilot)
                yield app, pilot, pane

    return fixture


async def reset_whatif(app: SparktopApp, pilot: Pilot, pane: WhatIfPane) -> None:
    """The shared What-if tab as `w` first shows it, through the pane's public API: no dialog or toast, the
    terminal 120×36, the tab shown with the keys on its catalog, no filter, the live baseline on the app's
    latest sample, measured peaks on, the default plan file and an empty plan of the catalog."""
    from sparktop.plan import Plan

    while app.screen is not app.dashboard:
        app.pop_screen()
    app.clear_notifications()
    if tuple(app.size) != WHATIF_SIZE:
        await pilot.resize_terminal(*WHATIF_SIZE)
    app.query_one(TabbedContent).active = "whatif"
    pane.query_one("#whatif-filter", Input).value = ""
    pane.baseline_mode, pane.use_measured = "live", True
    pane.plan_path = Path.cwd() / DEFAULT_PLAN_FILE
    assert pane.catalog is not None
    pane.set_plan(Plan(pane.catalog))
    pane.refresh_baseline(app.session.latest)
    pane.query_one("#whatif-catalog", OptionList).focus()
    await pilot.pause()
