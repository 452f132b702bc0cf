"""Stopping containers and signalling processes from the dashboard: `s` `S` `k` `K`.

`StopActions` is what the app holds: it opens the confirmation dialogs, runs every stop and kill in a thread
worker (the engine may take the whole stop timeout, the UI must stay live), keeps the pending operations (the
table shows "stopping…" from them), and reports each result once the snapshots show it: a stopped
container is reported when it has gone from a snapshot, with the pool's used memory drop since the stop
was confirmed ("stopped audio-whisper-1 — freed 3.1 GiB").

Every failure is one notification line; nothing here raises into the app. Every confirmed action is appended
to the action log (time, target, result).
"""

from __future__ import annotations

import contextlib
import signal as _signal
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from signal import Signals
from typing import Any, Literal, Protocol, TypeVar

from textual.notifications import SeverityLevel

from sparktop.action_log import ActionLog
from sparktop.analysis.served import ModelPart
from sparktop.collect import signals
from sparktop.collect.control import ContainerController, ControlError, StopTimeout
from sparktop.collect.controllers import (
    controller_for,
    foreign_engine,
    foreign_engine_reason,
    no_controller_reason,
    refresh_names,
)
from sparktop.collect.source import SnapshotSource
from sparktop.format import fmt_bytes
from sparktop.model import ContainerInfo, ProcessInfo, Snapshot
from sparktop.text import visible_lines
from sparktop.ui.screens.confirm import (
    ConfirmScreen,
    Target,
    kill_dialog,
    project_dialog,
    signal_dialog,
    stop_dialog,
)

READ_ONLY = "read-only mode (--read-only or read_only in the config): stopping and signals are disabled"
# How many snapshots after a successful stop we wait for the container to leave them before reporting anyway.
GONE_WAIT_SNAPSHOTS = 10

Phase = Literal["stopping", "killing", "timeout", "stopped"]
Row = ContainerInfo | ProcessInfo | ModelPart | None


class _TableRow(Protocol):
    """A table row (sparktop.ui.widgets.tables.Row): its cells' values and styles by column."""

    values: dict[str, Any]
    styles: dict[str, str]


RowT = TypeVar("RowT", bound=_TableRow)


class Host(Protocol):
    """What StopActions needs from the app (SparktopApp, or a small test app): a Textual App's methods it
    calls, and the snapshot the dialogs describe."""

    @property
    def latest(self) -> Snapshot | None: ...

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


@dataclass
class Pending:
    """One container the user asked to stop (or kill), until its result is reported."""

    container: ContainerInfo
    held: int  # its consumer's total (CPU + GPU side) when the stop was confirmed
    used_before: int  # the pool's used memory then
    phase: Phase = "stopping"
    verb: str = "stopped"  # "killed" once a kill was confirmed
    group: str | None = None  # compose project, for `S`
    snapshots_since_done: int = 0

    @property
    def key(self) -> str:
        return f"container:{self.container.id}"


@dataclass
class Group:
    project: str
    members: list[str]  # container ids
    used_before: int
    done: dict[str, str | None] = field(default_factory=dict)  # id -> error line or None (stopped)


ROW_STATUS: dict[Phase, str] = {
    "stopping": "stopping…",
    "killing": "killing…",
    "timeout": "timed out (K)",
    "stopped": "stopped",
}


class StopActions:
    """The stop / kill / signal flow for one app. `app.latest` is the snapshot the dialogs describe;
    `observe(snapshot)` must see every new snapshot; `on_change` redraws the tables."""

    def __init__(
        self,
        app: Host,
        source: SnapshotSource,
        *,
        timeout: float = 10.0,
        read_only: bool = False,
        units: str = "GiB",
        log: ActionLog | None = None,
        controller: ContainerController | Literal["auto"] | None = "auto",
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.app = app
        self.source = source
        self.timeout = timeout
        self.read_only = read_only
        self.units = units
        self.log = log or ActionLog()
        self._controller = controller
        self.on_change = on_change
        self.pending: dict[str, Pending] = {}  # container id -> operation
        self.groups: dict[str, Group] = {}
        self.reports: list[str] = []  # every line shown to the user, oldest first (tests, debugging)

    @property
    def controller(self) -> ContainerController | None:
        # Made on first use: for a live source that imports the Docker SDK (~0.1 s), which the dashboard's
        # first frame need not wait for.
        if isinstance(self._controller, str):  # "auto"
            self._controller = controller_for(self.source)
        return self._controller

    @controller.setter
    def controller(self, value: ContainerController | None) -> None:
        self._controller = value

    # -- the keys ------------------------------------------------------------------------------------------

    def stop(self, row: Row) -> None:
        """`s`: stop the selected container, or the container of the selected process."""
        if self._is_model(row):
            return
        container = self._container_of(row, "s")
        if container is None:
            return
        if container.id in self.pending and self.pending[container.id].phase != "timeout":
            self._say(f"{container.label} is already {ROW_STATUS[self.pending[container.id].phase]}")
            return
        target = self._target(container)
        self._confirm(stop_dialog(target, self.units, self.timeout), partial(self._start_stop, container))

    def kill(self, row: Row) -> None:
        """`K`: kill the selected container (after a stop timed out, say), or SIGKILL a host process."""
        if self._is_model(row):
            return
        if isinstance(row, ProcessInfo) and not row.container_id:
            self._signal(row, _signal.SIGKILL)
            return
        container = self._container_of(row, "K")
        if container is None:
            return
        pending = self.pending.get(container.id)
        why = None
        if pending is not None and pending.phase == "timeout":
            why = f"{container.label} did not stop within {self.timeout:g} s."
        self._offer_kill(container, why)

    def terminate(self, row: Row) -> None:
        """`k`: SIGTERM the selected process (outside containers)."""
        if self._is_model(row):
            return
        if isinstance(row, ProcessInfo) and not row.container_id:
            self._signal(row, _signal.SIGTERM)
            return
        if self.read_only:
            self._say(READ_ONLY, "warning")
        elif isinstance(row, ProcessInfo):
            owner = self._container_by_id(row.container_id or "")
            name = owner.label if owner else (row.container_id or "")[:12]
            self._say(f"process {row.pid} runs in container {name}: s stops the container", "warning")
        else:
            self._say("k signals a host process: select one on the Processes tab (3)", "warning")

    def stop_project(self, row: Row) -> None:
        """`S`: stop every running container of the selected container's compose project."""
        if self._is_model(row):
            return
        container = self._container_of(row, "S")
        if container is None:
            return
        project = container.compose_project
        if not project:
            self._say(f"{container.label} is not part of a compose project: s stops it alone", "warning")
            return
        controller = self.controller
        lister = getattr(controller, "project_containers", None)
        if callable(lister):
            # The engine's list is the truth for "all its running containers"; ask it off the event loop.
            self.app.run_worker(
                partial(self._list_project, project, lister),
                thread=True,
                group="stop-list",
                exit_on_error=False,
            )
        else:
            self._confirm_project(project, self._snapshot_project(project))

    # -- results from snapshots ----------------------------------------------------------------------------

    def observe(self, snapshot: Snapshot) -> None:
        """Call with every new snapshot: reports stops whose container has gone from it."""
        present = self._present(snapshot)
        for cid, p in list(self.pending.items()):
            if p.phase != "stopped":
                continue
            p.snapshots_since_done += 1
            if cid not in present:
                self._report_gone(p, snapshot)
            elif p.snapshots_since_done >= GONE_WAIT_SNAPSHOTS:
                self._finish(p, f"{p.verb} {p.container.label} — the engine says so, yet it still shows")

    def row_status(self, container_id: str) -> str | None:
        p = self.pending.get(container_id)
        return ROW_STATUS[p.phase] if p else None

    def mark_rows(self, rows: list[RowT]) -> list[RowT]:
        """Put "stopping…" (and the like) in the containers table's rows: status column and name."""
        if not self.pending:
            return rows
        for row in rows:
            item = getattr(row, "item", None)
            if isinstance(item, ContainerInfo) and item.id in self.pending:
                state = ROW_STATUS[self.pending[item.id].phase]
                # The status column is optional (hidden by default): the name column always shows the state.
                row.values["status"] = state
                row.values["name"] = f"{state} {row.values.get('name', item.label)}"
                row.styles["status"] = row.styles["name"] = "bold"
        return rows

    # -- dialogs -------------------------------------------------------------------------------------------

    def _confirm(self, dialog: ConfirmScreen, then: Callable[[], None]) -> None:
        if isinstance(self.app.screen, ConfirmScreen):
            return  # one question at a time

        def done(confirmed: bool | None) -> None:
            if confirmed:
                then()

        self.app.push_screen(dialog, done)

    def _offer_kill(self, container: ContainerInfo, why: str | None) -> None:
        if self.read_only or self.controller is None:
            self._refuse_control()
            return
        self._confirm(
            kill_dialog(self._target(container), self.units, why), partial(self._start_kill, container)
        )

    def _confirm_project(self, project: str, containers: list[ContainerInfo]) -> None:
        if not containers:
            self._say(f"compose project {project}: no running containers", "warning")
            return
        targets = [self._target(c) for c in containers]
        self._confirm(
            project_dialog(project, targets, self.units, self.timeout),
            partial(self._start_project, project, containers),
        )

    def _list_project(self, project: str, lister: Callable[[str], list[ContainerInfo]]) -> None:
        try:
            found = lister(project)
        except ControlError as exc:
            self._from_thread(self._say, str(exc), "error")
            return
        except Exception as exc:  # a controller must not take the dashboard down
            self._from_thread(self._say, f"could not list {project}: {exc}", "error")
            return
        self._from_thread(self._confirm_project, project, found)

    # -- running them --------------------------------------------------------------------------------------

    def _start_stop(self, container: ContainerInfo, group: str | None = None) -> None:
        snapshot = self.app.latest
        held = self._target(container).total
        used = snapshot.memory.used if snapshot else 0
        self.pending[container.id] = Pending(container, held, used, group=group)
        self._changed()
        self.app.run_worker(
            partial(self._run, container.id, "stop"), thread=True, group="stop", exit_on_error=False
        )

    def _start_kill(self, container: ContainerInfo) -> None:
        p = self.pending.get(container.id)
        if p is None:
            snapshot = self.app.latest
            used = snapshot.memory.used if snapshot else 0
            p = self.pending[container.id] = Pending(container, self._target(container).total, used)
        p.phase, p.verb = "killing", "killed"
        self._changed()
        self.app.run_worker(
            partial(self._run, container.id, "kill"), thread=True, group="stop", exit_on_error=False
        )

    def _start_project(self, project: str, containers: list[ContainerInfo]) -> None:
        snapshot = self.app.latest
        used = snapshot.memory.used if snapshot else 0
        todo = [c for c in containers if c.id not in self.pending]
        self.groups[project] = Group(project, [c.id for c in todo], used)
        for c in todo:
            self._start_stop(c, group=project)

    def _run(self, container_id: str, what: Literal["stop", "kill"]) -> None:
        """In a worker thread: the blocking engine call, then the outcome back on the event loop."""
        controller = self.controller
        error: str | None = None
        timed_out = False
        try:
            if controller is None:
                raise ControlError(no_controller_reason(self.source))
            if what == "stop":
                controller.stop(container_id, timeout=self.timeout)
            else:
                controller.kill(container_id)
        except StopTimeout as exc:
            timed_out, error = True, str(exc)
        except ControlError as exc:
            error = str(exc)
        except Exception as exc:  # a controller must not take the dashboard down
            error = f"{what} failed: {type(exc).__name__}: {exc}"
        self._from_thread(self._done, container_id, what, error, timed_out)

    def _done(self, container_id: str, what: str, error: str | None, timed_out: bool) -> None:
        p = self.pending.get(container_id)
        if p is None:
            return
        target = _log_target(p.container)
        if timed_out:
            p.phase = "timeout"
            self._log(what, target, f"timeout: {error}")
            self._changed()
            message = f"{error} — K kills it"
            if p.group:
                self._group_done(p, message)
            self._say(message, "warning")
            self._offer_kill(p.container, error)
            return
        if error is not None:
            self._log(what, target, f"failed: {error}")
            self._finish(p, error, "error")
            return
        self._log(what, target, "stopped" if what == "stop" else "killed")
        p.phase = "stopped"
        refresh_names(self.source)
        self._changed()
        snapshot = self.app.latest
        if snapshot is not None and container_id not in self._present(snapshot):
            self._report_gone(p, snapshot)

    def _report_gone(self, p: Pending, snapshot: Snapshot) -> None:
        if p.group and p.group in self.groups:
            self._finish(p, None)
            return
        freed = max(0, p.used_before - snapshot.memory.used)
        line = f"{p.verb} {p.container.label} — freed {fmt_bytes(freed, self.units)}"
        if p.held and abs(freed - p.held) > p.held / 4:
            # The pool moves with everything else too: say what the container itself held.
            line += f" (it held {fmt_bytes(p.held, self.units)})"
        self._finish(p, line)

    def _finish(self, p: Pending, line: str | None, severity: SeverityLevel = "information") -> None:
        self.pending.pop(p.container.id, None)
        if p.group and p.group in self.groups:
            self._group_done(p, line if severity == "error" else None)
            if severity == "error" and line:
                self._say(line, severity)
        elif line:
            self._say(line, severity)
        self._changed()

    def _group_done(self, p: Pending, error: str | None) -> None:
        group = self.groups.get(p.group or "")
        if group is None:
            return
        group.done[p.container.id] = error
        if len(group.done) < len(group.members):
            return
        del self.groups[group.project]
        ok = [cid for cid, err in group.done.items() if err is None]
        snapshot = self.app.latest
        freed = max(0, group.used_before - snapshot.memory.used) if snapshot else 0
        failed = len(group.members) - len(ok)
        line = f"stopped compose project {group.project}: {len(ok)} of {len(group.members)} containers"
        line += f" — freed {fmt_bytes(freed, self.units)}"
        if failed:
            line += f" ({failed} did not stop, see above)"
        self._say(line, "warning" if failed else "information")

    # -- signals -------------------------------------------------------------------------------------------

    def _signal(self, proc: ProcessInfo, sig: Signals) -> None:
        if self.read_only:
            self._say(READ_ONLY, "warning")
            return
        name = getattr(self.source, "name", "")
        if name != "live":
            self._say(f"{name}: these processes are not on this machine, no signal sent", "warning")
            return
        target = Target(
            proc.name,
            proc.cpu_bytes,
            proc.gpu_bytes,
            detail=proc.cmdline or proc.name,
        )
        self._confirm(signal_dialog(target, proc.pid, sig.name, self.units), partial(self._send, proc, sig))

    def _send(self, proc: ProcessInfo, sig: Signals) -> None:
        target = f"pid {proc.pid} ({proc.name})"
        try:
            if proc.start_ticks is None:  # cannot tell it from a process that reuses its PID
                raise ControlError(f"process {proc.pid}: its start time is unknown, nothing sent")
            signals.signal_process(proc.pid, sig, expected_start_ticks=proc.start_ticks)
        except ControlError as exc:
            self._log(sig.name, target, f"failed: {exc}")
            self._say(str(exc), "error")
            return
        self._log(sig.name, target, "sent")
        self._say(f"sent {sig.name} to {proc.name} ({proc.pid})")

    # -- helpers -------------------------------------------------------------------------------------------

    def _is_model(self, row: Row) -> bool:
        """A served model's row is part of its server's row, not a process or a container: no key acts on
        it (a signal goes only to the process or container the user selected and confirmed). Says so."""
        if not isinstance(row, ModelPart):
            return False
        how = f" (`ollama stop {row.name}` unloads it alone)" if row.server == "ollama" else ""
        self._say(
            f"{row.name} is a model inside {row.server}: select the server's row to stop it{how}", "warning"
        )
        return True

    def _container_of(self, row: Row, key: str) -> ContainerInfo | None:
        """The container a container action applies to, or None after saying why there is none."""
        if self.read_only or self.controller is None:
            self._refuse_control()
            return None
        if isinstance(row, ContainerInfo):
            return self._ours(row)
        if isinstance(row, ProcessInfo):
            if row.container_id:
                owner = self._container_by_id(row.container_id)
                if owner is not None:
                    return self._ours(owner)
                self._say(f"the container of process {row.pid} is gone", "warning")
                return None
            hint = "k sends it SIGTERM, K SIGKILL"
            self._say(f"process {row.pid} ({row.name}) is not in a container: {hint}", "warning")
            return None
        self._say(f"{key} acts on the selected row: pick a container on the Containers tab (2)", "warning")
        return None

    def _ours(self, container: ContainerInfo) -> ContainerInfo | None:
        """The container, or None (said why) when it belongs to an engine sparktop is not connected to."""
        snapshot = self.app.latest
        if getattr(self.source, "name", "") != "live" or snapshot is None:
            return container
        engine = foreign_engine(container, snapshot.docker)
        if engine is None:
            return container
        self._say(foreign_engine_reason(container, engine), "warning")
        return None

    def _refuse_control(self) -> None:
        if self.read_only:
            self._say(READ_ONLY, "warning")
        else:
            self._say(no_controller_reason(self.source), "warning")

    def _container_by_id(self, container_id: str) -> ContainerInfo | None:
        snapshot = self.app.latest
        if snapshot is None:
            return None
        return next((c for c in snapshot.containers if c.id == container_id), None)

    def _snapshot_project(self, project: str) -> list[ContainerInfo]:
        snapshot = self.app.latest
        found = [c for c in snapshot.containers if c.compose_project == project] if snapshot else []
        found.sort(key=lambda c: (c.compose_service or "", c.label))
        return found

    def _target(self, container: ContainerInfo) -> Target:
        """The container as the dialog shows it, with its memory from the latest snapshot's accounting."""
        snapshot = self.app.latest
        known = self._container_by_id(container.id) or container
        cpu: int | None = known.memory.working_set if known.memory else None
        gpu: int | None = known.gpu_bytes
        if snapshot is not None and snapshot.accounting is not None:
            key = f"container:{container.id}"
            consumer = next((c for c in snapshot.accounting.consumers if c.key == key), None)
            if consumer is not None:
                cpu, gpu = consumer.cpu_bytes, consumer.gpu_bytes + consumer.device_gpu_bytes
        if snapshot is not None and not snapshot.gpu.available:
            gpu = None  # no GPU: "—", not a measured-looking 0
        return Target(
            known.label,
            cpu,
            gpu,
            image=known.image or container.image,
            project=known.compose_project or container.compose_project,
            service=known.compose_service or container.compose_service,
            detail=known.short_id if known.name else None,
        )

    @staticmethod
    def _present(snapshot: Snapshot) -> set[str]:
        """Container ids the snapshot still shows, as containers or as accounting consumers."""
        ids = {c.id for c in snapshot.containers}
        if snapshot.accounting is not None:
            ids |= {
                c.key[len("container:") :] for c in snapshot.accounting.consumers if c.kind == "container"
            }
        return ids

    @property
    def available(self) -> bool:
        """Whether s / S / k / K can act at all: not in read-only mode, and on a source that has something
        to stop (the live machine, the demo's simulated containers; a recording has none)."""
        return not self.read_only and getattr(self.source, "name", "") in ("live", "demo")

    def explain_unavailable(self) -> None:
        """Say why the stop keys do nothing here."""
        self._refuse_control()

    def _log(self, action: str, target: str, result: str) -> None:
        name = getattr(self.source, "name", "live")
        if name != "live":
            # The demo's stops share the user's action log: say they touched nothing real.
            target = f"[{name}] {target}"
        problem = self.log.append(action, target, result)
        if problem:
            self._say(problem, "warning")

    def _say(self, line: str, severity: SeverityLevel = "information") -> None:
        self.reports.append(line)
        timeout = 8 if severity == "information" else 15
        # Plain text: the line names processes, containers and projects that others may call `[/b]x`.
        self.app.notify(visible_lines(line), severity=severity, timeout=timeout, markup=False)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def _from_thread(self, fn: Callable[..., Any], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the app is shutting down
            self.app.call_from_thread(fn, *args)


def _log_target(container: ContainerInfo) -> str:
    return f"container {container.label} ({container.short_id})"
