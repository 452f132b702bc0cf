"""The dashboard's own cost as a user runs it, beside a minimal Textual app, htop, btop and glances.

sparktop is installed the way a user installs it: a wheel built from the tree (and, with `--before REV`, one
built from that commit too), each in a fresh venv with its dependencies, bytecode compiled by pip, and run
with PYTHONDONTWRITEBYTECODE unset (an editable install with that variable set recompiles sparktop at every
start). Every process runs from a scratch directory, so nothing is imported from the source tree.

1. side by side: every row started together in its own tmux session (120×36) on a private tmux server, so they
   share the machine's conditions: time to the first frame with data (`tmux capture-pane` polled every 20 ms
   for markers drawn only from data), CPU % of one core over `--seconds` in steady state (utime+stime of the
   process tree), RSS at the start and the end of that window;
2. first frame alone: each row by itself, `--runs` times, interleaved; median and range;
3. commands: `sparktop --once` (wall time and peak RSS, median of 3), `sparktop serve` (idle CPU and RSS over
   `--seconds`, then one scrape of /metrics) and `sparktop web` (the parent's idle cost, no browser), every
   build's started together;
4. the app headless fed 3,600 demo snapshots (an hour of ticks at 1 s): RSS at 0, 600, 1,800 and 3,600.

Run as root: `python bench/bench_dashboard.py --before 4fad4c0`. Iterate with `--seconds 10 --runs 1
--ticks 600`. Every tmux session, process and temporary directory it made is removed at the end, Ctrl-C
included; the venvs are kept in /tmp/sparktop-bench-venvs (keyed by the source's content) unless --fresh.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
POLL_S = 0.02
FIRST_FRAME_TIMEOUT_S = 20.0
VENV_CACHE = Path(tempfile.gettempdir()) / "sparktop-bench-venvs"
RUN_DIR = tempfile.mkdtemp(prefix="sparktop-bench-run-")  # every tool's working directory

# Goals (issue 33): first frame within 1.3× the minimal Textual app's (alone, same run); idle ≤ 1.0 % of a
# core and ≤ 1.5× btop's; RSS ≤ 45 MiB live after 10 minutes; `serve` ≤ 40 MiB.
GOAL_FIRST_FRAME_RATIO = 1.3
GOAL_CPU_PCT = 1.0
GOAL_CPU_VS_BTOP = 1.5
GOAL_RSS_MIB = 45.0
GOAL_SERVE_RSS_MIB = 40.0
HOUR_CHECKPOINTS = (0, 600, 1800, 3600)

MINIMAL_APP = """
from textual.app import App, ComposeResult
from textual.widgets import Static


class Minimal(App):
    def compose(self) -> ComposeResult:
        yield Static("minimal textual app: ready")


Minimal().run()
"""


# -- installing as a user does ------------------------------------------------------------------------------


@dataclass
class Build:
    label: str  # "" for the tree, "@REV" for --before
    venv: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def sparktop(self) -> str:
        return str(self.venv / "bin" / "sparktop")


def _export_tree(rev: str | None, dest: Path) -> str:
    """The tree at `rev` (None: the working tree, tracked and untracked files git does not ignore) into
    `dest`; returns a key for its content."""
    if rev is not None:
        sha = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", sha], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")
        return sha
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True,
    ).stdout.split(b"\0")  # fmt: skip
    digest = hashlib.sha256()
    for name in sorted(n.decode() for n in listed if n):
        src = REPO / name
        if not src.is_file():
            continue  # deleted, not yet committed
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
        digest.update(name.encode() + b"\0" + src.read_bytes())
    return "tree-" + digest.hexdigest()[:16]


def install(rev: str | None, fresh: bool) -> Build:
    """A wheel of `rev` (None: the working tree) installed with its dependencies and the web extra in a venv
    of its own, as `pip install` leaves it (bytecode compiled)."""
    label = "" if rev is None else f"@{rev}"
    with tempfile.TemporaryDirectory(prefix="sparktop-bench-src-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        key = _export_tree(rev, src)
        venv = VENV_CACHE / key
        if (venv / ".complete").exists() and not fresh:
            print(f"  sparktop{label or ' (this tree)'}: venv {venv} (cached)", file=sys.stderr)
            return Build(label, venv)
        shutil.rmtree(venv, ignore_errors=True)
        print(f"  sparktop{label or ' (this tree)'}: wheel and venv {venv} ...", file=sys.stderr)
        wheels = Path(tmp) / "wheels"
        pip_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(src)],
                       check=True, env=pip_env)  # fmt: skip
        wheel = next(wheels.glob("sparktop-*.whl"))
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=pip_env)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"{wheel}[web]"], check=True, env=pip_env)
        (venv / ".complete").write_text(f"{wheel.name}\n")
    return Build(label, venv)


# -- the rows -----------------------------------------------------------------------------------------------


@dataclass
class Tool:
    name: str
    argv: list[str]
    # Every pattern must be on screen at once: text drawn only from real data, not the empty layout.
    markers: list[str]
    env: dict[str, str] = field(default_factory=dict)
    ours: bool = False
    # Filled in by the run.
    session: str = ""
    launched_at: float = 0.0
    first_frame_s: float | None = None
    root_pid: int | None = None
    died: str | None = None
    cpu_pct: float | None = None
    rss_start_mib: float | None = None
    rss_mib: float | None = None
    procs: int = 0
    alone_s: list[float] = field(default_factory=list)


MINIMAL = "textual minimal"


def make_tools(builds: list[Build], btop_config_home: Path, minimal_script: Path) -> list[Tool]:
    # sparktop's full frame: the budget bar's title with figures, its state in words and the pressure panel.
    spark_markers = [
        r"(Memory pool|Pool) \d",
        r"(under safe|over safe|OVER AGGRESSIVE)",
        r"PSI some|available",
    ]
    tools = [Tool(MINIMAL, [builds[-1].python, str(minimal_script)], [r"minimal textual app: ready"])]
    for build in builds:
        tools.append(
            Tool(
                f"sparktop demo{build.label}",
                [build.sparktop, "--demo", "--interval", "1"],
                spark_markers,
                ours=True,
            )
        )
        tools.append(
            Tool(f"sparktop live{build.label}", [build.sparktop, "--interval", "1"], spark_markers, ours=True)
        )
    return [
        *tools,
        Tool("htop", ["htop", "-d", "10"], [r"Tasks: \d", r"Load average: \d", r"PID USER"]),
        Tool(
            "btop",
            ["btop", "--utf-force"],
            [r"Pid:", r"Total:\s+[\d.]+", r"\d+/\d+"],
            env={"XDG_CONFIG_HOME": str(btop_config_home)},
        ),
        Tool("glances", ["glances", "-t", "1"], [r"TASKS\s*\d", r"CPU%", r"LOAD"]),
    ]


# -- /proc --------------------------------------------------------------------------------------------------


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        ppid = int(raw[raw.rindex(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def process_tree(root: int) -> list[int]:
    kids = _children_map()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def cpu_ticks(pid: int) -> int:
    """utime+stime of the process (all threads) plus cutime+cstime (its children already reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0
    # fields[0] is the state (field 3); utime..cstime are fields 14..17.
    return sum(int(x) for x in fields[11:15])


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0  # kernel threads and exited processes have none


def tree_ticks(root: int) -> dict[int, int]:
    return {pid: cpu_ticks(pid) for pid in process_tree(root)}


def tree_cpu_delta(before: dict[int, int], after: dict[int, int]) -> int:
    """Ticks spent between two samples; a process that exited in between is in its parent's cutime."""
    return sum(ticks - before.get(pid, 0) for pid, ticks in after.items())


# -- tmux ---------------------------------------------------------------------------------------------------


class Tmux:
    """A private tmux server (its own socket, no user config) so cleaning up kills only what we started."""

    def __init__(self) -> None:
        self.socket = f"sparktop-bench-{os.getpid()}"
        self.started = False
        self.socket_path = ""

    def __call__(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True, check=False
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:1])}: {proc.stderr.strip() or proc.returncode}")
        return proc.stdout

    def start(self, width: int, height: int) -> None:
        # A placeholder session keeps the server up and lets us set options before the tools start.
        self("new-session", "-d", "-s", "_bench", "-x", str(width), "-y", str(height), "sleep 100000")
        self.started = True
        self.socket_path = self("display-message", "-p", "#{socket_path}", check=False).strip()
        self("set-option", "-g", "remain-on-exit", "on")  # keep a crashed tool's last words for the report
        self("set-option", "-g", "default-terminal", "tmux-256color")

    def launch(self, session: str, argv: list[str], env: dict[str, str], width: int, height: int) -> None:
        env_args = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
        cmd = " ".join(_shell_quote(a) for a in argv)
        self(
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            str(width),
            "-y",
            str(height),
            "-c",
            RUN_DIR,
            *env_args,
            cmd,
        )

    def capture(self, session: str) -> str:
        return self("capture-pane", "-p", "-t", session, check=False)

    def pane(self, session: str) -> tuple[int | None, bool]:
        out = self("list-panes", "-t", session, "-F", "#{pane_pid} #{pane_dead}", check=False).split()
        if len(out) < 2:
            return None, True
        return int(out[0]), out[1] == "1"

    def server_pid(self) -> int | None:
        out = self("display-message", "-p", "#{pid}", check=False).strip()
        return int(out) if out.isdigit() else None

    def kill_session(self, session: str) -> None:
        pid, _dead = self.pane(session)
        self("kill-session", "-t", session, check=False)
        if pid is not None:
            _kill_tree(pid)

    def kill_server(self) -> None:
        if self.started:
            self("kill-server", check=False)
            self.started = False
        if self.socket_path:  # tmux leaves the socket file behind
            with contextlib.suppress(OSError):
                os.unlink(self.socket_path)


def _shell_quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w./=:,+-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


# -- part 1: side by side; part 2: first frame alone --------------------------------------------------------


def wait_first_frames(tmux: Tmux, tools: list[Tool]) -> None:
    pending = {t.name: t for t in tools}
    patterns = {t.name: [re.compile(m) for m in t.markers] for t in tools}
    deadline = time.perf_counter() + FIRST_FRAME_TIMEOUT_S
    while pending and time.perf_counter() < deadline:
        for tool in list(pending.values()):
            screen = tmux.capture(tool.session)
            if all(p.search(screen) for p in patterns[tool.name]):
                tool.first_frame_s = time.perf_counter() - tool.launched_at
                del pending[tool.name]
        time.sleep(POLL_S)
    for tool in pending.values():
        _pid, dead = tmux.pane(tool.session)
        if dead:
            tool.died = _last_words(tmux.capture(tool.session))


def _last_words(screen: str) -> str:
    lines = [ln.strip() for ln in screen.splitlines() if ln.strip() and "Pane is dead" not in ln]
    return (lines[-1] if lines else "exited")[:100]


def _tree_rss_mib(root: int) -> float:
    return sum(rss_kib(pid) for pid in process_tree(root)) / 1024


def run_compare(tools: list[Tool], seconds: float, settle: float, width: int, height: int) -> float | None:
    """Start every tool at once, measure; returns the tmux server's CPU % (it draws every pane)."""
    tmux = Tmux()
    try:
        tmux.start(width, height)
        for i, tool in enumerate(tools):
            tool.session = f"t{i}"
            tool.launched_at = time.perf_counter()
            tmux.launch(tool.session, tool.argv, tool.env, width, height)
        for tool in tools:
            tool.root_pid, _dead = tmux.pane(tool.session)
        wait_first_frames(tmux, tools)
        time.sleep(settle)  # steady state: imports and the first layout are not what a running top costs
        live = [t for t in tools if t.root_pid is not None and not tmux.pane(t.session)[1]]
        server = tmux.server_pid()
        before = {t.name: tree_ticks(t.root_pid) for t in live if t.root_pid}
        for tool in live:
            assert tool.root_pid is not None
            tool.rss_start_mib = _tree_rss_mib(tool.root_pid)
        server_before = cpu_ticks(server) if server else 0
        t0 = time.perf_counter()
        _wait(seconds, "side by side")
        elapsed = time.perf_counter() - t0
        for tool in live:
            assert tool.root_pid is not None
            after = tree_ticks(tool.root_pid)
            if tmux.pane(tool.session)[1]:
                tool.died = _last_words(tmux.capture(tool.session))
                continue
            tool.cpu_pct = 100 * tree_cpu_delta(before[tool.name], after) / CLK_TCK / elapsed
            tool.rss_mib = sum(rss_kib(pid) for pid in after) / 1024
            tool.procs = len(after)
        server_cpu = 100 * (cpu_ticks(server) - server_before) / CLK_TCK / elapsed if server else None
        return server_cpu
    finally:
        tmux.kill_server()
        for tool in tools:  # a tool that ignored SIGHUP from the closing pane
            if tool.root_pid is not None:
                _kill_tree(tool.root_pid)


def _wait(seconds: float, what: str) -> None:
    end = time.perf_counter() + seconds
    while (now := time.perf_counter()) < end:
        print(f"\r  {what}: {end - now:4.0f} s left ", end="", file=sys.stderr, flush=True)
        time.sleep(min(1.0, end - now))
    print("\r" + " " * 40 + "\r", end="", file=sys.stderr, flush=True)


def run_alone(tools: list[Tool], runs: int, width: int, height: int) -> None:
    """Each tool by itself, `runs` times, interleaved (a load spike hits one run of each, not one tool)."""
    tmux = Tmux()
    try:
        tmux.start(width, height)
        n = 0
        for run in range(runs):
            for tool in tools:
                print(f"\r  alone: run {run + 1}/{runs} {tool.name:28}", end="", file=sys.stderr, flush=True)
                probe = Tool(tool.name, tool.argv, tool.markers, tool.env)
                probe.session = f"a{n}"
                n += 1
                probe.launched_at = time.perf_counter()
                tmux.launch(probe.session, probe.argv, probe.env, width, height)
                wait_first_frames(tmux, [probe])
                if probe.first_frame_s is not None:
                    tool.alone_s.append(probe.first_frame_s)
                tmux.kill_session(probe.session)
                time.sleep(0.3)  # let it go before the next starts
        print("\r" + " " * 60 + "\r", end="", file=sys.stderr, flush=True)
    finally:
        tmux.kill_server()


def _kill_tree(root: int) -> None:
    for pid in process_tree(root):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _alone(tool: Tool) -> str:
    if not tool.alone_s:
        return "—"
    med = statistics.median(tool.alone_s)
    if len(tool.alone_s) == 1:
        return f"{med:.2f}"
    return f"{med:.2f} ({min(tool.alone_s):.2f}–{max(tool.alone_s):.2f})"


def verdict(tool: Tool, minimal_alone: float | None, btop_cpu: float | None) -> str:
    if not tool.ours:
        return ""
    if tool.died or tool.cpu_pct is None or tool.rss_mib is None:
        return "FAIL (did not run)"
    misses = []
    cpu_goal = GOAL_CPU_PCT if btop_cpu is None else min(GOAL_CPU_PCT, GOAL_CPU_VS_BTOP * btop_cpu)
    if tool.cpu_pct > cpu_goal:
        misses.append("cpu")
    if tool.rss_mib > GOAL_RSS_MIB:
        misses.append("rss")
    alone = _median(tool.alone_s)
    if alone is None or minimal_alone is None or alone > GOAL_FIRST_FRAME_RATIO * minimal_alone:
        misses.append("first frame")
    return "PASS" if not misses else f"FAIL ({', '.join(misses)})"


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]], left: tuple[int, ...] = (0,)) -> None:
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for n, row in enumerate(table):
        cells = (
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        print("  " + "  ".join(cells).rstrip())
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))


def print_compare(
    tools: list[Tool],
    seconds: float,
    server_cpu: float | None,
    width: int,
    height: int,
    load: str,
    compared: bool = True,
) -> None:
    """The table of parts 1 and 2 (`compared` False: part 2 only, its columns filled)."""
    print(
        f"\nSide by side, started together, {width}×{height} tmux each, {seconds:g} s in steady state, "
        f"1 s refresh; {os.cpu_count()} CPUs, {load}"
    )
    minimal = next((t for t in tools if t.name == MINIMAL), None)
    minimal_alone = _median(minimal.alone_s) if minimal else None
    btop = next((t for t in tools if t.name == "btop"), None)
    btop_cpu = btop.cpu_pct if btop else None
    rows = []
    for t in tools:
        alone = _median(t.alone_s)
        ratio = f"{alone / minimal_alone:.2f}×" if alone is not None and minimal_alone else "—"
        rows.append(
            (
                t.name,
                _fmt(t.cpu_pct, ".2f"),
                _fmt(t.rss_start_mib, ".1f"),
                _fmt(t.rss_mib, ".1f"),
                str(t.procs) if t.procs else "—",
                _fmt(t.first_frame_s, ".2f")
                if t.first_frame_s is not None or not compared
                else f">{FIRST_FRAME_TIMEOUT_S:g}",
                _alone(t),
                ratio if t.alone_s else "—",
                verdict(t, minimal_alone, btop_cpu) if compared else "",
            )
        )
    header = ("tool", "CPU % core", "RSS MiB start", "RSS MiB end", "procs", "1st frame s together",
              "1st frame s alone", "÷ minimal", "goal")  # fmt: skip
    _table(header, rows, left=(0, 8))
    for t in tools:
        if t.died:
            print(f"  {t.name} exited: {t.died}")
    if server_cpu is not None:
        print(f"  (the tmux server drawing all {len(tools)} panes used {server_cpu:.2f} % of a core on top)")
    print(
        f"  goals: CPU ≤ {GOAL_CPU_PCT:g} % and ≤ {GOAL_CPU_VS_BTOP:g}× btop's; RSS ≤ {GOAL_RSS_MIB:g} MiB "
        f"(after 10 minutes: --seconds 600); first frame alone ≤ {GOAL_FIRST_FRAME_RATIO:g}× the minimal "
        "Textual app's."
    )
    print(
        "  CPU: utime+stime (+ reaped children) of the whole process tree; RSS: VmRSS summed over the tree,"
    )
    print("  at the start and the end of the window. 1st frame: launch to the first capture with data on it")
    print("  (polled every 20 ms); alone: median (range) of the runs, one tool at a time.")


# -- part 3: --once, serve, web -----------------------------------------------------------------------------


@dataclass
class CommandFigures:
    label: str
    once_s: list[float] = field(default_factory=list)
    once_peak_mib: list[float] = field(default_factory=list)
    serve_ready_s: float | None = None
    serve_cpu_pct: float | None = None
    serve_rss_mib: float | None = None
    scrape_ms: float | None = None
    scrape_bytes: int | None = None
    serve_rss_after_scrape_mib: float | None = None
    web_cpu_pct: float | None = None
    web_rss_mib: float | None = None
    web_procs: int = 0
    problems: list[str] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tool_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}


def run_once(build: Build, figures: CommandFigures, runs: int) -> None:
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen([build.sparktop, "--once"], cwd=RUN_DIR, env=_tool_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err = (proc.stderr.read().decode() if proc.stderr else "").strip()
            figures.problems.append(f"--once exited {proc.returncode}: {err[-200:]}")
            return
        figures.once_s.append(time.perf_counter() - t0)
        figures.once_peak_mib.append(usage.ru_maxrss / 1024)


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _port_open(port: int) -> bool:
    with socket.socket() as probe, contextlib.suppress(OSError):
        probe.settimeout(1)
        probe.connect(("127.0.0.1", port))
        return True
    return False


def run_commands(builds: list[Build], seconds: float, settle: float, once_runs: int) -> list[CommandFigures]:
    """`--once` for each build, one after the other; then every build's `serve` and `web` started together,
    idle over the same window, then one scrape of each `serve`."""
    figures = [CommandFigures(b.label) for b in builds]
    for build, figs in zip(builds, figures, strict=True):
        print(f"\r  --once{build.label} ...", end="", file=sys.stderr, flush=True)
        run_once(build, figs, once_runs)
    procs: list[tuple[CommandFigures, str, subprocess.Popen[bytes], int]] = []
    try:
        for build, figs in zip(builds, figures, strict=True):
            serve_port, web_port = _free_port(), _free_port()
            for kind, argv, port in (
                ("serve", [build.sparktop, "serve", "--listen", f"127.0.0.1:{serve_port}"], serve_port),
                ("web", [build.sparktop, "web", "--port", str(web_port)], web_port),
            ):
                proc = subprocess.Popen(argv, cwd=RUN_DIR, env=_tool_env(), stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
                procs.append((figs, kind, proc, port))
        t0 = time.perf_counter()
        deadline = t0 + FIRST_FRAME_TIMEOUT_S
        waiting = list(procs)
        while waiting and time.perf_counter() < deadline:
            for item in list(waiting):
                figs, kind, proc, port = item
                if proc.poll() is not None:
                    figs.problems.append(f"{kind} exited {proc.returncode} at start")
                    waiting.remove(item)
                elif (kind == "serve" and _http_ok(f"http://127.0.0.1:{port}/healthz")) or (
                    kind == "web" and _port_open(port)
                ):
                    if kind == "serve":
                        figs.serve_ready_s = time.perf_counter() - t0
                    waiting.remove(item)
            time.sleep(0.05)
        for figs, kind, _proc, _port in waiting:
            figs.problems.append(f"{kind} not ready in {FIRST_FRAME_TIMEOUT_S:g} s")
        running = [p for p in procs if p[2].poll() is None]
        time.sleep(settle)
        before = {id(p[2]): tree_ticks(p[2].pid) for p in running}
        start = time.perf_counter()
        _wait(seconds, "serve and web, idle")
        elapsed = time.perf_counter() - start
        for figs, kind, proc, port in running:
            after = tree_ticks(proc.pid)
            cpu = 100 * tree_cpu_delta(before[id(proc)], after) / CLK_TCK / elapsed
            rss = sum(rss_kib(pid) for pid in after) / 1024
            if kind == "serve":
                figs.serve_cpu_pct, figs.serve_rss_mib = cpu, rss
                t0 = time.perf_counter()
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
                        figs.scrape_bytes = len(resp.read())
                    figs.scrape_ms = 1000 * (time.perf_counter() - t0)
                except OSError as exc:
                    figs.problems.append(f"scrape failed: {exc}")
                figs.serve_rss_after_scrape_mib = _tree_rss_mib(proc.pid)
            else:
                figs.web_cpu_pct, figs.web_rss_mib, figs.web_procs = cpu, rss, len(after)
    finally:
        for _figs, _kind, proc, _port in procs:
            _kill_tree(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
    return figures


def print_commands(figures: list[CommandFigures], seconds: float, load: str) -> None:
    print(f"\nCommands ({load}): --once one after the other; serve and web all started together, idle "
          f"{seconds:g} s")  # fmt: skip
    rows = []
    for f in figures:
        once = _median(f.once_s)
        peak = _median(f.once_peak_mib)
        rows.append(
            (
                f"sparktop{f.label or ' (this tree)'}",
                _fmt(once, ".2f"),
                _fmt(peak, ".1f"),
                _fmt(f.serve_ready_s, ".2f"),
                _fmt(f.serve_cpu_pct, ".2f"),
                _fmt(f.serve_rss_mib, ".1f"),
                _fmt(f.scrape_ms, ".1f"),
                _fmt(f.serve_rss_after_scrape_mib, ".1f"),
                _fmt(f.web_cpu_pct, ".2f"),
                _fmt(f.web_rss_mib, ".1f"),
            )
        )
    header = ("build", "--once s", "--once peak MiB", "serve ready s", "serve CPU %", "serve RSS MiB",
              "1 scrape ms", "RSS after scrape", "web CPU %", "web RSS MiB")  # fmt: skip
    _table(header, rows)
    print(f"  goal: serve ≤ {GOAL_SERVE_RSS_MIB:g} MiB. web: the parent (its sampler and private exporter)"
          " with no browser session.")  # fmt: skip
    for f in figures:
        for problem in f.problems:
            print(f"  sparktop{f.label}: {problem}")


# -- part 2: an hour of ticks, headless ---------------------------------------------------------------------


def self_rss_mib() -> float:
    return rss_kib(os.getpid()) / 1024


async def drive_headless(ticks: int, checkpoints: list[int], width: int, height: int) -> None:
    """In a fresh interpreter: the app with its timer off, fed demo snapshots one by one, painting each."""
    # The installed sparktop (a build's venv runs this script); a build from before the house move (issue 30)
    # has the demo source at its old place.
    try:
        from sparktop.sources.demo import DemoSource
    except ImportError:
        from sparktop.collect.demo import DemoSource  # type: ignore[attr-defined, no-redef]
    from sparktop.settings.config import Config
    from sparktop.ui.app import SparktopApp

    app = SparktopApp(DemoSource(), Config(), auto_refresh=False)
    async with app.run_test(size=(width, height)) as pilot:
        await pilot.pause()
        t0 = time.perf_counter()

        def report(tick: int) -> None:
            history = app.session.history
            line = {
                "tick": tick,
                "rss_mib": self_rss_mib(),
                "history_points": len(history),
                "history_kib": history.nbytes() / 1024,
                "elapsed_s": time.perf_counter() - t0,
            }
            print(json.dumps(line), flush=True)

        if 0 in checkpoints:
            report(0)
        for tick in range(1, ticks + 1):
            await app.refresh_once()
            await pilot.pause()  # let the compositor paint this tick, as a live app would
            if tick in checkpoints:
                report(tick)


def run_hour(python: str, ticks: int, width: int, height: int) -> list[dict]:
    checkpoints = sorted({c for c in HOUR_CHECKPOINTS if c <= ticks} | {ticks})
    cmd = [
        python,
        str(Path(__file__).resolve()),
        "--_drive-headless",
        str(ticks),
        "--_checkpoints",
        ",".join(map(str, checkpoints)),
        "--size",
        f"{width}x{height}",
    ]
    proc = subprocess.Popen(cmd, cwd=RUN_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows: list[dict] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            rows.append(row)
            print(f"\r  headless: tick {row['tick']}/{ticks} ", end="", file=sys.stderr, flush=True)
        print("\r" + " " * 40 + "\r", end="", file=sys.stderr, flush=True)
        proc.wait()
        if proc.returncode != 0:
            err = (proc.stderr.read() if proc.stderr else "").strip().splitlines()
            print(f"  headless driver failed ({proc.returncode}): {err[-1] if err else ''}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return rows


def print_hour(label: str, rows: list[dict], width: int, height: int) -> None:
    print(
        f"\n{label}: RSS over an hour of ticks at 1 s (headless {width}×{height}, demo snapshots fed as fast "
        "as the app paints them)"
    )
    if not rows:
        print("  no figures (see the error above)")
        return
    header = ("ticks", "RSS MiB", "Δ from 0", "history points", "history KiB", "wall s")
    base = rows[0]["rss_mib"]
    table = [header] + [
        (
            f"{r['tick']:,}",
            f"{r['rss_mib']:.1f}",
            f"{r['rss_mib'] - base:+.1f}",
            f"{r['history_points']:,}",
            f"{r['history_kib']:.0f}",
            f"{r['elapsed_s']:.0f}",
        )
        for r in rows
    ]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for n, row in enumerate(table):
        print("  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))
    if len(rows) >= 2 and rows[-1]["tick"] > 0:
        per = (rows[-1]["elapsed_s"]) / rows[-1]["tick"] * 1000
        print(f"  {per:.1f} ms of wall time per tick (sample + ingest + render + paint), headless.")


# -- before → after -----------------------------------------------------------------------------------------


def print_before_after(
    tools: list[Tool], commands: list[CommandFigures], hours: dict[str, list[dict]], before: str
) -> None:
    """Every sparktop figure of the --before build beside the tree's, from this one run."""
    label = f"@{before}"
    by_name = {t.name: t for t in tools}
    rows: list[tuple[str, str, str]] = []

    def pair(what: str, old: float | None, new: float | None, spec: str) -> None:
        if old is not None or new is not None:
            rows.append((what, _fmt(old, spec), _fmt(new, spec)))

    for kind in ("demo", "live"):
        old, new = by_name.get(f"sparktop {kind}{label}"), by_name.get(f"sparktop {kind}")
        if old is None or new is None:
            continue
        pair(f"{kind}: CPU % of a core", old.cpu_pct, new.cpu_pct, ".2f")
        pair(f"{kind}: RSS MiB at the end", old.rss_mib, new.rss_mib, ".1f")
        pair(f"{kind}: first frame s, together", old.first_frame_s, new.first_frame_s, ".2f")
        pair(f"{kind}: first frame s, alone (median)", _median(old.alone_s), _median(new.alone_s), ".2f")
    old_cmd = next((c for c in commands if c.label == label), None)
    new_cmd = next((c for c in commands if c.label == ""), None)
    if old_cmd and new_cmd:
        pair("--once s", _median(old_cmd.once_s), _median(new_cmd.once_s), ".2f")
        pair("--once peak RSS MiB", _median(old_cmd.once_peak_mib), _median(new_cmd.once_peak_mib), ".1f")
        pair("serve: idle CPU %", old_cmd.serve_cpu_pct, new_cmd.serve_cpu_pct, ".2f")
        pair("serve: RSS MiB", old_cmd.serve_rss_mib, new_cmd.serve_rss_mib, ".1f")
        pair("serve: one scrape ms", old_cmd.scrape_ms, new_cmd.scrape_ms, ".1f")
        pair("web parent: idle CPU %", old_cmd.web_cpu_pct, new_cmd.web_cpu_pct, ".2f")
        pair("web parent: RSS MiB", old_cmd.web_rss_mib, new_cmd.web_rss_mib, ".1f")
    old_hour, new_hour = hours.get(label), hours.get("")
    if old_hour and new_hour:
        pair("headless: RSS MiB at tick 0", old_hour[0]["rss_mib"], new_hour[0]["rss_mib"], ".1f")
        pair(f"headless: RSS MiB at tick {old_hour[-1]['tick']:,}", old_hour[-1]["rss_mib"],
             new_hour[-1]["rss_mib"], ".1f")  # fmt: skip
    if not rows:
        return
    print(f"\nBefore → after, this run ({before} → this tree)")
    _table(("figure", "before", "after"), rows)


# -- main ---------------------------------------------------------------------------------------------------


def _size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)x(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"size must look like 120x36, not {text!r}")
    return int(m.group(1)), int(m.group(2))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", metavar="REV", help="also install this commit and print before → after")
    parser.add_argument("--seconds", type=float, default=60.0, help="measurement windows (default 60)")
    parser.add_argument(
        "--settle", type=float, default=3.0, help="seconds after the first frames (default 3)"
    )
    parser.add_argument("--runs", type=int, default=3, help="first frames alone per row (default 3)")
    parser.add_argument(
        "--ticks", type=int, default=3600, help="headless ticks for the RSS part (default 3600)"
    )
    parser.add_argument("--size", type=_size, default=(120, 36), help="terminal size (default 120x36)")
    parser.add_argument("--tools", help="comma list of rows to run (default all)")
    parser.add_argument("--skip-compare", action="store_true", help="no side-by-side part")
    parser.add_argument("--skip-alone", action="store_true", help="no first frames alone")
    parser.add_argument("--skip-commands", action="store_true", help="no --once, serve, web")
    parser.add_argument("--skip-hour", action="store_true", help="no headless hour of ticks")
    parser.add_argument("--fresh", action="store_true", help="rebuild the venvs even if cached")
    parser.add_argument("--_drive-headless", type=int, dest="drive", help=argparse.SUPPRESS)
    parser.add_argument("--_checkpoints", dest="checkpoints", default="", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.seconds <= 0 or opts.settle < 0 or opts.ticks < 1 or opts.runs < 1:
        parser.error("--seconds, --runs and --ticks must be greater than 0, --settle not negative")
    return opts


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (5 min {five:.2f})"


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    width, height = opts.size
    if opts.drive is not None:
        checkpoints = [int(c) for c in opts.checkpoints.split(",") if c]
        asyncio.run(drive_headless(opts.drive, checkpoints, width, height))
        return 0
    # SIGTERM cleans up the way Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    # As a user runs it: bytecode is written and read (the tmux server hands its environment to the tools).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.pop("PYTHONPATH", None)
    if shutil.which("tmux") is None and not (opts.skip_compare and opts.skip_alone):
        print("bench_dashboard: tmux is not installed (apt-get install -y tmux)", file=sys.stderr)
        return 2
    try:
        with tempfile.TemporaryDirectory(prefix="sparktop-bench-") as tmp:
            builds = [install(opts.before, opts.fresh)] if opts.before else []
            builds.append(install(None, opts.fresh))
            btop_home = Path(tmp)
            (btop_home / "btop").mkdir()
            (btop_home / "btop" / "btop.conf").write_text("update_ms = 1000\n")
            minimal = btop_home / "minimal_textual_app.py"
            minimal.write_text(MINIMAL_APP)
            tools = make_tools(builds, btop_home, minimal)
            if opts.tools:
                wanted = {w.strip() for w in opts.tools.split(",")}
                unknown = wanted - {t.name for t in tools}
                if unknown:
                    print(f"bench_dashboard: unknown tools {sorted(unknown)}; choose from "
                          f"{[t.name for t in tools]}", file=sys.stderr)  # fmt: skip
                    return 2
                tools = [t for t in tools if t.name in wanted]
            missing = [t.name for t in tools if shutil.which(t.argv[0]) is None]
            if missing:
                print(f"  not installed, left out: {', '.join(missing)}", file=sys.stderr)
                tools = [t for t in tools if t.name not in missing]
            print(f"bench_dashboard: {os.cpu_count()} CPUs, {_load()} at the start; sparktop installed from "
                  f"wheels ({', '.join(str(b.venv) for b in builds)})")  # fmt: skip
            server_cpu = None
            if not opts.skip_compare:
                server_cpu = run_compare(tools, opts.seconds, opts.settle, width, height)
            load_compare = _load()
            if not opts.skip_alone:
                run_alone(tools, opts.runs, width, height)
            if not (opts.skip_compare and opts.skip_alone):
                compared = not opts.skip_compare
                print_compare(tools, opts.seconds, server_cpu, width, height, load_compare, compared)
            commands: list[CommandFigures] = []
            if not opts.skip_commands:
                commands = run_commands(builds, opts.seconds, opts.settle, opts.runs)
                print_commands(commands, opts.seconds, _load())
            hours: dict[str, list[dict]] = {}
            if not opts.skip_hour:
                for build in builds:
                    hours[build.label] = run_hour(build.python, opts.ticks, width, height)
                    print_hour(f"sparktop{build.label or ' (this tree)'}", hours[build.label], width, height)
            if opts.before:
                print_before_after(tools, commands, hours, opts.before)
            print(f"\n  {_load()} at the end")
    except KeyboardInterrupt:
        print("\nbench_dashboard: interrupted; tmux sessions and processes cleaned up", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(RUN_DIR, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
