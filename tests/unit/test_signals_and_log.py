"""Signals to real child processes (a real PID reuse included), and the append-only action log."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparktop.collect.control import ControlError
from sparktop.collect.process_signals import KILL, TERM, read_stat, signal_process
from sparktop.stopping.stop_log import ActionLog, default_log_path


@pytest.fixture
def child():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def test_sigterm_ends_a_real_child(child: subprocess.Popen) -> None:
    comm, ticks = read_stat(child.pid)
    assert comm == "sleep"
    signal_process(child.pid, TERM, expected_start_ticks=ticks)
    assert child.wait(timeout=5) == -TERM


def test_a_process_named_like_a_stat_line_is_read_and_signalled_as_confirmed() -> None:
    """Another user's program may name itself with ')', spaces and letters that look like stat fields: its
    start time is read after the stat line's LAST ')', so the confirmed process gets the signal, not a refusal
    (nor, by a misread, a check against the wrong field)."""
    name = "a) R 1 (b"  # 9 of comm's 15 characters
    proc = subprocess.Popen(
        [sys.executable, "-c", f"open('/proc/self/comm', 'w').write({name!r}); print(flush=True); input()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"\n"  # named by now
        start_ticks = int(Path(f"/proc/{proc.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19])
        assert read_stat(proc.pid) == (name, start_ticks)
        signal_process(proc.pid, TERM, expected_start_ticks=start_ticks)
        assert proc.wait(timeout=5) == -TERM
    finally:
        proc.kill()
        proc.wait()


def test_sigkill_ends_a_child_that_ignores_sigterm() -> None:
    proc = subprocess.Popen(["sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"])
    try:
        time.sleep(0.2)
        signal_process(proc.pid, TERM)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5)
        signal_process(proc.pid, KILL)
        assert proc.wait(timeout=5) == -KILL
    finally:
        proc.kill()
        proc.wait()


def test_gone_process_is_a_readable_error(child: subprocess.Popen) -> None:
    child.kill()
    child.wait()
    with pytest.raises(ControlError, match=f"process {child.pid} is already gone"):
        signal_process(child.pid, TERM)


def test_a_start_one_tick_off_is_refused(child: subprocess.Popen) -> None:
    _, ticks = read_stat(child.pid)
    for wrong in (ticks - 1, ticks + 1):
        refused = rf"process {child.pid} has exited \(its PID now belongs to sleep\): nothing sent"
        with pytest.raises(ControlError, match=refused):
            signal_process(child.pid, TERM, expected_start_ticks=wrong)
    assert child.poll() is None  # nothing was sent


def test_recorded_process_that_exited_is_refused(child: subprocess.Popen) -> None:
    _, ticks = read_stat(child.pid)
    child.kill()
    child.wait()
    with pytest.raises(ControlError, match=f"process {child.pid} is already gone"):
        signal_process(child.pid, TERM, expected_start_ticks=ticks)


# In a private PID namespace (so no other process on this shared machine takes the PID): start A, record its
# PID and start ticks as the dashboard does, let it exit, make the kernel hand A's PID to a new process B
# (ns_last_pid), then confirm the signal meant for A. B started 50 ms after A: a 1 s window takes it for A.
PID_REUSE = """
import signal, subprocess, time
from sparktop.collect.control import ControlError
from sparktop.collect.process_signals import read_stat, signal_process
a = subprocess.Popen(["sleep", "60"])
_, ticks = read_stat(a.pid)
a.kill(); a.wait()
time.sleep(0.05)  # a start tick is 10 ms: B must start in a later one
with open("/proc/sys/kernel/ns_last_pid", "w") as fh:
    fh.write(str(a.pid - 1))
b = subprocess.Popen(["sleep", "60"])
print("reused" if b.pid == a.pid else f"not reused: {a.pid} {b.pid}")
try:
    signal_process(a.pid, signal.SIGTERM, expected_start_ticks=ticks)
    print("sent")
except ControlError as exc:
    print(exc)
time.sleep(0.1)
print("B alive" if b.poll() is None else f"B ended {b.returncode}")
b.kill(); b.wait()
"""


def test_a_reused_pid_is_refused_and_the_new_process_survives() -> None:
    # Needs root and util-linux's unshare for a private PID namespace: the suite runs as root (CI too).
    assert os.geteuid() == 0 and shutil.which("unshare"), "run the tests as root with util-linux installed"
    out = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", PID_REUSE],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    lines = out.stdout.splitlines()
    assert out.returncode == 0, out.stderr
    assert lines[0] == "reused"
    assert lines[1].endswith("has exited (its PID now belongs to sleep): nothing sent")
    assert lines[2] == "B alive"


def test_permission_denied_is_reported_not_raised(child: subprocess.Popen) -> None:
    # Root may signal anyone, so drop to `nobody` in a fork, as a user outside root would be.
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(read_end)
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            signal_process(child.pid, TERM)
            msg = "sent"
        except ControlError as exc:
            msg = str(exc)
        except BaseException as exc:
            msg = f"raised {type(exc).__name__}"
        os.write(write_end, msg.encode())
        os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    with os.fdopen(read_end) as fh:
        message = fh.read()
    assert message.startswith(f"permission denied sending SIGTERM to process {child.pid}")
    assert child.poll() is None


def test_action_log_appends_tab_separated_lines(tmp_path: Path) -> None:
    path = tmp_path / "state" / "sparktop" / "actions.log"
    path.parent.mkdir(parents=True)
    path.write_text("earlier line\n")
    log = ActionLog(path, clock=lambda: 1_767_225_600.0)
    assert log.append("stop", "audio-whisper-1 (abc123)", "stopped — freed 3.1 GB") is None
    assert log.append("signal SIGTERM", "python3 (4242)", "permission\ndenied") is None
    lines = path.read_text().splitlines()
    assert lines[0] == "earlier line"
    fields = lines[1].split("\t")
    assert fields[1:] == ["stop", "audio-whisper-1 (abc123)", "stopped — freed 3.1 GB"]
    assert fields[0].startswith(time.strftime("%Y-%m-%d", time.localtime(1_767_225_600.0)))
    assert lines[2].split("\t")[3] == "permission denied"


def test_action_log_is_created_private(tmp_path: Path) -> None:
    # It holds every command line the admin stopped: no one else may read it, whatever the umask.
    old = os.umask(0o022)
    try:
        path = tmp_path / "state" / "actions.log"
        assert ActionLog(path).append("SIGTERM", "pid 1 (x)", "sent") is None
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_action_log_does_not_follow_a_symlink(tmp_path: Path) -> None:
    # Another user plants a link where the log goes, aiming root's writes at a file of their choice.
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "actions.log"
    link.symlink_to(victim)
    message = ActionLog(link).append("SIGTERM", "pid 1 (x)", "sent")
    assert message is not None and message.startswith(f"could not write the action log {link}")
    assert "symbolic link" in message
    assert victim.read_text() == "precious\n"


def test_action_log_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    assert os.geteuid() == 0, "needs root to make a file owned by nobody"
    path = tmp_path / "actions.log"
    path.write_text("theirs\n")
    os.chown(path, 65534, 65534)
    message = ActionLog(path).append("SIGTERM", "pid 1 (x)", "sent")
    assert message is not None and "belongs to another user" in message
    assert path.read_text() == "theirs\n"


def test_action_log_failure_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    message = ActionLog(blocker / "actions.log").append("stop", "x", "stopped")
    assert message is not None and message.startswith("could not write the action log")


def test_default_log_path_follows_xdg_state_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_log_path() == tmp_path / "sparktop" / "actions.log"
