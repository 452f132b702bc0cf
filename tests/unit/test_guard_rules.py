"""No rule can leave the guard silently unarmed (issue 31 item 2): a process rule matches the forms users
write (program base name and arguments, as `pgrep -f` users expect: a venv's python, a pyenv shim, a
systemd ExecStart with absolute paths); `guard --check` says what each rule matches now and why not; the
start line lists at `armed:` the rules that cannot match; and when the trigger holds and no rule matches,
every sink hears it."""

from __future__ import annotations

import io
import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from sparktop.core.snapshot import GIB, GpuReport, HostMemory, ProcessInfo, Snapshot
from sparktop.guard.alerts import Alerts
from sparktop.guard.matching import match_rule
from sparktop.guard.service import UNMATCHED_REPEAT_S, Guard
from sparktop.session.session import Session
from sparktop.settings.guard import GuardSettings, StopRule
from tests.fixtures.cli import run_main

REPO = Path(__file__).resolve().parents[2]
SLEEPER = "import time\nwhile True:\n    time.sleep(1)\n"
REAL_PYTHON = os.path.realpath(sys.executable)
PROGRAM = Path(sys.executable).name  # what the venv's sleeper runs as


def wait_for_cmdline(pid: int, start: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        if cmdline.startswith(start):
            return cmdline
        assert time.monotonic() < deadline, cmdline
        time.sleep(0.02)


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """One sleeper started each way the issue lists: from a venv (argv[0] a path), through a pyenv-style
    shim that execs the real interpreter, and as a systemd ExecStart (absolute program and script). One set
    per module: the tests only read them (`--check` and `--dry-run` stop nothing, and say so)."""
    tmp_path = tmp_path_factory.mktemp("launched")
    marker = f"m{os.getpid()}x{time.monotonic_ns()}"
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(SLEEPER)
    (work / "grow.py").write_text(SLEEPER)
    app = tmp_path / "opt" / "app"
    app.mkdir(parents=True)
    (app / "serve.py").write_text(SLEEPER)
    versions = tmp_path / "pyenv" / "versions" / "3.12.0" / "bin"
    versions.mkdir(parents=True)
    (versions / "python3").symlink_to(REAL_PYTHON)
    shims = tmp_path / "pyenv" / "shims"
    shims.mkdir()
    shim = shims / "python3"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(str(versions / "python3"))} "$@"\n')
    shim.chmod(0o755)
    usr_bin = tmp_path / "usr" / "bin"
    usr_bin.mkdir(parents=True)
    (usr_bin / "python3").symlink_to(REAL_PYTHON)
    children = {
        "venv": subprocess.Popen([sys.executable, "train.py", marker], cwd=work),
        "pyenv": subprocess.Popen([str(shim), str(work / "grow.py"), "2", "5", marker], cwd=work),
        "systemd": subprocess.Popen([str(usr_bin / "python3"), str(app / "serve.py"), "--port", "9", marker]),
    }
    wait_for_cmdline(children["pyenv"].pid, str(versions / "python3"))
    try:
        yield {"marker": marker, "work": work, **children}  # type: ignore[dict-item]
    finally:
        for child in children.values():
            child.kill()
            child.wait()


def test_process_rules_match_the_forms_users_write(launched) -> None:
    from sparktop.sources.live import LiveSource
    from tests.fixtures.sources import NoGpu

    marker, work = launched["marker"], launched["work"]
    program = Path(sys.executable).name
    source = LiveSource(nvml=NoGpu(), docker=None)
    try:
        snapshot = source.sample()
    finally:
        source.close()
    expected = {
        f"{program} train.py {marker}*": launched["venv"].pid,  # /…/.venv/bin/python3 train.py
        f"python3 {work}/grow.py 2*": launched["pyenv"].pid,  # the rule, pyenv's interpreter
        f"python3 grow.py 2 5 {marker}": launched["pyenv"].pid,
        f"python3 serve.py --port 9 {marker}": launched["systemd"].pid,  # ExecStart=/usr/bin/python3 /opt/…
        f"*serve.py*{marker}": launched["systemd"].pid,
    }
    for pattern, pid in expected.items():
        report = match_rule(StopRule(process=pattern), snapshot)
        assert [m.process.pid for m in report.matches if m.process] == [pid], (pattern, report.why_not)
    # whole-line globs still: a rule is not a substring search
    report = match_rule(StopRule(process=f"train.py {marker}"), snapshot)
    assert report.matches == [] and report.why_not is not None


def write_config(tmp_path: Path, stop: str, floor: float = 1.0) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(f"[guard]\nfloor_gb = {floor}\nstop = [{stop}]\n")
    return config


def run_guard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> subprocess.CompletedProcess[str]:
    """`sparktop guard ARGS` in this process (what it prints and returns is the point, not a process)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")  # no engine: no container matches
    return run_main("guard", *args)


def test_guard_check_says_what_each_rule_matches_and_why_not(
    tmp_path: Path, launched, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = launched["marker"]
    config = write_config(
        tmp_path,
        f'{{ process = "{PROGRAM} train.py {marker}*" }}, {{ process = "python3 grow.py 2 5 {marker}", '
        f'user = "nobody" }}, {{ container = "ollama" }}, {{ process = "python3 tain.py {marker}*" }}',
    )
    done = run_guard(tmp_path, monkeypatch, "--check", "--config", str(config))
    assert done.returncode == 1, done.stderr  # a rule matches nothing now
    out = done.stdout.splitlines()
    rule1 = out.index(f"rule 1: process {PROGRAM} train.py {marker}*")
    assert out[rule1 + 1].startswith(f"  matches {Path(sys.executable).name} ({launched['venv'].pid}): ")
    assert out[rule1 + 1].endswith(", user root")
    rule2 = out.index(f"rule 2: process python3 grow.py 2 5 {marker} (user nobody)")
    assert out[rule2 + 1] == (
        f"  matches nothing: it matches only other users' processes (python3 ({launched['pyenv'].pid}) of "
        "user root), not nobody's"
    )
    rule3 = out.index("rule 3: container ollama")
    assert out[rule3 + 1].startswith(
        "  matches nothing: the container engine cannot be reached (Docker socket"
    )
    rule4 = out.index(f"rule 4: process python3 tain.py {marker}*")
    assert (
        out[rule4 + 1].startswith("  matches nothing: ")
        and "processes run python3, none with" in out[rule4 + 1]
    )
    assert out[-1].startswith(
        f"if the trigger held now: stop {Path(sys.executable).name} ({launched['venv'].pid})"
    )
    for child in ("venv", "pyenv", "systemd"):
        assert launched[child].poll() is None  # --check stops nothing
    done = run_guard(
        tmp_path,
        monkeypatch,
        "--check",
        "--config",
        str(write_config(tmp_path, f'{{ process = "*{marker}*" }}')),
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_armed_line_lists_the_rules_that_cannot_match(
    tmp_path: Path, launched, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = launched["marker"]
    config = write_config(
        tmp_path, f'{{ container = "ollama" }}, {{ process = "{PROGRAM} train.py {marker}*" }}'
    )
    done = run_guard(
        tmp_path, monkeypatch, "--dry-run", "--no-blackbox", "--duration", "0.5", "--config", str(config)
    )
    assert done.returncode == 0, done.stderr
    (start,) = [line for line in done.stdout.splitlines() if line.startswith("sparktop guard: armed:")]
    assert "; cannot match now: container ollama (the container engine cannot be reached" in start
    assert f"process {PROGRAM} train.py" not in start.split("cannot match now:")[1]  # that one matches
    for child in ("venv", "pyenv", "systemd"):
        assert launched[child].poll() is None  # a dry run stops nothing (the module's tests share them)


class Hook(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        Hook.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_trigger_with_nothing_to_stop_is_said_loudly_on_every_sink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The floor crossed, a policy whose rule matches nothing: stdout, stderr, the journal (a real datagram
    socket in place of /dev/log), the command hook and the webhook all hear it, once, then again after
    UNMATCHED_REPEAT_S while it lasts."""
    Hook.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    journal.bind(str(tmp_path / "log"))
    journal.settimeout(10)
    marker = tmp_path / "hook.out"
    monkeypatch.setenv("OUT", str(marker))
    script = "import os; open(os.environ['OUT'], 'a').write(os.environ['SPARKTOP_KIND'] + '\\n')"
    now = [1000.0]
    out = io.StringIO()
    alerts = Alerts(
        command=shlex.join([sys.executable, "-c", script]),
        webhook=f"http://127.0.0.1:{server.server_address[1]}/hook",
        out=out,
        journal_address=str(tmp_path / "log"),
    )
    settings = GuardSettings(floor_gb=8, stop=[StopRule(process="python3 train.py*")])
    session = Session(clock=lambda: now[0])
    guard = Guard(settings, session, alerts, dry_run=True, clock=lambda: now[0])
    unrelated = ProcessInfo(pid=42, name="bash", cmdline="bash", user="root", rss=GIB)
    try:
        for _ in range(int(UNMATCHED_REPEAT_S) + 5):
            now[0] += 1
            snapshot = Snapshot(
                timestamp=now[0],
                memory=HostMemory(total=24 * GIB, available=2 * GIB, free=2 * GIB),
                gpu=GpuReport(available=False, reason="none"),
                processes=[unrelated],
            )
            guard.on_snapshot(session.ingest(snapshot))
        guard.close()
        said = [line for line in out.getvalue().splitlines() if ": unmatched: " in line]
        assert len(said) == 2  # at once, and again a minute later
        assert "< floor 8 GB" in said[0] and "no stop rule matches anything to stop" in said[0]
        assert "process python3 train.py*: nothing running matches" in said[0]
        assert capfd.readouterr().err.count(": unmatched: ") == 2
        datagram = journal.recv(65536).decode()
        assert datagram.startswith("<11>") and "unmatched: MemAvailable" in datagram  # user.err
        assert [b["kind"] for b in Hook.bodies] == ["unmatched", "unmatched"]
        assert marker.read_text() == "unmatched\nunmatched\n"
    finally:
        server.shutdown()
        server.server_close()
        journal.close()


def test_the_dashboard_shows_the_rules_that_cannot_match(tmp_path: Path) -> None:
    from sparktop.collect.guard_state import GuardStateCollector
    from sparktop.sources.demo import DemoSource

    settings = GuardSettings(
        floor_gb=1, stop=[StopRule(container="not-running-here"), StopRule(container="ollama")]
    )
    guard = Guard(
        settings, Session(), Alerts(journal=False, out=io.StringIO()), state_path=tmp_path / "g.json"
    )
    snapshot = DemoSource("critical").sample()
    guard.on_snapshot(snapshot)
    collector = GuardStateCollector(tmp_path / "g.json")
    try:
        assert collector.wait_first(5)
        (report,) = collector.collect(snapshot)
        assert report.summary is not None
        assert "cannot match now: container not-running-here (no running container is named" in report.summary
        assert "container ollama" not in report.summary
    finally:
        collector.close()
        guard.close()


def test_the_guard_itself_pid_1_and_kernel_threads_never_match() -> None:
    """`*python*` matched the guard's own process (a guard that stops itself protects nothing), and
    `kworker*` kernel threads, which no signal stops."""
    from sparktop.sources.live import LiveSource
    from tests.fixtures.sources import NoGpu

    source = LiveSource(nvml=NoGpu(), docker=None)
    try:
        snapshot = source.sample()
    finally:
        source.close()
    kernel_threads = [p.pid for p in snapshot.processes if p.ppid == 2]
    assert os.getpid() in {p.pid for p in snapshot.processes}  # kernel threads: where /proc shows them
    matched = {m.process.pid for m in match_rule(StopRule(process="*"), snapshot).matches if m.process}
    assert matched and os.getpid() not in matched and 1 not in matched
    assert not matched & set(kernel_threads)


def test_no_unmatched_alert_above_the_floor_nor_again_once_the_trigger_lifts() -> None:
    """What must not trigger it: a policy whose rule matches nothing, with MemAvailable above the floor, says
    nothing; a dip under the floor says it once, and once the pool is back over the floor it is not repeated
    (the repeat is for a trigger that lasts)."""
    now = [1000.0]
    out = io.StringIO()
    settings = GuardSettings(floor_gb=8, stop=[StopRule(process="python3 train.py*")])
    session = Session(clock=lambda: now[0])
    guard = Guard(settings, session, Alerts(journal=False, out=out), dry_run=True, clock=lambda: now[0])
    unrelated = ProcessInfo(pid=42, name="bash", cmdline="bash", user="root", rss=GIB)

    def tick(available_gib: float) -> None:
        now[0] += 1
        snapshot = Snapshot(
            timestamp=now[0],
            memory=HostMemory(
                total=24 * GIB, available=int(available_gib * GIB), free=int(available_gib * GIB)
            ),
            gpu=GpuReport(available=False, reason="none"),
            processes=[unrelated],
        )
        guard.on_snapshot(session.ingest(snapshot))

    try:
        for _ in range(30):
            tick(20)  # well above the floor: nothing to say, however little the rules match
        assert ": unmatched: " not in out.getvalue()
        for _ in range(3):
            tick(2)  # under the floor
        for _ in range(int(UNMATCHED_REPEAT_S) + 30):
            tick(20)  # back over it, for longer than the repeat interval
    finally:
        guard.close()
    said = [line for line in out.getvalue().splitlines() if ": unmatched: " in line]
    assert len(said) == 1, said
