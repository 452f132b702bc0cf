"""`sparktop serve` stops on SIGTERM whichever of its threads the kernel hands the signal to.

A signal sent to a process goes to one of its threads that does not block it: usually the main thread, but
not always (e.g. while the main thread already has a signal pending). Python runs the handler in the main
thread at its next bytecode; a main thread asleep in `signal.pause()` only wakes for a signal delivered to
itself, so serve slept on, and `systemctl stop` waited for its SIGKILL (a CI run: no exit 10 s after
SIGTERM). Here the signal goes to a thread other than the main one, with tgkill(2)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.fixtures.exporters import free_port
from tests.fixtures.load import wall_limit
from tests.fixtures.signals import handlers_kept

SYS_TGKILL = 234 if os.uname().machine == "x86_64" else 131  # aarch64: 131


def tgkill(pid: int, tid: int, signum: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_TGKILL, pid, tid, signum) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def test_sigterm_to_a_thread_other_than_the_main_one_stops_serve(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    server = subprocess.Popen(
        [sys.executable, "-m", "sparktop", "serve", "--demo", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + wall_limit(30, defect=120)
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    break
            except OSError:
                time.sleep(0.1)
        others = [int(t) for t in os.listdir(f"/proc/{server.pid}/task") if int(t) != server.pid]
        assert others, "serve runs threads besides its main one"
        tgkill(server.pid, others[0], signal.SIGTERM)
        try:
            code = server.wait(timeout=wall_limit(10, defect=120))
        except subprocess.TimeoutExpired:
            code = None
        assert code == 0, "serve did not stop on a SIGTERM that reached another of its threads"
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate(timeout=10)


def test_a_stop_signal_while_the_server_starts_ends_serve_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server answers from its own thread as soon as it starts, so a service manager's SIGTERM sent on the
    first answer may reach the main thread while `start()` still runs (beside a second suite, this file's
    tgkill test saw serve end by SIGINT: the KeyboardInterrupt met no `try`). Here the interrupt comes from
    inside start(), once the server runs: serve still stops it and exits 0."""
    from sparktop.commands.main import main
    from sparktop.exporter.server import ExporterServer

    started: list[ExporterServer] = []
    real_start = ExporterServer.start

    def start_then_interrupted(self: ExporterServer) -> None:
        real_start(self)
        started.append(self)
        raise KeyboardInterrupt  # as the stop signal's handler raises it in the main thread

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setattr(ExporterServer, "start", start_then_interrupted)
    with handlers_kept():
        try:
            code = main(["serve", "--demo", "--listen", f"127.0.0.1:{free_port()}"])
        except KeyboardInterrupt:
            pytest.fail("the stop signal met no try: serve would end by SIGINT, its server not stopped")
    assert code == 0
    (server,) = started
    with pytest.raises(OSError):  # stopped and closed: nothing listens there any more
        urllib.request.urlopen(f"{server.url}/healthz", timeout=2)
