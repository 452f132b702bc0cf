"""Stopping containers and signalling host processes: the bookkeeping, without Textual.

`StopBook` decides what a key acts on (or says why nothing), holds each operation the user confirmed until
its result is reported (the containers table shows "stopping…" from it), makes the blocking engine call, and
turns outcomes and snapshots into the lines to show: a stopped container is reported once it has gone from a
snapshot, with the pool's used memory drop since the stop was confirmed ("stopped audio-whisper-1 — freed
3.1 GiB"); a compose project's containers are reported once, as one line. Every confirmed action is appended
to the action log (time, target, result); a signal to a host process is sent safe against PID reuse.

No method raises into the caller and none shows anything: each returns `Report`s (a line and a severity) for
the UI to show. `sparktop/ui/stop_keys.py` is the Textual side: dialogs, worker threads, notifications.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from signal import Signals
from typing import Any, Literal, Protocol, TypeVar

from sparktop.analysis.served import ModelPart
from sparktop.collect import process_signals
from sparktop.collect.control import (
    ContainerController,
    ControlError,
    StopTimeout,
    foreign_engine,
    foreign_engine_reason,
    no_controller_reason,
)
from sparktop.core.format import fmt_bytes
from sparktop.core.safe_text import error_line
from sparktop.core.snapshot import ContainerInfo, ProcessInfo, Snapshot
from sparktop.sources.snapshot_source import SnapshotSource
from sparktop.stopping.stop_log import ActionLog

READ_ONLY = "read-only mode (--read-only or read_only in the config): stopping and signals are disabled"
# How many snapshots after a successful stop we wait for the container to leave them before reporting anyway.
GONE_WAIT_SNAPSHOTS = 10

Phase = Literal["stopping", "killing", "timeout", "stopped"]
# The same three words as Textual's SeverityLevel, so a Report's severity goes straight to `notify`.
Severity = Literal["information", "warning", "error"]
Row = ContainerInfo | ProcessInfo | ModelPart | None
What = Literal["stop", "kill"]

ROW_STATUS: dict[Phase, str] = {
    "stopping": "stopping…",
    "killing": "killing…",
    "timeout": "timed out (K)",
    "stopped": "stopped",
}


@dataclass(frozen=True)
class Report:
    """One line for the user (a notification), plain text."""

    line: str
    severity: Severity = "information"


@dataclass
class Outcome:
    """What a step of the bookkeeping asks of the UI."""

    reports: list[Report] = field(default_factory=list)
    changed: bool = False  # a row's state changed: redraw the tables
    offer_kill: ContainerInfo | None = None  # a stop timed out: ask whether to kill it ...
    kill_why: str | None = None  # ... saying this


@dataclass(frozen=True)
class Target:
    """What a dialog names: a container (or a process) and the memory it holds now."""

    label: str
    cpu_bytes: int | None = None
    gpu_bytes: int | None = None
    image: str | None = None
    project: str | None = None
    service: str | None = None
    detail: str | None = None  # a process's command line, a container's short id

    @property
    def total(self) -> int:
        return (self.cpu_bytes or 0) + (self.gpu_bytes or 0)


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


class _TableRow(Protocol):
    """A table row (sparktop.session.rows.Row): its cells' values and styles by column."""

    values: dict[str, Any]
    styles: dict[str, str]


RowT = TypeVar("RowT", bound=_TableRow)


def present(snapshot: Snapshot) -> set[str]:
    """Container ids the snapshot still shows, as containers or as accounting consumers."""
    ids = {c.id for c in snapshot.containers}
    if snapshot.accounting is not None:
        ids |= {c.key[len("container:") :] for c in snapshot.accounting.consumers if c.kind == "container"}
    return ids


def container_by_id(snapshot: Snapshot | None, container_id: str) -> ContainerInfo | None:
    if snapshot is None:
        return None
    return next((c for c in snapshot.containers if c.id == container_id), None)


def _used(snapshot: Snapshot | None) -> int:
    return snapshot.memory.used if snapshot else 0


def _log_target(container: ContainerInfo) -> str:
    return f"container {container.label} ({container.short_id})"


class StopBook:
    """The stop / kill / signal bookkeeping for one source. Methods that take a snapshot want the latest
    one (what the user sees); `observe` must see every new snapshot."""

    def __init__(
        self,
        source: SnapshotSource,
        *,
        timeout: float = 10.0,
        read_only: bool = False,
        units: str = "GiB",
        log: ActionLog | None = None,
        controller: ContainerController | Literal["auto"] | None = "auto",
    ) -> None:
        self.source = source
        self.timeout = timeout
        self.read_only = read_only
        self.units = units
        self.log = log or ActionLog()
        self._controller = controller
        self.pending: dict[str, Pending] = {}  # container id -> operation
        self.groups: dict[str, Group] = {}

    @property
    def controller(self) -> ContainerController | None:
        # Made on first use: for a live source that imports the Docker SDK (~0.1 s), which the dashboard's
        # first frame need not wait for.
        if isinstance(self._controller, str):  # "auto"
            self._controller = self.source.controller()
        return self._controller

    @controller.setter
    def controller(self, value: ContainerController | None) -> None:
        self._controller = value

    @property
    def source_name(self) -> str:
        return self.source.name

    @property
    def available(self) -> bool:
        """Whether s / S / k / K can act at all: not in read-only mode, and on a source that has something
        to stop (the live machine, the demo's simulated containers; a recording has none)."""
        return not self.read_only and self.source_name in ("live", "demo")

    # -- what a key acts on --------------------------------------------------------------------------------

    def control_refusal(self) -> Report | None:
        """Why containers cannot be stopped here (read-only, or no controller), or None when they can."""
        if self.read_only:
            return Report(READ_ONLY, "warning")
        if self.controller is None:
            return Report(no_controller_reason(self.source), "warning")
        return None

    def unavailable(self) -> Report:
        """Why the stop keys do nothing here."""
        if self.read_only:
            return Report(READ_ONLY, "warning")
        return Report(no_controller_reason(self.source), "warning")

    @staticmethod
    def model_refusal(row: Row) -> Report | None:
        """A served model's row is part of its server's row, not a process or a container: no key acts on
        it (a signal goes only to the process or container the user selected and confirmed). Says so."""
        if not isinstance(row, ModelPart):
            return None
        how = f" (`ollama stop {row.name}` unloads it alone)" if row.server == "ollama" else ""
        return Report(
            f"{row.name} is a model inside {row.server}: select the server's row to stop it{how}", "warning"
        )

    def container_of(self, row: Row, key: str, snapshot: Snapshot | None) -> ContainerInfo | Report:
        """The container a container key (`s`, `S`, `K`) acts on for the selected row, or why none."""
        refusal = self.control_refusal()
        if refusal is not None:
            return refusal
        if isinstance(row, ContainerInfo):
            return self._ours(row, snapshot)
        if isinstance(row, ProcessInfo):
            if row.container_id:
                owner = container_by_id(snapshot, row.container_id)
                if owner is not None:
                    return self._ours(owner, snapshot)
                return Report(f"the container of process {row.pid} is gone", "warning")
            hint = "k sends it SIGTERM, K SIGKILL"
            return Report(f"process {row.pid} ({row.name}) is not in a container: {hint}", "warning")
        return Report(
            f"{key} acts on the selected row: pick a container on the Containers tab (2)", "warning"
        )

    def _ours(self, container: ContainerInfo, snapshot: Snapshot | None) -> ContainerInfo | Report:
        """The container, or why not when it belongs to an engine sparktop is not connected to."""
        if self.source_name != "live" or snapshot is None:
            return container
        engine = foreign_engine(container, snapshot.docker)
        if engine is None:
            return container
        return Report(foreign_engine_reason(container, engine), "warning")

    def busy(self, container: ContainerInfo) -> Report | None:
        """`s` on a container already being stopped or killed (a timed-out one may be asked again)."""
        p = self.pending.get(container.id)
        if p is None or p.phase == "timeout":
            return None
        return Report(f"{container.label} is already {ROW_STATUS[p.phase]}")

    def kill_why(self, container: ContainerInfo) -> str | None:
        """What the kill dialog says first: the stop that timed out, if one did."""
        p = self.pending.get(container.id)
        if p is not None and p.phase == "timeout":
            return f"{container.label} did not stop within {self.timeout:g} s."
        return None

    def terminate_refusal(self, row: Row, snapshot: Snapshot | None) -> Report:
        """`k` on anything but a host process: why it sends nothing."""
        if self.read_only:
            return Report(READ_ONLY, "warning")
        if isinstance(row, ProcessInfo):
            owner = container_by_id(snapshot, row.container_id or "")
            name = owner.label if owner else (row.container_id or "")[:12]
            return Report(f"process {row.pid} runs in container {name}: s stops the container", "warning")
        return Report("k signals a host process: select one on the Processes tab (3)", "warning")

    def project_of(self, container: ContainerInfo) -> str | Report:
        if container.compose_project:
            return container.compose_project
        return Report(f"{container.label} is not part of a compose project: s stops it alone", "warning")

    @property
    def lists_projects(self) -> bool:
        """Whether the engine can list a compose project's containers (the truth for "all its running
        containers"); else the snapshot's are used."""
        return callable(getattr(self.controller, "project_containers", None))

    def list_project(self, project: str) -> list[ContainerInfo] | Report:
        """Blocking (a worker thread): the engine's running containers of `project`, or why not."""
        lister: Callable[[str], list[ContainerInfo]] | None = getattr(
            self.controller, "project_containers", None
        )
        if lister is None:
            return Report(f"could not list {project}: {no_controller_reason(self.source)}", "error")
        try:
            return lister(project)
        except ControlError as exc:
            return Report(str(exc), "error")
        except Exception as exc:  # a controller must not take the dashboard down
            return Report(f"could not list {project}: {exc}", "error")

    @staticmethod
    def snapshot_project(project: str, snapshot: Snapshot | None) -> list[ContainerInfo]:
        found = [c for c in snapshot.containers if c.compose_project == project] if snapshot else []
        found.sort(key=lambda c: (c.compose_service or "", c.label))
        return found

    @staticmethod
    def empty_project(project: str) -> Report:
        return Report(f"compose project {project}: no running containers", "warning")

    def target(self, container: ContainerInfo, snapshot: Snapshot | None) -> Target:
        """The container as the dialog shows it, with its memory from the snapshot's accounting."""
        known = container_by_id(snapshot, container.id) or container
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

    # -- running them --------------------------------------------------------------------------------------

    def begin_stop(
        self, container: ContainerInfo, snapshot: Snapshot | None, group: str | None = None
    ) -> None:
        """The user confirmed a stop: hold it from now on (`run` makes the engine call)."""
        held = self.target(container, snapshot).total
        self.pending[container.id] = Pending(container, held, _used(snapshot), group=group)

    def begin_kill(self, container: ContainerInfo, snapshot: Snapshot | None) -> None:
        p = self.pending.get(container.id)
        if p is None:
            held = self.target(container, snapshot).total
            p = self.pending[container.id] = Pending(container, held, _used(snapshot))
        p.phase, p.verb = "killing", "killed"

    def begin_project(
        self, project: str, containers: list[ContainerInfo], snapshot: Snapshot | None
    ) -> list[ContainerInfo]:
        """The user confirmed `S`: the containers to stop now (those not already pending), held as one
        group that is reported once, when the last of them is done."""
        todo = [c for c in containers if c.id not in self.pending]
        if todo:
            self.groups[project] = Group(project, [c.id for c in todo], _used(snapshot))
        for c in todo:
            self.begin_stop(c, snapshot, group=project)
        return todo

    def run(self, container_id: str, what: What) -> tuple[str | None, bool]:
        """Blocking (a worker thread): the engine call. Returns (error line or None, timed out)."""
        controller = self.controller
        try:
            if controller is None:
                raise ControlError(no_controller_reason(self.source))
            if what == "stop":
                controller.stop(container_id, timeout=self.timeout)
            else:
                controller.kill(container_id)
        except StopTimeout as exc:
            return str(exc), True
        except ControlError as exc:
            return str(exc), False
        except Exception as exc:  # a controller must not take the dashboard down
            return f"{what} failed: {error_line(exc)}", False
        return None, False

    def done(
        self, container_id: str, what: What, error: str | None, timed_out: bool, snapshot: Snapshot | None
    ) -> Outcome:
        """The engine call's result (from `run`), with the latest snapshot."""
        p = self.pending.get(container_id)
        out = Outcome()
        if p is None:
            return out
        out.changed = True
        target = _log_target(p.container)
        if timed_out:
            p.phase = "timeout"
            self._log(out, what, target, f"timeout: {error}")
            message = f"{error} — K kills it"
            out.reports.append(Report(message, "warning"))
            if p.group:
                self._group_done(out, p, message, snapshot)
            out.offer_kill, out.kill_why = p.container, error
            return out
        if error is not None:
            self._log(out, what, target, f"failed: {error}")
            self._finish(out, p, error, snapshot, "error")
            return out
        self._log(out, what, target, "stopped" if what == "stop" else "killed")
        p.phase = "stopped"
        self.source.refresh_names()
        if snapshot is not None and container_id not in present(snapshot):
            self._report_gone(out, p, snapshot)
        return out

    # -- results from snapshots ----------------------------------------------------------------------------

    def observe(self, snapshot: Snapshot) -> Outcome:
        """Call with every new snapshot: reports stops whose container has gone from it."""
        out = Outcome()
        ids = present(snapshot)
        for cid, p in list(self.pending.items()):
            if p.phase != "stopped":
                continue
            p.snapshots_since_done += 1
            if cid not in ids:
                self._report_gone(out, p, snapshot)
            elif p.snapshots_since_done >= GONE_WAIT_SNAPSHOTS:
                line = f"{p.verb} {p.container.label} — the engine says so, yet it still shows"
                self._finish(out, p, line, snapshot)
        return out

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

    def _report_gone(self, out: Outcome, p: Pending, snapshot: Snapshot) -> None:
        if p.group and p.group in self.groups:
            self._finish(out, p, None, snapshot)
            return
        freed = max(0, p.used_before - snapshot.memory.used)
        line = f"{p.verb} {p.container.label} — freed {fmt_bytes(freed, self.units)}"
        if p.held and abs(freed - p.held) > p.held / 4:
            # The pool moves with everything else too: say what the container itself held.
            line += f" (it held {fmt_bytes(p.held, self.units)})"
        self._finish(out, p, line, snapshot)

    def _finish(
        self,
        out: Outcome,
        p: Pending,
        line: str | None,
        snapshot: Snapshot | None,
        severity: Severity = "information",
    ) -> None:
        self.pending.pop(p.container.id, None)
        out.changed = True
        grouped = bool(p.group and p.group in self.groups)
        error = line if severity == "error" else None
        # A group member's success is told in the group's one line; its error is told on its own, first,
        # so the group line's "see above" points at it.
        if line and (error or not grouped):
            out.reports.append(Report(line, severity))
        if grouped:
            self._group_done(out, p, error, snapshot)

    def _group_done(self, out: Outcome, p: Pending, error: str | None, snapshot: Snapshot | None) -> None:
        group = self.groups.get(p.group or "")
        if group is None:
            return
        group.done[p.container.id] = error
        if len(group.done) < len(group.members):
            return
        del self.groups[group.project]
        ok = [cid for cid, err in group.done.items() if err is None]
        freed = max(0, group.used_before - snapshot.memory.used) if snapshot else 0
        failed = len(group.members) - len(ok)
        line = f"stopped compose project {group.project}: {len(ok)} of {len(group.members)} containers"
        line += f" — freed {fmt_bytes(freed, self.units)}"
        if failed:
            line += f" ({failed} did not stop, see above)"
        out.reports.append(Report(line, "warning" if failed else "information"))

    # -- signals -------------------------------------------------------------------------------------------

    def signal_refusal(self) -> Report | None:
        """Why no signal can go to the selected host process, or None."""
        if self.read_only:
            return Report(READ_ONLY, "warning")
        name = self.source_name
        if name != "live":
            return Report(f"{name}: these processes are not on this machine, no signal sent", "warning")
        return None

    @staticmethod
    def process_target(proc: ProcessInfo) -> Target:
        return Target(proc.name, proc.cpu_bytes, proc.gpu_bytes, detail=proc.cmdline or proc.name)

    def send(self, proc: ProcessInfo, sig: Signals) -> Outcome:
        """The user confirmed a signal: send it to that very process (not one that reused its PID)."""
        out = Outcome()
        target = f"pid {proc.pid} ({proc.name})"
        try:
            if proc.start_ticks is None:  # cannot tell it from a process that reuses its PID
                raise ControlError(f"process {proc.pid}: its start time is unknown, nothing sent")
            process_signals.signal_process(proc.pid, sig, expected_start_ticks=proc.start_ticks)
        except ControlError as exc:
            self._log(out, sig.name, target, f"failed: {exc}")
            out.reports.append(Report(str(exc), "error"))
            return out
        self._log(out, sig.name, target, "sent")
        out.reports.append(Report(f"sent {sig.name} to {proc.name} ({proc.pid})"))
        return out

    def _log(self, out: Outcome, action: str, target: str, result: str) -> None:
        name = self.source.name
        if name != "live":
            # The demo's stops share the user's action log: say they touched nothing real.
            target = f"[{name}] {target}"
        problem = self.log.append(action, target, result)
        if problem:
            out.reports.append(Report(problem, "warning"))
