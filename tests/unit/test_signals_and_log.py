"""Signals to real child processes, and the append-only action log."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from sparktop.action_log import ActionLog, default_log_path
from sparktop.collect.control import ControlError
from sparktop.collect.signals import KILL, TERM, signal_process


@pytest.fixture
def child():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def test_sigterm_ends_a_real_child(child: subprocess.Popen) -> None:
    signal_process(child.pid, TERM, expected_start=psutil.Process(child.pid).create_time())
    assert child.wait(timeout=5) == -TERM


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


def test_reused_pid_is_refused(child: subprocess.Popen) -> None:
    started = psutil.Process(child.pid).create_time()
    with pytest.raises(ControlError, match="has exited"):
        signal_process(child.pid, TERM, expected_start=started - 3600)
    assert child.poll() is None  # nothing was sent


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


def test_action_log_failure_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    message = ActionLog(blocker / "actions.log").append("stop", "x", "stopped")
    assert message is not None and message.startswith("could not write the action log")


def test_default_log_path_follows_xdg_state_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_log_path() == tmp_path / "sparktop" / "actions.log"
