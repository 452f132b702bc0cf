"""The stop / kill / signal flow (StopActions and the confirmation dialogs), driven with Pilot.

Containers come from the deterministic demo source and its simulated controller (the training container
ignores SIGTERM, so the timeout → kill path is reachable without a hung engine); signals go to real child
processes of this test. A small host app (stop_host.py) stands in for the dashboard: it holds `latest`,
feeds every snapshot to `observe`, and maps s / S / k / K to StopActions with the row a test selects.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from textual.pilot import Pilot

from sparktop.collect.control import REPLAY_REASON, ContainerController, ControlError, no_controller_reason
from sparktop.collect.docker import DockerController
from sparktop.core.format import fmt_bytes
from sparktop.core.snapshot import ProcessInfo, Snapshot
from sparktop.sources.demo import DemoController, DemoSource
from sparktop.sources.live import LiveSource
from sparktop.sources.recording import Recorder
from sparktop.sources.replay import ReplaySource
from sparktop.ui.screens.confirm import ConfirmScreen
from sparktop.ui.stop_keys import READ_ONLY
from tests.fixtures.recordings import demo_snapshots, write_recording
from tests.fixtures.sources import NoDocker, NoGpu
from tests.ui.stop_host import Host, dialog_text, log_lines, settle

WHISPER = "audio-lab-whisper-1"
TRAIN = "ssd-tetris-train-1"


# The async tests run in the module's event loop, the one its shared host runs in.
in_the_module_loop = pytest.mark.asyncio(loop_scope="module")


def demo_source() -> DemoSource:
    return DemoSource(scenario="default", seed=0)


def live_source() -> LiveSource:
    return LiveSource(nvml=NoGpu(), docker=NoDocker())


def demo_host(tmp_path: Path, **kw) -> Host:
    host = Host(demo_source(), tmp_path / "actions.log", **kw)
    return host


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def host_of_the_module(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Host, Pilot]]:
    app = demo_host(tmp_path_factory.mktemp("host"))
    async with app.run_test(size=(120, 36)) as pilot:
        yield app, pilot


@pytest_asyncio.fixture(loop_scope="module")
async def host(host_of_the_module: tuple[Host, Pilot], tmp_path: Path) -> tuple[Host, Pilot]:
    """The module's running host, started over as a new one starts (a Textual app each was most of a test
    without a dialog): no dialog or toast, on a fresh demo source with this test's own log. A test that
    needs another source or other settings starts it over again itself (`app.start_over`)."""
    app, pilot = host_of_the_module
    await settle(app, pilot)  # the workers of the test before
    while len(app.screen_stack) > 1:
        app.pop_screen()
    app.clear_notifications()
    app.start_over(demo_source(), tmp_path / "actions.log")
    await pilot.pause()
    return app, pilot


# --- the factory ----------------------------------------------------------------------------------------


def test_controller_for_each_source(tmp_path: Path) -> None:
    demo = DemoSource()
    assert isinstance(demo.controller(), DemoController)
    live = LiveSource(nvml=NoGpu())
    ctl = live.controller()
    assert isinstance(ctl, DockerController)
    assert ctl._base_url is None  # the default endpoint, as the live discovery uses
    from sparktop.collect.docker import DockerDiscovery

    pointed = LiveSource(nvml=NoGpu(), docker=DockerDiscovery(base_url="unix:///tmp/x.sock"))
    ctl2 = pointed.controller()
    assert isinstance(ctl2, DockerController) and ctl2._base_url == "unix:///tmp/x.sock"

    path = tmp_path / "rec.jsonl"
    with Recorder(path) as rec:
        rec.write(demo.sample())
    replay = ReplaySource(path)
    assert replay.controller() is None
    assert no_controller_reason(replay) == REPLAY_REASON == "replay: nothing to stop"
    replay.close()
    live.close()
    pointed.close()


# --- the stop dialog ------------------------------------------------------------------------------------


@in_the_module_loop
async def test_stop_dialog_names_the_container_and_cancel_has_focus(host, tmp_path: Path) -> None:
    app, pilot = host
    snap = app.sample()
    whisper = app.container(WHISPER)
    app.row = whisper
    await pilot.press("s")
    assert isinstance(app.screen, ConfirmScreen)
    assert app.screen.focused is not None and app.screen.focused.id == "cancel"
    text = dialog_text(app)
    consumer = next(c for c in snap.accounting.consumers if c.key == f"container:{whisper.id}")
    assert f"Stop container {WHISPER}?" in text
    assert "audio-lab/whisper:large-v3-cuda" in text
    assert "audio-lab / whisper" in text
    assert f"memory: {fmt_bytes(consumer.total)}" in text
    assert f"CPU side {fmt_bytes(consumer.cpu_bytes)}" in text
    assert f"GPU side {fmt_bytes(consumer.gpu_bytes)}" in text
    assert consumer.cpu_bytes > 0 and consumer.gpu_bytes > 0
    assert "after 10 s" in text  # the default stop timeout

    # Enter presses the focused button: Cancel.
    await pilot.press("enter")
    await settle(app, pilot)
    assert not isinstance(app.screen, ConfirmScreen)
    assert app.stops.pending == {}
    for _ in range(5):
        app.sample()
    assert WHISPER in {c.label for c in app.latest.containers}
    assert log_lines(tmp_path / "actions.log") == []  # nothing confirmed, nothing logged


@pytest.mark.parametrize("key", ["n", "escape"])
@in_the_module_loop
async def test_n_and_escape_cancel(host, tmp_path: Path, key: str) -> None:
    app, pilot = host
    app.sample()
    app.row = app.container(WHISPER)
    await pilot.press("s")
    assert isinstance(app.screen, ConfirmScreen)
    await pilot.press(key)
    await settle(app, pilot)
    assert not isinstance(app.screen, ConfirmScreen)
    assert app.stops.pending == {}


@in_the_module_loop
async def test_enter_on_the_stop_button_confirms(host, tmp_path: Path) -> None:
    app, pilot = host
    app.sample()
    app.row = app.container(WHISPER)
    await pilot.press("s")
    await pilot.press("left")  # focus moves to Stop
    assert app.screen.focused is not None and app.screen.focused.id == "confirm"
    await pilot.press("enter")
    await settle(app, pilot)
    assert app.container(WHISPER).id in app.stops.pending


@in_the_module_loop
async def test_confirmed_stop_is_reported_with_the_freed_memory(host, tmp_path: Path) -> None:
    app, pilot = host
    app.start_over(demo_source(), tmp_path / "actions.log", timeout=7)
    before = app.sample()
    whisper = app.container(WHISPER)
    app.row = whisper
    await pilot.press("s")
    assert "after 7 s" in dialog_text(app)
    await pilot.press("y")
    # the row shows the operation at once
    assert app.stops.row_status(whisper.id) in ("stopping…", "stopped")
    await settle(app, pilot)
    assert app.stops.row_status(whisper.id) == "stopped"  # the engine said yes; memory not back yet
    assert app.changes >= 2
    reports_before = list(app.stops.reports)
    # The demo container exits 2 simulated seconds after SIGTERM: report when a snapshot lacks it.
    gone: Snapshot | None = None
    for _ in range(5):
        snap = app.sample()
        if whisper.id not in {c.id for c in snap.containers}:
            gone = snap
            break
        assert app.stops.row_status(whisper.id) == "stopped"
    assert gone is not None
    await pilot.pause()
    new = app.stops.reports[len(reports_before) :]
    freed = before.memory.used - gone.memory.used
    held = next(c for c in before.accounting.consumers if c.key == f"container:{whisper.id}").total
    assert freed > 0.7 * held  # the pool got most of it back (its page cache stays, reclaimable)
    assert new[0].startswith(f"stopped {WHISPER} — freed {fmt_bytes(freed)}")
    # Issue 32 item 3: the action goes to the messages (M) with the alerts, not only to a fading toast.
    assert ("stop", new[0]) in app.remembered
    assert app.stops.pending == {}
    assert app.stops.row_status(whisper.id) is None
    lines = log_lines(tmp_path / "actions.log")
    assert len(lines) == 1
    stamp, action, target, result = lines[0]
    assert (
        action == "stop"
        and target == f"[demo] container {WHISPER} ({whisper.short_id})"
        and result == "stopped"
    )
    assert time.strftime("%Y-%m-%d") in stamp


@in_the_module_loop
async def test_mark_rows_shows_stopping_in_the_status_column(host, tmp_path: Path) -> None:
    from sparktop.session.rows import container_rows

    app, pilot = host
    snap = app.sample()
    whisper = app.container(WHISPER)
    app.row = whisper
    await pilot.press("s", "y")
    rows = container_rows(snap, lambda key: None)
    app.stops.mark_rows(rows)
    by_id = {r.item.id: r for r in rows}
    assert by_id[whisper.id].values["status"] in ("stopping…", "stopped")
    state = by_id[whisper.id].values["status"]
    assert by_id[whisper.id].values["name"] == f"{state} {WHISPER}"
    others = [r for cid, r in by_id.items() if cid != whisper.id]
    assert all(r.values["status"] == "running" for r in others)
    assert all(not r.values["name"].startswith(("stopping", "stopped")) for r in others)
    await settle(app, pilot)


@in_the_module_loop
async def test_stop_from_a_process_row_stops_its_container(host, tmp_path: Path) -> None:
    app, pilot = host
    snap = app.sample()
    whisper = app.container(WHISPER)
    proc = next(p for p in snap.processes if p.container_id == whisper.id)
    app.row = proc
    await pilot.press("s")
    assert f"Stop container {WHISPER}?" in dialog_text(app)
    await pilot.press("n")
    # k on it explains that it is a container's process
    await pilot.press("k")
    assert not isinstance(app.screen, ConfirmScreen)
    assert app.stops.reports[-1] == f"process {proc.pid} runs in container {WHISPER}: s stops the container"


@in_the_module_loop
async def test_timeout_offers_kill_behind_a_second_confirmation(host, tmp_path: Path) -> None:
    app, pilot = host
    before = app.sample()
    train = app.container(TRAIN)
    app.row = train
    await pilot.press("s", "y")
    await settle(app, pilot)
    # StopTimeout: said so, the row says so, and the kill dialog is open (Cancel focused again).
    assert any("did not stop within 10 s" in r and r.endswith("K kills it") for r in app.stops.reports)
    assert app.stops.row_status(train.id) == "timed out (K)"
    assert isinstance(app.screen, ConfirmScreen)
    assert app.screen.focused.id == "cancel"
    text = dialog_text(app)
    assert f"Kill container {TRAIN}?" in text and "did not stop within 10 s" in text
    # cancel: it keeps running, and K on its row offers the kill again
    await pilot.press("escape")
    app.sample()
    assert TRAIN in {c.label for c in app.latest.containers}
    await pilot.press("K")
    assert isinstance(app.screen, ConfirmScreen) and "Kill container" in dialog_text(app)
    await pilot.press("y")  # only y confirms (K again must not)
    await settle(app, pilot)
    gone = app.sample()
    await pilot.pause()
    assert train.id not in {c.id for c in gone.containers}
    freed = before.memory.used - gone.memory.used
    assert app.stops.reports[-1].startswith(f"killed {TRAIN} — freed {fmt_bytes(freed)}")
    results = [(a, r.split(":")[0]) for _, a, _, r in log_lines(tmp_path / "actions.log")]
    assert results == [("stop", "timeout"), ("kill", "killed")]


@in_the_module_loop
async def test_compose_project_stop_lists_and_stops_all(host, tmp_path: Path) -> None:
    app, pilot = host
    before = app.sample()
    members = sorted(c.label for c in before.containers if c.compose_project == "audio-lab")
    assert members == ["audio-lab-f5-tts-1", WHISPER]
    app.row = app.container(WHISPER)
    await pilot.press("S")
    text = dialog_text(app)
    assert "Stop compose project audio-lab?" in text and "2 running container(s)" in text
    assert all(m in text for m in members) and "ollama" not in text
    assert app.screen.focused.id == "cancel"
    await pilot.press("y")
    await settle(app, pilot)
    assert {app.stops.row_status(c.id) for c in before.containers if c.label in members} == {"stopped"}
    for _ in range(4):
        snap = app.sample()
    await pilot.pause()
    assert not {c.label for c in snap.containers} & set(members)
    assert "ollama" in {c.label for c in snap.containers}
    freed = before.memory.used - snap.memory.used
    assert app.stops.reports[-1] == (
        f"stopped compose project audio-lab: 2 of 2 containers — freed {fmt_bytes(freed)}"
    )
    assert len(log_lines(tmp_path / "actions.log")) == 2


@in_the_module_loop
async def test_S_on_a_container_without_a_project(host, tmp_path: Path) -> None:
    app, pilot = host
    app.sample()
    # the demo's containers all have projects: strip it from one
    app.row = app.container("ollama").model_copy(update={"compose_project": None})
    await pilot.press("S")
    assert not isinstance(app.screen, ConfirmScreen)
    assert app.stops.reports[-1] == "ollama is not part of a compose project: s stops it alone"


@in_the_module_loop
async def test_read_only_disables_every_key(host, tmp_path: Path) -> None:
    app, pilot = host
    app.start_over(demo_source(), tmp_path / "actions.log", read_only=True)
    snap = app.sample()
    host_proc = next(p for p in snap.processes if not p.container_id)
    for row, key in (
        (app.container(WHISPER), "s"),
        (app.container(WHISPER), "S"),
        (app.container(TRAIN), "K"),
        (host_proc, "k"),
        (host_proc, "K"),
    ):
        app.row = row
        n = len(app.stops.reports)
        await pilot.press(key)
        assert not isinstance(app.screen, ConfirmScreen), key
        assert app.stops.reports[n:] == [READ_ONLY], key
    assert "--read-only" in READ_ONLY
    for _ in range(4):
        app.sample()
    assert {WHISPER, TRAIN} <= {c.label for c in app.latest.containers}
    assert log_lines(tmp_path / "actions.log") == []


@in_the_module_loop
async def test_replay_has_nothing_to_stop(host, tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    write_recording(path, demo_snapshots(3, every=1.0))
    app, pilot = host
    app.start_over(ReplaySource(path), tmp_path / "actions.log")
    snap = app.sample()
    app.row = snap.containers[0]
    await pilot.press("s")
    assert not isinstance(app.screen, ConfirmScreen)
    assert app.stops.reports[-1] == "replay: nothing to stop"
    app.row = next(p for p in snap.processes if not p.container_id)
    await pilot.press("k")
    assert app.stops.reports[-1] == "replay: these processes are not on this machine, no signal sent"


@in_the_module_loop
async def test_no_row_selected_explains(host, tmp_path: Path) -> None:
    app, pilot = host
    app.sample()
    app.row = None
    await pilot.press("s")
    assert app.stops.reports[-1].startswith("s acts on the selected row")
    await pilot.press("k")
    assert app.stops.reports[-1].startswith("k signals a host process")


class Failing:
    """A controller whose every call fails the way a vanished engine does."""

    def stop(self, container_id: str, timeout: float = 10.0) -> None:
        raise ControlError("Docker socket /nowhere/docker.sock not found — is the Docker engine running?")

    def kill(self, container_id: str) -> None:
        raise RuntimeError("boom")


@in_the_module_loop
async def test_controller_errors_are_one_line_and_the_app_keeps_running(host, tmp_path: Path) -> None:
    ctl: ContainerController = Failing()
    app, pilot = host
    app.start_over(demo_source(), tmp_path / "actions.log", controller=ctl)
    app.sample()
    whisper = app.container(WHISPER)
    app.row = whisper
    await pilot.press("s", "y")
    await settle(app, pilot)
    assert app.stops.reports[-1] == (
        "Docker socket /nowhere/docker.sock not found — is the Docker engine running?"
    )
    assert app.stops.pending == {}
    await pilot.press("K", "y")
    await settle(app, pilot)
    assert app.stops.reports[-1] == "kill failed: RuntimeError: boom"
    assert app.is_running
    results = [r for _, _, _, r in log_lines(tmp_path / "actions.log")]
    assert (
        results[0].startswith("failed: Docker socket")
        and results[1] == "failed: kill failed: RuntimeError: boom"
    )


@in_the_module_loop
async def test_unwritable_log_is_reported_but_the_stop_happens(host, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    app, pilot = host
    app.start_over(DemoSource(), blocker / "sub" / "actions.log")  # its parent is a file
    app.sample()
    app.row = app.container(WHISPER)
    await pilot.press("s", "y")
    await settle(app, pilot)
    assert any(r.startswith("could not write the action log") for r in app.stops.reports)
    for _ in range(4):
        app.sample()
    assert WHISPER not in {c.label for c in app.latest.containers}


# --- signals to real processes ------------------------------------------------------------------------


def live_host(tmp_path: Path, **kw) -> Host:
    return Host(LiveSource(nvml=NoGpu(), docker=NoDocker()), tmp_path / "actions.log", **kw)


def find_process(snapshot: Snapshot, pid: int) -> ProcessInfo:
    return next(p for p in snapshot.processes if p.pid == pid)


IGNORES_TERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
    "time.sleep(60)"
)


@in_the_module_loop
async def test_k_sends_sigterm_to_a_real_child(host, tmp_path: Path) -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        app, pilot = host
        app.start_over(live_source(), tmp_path / "actions.log")
        proc = find_process(app.sample(), child.pid)
        assert proc.container_id is None and proc.name == "sleep"
        app.row = proc
        await pilot.press("k")
        assert isinstance(app.screen, ConfirmScreen) and app.screen.focused.id == "cancel"
        text = dialog_text(app)
        assert f"Send SIGTERM to sleep ({child.pid})?" in text and "sleep 60" in text
        await pilot.press("enter")  # Cancel
        await pilot.pause()
        assert child.poll() is None
        await pilot.press("k", "y")
        await pilot.pause()
        assert child.wait(timeout=10) == -signal.SIGTERM
        assert app.stops.reports[-1] == f"sent SIGTERM to sleep ({child.pid})"
        ((_, action, target, result),) = log_lines(tmp_path / "actions.log")
        assert (action, target, result) == ("SIGTERM", f"pid {child.pid} (sleep)", "sent")
    finally:
        child.kill()
        child.wait()


@in_the_module_loop
async def test_K_sends_sigkill_to_a_child_that_ignores_sigterm(host, tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", IGNORES_TERM], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline().strip() == b"ready"
        app, pilot = host
        app.start_over(live_source(), tmp_path / "actions.log")
        app.row = find_process(app.sample(), child.pid)
        await pilot.press("k", "y")
        await pilot.pause()
        time.sleep(0.3)
        assert child.poll() is None  # it ignored SIGTERM
        await pilot.press("K")
        assert "SIGKILL" in dialog_text(app)
        await pilot.press("y")
        await pilot.pause()
        assert child.wait(timeout=10) == -signal.SIGKILL
        actions = [a for _, a, _, _ in log_lines(tmp_path / "actions.log")]
        assert actions == ["SIGTERM", "SIGKILL"]
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("key", ["k", "K"])
@in_the_module_loop
async def test_the_action_key_twice_does_not_confirm_a_signal(host, tmp_path: Path, key: str) -> None:
    """`k k` sent SIGTERM and `K K` SIGKILL: a repeated (or held) key got past the Cancel default."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        app, pilot = host
        app.start_over(live_source(), tmp_path / "actions.log")
        app.row = find_process(app.sample(), child.pid)
        await pilot.press(key, key, key)
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and app.screen.focused.id == "cancel"
        assert child.poll() is None
        await pilot.press("escape")
        await pilot.pause()
        assert child.poll() is None and log_lines(tmp_path / "actions.log") == []
    finally:
        child.kill()
        child.wait()


@in_the_module_loop
async def test_K_twice_does_not_confirm_a_container_kill(host, tmp_path: Path) -> None:
    app, pilot = host
    app.sample()
    app.row = app.container(TRAIN)
    await pilot.press("s", "s")  # s again must not confirm the stop either
    assert isinstance(app.screen, ConfirmScreen) and "Stop container" in dialog_text(app)
    await pilot.press("escape")
    app.stops.kill(app.row)
    await pilot.pause()
    await pilot.press("K", "K")
    await settle(app, pilot)
    assert isinstance(app.screen, ConfirmScreen) and "Kill container" in dialog_text(app)
    assert TRAIN in {c.label for c in app.sample().containers}
    assert log_lines(tmp_path / "actions.log") == []


@in_the_module_loop
async def test_signal_to_an_exited_process_is_reported_not_raised(host, tmp_path: Path) -> None:
    child = subprocess.Popen(["sleep", "60"])
    app, pilot = host
    app.start_over(live_source(), tmp_path / "actions.log")
    app.row = find_process(app.sample(), child.pid)
    await pilot.press("k")
    child.kill()
    child.wait()
    await pilot.press("y")
    await pilot.pause()
    assert app.stops.reports[-1] == f"process {child.pid} is already gone"
    assert app.is_running
    ((_, _, _, result),) = log_lines(tmp_path / "actions.log")
    assert result == f"failed: process {child.pid} is already gone"


def _signal_as_nobody(pid: int, log_dir: str, answer: str = "y") -> list[str]:
    """In a child running as nobody: confirm SIGTERM to `pid` (root's process) through the dialog. With `n`,
    the same flow cancelled, in this process: it loads every module the child will need (the child cannot
    read root's Python installation, /root being 0700)."""
    import asyncio

    async def go() -> list[str]:
        app = live_host(Path(log_dir))
        async with app.run_test(size=(100, 30)) as pilot:
            snap = app.sample()
            app.row = find_process(snap, pid)
            await pilot.press("k", answer)
            await pilot.pause()
            return [*app.stops.reports, str(app.is_running)]

    return asyncio.run(go())


def test_permission_denied_is_reported_not_raised(tmp_path: Path) -> None:
    from tests.integration.engine import run_as_user

    assert os.geteuid() == 0, "this test drops to nobody to meet a real permission error"
    child = subprocess.Popen(["sleep", "60"])
    log_dir = tmp_path / "nobody"
    log_dir.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chown(log_dir, 65534, 65534)
    try:
        _signal_as_nobody(child.pid, str(tmp_path), answer="n")  # rehearsed here, nothing sent
        reports = run_as_user(_signal_as_nobody, child.pid, str(log_dir))
        assert reports[-1] == "True"
        assert reports[-2].startswith(f"permission denied sending SIGTERM to process {child.pid}")
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


@in_the_module_loop
async def test_at_60x18_the_dialog_keeps_each_memory_side_whole_and_no_toast_covers_it(
    tmp_path: Path,
) -> None:
    """At 60x18 the dialog takes the whole screen (one host for both checks; they were two tests):
    - it wrapped "(CPU side 2.9 GiB, GPU side 37.4" away from its "GiB)" (issue 32, Rough): the two sides
      have a line of their own, whole;
    - toasts (a theme change, a stop elsewhere) covered its text and its buttons: on a confirmation they
      wait; they show again once it is closed. (The dialog's own rule, ConfirmScreen's: the small host app
      shows it as the dashboard does.)"""
    from tests.ui.demo_app import screen_text

    app = demo_host(tmp_path)
    async with app.run_test(size=(60, 18), notifications=True) as pilot:
        snap = app.sample()
        whisper = app.container(WHISPER)
        app.row = whisper
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        lines = screen_text(app).splitlines()
        consumer = next(c for c in snap.accounting.consumers if c.key == f"container:{whisper.id}")
        sides = f"CPU side {fmt_bytes(consumer.cpu_bytes)}, GPU side {fmt_bytes(consumer.gpu_bytes)}"
        assert any(sides in line for line in lines), ("each side of the memory whole", "\n".join(lines))

        for i in range(3):
            app.notify(f"something happened elsewhere, number {i}", timeout=30)
        await pilot.pause(0.2)
        dialog = app.screen.query_one("#dialog").region
        toasts = [t.region for t in app.screen.query("Toast") if t.display and t.region.area]
        assert not any(dialog.overlaps(t) for t in toasts), ("a toast covers the dialog", dialog, toasts)
        cancel = app.screen.query_one("#cancel")
        assert app.screen.get_widget_at(*cancel.region.center)[0] is cancel, "Cancel on top, clickable"
        await pilot.press("n")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ConfirmScreen)
        assert [t for t in app.screen.query("Toast") if t.display and t.region.area], "the toasts show now"
