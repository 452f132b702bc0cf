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

from tests.fixtures.exporters import free_port
from tests.fixtures.load import wall_limit

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
