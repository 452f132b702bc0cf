"""The guard in a race (issue 31 item 3): a real grower eats into MemAvailable beside three decoys that
match the same rule — another user's (`nobody`) process of the same name that ignores SIGTERM, a bigger
process that sits still, and a process renamed with `exec -a` — and the guard, running its own loop on
the live machine, stops the grower before MemAvailable reaches the floor, and signals no decoy.

The machine is shared: sizes are drawn from the MemAvailable of the moment (the trigger a step below it,
"the floor" four times as far), the grower takes one step per tick of the guard's loop (a
loaded machine slows both alike: in a full CI run a grower on its own clock reached its cap while the
guard's samples lagged), and only our own processes (a marker in their command lines) are ever matched. In
all it holds under 2 GB at the very most (about half a GB when the guard does its job), and only for
seconds: other tests on the machine watch MemAvailable too."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparktop.core.snapshot import GB, MIB
from sparktop.guard.alerts import Alerts
from sparktop.guard.service import Guard
from sparktop.session.runner import SessionRunner
from sparktop.session.session import Session
from sparktop.settings.guard import GuardSettings, StopRule
from tests.fixtures.memavailable import memavailable_turn

TICK_S = 0.25  # the guard's loop here; the grower takes one step a tick (so both slow down alike under load)

TRAIN = textwrap.dedent(
    """
    import signal, sys, time
    marker, role, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def report(signum, frame):
        print(signal.Signals(signum).name, flush=True)

    for s in (signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGQUIT):
        signal.signal(s, report)
    if role != "grow":  # decoys say so and stay; the grower dies of SIGTERM as programs do
        signal.signal(signal.SIGTERM, report)
    hold = [bytearray(b"\\1") * (mib << 20)]  # written, so resident
    print("ready", flush=True)
    if role == "grow":
        step, cap = int(sys.argv[4]), int(sys.argv[5])
        total = mib
        while total + step <= cap and sys.stdin.readline():  # a step each time it is told
            hold.append(bytearray(b"\\1") * (step << 20))
            total += step
        if total + step > cap:
            print("cap", flush=True)
    while True:
        time.sleep(1)
    """
)


def load_factor() -> float:
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def rss(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory `nobody` can read (pytest's tmp_path is root's 0700): the script and an interpreter
    link named python3, the one program every contestant runs."""
    assert os.geteuid() == 0 and shutil.which("setpriv"), "run the tests as root with util-linux installed"
    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
    assert python, "a system python3 that nobody can run"
    directory = Path(tempfile.mkdtemp(prefix="sparktop-race-"))
    try:
        directory.chmod(0o755)
        (directory / "bin").mkdir(mode=0o755)
        (directory / "bin" / "python3").symlink_to(python)
        (directory / "train.py").write_text(TRAIN)
        (directory / "train.py").chmod(0o644)
        yield directory
    finally:
        shutil.rmtree(directory)


def launch(argv: list[str], cwd: Path, stdin: bool = False) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line == "ready\n", (argv, line)
    return child


@pytest.fixture
def memavailable_to_this_test() -> Iterator[None]:
    """The floor comes from MemAvailable, and this test moves it by hundreds of MB: one such test on the
    machine at a time (tests/fixtures/memavailable.py)."""
    with memavailable_turn():
        yield


def test_the_guard_stops_the_grower_before_the_floor_and_no_decoy(
    shared_dir: Path, memavailable_to_this_test: None
) -> None:
    from sparktop.sources.live import LiveSource
    from tests.fixtures.sources import NoGpu

    marker = f"race-{os.getpid()}-{time.monotonic_ns()}"
    python = str(shared_dir / "bin" / "python3")
    available = mem_available()
    # The trigger this far below MemAvailable now; the floor four times as far. The grower's cap (a bound on
    # what the test takes, not what it checks) twice the floor's distance: other tests on the machine free
    # memory meanwhile (a clean-clone CI run: the grower reached a cap at the floor's distance before
    # MemAvailable had fallen to the trigger), and the grower goes on until the guard acts.
    gap_mib = max(64, min(192, available // MIB // 16))
    floor_mib = gap_mib * 4
    cap_mib = floor_mib * 2
    step_mib = max(4, gap_mib // 8)  # the trigger reached in about 8 steps; the floor 24 steps after it
    children: list[subprocess.Popen[str]] = []
    try:
        nobody = launch(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             python, "train.py", marker, "decoy", "32"],
            shared_dir,
        )  # fmt: skip
        children.append(nobody)
        flat = launch([python, "train.py", marker, "flat", str(2 * gap_mib)], shared_dir)
        children.append(flat)
        renamed = launch(
            ["bash", "-c", 'exec -a "$0" "$@"', f"python3 train.py {marker} renamed",
             python, str(shared_dir / "train.py"), marker, "renamed", "32"],
            shared_dir,
        )  # fmt: skip
        children.append(renamed)
        grower = launch(
            [python, "train.py", marker, "grow", "16", str(step_mib), str(cap_mib)],
            shared_dir,
            stdin=True,
        )
        children.append(grower)
        decoys = {"nobody's look-alike": nobody, "bigger flat": flat, "exec -a": renamed}

        source = LiveSource(nvml=NoGpu(), docker=None)
        session = Session()
        available = mem_available()
        settings = GuardSettings(
            floor_gb=(available - gap_mib * MIB) / GB,
            window_s=10,
            cooldown_s=600,  # one stop in this test: after it, nothing else may be touched
            stop_timeout_s=5,
            stop=[StopRule(process=f"python3 train.py {marker}*")],  # all four match it
        )
        floor = available - floor_mib * MIB
        guard = Guard(settings, session, Alerts(journal=False, out=io.StringIO()))
        lowest = [available]

        def step() -> None:
            """One step of the grower's (its growth is paced by the guard's ticks, not by a clock)."""
            assert grower.stdin is not None
            with contextlib.suppress(OSError, ValueError):  # stopped: its pipe is closed
                grower.stdin.write("step\n")
                grower.stdin.flush()

        def watch(snapshot):
            lowest[0] = min(lowest[0], snapshot.memory.available)
            actions = guard.on_snapshot(snapshot)
            step()
            return actions

        runner = SessionRunner(source, session, TICK_S, on_snapshot=watch)
        first = runner.tick()  # every contestant seen once before the grower starts
        assert first is not None
        matched = {p.pid for p in first.processes if marker in p.cmdline}
        assert {c.pid for c in children} <= matched
        # The guard's loop starts once the grower has grown a little, so that even a trigger pulled at once
        # by someone else's allocation finds it growing: the choice is what this test is about.
        started_rss, grow_deadline = rss(grower.pid), time.monotonic() + 30 * load_factor()
        step()
        step()
        while rss(grower.pid) < started_rss + 2 * step_mib * MIB:
            assert time.monotonic() < grow_deadline, "the grower never grew"
            time.sleep(0.02)
        runner.start()
        deadline = time.monotonic() + (cap_mib / step_mib * TICK_S + 30) * load_factor()
        try:
            while grower.poll() is None:
                assert time.monotonic() < deadline, ([a.message for a in guard.actions], lowest[0] - floor)
                time.sleep(0.1)
        finally:
            runner.stop()
            guard.close()
            source.close()
        assert grower.stdout is not None
        said = grower.stdout.read()
        assert grower.returncode == -signal.SIGTERM and "cap" not in said, (grower.returncode, said)
        assert lowest[0] > floor, f"MemAvailable reached the floor: {(lowest[0] - floor) / MIB:.0f} MiB"
        (action,) = guard.actions
        assert action.kind == "action" and action.readings["target"].endswith(f"({grower.pid})")
        assert "grew most" in action.message
        for name, decoy in decoys.items():
            assert decoy.poll() is None, f"{name} was killed"
        for decoy in decoys.values():
            decoy.kill()
        for name, decoy in decoys.items():
            decoy.wait(10)
            assert decoy.stdout is not None
            assert decoy.stdout.read() == "", f"{name} was signalled"
        print(
            f"race: trigger {gap_mib} MiB under MemAvailable, floor {floor_mib} MiB under; lowest seen "
            f"{(lowest[0] - floor) / MIB:.0f} MiB above the floor; load factor {load_factor():.1f}"
        )
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            child.wait(10)
