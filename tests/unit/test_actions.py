"""The stop / kill / signal bookkeeping (sparktop.stopping.stop_book.StopBook) driven without Textual:
hand-made snapshots and a recording controller for exact figures, the demo's simulated engine for the whole
flow, and real child processes for signals."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sparktop.collect.control import ControlError, StopTimeout
from sparktop.collect.process_signals import read_stat
from sparktop.core.format import fmt_bytes
from sparktop.core.snapshot import CgroupMemory, ContainerInfo, ProcessInfo, Snapshot
from sparktop.session.session import Session
from sparktop.sources.demo import DemoSource
from sparktop.sources.snapshot_source import SnapshotSource
from sparktop.stopping.stop_book import GONE_WAIT_SNAPSHOTS, READ_ONLY, Report, StopBook
from sparktop.stopping.stop_log import ActionLog
from tests.fixtures.snapshots import snapshot

GIB = 1024**3
WHISPER = ContainerInfo(
    id="a" * 64,
    name="whisper",
    compose_project="audio",
    compose_service="whisper",
    memory=CgroupMemory(usage=3 * GIB, working_set=3 * GIB),
)
TTS = ContainerInfo(
    id="b" * 64,
    name="tts",
    compose_project="audio",
    compose_service="tts",
    memory=CgroupMemory(usage=2 * GIB, working_set=2 * GIB),
)


def snap(used_gib: float, *containers: ContainerInfo) -> Snapshot:
    return snapshot(source="demo", total=120 * GIB, used=int(used_gib * GIB), free=0, containers=containers)


class Source(SnapshotSource):
    """Only a name: the stop book never samples."""

    def __init__(self, name: str = "demo") -> None:
        self.name = name

    def sample(self) -> Snapshot:
        raise AssertionError("the stop book does not sample")


class Recording:
    """A controller that records its calls and fails as told."""

    def __init__(self, stop_error: Exception | None = None, kill_error: Exception | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.stop_error, self.kill_error = stop_error, kill_error

    def stop(self, container_id: str, timeout: float = 10.0) -> None:
        self.calls.append(("stop", container_id))
        if self.stop_error:
            raise self.stop_error

    def kill(self, container_id: str) -> None:
        self.calls.append(("kill", container_id))
        if self.kill_error:
            raise self.kill_error


def book(tmp_path: Path, controller=None, **kw) -> StopBook:
    return StopBook(
        Source(kw.pop("source", "demo")),
        log=ActionLog(tmp_path / "actions.log"),
        controller=controller or Recording(),
        **kw,
    )


def log_lines(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "actions.log"
    return [line.split("\t")[1:] for line in path.read_text().splitlines()] if path.exists() else []


def stop(b: StopBook, container: ContainerInfo, snapshot: Snapshot):
    """Confirm, run and finish a stop as the UI does (the engine call inline)."""
    b.begin_stop(container, snapshot)
    error, timed_out = b.run(container.id, "stop")
    return b.done(container.id, "stop", error, timed_out, snapshot)


def test_stop_is_reported_once_the_container_has_gone_with_the_freed_memory(tmp_path: Path) -> None:
    ctl = Recording()
    b = book(tmp_path, ctl)
    before = snap(40, WHISPER, TTS)
    b.begin_stop(WHISPER, before)
    assert b.row_status(WHISPER.id) == "stopping…"
    assert b.pending[WHISPER.id].held == 3 * GIB and b.pending[WHISPER.id].used_before == 40 * GIB

    assert b.run(WHISPER.id, "stop") == (None, False)
    assert ctl.calls == [("stop", WHISPER.id)]
    out = b.done(WHISPER.id, "stop", None, False, before)
    # The engine said yes, but the snapshot still shows it: nothing to report yet.
    assert out.changed and out.reports == [] and out.offer_kill is None
    assert b.row_status(WHISPER.id) == "stopped"
    assert log_lines(tmp_path) == [["stop", f"[demo] container whisper ({WHISPER.short_id})", "stopped"]]

    assert b.observe(snap(40, WHISPER, TTS)).reports == []
    out = b.observe(snap(37, TTS))
    assert out.changed
    assert out.reports == [Report("stopped whisper — freed 3.0 GiB")]
    assert b.pending == {} and b.row_status(WHISPER.id) is None
    assert b.observe(snap(30, TTS)).reports == []  # reported once


def test_freed_far_from_what_it_held_says_both(tmp_path: Path) -> None:
    b = book(tmp_path)
    stop(b, WHISPER, snap(40, WHISPER))
    # The pool moved with something else too: 1 GiB freed, the container held 3.
    assert b.observe(snap(39)).reports == [Report("stopped whisper — freed 1.0 GiB (it held 3.0 GiB)")]


def test_a_stop_the_snapshots_never_confirm_is_reported_after_the_wait(tmp_path: Path) -> None:
    b = book(tmp_path)
    stop(b, WHISPER, snap(40, WHISPER))
    for _ in range(GONE_WAIT_SNAPSHOTS - 1):
        assert b.observe(snap(40, WHISPER)).reports == []
    out = b.observe(snap(40, WHISPER))
    assert out.reports == [Report("stopped whisper — the engine says so, yet it still shows")]
    assert b.pending == {}


def test_compose_project_reports_once_for_all_its_containers(tmp_path: Path) -> None:
    ctl = Recording()
    b = book(tmp_path, ctl)
    before = snap(50, WHISPER, TTS)
    assert b.project_of(WHISPER) == "audio"
    members = b.snapshot_project("audio", before)
    assert [c.label for c in members] == ["tts", "whisper"]  # by service
    todo = b.begin_project("audio", members, before)
    assert todo == members and set(b.groups) == {"audio"}
    for c in todo:
        out = b.done(c.id, "stop", *b.run(c.id, "stop"), before)
        assert out.reports == []
    assert sorted(ctl.calls) == sorted(("stop", c.id) for c in members)

    assert b.observe(snap(47, TTS)).reports == []  # whisper gone: the group waits for tts
    assert b.pending.keys() == {TTS.id}
    out = b.observe(snap(45))
    assert out.reports == [Report("stopped compose project audio: 2 of 2 containers — freed 5.0 GiB")]
    assert b.pending == {} and b.groups == {}
    assert [action for action, _, _ in log_lines(tmp_path)] == ["stop", "stop"]


def test_compose_project_with_a_failed_member_says_the_error_then_the_group(tmp_path: Path) -> None:
    class TtsFails(Recording):
        def stop(self, container_id: str, timeout: float = 10.0) -> None:
            if container_id == TTS.id:
                raise ControlError("container tts: engine said no")

    b = book(tmp_path, TtsFails())
    before = snap(50, WHISPER, TTS)
    b.begin_project("audio", [WHISPER, TTS], before)
    assert b.done(WHISPER.id, "stop", *b.run(WHISPER.id, "stop"), before).reports == []
    assert b.observe(snap(47, TTS)).reports == []
    out = b.done(TTS.id, "stop", *b.run(TTS.id, "stop"), snap(47, TTS))
    # "see above" points at a line that was shown before it.
    assert out.reports == [
        Report("container tts: engine said no", "error"),
        Report(
            "stopped compose project audio: 1 of 2 containers — freed 3.0 GiB (1 did not stop, see above)",
            "warning",
        ),
    ]
    assert b.pending == {} and b.groups == {}


def test_a_failed_stop_reports_the_error_line_and_logs_it(tmp_path: Path) -> None:
    socket = "Docker socket /nowhere/docker.sock not found — is the Docker engine running?"
    b = book(tmp_path, Recording(stop_error=ControlError(socket), kill_error=RuntimeError("boom")))
    before = snap(40, WHISPER)
    out = stop(b, WHISPER, before)
    assert out.reports == [Report(socket, "error")] and out.changed
    assert b.pending == {}
    b.begin_kill(WHISPER, before)
    assert b.row_status(WHISPER.id) == "killing…"
    error, timed_out = b.run(WHISPER.id, "kill")
    assert (error, timed_out) == ("kill failed: RuntimeError: boom", False)
    assert b.done(WHISPER.id, "kill", error, timed_out, before).reports == [Report(error, "error")]
    assert [result for _, _, result in log_lines(tmp_path)] == [
        f"failed: {socket}",
        "failed: kill failed: RuntimeError: boom",
    ]


def test_timeout_asks_for_a_kill_which_is_reported_as_killed(tmp_path: Path) -> None:
    message = "container whisper did not stop within 10 s"
    ctl = Recording(stop_error=StopTimeout(message))
    b = book(tmp_path, ctl)
    before = snap(40, WHISPER)
    out = stop(b, WHISPER, before)
    assert out.reports == [Report(f"{message} — K kills it", "warning")]
    assert out.offer_kill == WHISPER and out.kill_why == message
    assert b.row_status(WHISPER.id) == "timed out (K)"
    assert b.kill_why(WHISPER) == "whisper did not stop within 10 s."
    assert b.busy(WHISPER) is None  # a timed-out stop may be asked again
    # Still running: snapshots report nothing while it is timed out.
    assert b.observe(snap(40, WHISPER)).reports == []

    b.begin_kill(WHISPER, snap(40, WHISPER))
    assert b.pending[WHISPER.id].used_before == 40 * GIB  # the stop's figures are kept
    assert b.busy(WHISPER) == Report("whisper is already killing…")
    out = b.done(WHISPER.id, "kill", *b.run(WHISPER.id, "kill"), snap(37))
    assert out.reports == [Report("killed whisper — freed 3.0 GiB")]
    assert ctl.calls == [("stop", WHISPER.id), ("kill", WHISPER.id)]
    assert [(a, r.split(":")[0]) for a, _, r in log_lines(tmp_path)] == [
        ("stop", "timeout"),
        ("kill", "killed"),
    ]


def test_keys_resolve_to_a_container_or_say_why_not(tmp_path: Path) -> None:
    b = book(tmp_path)
    now = snap(40, WHISPER)
    proc = ProcessInfo(pid=42, name="python", container_id=WHISPER.id)
    host = ProcessInfo(pid=43, name="vim")
    assert b.container_of(WHISPER, "s", now) == WHISPER
    assert b.container_of(proc, "s", now) == WHISPER
    assert b.container_of(proc, "s", snap(40)) == Report("the container of process 42 is gone", "warning")
    assert b.container_of(host, "s", now) == Report(
        "process 43 (vim) is not in a container: k sends it SIGTERM, K SIGKILL", "warning"
    )
    assert b.container_of(None, "S", now).line.startswith("S acts on the selected row")
    assert b.terminate_refusal(proc, now) == Report(
        "process 42 runs in container whisper: s stops the container", "warning"
    )
    lone = WHISPER.model_copy(update={"compose_project": None})
    assert b.project_of(lone) == Report(
        "whisper is not part of a compose project: s stops it alone", "warning"
    )

    read_only = book(tmp_path, read_only=True)
    assert read_only.container_of(WHISPER, "s", now) == Report(READ_ONLY, "warning")
    assert read_only.signal_refusal() == Report(READ_ONLY, "warning")
    assert not read_only.available
    none = StopBook(Source("replay"), controller=None)
    assert none.container_of(WHISPER, "s", now) == Report("replay: nothing to stop", "warning")


def test_the_demo_engine_end_to_end(tmp_path: Path) -> None:
    """The demo's simulated engine: the container exits two simulated seconds after the stop."""
    source = DemoSource(scenario="default", seed=0)
    session = Session()
    b = StopBook(source, log=ActionLog(tmp_path / "actions.log"))
    before = session.ingest(source.sample())
    whisper = next(c for c in before.containers if c.label == "audio-lab-whisper-1")
    out = stop(b, whisper, before)
    assert out.reports == []
    reports: list[Report] = []
    for _ in range(5):
        now = session.ingest(source.sample())
        reports += b.observe(now).reports
        if whisper.id not in {c.id for c in now.containers}:
            break
    freed = before.memory.used - now.memory.used
    assert freed > 0
    assert [r.line.split(" (it held")[0] for r in reports] == [
        f"stopped audio-lab-whisper-1 — freed {fmt_bytes(freed)}"
    ]
    assert b.pending == {}


# --- signals to real processes -----------------------------------------------------------------------------


@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_signal_goes_to_the_process_that_was_confirmed(tmp_path: Path, child) -> None:
    b = book(tmp_path, source="live")
    assert b.signal_refusal() is None
    _, ticks = read_stat(child.pid)
    proc = ProcessInfo(pid=child.pid, name="python", start_ticks=ticks)
    out = b.send(proc, signal.SIGTERM)
    assert out.reports == [Report(f"sent SIGTERM to python ({child.pid})")]
    assert child.wait(timeout=10) == -signal.SIGTERM
    assert log_lines(tmp_path) == [["SIGTERM", f"pid {child.pid} (python)", "sent"]]


def test_signal_to_a_reused_pid_is_not_sent(tmp_path: Path, child) -> None:
    b = book(tmp_path, source="live")
    _, ticks = read_stat(child.pid)
    # Another start time: the process the user confirmed is gone and this PID belongs to someone else.
    out = b.send(ProcessInfo(pid=child.pid, name="python", start_ticks=ticks - 1), signal.SIGKILL)
    assert len(out.reports) == 1 and out.reports[0].severity == "error"
    assert "has exited" in out.reports[0].line and "nothing sent" in out.reports[0].line
    assert child.poll() is None  # still running
    out = b.send(ProcessInfo(pid=child.pid, name="python"), signal.SIGKILL)
    assert out.reports == [Report(f"process {child.pid}: its start time is unknown, nothing sent", "error")]
    assert child.poll() is None
    assert [result.split(":")[0] for _, _, result in log_lines(tmp_path)] == ["failed", "failed"]


def test_signals_only_on_the_live_machine(tmp_path: Path) -> None:
    assert book(tmp_path).signal_refusal() == Report(
        "demo: these processes are not on this machine, no signal sent", "warning"
    )
