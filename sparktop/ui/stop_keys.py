"""Stopping containers and signalling processes from the dashboard: `s` `S` `k` `K`, the Textual side.

`StopActions` is what the app holds: it turns each key into a `sparktop.stopping.stop_book.StopBook` call,
opens the confirmation dialogs, runs every engine call in a thread worker (the engine may take the whole stop
timeout, the UI must stay live), and shows the lines the book reports as notifications. The bookkeeping itself
(pending operations, results from snapshots, compose groups, the action log, signals) is in
`sparktop/stopping/stop_book.py`, which does not need Textual.

Every failure is one notification line; nothing here raises into the app.
"""

from __future__ import annotations

import contextlib
import signal as _signal
from collections.abc import Callable, Iterable
from functools import partial
from signal import Signals
from typing import Any, Protocol

from sparktop.collect.control import ContainerController
from sparktop.core.safe_text import visible_lines
from sparktop.core.snapshot import ContainerInfo, ProcessInfo, Snapshot
from sparktop.session.session import Session
from sparktop.sources.snapshot_source import SnapshotSource
from sparktop.stopping.stop_book import (
    READ_ONLY,
    Group,
    Outcome,
    Pending,
    Report,
    Row,
    RowT,
    Severity,
    StopBook,
    What,
)
from sparktop.stopping.stop_log import ActionLog
from sparktop.ui.screens.confirm import (
    ConfirmScreen,
    kill_dialog,
    project_dialog,
    signal_dialog,
    stop_dialog,
)

__all__ = ["READ_ONLY", "Host", "StopActions"]  # READ_ONLY: the app and tests import it from here


class Host(Protocol):
    """What StopActions needs from the app (SparktopApp, or a small test app): a Textual App's methods it
    calls, and its session, whose latest snapshot the dialogs describe."""

    session: Session

    @property
    def screen(self) -> object: ...

    @property
    def run_worker(self) -> Callable[..., Any]: ...

    @property
    def push_screen(self) -> Callable[..., Any]: ...

    @property
    def notify(self) -> Callable[..., Any]: ...

    @property
    def call_from_thread(self) -> Callable[..., Any]: ...


class StopActions:
    """The stop / kill / signal flow for one app, on `book` (the Textual-free bookkeeping: source, timeout,
    read-only, units, log, controller). `app.session.latest` is the snapshot the dialogs describe;
    `observe(snapshot)` must see every new snapshot; `on_change` redraws the tables."""

    def __init__(self, app: Host, book: StopBook, *, on_change: Callable[[], None] | None = None) -> None:
        self.app = app
        self.book = book
        self.on_change = on_change
        self.reports: list[str] = []  # every line shown to the user, oldest first (tests, debugging)

    # The book's state, by the names the app and tests use.

    @property
    def source(self) -> SnapshotSource:
        return self.book.source

    @property
    def log(self) -> ActionLog:
        return self.book.log

    @property
    def pending(self) -> dict[str, Pending]:
        return self.book.pending

    @property
    def groups(self) -> dict[str, Group]:
        return self.book.groups

    @property
    def controller(self) -> ContainerController | None:
        return self.book.controller

    @controller.setter
    def controller(self, value: ContainerController | None) -> None:
        self.book.controller = value

    @property
    def available(self) -> bool:
        """Whether s / S / k / K can act at all (see StopBook.available)."""
        return self.book.available

    def explain_unavailable(self) -> None:
        """Say why the stop keys do nothing here."""
        self._say_all([self.book.unavailable()])

    # -- the keys ------------------------------------------------------------------------------------------

    def stop(self, row: Row) -> None:
        """`s`: stop the selected container, or the container of the selected process."""
        if self._refused_model(row):
            return
        container = self._container_of(row, "s")
        if container is None:
            return
        busy = self.book.busy(container)
        if busy is not None:
            self._say_all([busy])
            return
        target = self.book.target(container, self.app.session.latest)
        dialog = stop_dialog(target, self.book.units, self.book.timeout)
        self._confirm(dialog, partial(self._start_stop, container))

    def kill(self, row: Row) -> None:
        """`K`: kill the selected container (after a stop timed out, say), or SIGKILL a host process."""
        if self._refused_model(row):
            return
        if isinstance(row, ProcessInfo) and not row.container_id:
            self._signal(row, _signal.SIGKILL)
            return
        container = self._container_of(row, "K")
        if container is None:
            return
        self._offer_kill(container, self.book.kill_why(container))

    def terminate(self, row: Row) -> None:
        """`k`: SIGTERM the selected process (outside containers)."""
        if self._refused_model(row):
            return
        if isinstance(row, ProcessInfo) and not row.container_id:
            self._signal(row, _signal.SIGTERM)
            return
        self._say_all([self.book.terminate_refusal(row, self.app.session.latest)])

    def stop_project(self, row: Row) -> None:
        """`S`: stop every running container of the selected container's compose project."""
        if self._refused_model(row):
            return
        container = self._container_of(row, "S")
        if container is None:
            return
        project = self.book.project_of(container)
        if isinstance(project, Report):
            self._say_all([project])
            return
        if self.book.lists_projects:
            # The engine's list is the truth for "all its running containers"; ask it off the event loop.
            self.app.run_worker(
                partial(self._list_project, project), thread=True, group="stop-list", exit_on_error=False
            )
        else:
            self._confirm_project(project, self.book.snapshot_project(project, self.app.session.latest))

    def _refused_model(self, row: Row) -> bool:
        refusal = self.book.model_refusal(row)
        if refusal is not None:
            self._say_all([refusal])
        return refusal is not None

    # -- results from snapshots ----------------------------------------------------------------------------

    def observe(self, snapshot: Snapshot) -> None:
        """Call with every new snapshot: reports stops whose container has gone from it."""
        self._apply(self.book.observe(snapshot))

    def row_status(self, container_id: str) -> str | None:
        return self.book.row_status(container_id)

    def mark_rows(self, rows: list[RowT]) -> list[RowT]:
        """Put "stopping…" (and the like) in the containers table's rows: status column and name."""
        return self.book.mark_rows(rows)

    # -- dialogs -------------------------------------------------------------------------------------------

    def _confirm(self, dialog: ConfirmScreen, then: Callable[[], None]) -> None:
        if isinstance(self.app.screen, ConfirmScreen):
            return  # one question at a time

        def done(confirmed: bool | None) -> None:
            if confirmed:
                then()

        self.app.push_screen(dialog, done)

    def _offer_kill(self, container: ContainerInfo, why: str | None) -> None:
        refusal = self.book.control_refusal()
        if refusal is not None:
            self._say_all([refusal])
            return
        target = self.book.target(container, self.app.session.latest)
        self._confirm(kill_dialog(target, self.book.units, why), partial(self._start_kill, container))

    def _confirm_project(self, project: str, containers: list[ContainerInfo]) -> None:
        if not containers:
            self._say_all([self.book.empty_project(project)])
            return
        snapshot = self.app.session.latest
        targets = [self.book.target(c, snapshot) for c in containers]
        self._confirm(
            project_dialog(project, targets, self.book.units, self.book.timeout),
            partial(self._start_project, project, containers),
        )

    def _list_project(self, project: str) -> None:
        """In a worker thread: the engine's list, then the dialog back on the event loop."""
        found = self.book.list_project(project)
        if isinstance(found, Report):
            self._from_thread(self._say_all, [found])
        else:
            self._from_thread(self._confirm_project, project, found)

    # -- running them --------------------------------------------------------------------------------------

    def _start_stop(self, container: ContainerInfo) -> None:
        self.book.begin_stop(container, self.app.session.latest)
        self._changed()
        self._run_worker(container.id, "stop")

    def _start_kill(self, container: ContainerInfo) -> None:
        self.book.begin_kill(container, self.app.session.latest)
        self._changed()
        self._run_worker(container.id, "kill")

    def _start_project(self, project: str, containers: list[ContainerInfo]) -> None:
        todo = self.book.begin_project(project, containers, self.app.session.latest)
        self._changed()
        for c in todo:
            self._run_worker(c.id, "stop")

    def _run_worker(self, container_id: str, what: What) -> None:
        self.app.run_worker(
            partial(self._run, container_id, what), thread=True, group="stop", exit_on_error=False
        )

    def _run(self, container_id: str, what: What) -> None:
        """In a worker thread: the blocking engine call, then the outcome back on the event loop."""
        error, timed_out = self.book.run(container_id, what)
        self._from_thread(self._done, container_id, what, error, timed_out)

    def _done(self, container_id: str, what: What, error: str | None, timed_out: bool) -> None:
        self._apply(self.book.done(container_id, what, error, timed_out, self.app.session.latest))

    # -- signals -------------------------------------------------------------------------------------------

    def _signal(self, proc: ProcessInfo, sig: Signals) -> None:
        refusal = self.book.signal_refusal()
        if refusal is not None:
            self._say_all([refusal])
            return
        dialog = signal_dialog(self.book.process_target(proc), proc.pid, sig.name, self.book.units)
        self._confirm(dialog, partial(self._send, proc, sig))

    def _send(self, proc: ProcessInfo, sig: Signals) -> None:
        self._apply(self.book.send(proc, sig))

    # -- helpers -------------------------------------------------------------------------------------------

    def _container_of(self, row: Row, key: str) -> ContainerInfo | None:
        """The container a container key acts on, or None after saying why there is none."""
        found = self.book.container_of(row, key, self.app.session.latest)
        if isinstance(found, Report):
            self._say_all([found])
            return None
        return found

    def _apply(self, out: Outcome) -> None:
        if out.changed:
            self._changed()
        self._say_all(out.reports)
        if out.offer_kill is not None:
            self._offer_kill(out.offer_kill, out.kill_why)

    def _say_all(self, reports: Iterable[Report]) -> None:
        for r in reports:
            self._say(r.line, r.severity)

    def _say(self, line: str, severity: Severity = "information") -> None:
        self.reports.append(line)
        remember = getattr(self.app, "remember", None)  # a warning's toast is kept by the app itself
        if severity == "information" and remember is not None:
            remember(line, "stop")  # an action taken belongs with the alerts that led to it (M)
        timeout = 8 if severity == "information" else 15
        # Plain text: the line names processes, containers and projects that others may call `[/b]x`.
        self.app.notify(visible_lines(line), severity=severity, timeout=timeout, markup=False)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def _from_thread(self, fn: Callable[..., Any], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the app is shutting down
            self.app.call_from_thread(fn, *args)
