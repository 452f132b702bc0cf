"""The guard's tick on the demo source and on real processes: warnings reach a real command hook and a real
webhook on loopback; the policy stops only what is listed, in the listed order, once per cooldown; a host
process is signalled through the pid-reuse-safe path; a bad [guard] table is one line per problem and the
guard then never acts; `sparktop guard` leaves a black box that replays after kill -9."""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from sparktop.collect.process_signals import read_stat
from sparktop.core.snapshot import GB
from sparktop.guard.alerts import Alerts
from sparktop.guard.blackbox import latest_segment
from sparktop.guard.policy import find_target
from sparktop.guard.service import Guard
from sparktop.session.runner import SessionRunner
from sparktop.session.session import Session
from sparktop.settings.config import load_config
from sparktop.settings.guard import GuardSettings, StopRule
from sparktop.sources.demo import DemoSource
from sparktop.sources.replay import ReplayEnded, ReplaySource
from sparktop.stopping.stop_log import ActionLog
from tests.fixtures.cli import run_main
from tests.fixtures.execing import wrapper_that_execs

REPO = Path(__file__).resolve().parents[2]


def guard_on(source, settings: GuardSettings, tmp_path: Path, dry_run: bool = False, **alerts_kw):
    session = Session()
    out = io.StringIO()
    guard = Guard(
        settings,
        session,
        Alerts(journal=False, out=out, **alerts_kw),
        controller=source.controller() if hasattr(source, "controller") else None,
        action_log=ActionLog(tmp_path / "actions.log"),
        state_path=tmp_path / "guard.json",
        dry_run=dry_run,
    )
    return guard, SessionRunner(source, session, 1.0, on_snapshot=guard.on_snapshot), out


class Hook(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        Hook.bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def webhook():
    Hook.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", Hook.bodies
    server.shutdown()
    server.server_close()


def test_a_stall_warns_once_through_every_sink(tmp_path: Path, webhook, monkeypatch) -> None:
    url, bodies = webhook
    marker = tmp_path / "hook.out"
    script = (
        "import os; open(os.environ['OUT'], 'a').write(os.environ['SPARKTOP_KIND'] + ' ' + "
        "os.environ['SPARKTOP_MESSAGE'] + '\\n')"
    )
    monkeypatch.setenv("OUT", str(marker))  # the hook inherits the guard's environment
    command = shlex.join([sys.executable, "-c", script])
    guard, runner, out = guard_on(
        DemoSource("critical"), GuardSettings(), tmp_path, command=command, webhook=url
    )
    for _ in range(5):
        runner.tick()
    guard.close()
    warnings = [line for line in out.getvalue().splitlines() if ": warning: " in line]
    assert len(warnings) == 1 and "stalling now" in warnings[0]  # said once, not on every tick
    assert marker.read_text().startswith("warning memory stalling now")
    assert [b["kind"] for b in bodies] == ["warning"] and bodies[0]["readings"]["psi_full_avg10"] > 10
    state = json.loads((tmp_path / "guard.json").read_text())
    assert state["warning"] is True and state["armed"] is False and "stalling" in state["forecast"]
    assert not (tmp_path / "actions.log").exists()  # no policy: it never acts


def test_policy_stops_only_the_first_listed_target_present_then_cools_down(tmp_path: Path) -> None:
    source = DemoSource("critical")
    settings = GuardSettings(
        floor_gb=8,
        stop=[
            StopRule(container="not-running-here"),
            StopRule(compose="audio-lab"),
            StopRule(container="ollama"),
        ],
        cooldown_s=3600,
    )
    guard, runner, _out = guard_on(source, settings, tmp_path)
    for _ in range(4):
        runner.tick()
    guard.close()
    assert [a.kind for a in guard.actions] == ["action"]
    assert "compose audio-lab" in guard.actions[0].message and "< floor" in guard.actions[0].message
    # The floor echoed as configured (floor_gb = 8 is 8 GB, not "7.5 GiB"), its size in MemAvailable's unit.
    assert "< floor 8 GB (7.5 GiB)" in guard.actions[0].message
    for _ in range(10):  # the demo's containers exit a few simulated seconds after the stop
        names = {c.name for c in source.sample().containers}
    assert not any(name.startswith("audio-lab-") for name in names)
    assert "ollama" in names and "devstral" in names  # unlisted or later in the list: untouched
    log = (tmp_path / "actions.log").read_text().splitlines()
    assert len(log) == 1 and "guard stop" in log[0] and "compose audio-lab" in log[0] and "stopped" in log[0]


def test_dry_run_says_what_it_would_stop_and_stops_nothing(tmp_path: Path) -> None:
    source = DemoSource("critical")
    guard, runner, _out = guard_on(
        source, GuardSettings(floor_gb=8, stop=[StopRule(container="ollama")]), tmp_path, True
    )
    runner.tick()
    guard.close()
    assert guard.actions[0].kind == "dry-run" and "would stop ollama" in guard.actions[0].message
    assert "ollama" in {c.name for c in source.sample().containers}
    assert "not stopped (dry run)" in (tmp_path / "actions.log").read_text()


def test_nothing_unlisted_is_ever_stopped() -> None:
    snapshot = DemoSource("critical").sample()
    assert find_target([StopRule(container="olla")], snapshot) is None  # a name, not a prefix
    assert find_target([StopRule(process="no-such-*")], snapshot) is None
    target = find_target([StopRule(container="ollam?")], snapshot)
    assert target is not None and [c.name for c in target.containers] == ["ollama"]


def test_a_listed_host_process_gets_sigterm_with_its_exact_start_time(tmp_path: Path) -> None:
    from sparktop.sources.live import LiveSource
    from tests.fixtures.sources import NoGpu

    # A command line of its own: "sleep 3600" also matched other tests' sleepers (a second copy of the suite
    # beside this one), and the guard signalled one of those instead.
    duration = f"3600.{time.time_ns() % 10**9:09d}"
    hog = subprocess.Popen(["sleep", duration])
    try:
        _, ticks = read_stat(hog.pid)
        source = LiveSource(nvml=NoGpu(), docker=None)
        available = source.sample().memory.available
        settings = GuardSettings(
            floor_gb=(available + 10 * GB) / GB, stop=[StopRule(process=f"sleep {duration}")]
        )
        guard, runner, _ = guard_on(source, settings, tmp_path)
        runner.tick()
        guard.wait_for_actions()
        assert hog.wait(timeout=10) == -signal.SIGTERM
        assert guard.actions[0].readings["target"] == f"sleep ({hog.pid})"
        assert guard.acted_on is not None and guard.acted_on.process is not None
        assert guard.acted_on.process.start_ticks == ticks  # the exact process, not just its PID
        assert "guard SIGTERM" in (tmp_path / "actions.log").read_text()
        assert "s after SIGTERM" in (tmp_path / "actions.log").read_text()
        guard.close()
        source.close()
    finally:
        if hog.poll() is None:
            hog.kill()


def test_a_process_rule_matches_what_the_process_runs_now(tmp_path: Path) -> None:
    """`sh wrapper.sh` that execs a program: a rule for the program matches from the tick after the exec, and
    the guard names the process by what it runs now; a rule for the script matches no longer."""
    from sparktop.sources.live import LiveSource
    from tests.fixtures.sources import NoGpu

    marker = f"hog-{os.getpid()}-{time.monotonic_ns()}"
    program = Path(sys.executable).name[:15]
    command = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)' {marker}"
    with wrapper_that_execs(tmp_path, command, program) as wrapper:
        source = LiveSource(nvml=NoGpu(), docker=None)
        script_rule, program_rule = StopRule(process=f"sh {wrapper.script}"), StopRule(process=f"*{marker}*")
        available = source.sample().memory.available
        settings = GuardSettings(floor_gb=(available + 10 * GB) / GB, stop=[program_rule])
        guard, runner, _ = guard_on(source, settings, tmp_path, dry_run=True)
        snapshot = runner.tick()
        assert snapshot is not None and guard.actions == []  # nothing runs the program yet
        target = find_target([script_rule], snapshot)
        assert target is not None and target.label == f"sh ({wrapper.pid})"
        wrapper.exec()
        snapshot = runner.tick()
        assert snapshot is not None
        assert find_target([script_rule], snapshot) is None
        (action,) = guard.actions
        assert action.message.startswith(f"would stop {program} ({wrapper.pid}) (process *{marker}*)")
        assert action.readings["target"] == f"{program} ({wrapper.pid})"
        guard.close()
        source.close()


def load_guard_settings(path: Path) -> tuple[GuardSettings, list[str]]:
    """The [guard] table as `sparktop guard` reads it (with the rest of the config file)."""
    config, problems = load_config(path)
    return config.guard, problems


def test_a_bad_guard_table_is_reported_with_file_and_line_and_the_guard_does_not_act(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('interval = 2\n[guard]\nfloor_gb = nan\nstop = [{ container = "a" }]\n')
    settings, problems = load_guard_settings(config)
    assert not settings.armed  # a policy it could not read is never acted on
    assert len(problems) == 1 and problems[0].startswith(f"{config}:3: guard.floor_gb:")
    config.write_text('[guard]\nstop = [{ container = "a", process = "b" }]\n')
    settings, problems = load_guard_settings(config)
    assert not settings.armed and len(problems) == 1 and "exactly one of" in problems[0]
    config.write_text('[guard]\nfloor_gb = 8\nstop = [{ container = "a" }]\n')
    settings, problems = load_guard_settings(config)
    assert settings.armed and problems == []


def test_guard_command_leaves_a_black_box_that_replays_after_kill_9(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparktop", "guard", "--demo", "training", "--interval", "0.1",
         "--blackbox-dir", str(tmp_path / "bb")],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        segment = None
        while time.monotonic() < deadline:
            segment = latest_segment(tmp_path / "bb")
            if segment is not None and segment.stat().st_size > 4000:
                break
            time.sleep(0.2)
        time.sleep(1.0)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert segment is not None
    played = 0
    with ReplaySource(segment) as replay:
        try:
            while True:
                replay.sample()
                played += 1
        except ReplayEnded:
            pass
    assert played >= 10
    # and `--replay FILE --once --json` reads it too (in this process: its output and status are the point)
    once = run_main("--replay", str(segment), "--once", "--json")
    assert once.returncode == 0, once.stderr
    assert json.loads(once.stdout)["source"] == "replay"


def test_the_dashboard_collector_reports_the_guard_state(tmp_path: Path) -> None:
    from sparktop.collect.guard_state import GuardStateCollector

    source = DemoSource("critical")
    guard, runner, _out = guard_on(
        source, GuardSettings(floor_gb=8, stop=[StopRule(container="ollama")]), tmp_path, True
    )
    snapshot = runner.tick()
    assert snapshot is not None
    collector = GuardStateCollector(tmp_path / "guard.json", clock=time.time)
    try:
        assert collector.wait_first(5)
        (report,) = collector.collect(snapshot)
        assert report.summary is not None
        assert report.summary.startswith("guard armed (dry run)") and "would stop ollama" in report.summary
        late = GuardStateCollector(tmp_path / "guard.json", clock=lambda: time.time() + 60)
        late.wait_first(5)
        assert "guard not running since" in (late.collect(snapshot)[0].summary or "")
        late.close()
    finally:
        collector.close()
        guard.close()
    assert GuardStateCollector(tmp_path / "none.json").collect(snapshot) == []


def test_a_fifo_in_place_of_the_guard_state_is_one_line_not_a_hung_poller(tmp_path: Path) -> None:
    from sparktop.collect.guard_state import GuardStateCollector

    os.mkfifo(tmp_path / "guard.json")
    collector = GuardStateCollector(tmp_path / "guard.json")
    try:
        assert collector.wait_first(5)  # it read (and refused) the FIFO instead of waiting for a writer
        (report,) = collector.collect(DemoSource().sample())
        assert (
            report.error
            == f"guard state: {tmp_path / 'guard.json'}: cannot read: a FIFO (named pipe), not a regular file"
        )
    finally:
        collector.close()


def test_guard_reads_the_config_file_once(tmp_path: Path, monkeypatch) -> None:
    """It read the file twice at start (lines, then [guard]): its problems were printed twice, and a file
    edited in between gave the guard a policy from one version and lines from another."""
    from sparktop.commands.main import main
    from sparktop.settings import config as config_module

    reads: list[object] = []
    real = config_module.load_config

    def counting(path=None):
        reads.append(path)
        return real(path)

    monkeypatch.setattr(config_module, "load_config", counting)
    path = tmp_path / "config.toml"
    path.write_text("[guard]\nfloor_gb = 8\n")
    argv = ["guard", "--demo", "--duration", "0.2", "--interval", "0.1", "--no-blackbox"]
    assert main([*argv, "--config", str(path)]) == 0
    assert reads == [path]


def test_guard_lines_in_a_terminal_carry_their_time() -> None:
    """Under systemd the journal times each line; printed to a terminal they had no time at all (issue 32,
    Rough). A terminal (a real pty here) gets the alert's local date and time; a pipe or file gets the line
    as before, for the journal to stamp."""
    import pty

    from sparktop.guard.alerts import Alert

    when = time.mktime((2026, 11, 27, 16, 40, 3, 0, 0, -1))
    alert = Alert("warning", "pool exhausted in ~4 min", when)
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w", encoding="utf-8", closefd=True) as terminal:
        Alerts(journal=False, out=terminal).send(alert)
        shown = os.read(leader, 4096).decode()
    os.close(leader)
    assert shown.strip() == "2026-11-27 16:40:03 sparktop guard: warning: pool exhausted in ~4 min", shown
    piped = io.StringIO()
    Alerts(journal=False, out=piped).send(alert)
    assert piped.getvalue() == "sparktop guard: warning: pool exhausted in ~4 min\n"


def test_a_stop_signal_as_the_guard_starts_ends_it_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service manager may stop the guard the moment it says it started (serve met this beside a second
    suite: the KeyboardInterrupt of its stop signal met no `try`). Here the interrupt comes from inside the
    runner's start, once it runs: the guard still stops its runner (its black box closed in the same finally)
    and exits 0."""
    from sparktop.commands.main import main
    from sparktop.session.runner import SessionRunner
    from tests.fixtures.signals import handlers_kept

    runners: list[SessionRunner] = []
    real_start = SessionRunner.start

    def start_then_interrupted(self: SessionRunner, max_ticks: int | None = None) -> SessionRunner:
        real_start(self, max_ticks)
        runners.append(self)
        raise KeyboardInterrupt  # as the stop signal's handler raises it in the main thread

    monkeypatch.setattr(SessionRunner, "start", start_then_interrupted)
    box = tmp_path / "blackbox"
    with handlers_kept():
        try:
            code = main(["guard", "--demo", "--interval", "0.1", "--blackbox-dir", str(box)])
        except KeyboardInterrupt:
            pytest.fail("the stop signal met no try: the guard would end by SIGINT, its runner left running")
    assert code == 0
    (runner,) = runners
    assert not runner.running, "the guard's runner still ticks after it returned"
