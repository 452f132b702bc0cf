"""Text that other users control, shown and acted on (issue 13 items 1 and 2).

A real child process (tests/fixtures/hostile.py) renames itself to `[/b]evil` (prctl PR_SET_NAME, as any
user can) and carries an argv that would rename the admin's terminal window and turn it red if written raw.
The dashboard must show both as plain text with the control characters made visible, and stopping it with
`s` / `k y` must leave the app running. A table's text is checked through the functions the table draws
with (sparktop/session/rows.py), the stop keys and their dialogs on the stop flow's small host app
(tests/ui/stop_host.py), and the dashboard itself where its own keys, size or toasts are the point.
"""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import ComposeResult
from textual.widgets import Static, TabbedContent

from sparktop.core.columns import PROCESS_COLUMN_SPECS
from sparktop.core.safe_text import has_raw_controls
from sparktop.core.snapshot import Snapshot, process_key
from sparktop.session.rows import cell_text, process_rows
from sparktop.settings.config import Config
from sparktop.sources.demo import DemoSource
from sparktop.sources.live import LiveSource
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.confirm import ConfirmScreen
from sparktop.ui.toasts import PlainToastApp
from tests.fixtures.hostile import EVIL_NAME, HOSTILE_ARG_SHOWN, spawn_hostile
from tests.fixtures.package_source import PACKAGE, package_files, parsed
from tests.fixtures.sources import NoDocker, NoGpu
from tests.ui.demo_app import screen_text
from tests.ui.stop_host import Host


async def test_markup_and_escapes_in_a_process_are_plain_text_and_k_y_keeps_running(tmp_path: Path) -> None:
    """The processes table's command cell (its row and cell functions, as the table draws it), then `s` and
    `k y` on the stop flow's small host app (tests/ui/stop_host.py: the same dialogs and toasts as the
    dashboard, over a live source)."""
    child = spawn_hostile(tmp_path)
    try:
        app = Host(LiveSource(nvml=NoGpu(), docker=NoDocker()), tmp_path / "actions.log")
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            snap = app.sample()
            proc = next(p for p in snap.processes if p.pid == child.pid)
            assert proc.name == EVIL_NAME
            assert HOSTILE_ARG_SHOWN in proc.cmdline and not has_raw_controls(proc.cmdline)
            row = next(
                r for r in process_rows(snap, app.session.process_rate_per_min) if r.key == process_key(proc)
            )
            units = Config().units
            command = cell_text(PROCESS_COLUMN_SPECS["command"], row.values["command"], units, "",
                                warn_rate=1e18, warn_color="red")  # fmt: skip
            assert command.text == f"py c [/b]evil {HOSTILE_ARG_SHOWN}"
            app.row = proc
            await pilot.press("s")  # not in a container: the hint names it
            await pilot.pause()
            assert app.stops.reports[-1].startswith(f"process {child.pid} ([/b]evil) is not in a container")
            await pilot.press("k")
            await pilot.pause()
            dialog = screen_text(app)
            assert "[/b]evil" in dialog and "PWNED" in dialog and not has_raw_controls(dialog)
            await pilot.press("y")
            await pilot.pause()
            assert child.wait(timeout=10) == -15
            assert app.stops.reports[-1] == f"sent SIGTERM to [/b]evil ({child.pid})"
            await pilot.pause(0.5)  # the toast slides in
            shown = screen_text(app)
            assert f"sent SIGTERM to [/b]evil ({child.pid})" in shown
            assert not has_raw_controls(shown)
            assert app.is_running
        assert app.return_code in (0, None)
        (line,) = (tmp_path / "actions.log").read_text().splitlines()
        assert line.split("\t")[1:] == ["SIGTERM", f"pid {child.pid} ([/b]evil)", "sent"]
    finally:
        child.kill()
        child.wait()


class HostileLabels(DemoSource):
    """The demo with its audio compose project relabelled as markup, as any container owner can."""

    def sample(self) -> Snapshot:
        snapshot = super().sample()
        # Through the model's validation, as every source builds its snapshots (replay, Docker discovery).
        data = snapshot.model_dump()
        for c in data["containers"]:
            if c["compose_project"] == "audio-lab":
                c["compose_project"] = "[/x]p"
                c["name"] = f"[/x]{c['name']}\x1b[2J"
        return Snapshot.model_validate(data)


async def test_compose_project_named_as_markup_stops_and_reports(tmp_path: Path) -> None:
    """S on a container of a project named `[/x]p` (its containers named with a screen-clearing escape): the
    dialog and the report quote it as it is, nothing raw reaches the screen, the app keeps running. On the
    stop flow's small host app (tests/ui/stop_host.py), which opens the same dialogs and toasts as the
    dashboard; the dashboard's tables with such names are test_hostile_text_property's."""
    app = Host(HostileLabels(scenario="default", seed=0), tmp_path / "actions.log")
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        app.sample()
        assert app.latest is not None
        app.row = next(c for c in app.latest.containers if c.compose_project == "[/x]p")
        await pilot.press("S")
        await pilot.pause()
        dialog = screen_text(app)
        assert "[/x]p" in dialog and not has_raw_controls(dialog), dialog
        await pilot.press("y")
        await app.workers.wait_for_complete()
        for _ in range(4):
            app.sample()
        await pilot.pause()
        assert app.stops.reports[-1].startswith("stopped compose project [/x]p: 2 of 2 containers")
        shown = screen_text(app)
        assert not has_raw_controls(shown)
        assert app.is_running


async def test_keys_do_nothing_behind_the_too_small_message(tmp_path: Path) -> None:
    app = SparktopApp(
        DemoSource(scenario="default", seed=0),
        Config(),
        auto_refresh=False,
        warmup=2,
        user_theme_dir=tmp_path / "no-themes",
    )
    app.stops.log.path = tmp_path / "actions.log"
    async with app.run_test(size=(50, 15)) as pilot:
        assert app.has_class("-too-small")
        tabs = app.query_one(TabbedContent)
        await pilot.press("2", "s", "S", "k", "K", "o", "p", "slash", "4")
        await pilot.pause()
        assert tabs.active == "dashboard" and not app.paused
        assert app.stops.reports == [] and not isinstance(app.screen, ConfirmScreen)
        assert not (tmp_path / "actions.log").exists()
        await pilot.resize_terminal(60, 18)  # the smallest the dashboard is drawn in
        await pilot.pause()
        assert not app.has_class("-too-small")
        await pilot.press("2")
        await pilot.pause()
        assert tabs.active == "containers"  # the same key acts once the tables are on screen
        await pilot.press("q")
    assert app.return_code == 0


class DialogHost(PlainToastApp):
    """Nothing but the screen a dialog opens over, with sparktop's toasts (SparktopApp's base): the plan-file
    dialog needs no dashboard (it opened one, its catalog and 30 samples, ~0.5 s of CPU)."""

    def compose(self) -> ComposeResult:
        yield Static("host")


async def test_a_plan_file_named_like_markup_is_shown_as_it_is(tmp_path: Path) -> None:
    """The plan-file dialog quotes the path in its messages: `[/b]x.toml` must not end or restyle the app."""
    from sparktop.plan import Plan
    from sparktop.plan.catalog import Catalog
    from sparktop.ui.screens.plan_file import PlanFileScreen

    app = DialogHost()
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        screen = PlanFileScreen("load", Plan(Catalog()), tmp_path / "[/b]x.toml")
        await app.push_screen(screen)
        await pilot.press("enter")  # load a file that does not exist: the message quotes its name
        await pilot.pause()
        assert app.is_running
        shown = str(screen.query_one("#message").render())
        assert "[/b]x.toml" in shown
        app.notify("could not write the history to /tmp/[/b]x: denied", severity="error")
        await pilot.pause()
        assert app.is_running
        toasts = [str(toast.render()) for toast in app.screen.query("Toast")]
        assert any("/tmp/[/b]x: denied" in text for text in toasts), toasts


async def test_toasts_asked_for_as_markup_show_their_words_and_never_parse_outside_text() -> None:
    """Widget.notify() defaults to markup=True and Textual's own toasts are markup ("Press [b]q[/b] to
    quit", a screenshot's path): every toast reaches the screen as plain text, tags dropped where they are
    well formed, and a name like `[/b]x` shown as written instead of ending the app."""
    from sparktop.ui.widgets.budget_bar import BudgetBar
    from tests.ui.demo_app import make_app

    app = make_app(warmup=1)  # nothing here reads the history
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        app.query_one(BudgetBar).notify("process [/b]x ended")  # a widget's notify: markup=True by default
        app.notify("Press [b]q[/b] to quit", markup=True)
        await pilot.pause()
        assert app.is_running
        shown = [str(toast.render()) for toast in app.screen.query("Toast")]
        assert any("process [/b]x ended" in text for text in shown), shown
        assert any("Press q to quit" in text for text in shown), shown


async def test_the_cluster_view_keeps_its_toasts_plain_too() -> None:
    """The cluster view shows names other machines report: its toasts go through the same rule."""
    from sparktop.cluster.node import NodeView
    from sparktop.ui.cluster import ClusterApp

    class OneNode:
        description = "one node"

        def fetch(self) -> list[NodeView]:
            return [NodeView(name="[/b]node", status="down", reason="test")]

    app = ClusterApp(OneNode(), auto_refresh=False)
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await app.refresh_once()
        app.query_one("#cluster-status").notify("node [/b]x went away")  # markup=True by default
        await pilot.pause()
        assert app.is_running
        shown = [str(toast.render()) for toast in app.screen.query("Toast")]
        assert any("node [/b]x went away" in text for text in shown), shown


def test_every_static_label_and_toast_is_built_without_markup_parsing() -> None:
    """A Static, Label or notify() that parses markup restyles or breaks on a name like `[/b]x` the day
    someone passes it outside text. Styled text goes in as `Content` (built with `$values`), so every such
    call says markup=False, and the rule holds by construction rather than call by call."""
    root = PACKAGE
    parsing = []
    checked = 0
    for path in package_files():
        # Only the modules that name one (a formatted call is written `Name(`): walking every tree was most
        # of this test's CPU.
        if not any(f"{name}(" in path.read_text(encoding="utf-8") for name in ("Static", "Label", "notify")):
            continue
        for node in ast.walk(parsed(path)):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in ("Static", "Label", "notify"):
                continue
            checked += 1
            markup = next((k.value for k in node.keywords if k.arg == "markup"), None)
            if not (isinstance(markup, ast.Constant) and markup.value is False):
                parsing.append(f"{path.relative_to(root.parent)}:{node.lineno} {name}(...)")
    assert checked > 10  # the scan finds the calls it is about
    assert parsing == [], f"markup parsed in: {parsing}"
