"""Which match the guard acts on, and that nothing holds it off (issue 31 item 1): of a rule's matches the
one that grew over the window, not the biggest; a rule may name the owner; a target that ignores SIGTERM
gets SIGKILL after the grace the policy states, and the next match is stopped while the trigger holds;
each choice is in the action log with why that target."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sparktop.core.snapshot import GB, GIB, MIB, GpuReport, HostMemory, ProcessInfo, Snapshot
from sparktop.guard import service
from sparktop.guard.alerts import Alerts
from sparktop.guard.policy import find_target
from sparktop.guard.service import Guard
from sparktop.session.runner import SessionRunner
from sparktop.session.session import Session
from sparktop.settings.config import load_config
from sparktop.settings.guard import GuardSettings, StopRule
from sparktop.stopping.stop_log import ActionLog

TOTAL = 24 * GIB


def load_factor() -> float:
    """Deadlines stretch with the machine's load (2 cores shared by many)."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def box(t: float, available: int, processes: list[ProcessInfo]) -> Snapshot:
    return Snapshot(
        timestamp=t,
        hostname="h",
        memory=HostMemory(total=TOTAL, available=available, free=available),
        gpu=GpuReport(available=False, reason="none"),
        processes=processes,
    )


def proc(pid: int, user: str, rss: int, cmdline: str = "python train.py") -> ProcessInfo:
    return ProcessInfo(pid=pid, name="python", cmdline=cmdline, user=user, rss=rss, start_ticks=pid * 10)


def test_the_grower_is_chosen_not_the_bigger_look_alike(tmp_path: Path) -> None:
    """The issue's decoy: `nobody`'s 600 MB `python train.py x` sits still while root's 300 MB
    `python train.py` grows: the guard picks the grower, and the action log says why."""
    now = [1000.0]
    session = Session(clock=lambda: now[0])
    log = tmp_path / "actions.log"
    settings = GuardSettings(
        floor_gb=8, cooldown_s=5, window_s=30, stop=[StopRule(process="python train.py*")]
    )
    guard = Guard(
        settings,
        session,
        Alerts(journal=False, out=io.StringIO()),
        action_log=ActionLog(log),
        dry_run=True,
        clock=lambda: now[0],
    )
    decoy = proc(500, "nobody", 600 * MIB, "python train.py x decoy.py")
    grower_rss = 300 * MIB
    stops = []
    for tick in range(12):
        now[0] += 1
        grower = proc(700, "root", grower_rss)
        available = 12 * GIB if tick < 10 else 5 * GIB  # the floor (8 GB) crossed on tick 10
        sent = guard.on_snapshot(session.ingest(box(now[0], available, [decoy, grower])))
        stops += [a for a in sent if a.kind == "dry-run"]
        grower_rss += 20 * MIB  # still smaller than the decoy when the floor is crossed
    assert len(stops) == 1
    assert stops[0].readings["target"] == "python (700)"
    assert "grew most: python (700) +" in stops[0].message and "python (500)" in stops[0].message
    line = log.read_text()
    assert "python (700)" in line and "chosen: grew most" in line and "user nobody" in line


def test_with_nothing_growing_the_biggest_is_taken() -> None:
    snapshot = box(1.0, GIB, [proc(500, "nobody", 600 * MIB), proc(700, "root", 300 * MIB)])
    target = find_target([StopRule(process="python*")], snapshot)
    assert target is not None and target.label == "python (500)" and "so the biggest" in target.why


def test_a_rule_can_name_the_owner(tmp_path: Path) -> None:
    snapshot = box(1.0, GIB, [proc(500, "nobody", 600 * MIB), proc(700, "root", 300 * MIB)])
    for user in ("root", "0"):  # a name or a uid
        target = find_target([StopRule(process="python train.py*", user=user)], snapshot)
        assert target is not None and target.label == "python (700)", user
    target = find_target([StopRule(process="python train.py*", user="nobody")], snapshot)
    assert target is not None and target.label == "python (500)"
    assert find_target([StopRule(process="python train.py*", user="alice")], snapshot) is None
    config = tmp_path / "config.toml"
    config.write_text('[guard]\nfloor_gb = 8\nstop = [{ process = "python train.py*", user = "alice" }]\n')
    loaded, problems = load_config(config)
    assert problems == [] and loaded.guard.stop[0].user == "alice"
    assert "process python train.py* (user alice)" in loaded.guard.describe_policy()
    config.write_text('[guard]\nfloor_gb = 8\nstop = [{ container = "ollama", user = "alice" }]\n')
    loaded, problems = load_config(config)
    assert not loaded.guard.armed and len(problems) == 1 and "process entries only" in problems[0]


IGNORES_TERM = textwrap.dedent(
    """
    import signal, sys, time
    signal.signal(signal.SIGTERM, lambda *_: print("TERM", flush=True))
    hold = bytearray(int(sys.argv[1]) * 1024 * 1024)
    for i in range(0, len(hold), 4096):
        hold[i] = 1
    print("ready", flush=True)
    while True:
        time.sleep(1)
    """
)


def start(tmp_path: Path, marker: str, mib: int, name: str) -> subprocess.Popen[str]:
    script = tmp_path / f"{name}.py"
    script.write_text(IGNORES_TERM)
    child = subprocess.Popen(
        [sys.executable, str(script), str(mib), marker, name], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    return child


def test_a_target_that_ignores_sigterm_is_killed_after_the_stated_grace_then_the_next_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old guard sent SIGTERM, waited 5 x cooldown for a target that ignored it, sent SIGTERM again,
    forever. Now: SIGKILL `stop_timeout_s` after SIGTERM (the policy says so), and with the trigger still
    holding, the next match after the release grace."""
    from sparktop.sources.live import LiveSource
    from tests.fixtures.sources import NoGpu

    monkeypatch.setattr(service, "RELEASE_GRACE_S", 1.0)  # the release grace is not what is tested here
    marker = f"holdoff-{os.getpid()}-{time.monotonic_ns()}"
    big = start(tmp_path, marker, 64, "big")  # the biggest, nothing growing: chosen first
    small = start(tmp_path, marker, 8, "small")
    source = LiveSource(nvml=NoGpu(), docker=None)
    try:
        available = source.sample().memory.available
        settings = GuardSettings(
            floor_gb=(available + 10 * GB) / GB,  # the trigger holds throughout
            cooldown_s=0,
            stop_timeout_s=1,
            stop=[StopRule(process=f"*{marker}*")],
        )
        assert "SIGTERM, SIGKILL 1 s later if it is still there" in settings.describe_policy()
        session = Session()
        log = tmp_path / "actions.log"
        guard = Guard(settings, session, Alerts(journal=False, out=io.StringIO()), action_log=ActionLog(log))
        runner = SessionRunner(source, session, 0.2, on_snapshot=guard.on_snapshot)
        deadline = time.monotonic() + 30 * load_factor()
        while small.poll() is None:
            assert time.monotonic() < deadline, [a.message for a in guard.actions]
            runner.tick()
            time.sleep(0.2)
        guard.close()
        assert big.wait(5) == -signal.SIGKILL
        assert small.wait(5) == -signal.SIGKILL  # it ignores SIGTERM too
        program = Path(sys.executable).name[:15]
        assert [a.readings["target"] for a in guard.actions] == [
            f"{program} ({big.pid})",
            f"{program} ({small.pid})",
        ]
        assert big.stdout is not None and big.stdout.read() == "TERM\n"  # SIGTERM first, then SIGKILL
        lines = log.read_text().splitlines()
        assert len(lines) == 2 and all("\tguard SIGKILL\t" in line for line in lines)
        assert "still there 1 s after SIGTERM: SIGKILL sent" in lines[0]
        assert "chosen: none grew more than" in lines[0] and "so the biggest" in lines[0]
    finally:
        source.close()
        for child in (big, small):
            if child.poll() is None:
                child.kill()
                child.wait()


def test_a_match_the_guard_may_not_signal_is_passed_over_at_once(tmp_path: Path) -> None:
    """A guard running as `nobody` (forked, privileges dropped) whose rule matches root's bigger process
    first: the SIGTERM is refused, and the next tick stops nobody's own match — not 5 x cooldown later."""
    import json
    import shutil

    from sparktop.sources.live import LiveSource
    from tests.fixtures.sources import NoGpu

    assert os.geteuid() == 0 and shutil.which("setpriv"), "run the tests as root with util-linux installed"
    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
    assert python, "a system python3 that nobody can run"
    marker = f"refused-{os.getpid()}-{time.monotonic_ns()}"
    roots = start(tmp_path, marker, 64, "roots")
    code = "import time; print('ready', flush=True); time.sleep(600)"
    owned = subprocess.Popen(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", code, marker],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert owned.stdout is not None and owned.stdout.readline() == "ready\n"
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child: the guard as nobody
        os.close(read_end)
        report: dict[str, object] = {}
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            source = LiveSource(nvml=NoGpu(), docker=None)
            available = source.sample().memory.available
            settings = GuardSettings(
                floor_gb=(available + 10 * GB) / GB,
                cooldown_s=60,
                stop_timeout_s=1,
                stop=[StopRule(process=f"*{marker}*")],
            )
            session = Session()
            guard = Guard(settings, session, Alerts(journal=False, out=io.StringIO()))
            runner = SessionRunner(source, session, 0.2, on_snapshot=guard.on_snapshot)
            started = time.monotonic()
            while len(guard.actions) < 2 and time.monotonic() - started < 20 * load_factor():
                runner.tick()
                time.sleep(0.2)
            guard.close()
            report["actions"] = [(a.time, a.readings["target"]) for a in guard.actions]
        except BaseException as exc:
            report["error"] = repr(exc)
        os.write(write_end, json.dumps(report).encode())
        os._exit(0)
    os.close(write_end)
    try:
        with os.fdopen(read_end) as fh:
            report = json.loads(fh.read())
        os.waitpid(pid, 0)
        assert "error" not in report, report
        (first_at, first), (second_at, second) = report["actions"]
        assert first.endswith(f"({roots.pid})") and second.endswith(f"({owned.pid})")
        assert second_at - first_at < 10  # at once, not after the cooldown (60 s)
        assert owned.wait(10) == -signal.SIGTERM
        assert roots.poll() is None
    finally:
        for child in (roots, owned):
            if child.poll() is None:
                child.kill()
            child.wait()


def test_a_demo_process_is_never_signalled_on_this_machine(tmp_path: Path) -> None:
    """`guard --demo` with a process rule signalled the real process holding the demo's PID (88 here: the
    demo's systemd-journald), with no start tick to confirm it by. Now nothing is sent, and it says so."""
    from sparktop.sources.demo import DemoSource

    sent: list[tuple[object, ...]] = []

    def terminator(*args: object) -> object:
        sent.append(args)
        raise AssertionError("no signal may be sent for a demo process")

    source = DemoSource("critical")
    settings = GuardSettings(floor_gb=1000, stop=[StopRule(process="systemd-journald")])
    log = tmp_path / "actions.log"
    session = Session()
    alerts = Alerts(journal=False, out=io.StringIO())
    guard = Guard(settings, session, alerts, action_log=ActionLog(log), terminator=terminator)  # type: ignore[arg-type]
    runner = SessionRunner(source, session, 1.0, on_snapshot=guard.on_snapshot)
    runner.tick()
    guard.close()
    assert sent == [] and [a.readings["target"] for a in guard.actions] == ["systemd-journald (88)"]
    assert "a demo process, not one confirmed on this machine: nothing sent" in log.read_text()
