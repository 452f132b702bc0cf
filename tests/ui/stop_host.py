"""A small host app for the stop / kill / signal flow (StopActions and its confirmation dialogs) in place of
the dashboard: it holds `latest`, feeds every snapshot to `observe`, and maps s / S / k / K to StopActions
with the row a test selects (`app.row`). Shared by tests/ui/test_stop.py and test_hostile_text.py."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from sparktop.core.snapshot import ContainerInfo, ProcessInfo, Snapshot
from sparktop.session.session import Session
from sparktop.stopping.stop_book import StopBook
from sparktop.stopping.stop_log import ActionLog
from sparktop.ui.screens.confirm import ConfirmScreen
from sparktop.ui.stop_keys import StopActions


class Host(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "stop"),
        Binding("S", "stop_project"),
        Binding("k", "terminate"),
        Binding("K", "kill"),
    ]

    def __init__(self, source, log_path: Path, **kw) -> None:
        super().__init__()
        self.start_over(source, log_path, **kw)

    def start_over(self, source, log_path: Path, **kw) -> None:
        """On `source` with a new session, stop book and log, as a new host starts: a running host shared by
        a module's tests (tests/ui/test_stop.py) is started over for each (a Textual app costs more than
        all this)."""
        self.source = source
        self.session = Session()
        self.latest: Snapshot | None = None
        self.row: ContainerInfo | ProcessInfo | None = None
        self.changes = 0
        self.remembered: list[tuple[str, str]] = []  # (title, line) kept for the messages screen (M)
        book = StopBook(source, log=ActionLog(log_path), **kw)
        self.stops = StopActions(self, book, on_change=self._changed)

    def compose(self) -> ComposeResult:
        yield Static("host")

    def _changed(self) -> None:
        self.changes += 1

    def remember(self, message: str, title: str = "") -> None:
        self.remembered.append((title, message))

    def sample(self) -> Snapshot:
        snapshot = self.session.ingest(self.source.sample())  # accounted, as the dashboard's are
        self.latest = snapshot
        self.stops.observe(snapshot)
        return snapshot

    def container(self, name: str) -> ContainerInfo:
        assert self.latest is not None
        return next(c for c in self.latest.containers if c.label == name)

    def action_stop(self) -> None:
        self.stops.stop(self.row)

    def action_stop_project(self) -> None:
        self.stops.stop_project(self.row)

    def action_terminate(self) -> None:
        self.stops.terminate(self.row)

    def action_kill(self) -> None:
        self.stops.kill(self.row)


def dialog_text(app: App) -> str:
    screen = app.screen
    assert isinstance(screen, ConfirmScreen)
    parts = [str(w.render()) for w in screen.query(Static)]
    return "\n".join(parts)


def log_lines(path: Path) -> list[list[str]]:
    if not path.exists():
        return []
    return [line.split("\t") for line in path.read_text().splitlines()]


async def settle(app: Host, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
