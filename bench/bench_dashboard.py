"""The dashboard's own cost, side by side with htop, btop and glances, all started together in one run:

- every tool runs in its own tmux session (120×36 by default) on a private tmux server, so they share the
  machine's conditions; sparktop twice: on the demo source and live on this machine;
- time from launch to the first full frame (`tmux capture-pane` polled every ~20 ms until a marker that only
  appears once data is drawn is on screen);
- CPU % of one core over `--seconds` (default 60) in steady state, from /proc/PID/stat utime+stime (+ reaped
  children) deltas summed over each tool's process tree; RSS (MiB, VmRSS summed over the tree) at the end;
- then "RSS after an hour of ticks at 1 s": the app headless (Textual `run_test`) in a fresh interpreter, fed
  3,600 demo snapshots as fast as it paints them, RSS at 0, 600, 1,800 and 3,600 ticks.

Run as root here: `python bench/bench_dashboard.py`. Options: --seconds, --ticks, --size WxH, --skip-compare,
--skip-hour, --tools (a comma list of row names). Every tmux session and process it started is cleaned up at
the end, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
POLL_S = 0.02
FIRST_FRAME_TIMEOUT_S = 20.0

# Goals for sparktop (from the issue); the other tools' CPU as measured earlier on this machine.
GOAL_CPU_PCT = 1.5
GOAL_RSS_MIB = 80.0
GOAL_FIRST_FRAME_S = 1.0
ISSUE_CPU_PCT = {"htop": 0.23, "btop": 0.47, "glances": 1.67}
HOUR_CHECKPOINTS = (0, 600, 1800, 3600)


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
    rss_mib: float | None = None
    procs: int = 0


def make_tools(btop_config_home: Path) -> list[Tool]:
    py = sys.executable
    # sparktop's full frame: the budget bar's title with figures, its state in words and the pressure panel.
    spark_markers = [
        r"(Memory pool|Pool) \d",
        r"(under safe|over safe|OVER AGGRESSIVE)",
        r"PSI some|available",
    ]
    return [
        Tool(
            "sparktop demo",
            [py, "-m", "sparktop", "--demo", "--interval", "1"],
            spark_markers,
            ours=True,
        ),
        Tool("sparktop live", [py, "-m", "sparktop", "--interval", "1"], spark_markers, ours=True),
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
            str(REPO),
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

    def kill_server(self) -> None:
        if self.started:
            self("kill-server", check=False)
            self.started = False
        if self.socket_path:  # tmux leaves the socket file behind
            with contextlib.suppress(OSError):
                os.unlink(self.socket_path)


def _shell_quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w./=:,+-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


# -- part 1: side by side -----------------------------------------------------------------------------------


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
        server_before = cpu_ticks(server) if server else 0
        t0 = time.perf_counter()
        end = t0 + seconds
        while (now := time.perf_counter()) < end:
            print(f"\r  measuring: {end - now:4.0f} s left ", end="", file=sys.stderr, flush=True)
            time.sleep(min(1.0, end - now))
        print("\r" + " " * 30 + "\r", end="", file=sys.stderr, flush=True)
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


def _kill_tree(root: int) -> None:
    for pid in process_tree(root):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def verdict(tool: Tool) -> str:
    if not tool.ours:
        return ""
    if tool.died or tool.cpu_pct is None or tool.rss_mib is None:
        return "FAIL (did not run)"
    misses = []
    if tool.cpu_pct > GOAL_CPU_PCT:
        misses.append("cpu")
    if tool.rss_mib >= GOAL_RSS_MIB:
        misses.append("rss")
    if tool.first_frame_s is None or tool.first_frame_s >= GOAL_FIRST_FRAME_S:
        misses.append("first frame")
    return "PASS" if not misses else f"FAIL ({', '.join(misses)})"


def print_compare(
    tools: list[Tool], seconds: float, server_cpu: float | None, width: int, height: int
) -> None:
    print(
        f"\nSide by side, started together, {width}×{height} tmux each, {seconds:g} s in steady state, "
        f"1 s refresh; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    goal = f"≤ {GOAL_CPU_PCT:g} % · < {GOAL_RSS_MIB:g} MiB · < {GOAL_FIRST_FRAME_S:g} s"
    header = ("tool", "CPU % core", "issue fig.", "RSS MiB", "procs", "1st frame s", "goal", "result")
    rows = [header]
    for t in tools:
        rows.append(
            (
                t.name,
                _fmt(t.cpu_pct, ".2f"),
                _fmt(ISSUE_CPU_PCT.get(t.name), ".2f"),
                _fmt(t.rss_mib, ".1f"),
                str(t.procs) if t.procs else "—",
                _fmt(t.first_frame_s, ".2f")
                if t.first_frame_s is not None
                else ">" + f"{FIRST_FRAME_TIMEOUT_S:g}",
                goal if t.ours else "",
                verdict(t),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for n, row in enumerate(rows):
        print(
            "  "
            + "  ".join(
                c.ljust(w) if i in (0, 6, 7) else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))
    for t in tools:
        if t.died:
            print(f"  {t.name} exited: {t.died}")
    if server_cpu is not None:
        print(f"  (the tmux server drawing all {len(tools)} panes used {server_cpu:.2f} % of a core on top)")
    print(
        "  CPU: utime+stime (+ reaped children) of the whole process tree; RSS: VmRSS summed over the tree."
    )
    print(
        "  1st frame: launch to the first capture with data drawn on it (polled every 20 ms, all tools "
        "starting at once on this machine)."
    )


# -- part 2: an hour of ticks, headless ---------------------------------------------------------------------


def self_rss_mib() -> float:
    return rss_kib(os.getpid()) / 1024


async def drive_headless(ticks: int, checkpoints: list[int], width: int, height: int) -> None:
    """In a fresh interpreter: the app with its timer off, fed demo snapshots one by one, painting each."""
    sys.path.insert(0, str(REPO))
    from sparktop.settings.config import Config
    from sparktop.sources.demo import DemoSource
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


def run_hour(ticks: int, width: int, height: int) -> list[dict]:
    checkpoints = sorted({c for c in HOUR_CHECKPOINTS if c <= ticks} | {ticks})
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--_drive-headless",
        str(ticks),
        "--_checkpoints",
        ",".join(map(str, checkpoints)),
        "--size",
        f"{width}x{height}",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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


def print_hour(rows: list[dict], width: int, height: int) -> None:
    print(
        f"\nRSS after an hour of ticks at 1 s (headless {width}×{height}, demo snapshots fed as fast as "
        "the app paints them)"
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


# -- main ---------------------------------------------------------------------------------------------------


def _size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)x(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"size must look like 120x36, not {text!r}")
    return int(m.group(1)), int(m.group(2))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measurement window (default 60)")
    parser.add_argument(
        "--settle", type=float, default=3.0, help="seconds after the first frames (default 3)"
    )
    parser.add_argument(
        "--ticks", type=int, default=3600, help="headless ticks for the RSS part (default 3600)"
    )
    parser.add_argument("--size", type=_size, default=(120, 36), help="terminal size (default 120x36)")
    parser.add_argument("--tools", help="comma list of rows to run (default all)")
    parser.add_argument("--skip-compare", action="store_true", help="only the headless RSS part")
    parser.add_argument("--skip-hour", action="store_true", help="only the side-by-side part")
    parser.add_argument("--_drive-headless", type=int, dest="drive", help=argparse.SUPPRESS)
    parser.add_argument("--_checkpoints", dest="checkpoints", default="", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.seconds <= 0 or opts.settle < 0 or opts.ticks < 1:
        parser.error("--seconds and --ticks must be greater than 0, --settle not negative")
    return opts


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


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
    if not opts.skip_compare and shutil.which("tmux") is None:
        print("bench_dashboard: tmux is not installed (apt-get install -y tmux)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sparktop-bench-") as tmp:
        btop_home = Path(tmp)
        (btop_home / "btop").mkdir()
        (btop_home / "btop" / "btop.conf").write_text("update_ms = 1000\n")
        tools = make_tools(btop_home)
        if opts.tools:
            wanted = {w.strip() for w in opts.tools.split(",")}
            unknown = wanted - {t.name for t in tools}
            if unknown:
                print(
                    f"bench_dashboard: unknown tools {sorted(unknown)}; choose from "
                    f"{[t.name for t in tools]}",
                    file=sys.stderr,
                )
                return 2
            tools = [t for t in tools if t.name in wanted]
        missing = [t.name for t in tools if shutil.which(t.argv[0]) is None]
        if missing:
            print(f"  not installed, left out: {', '.join(missing)}", file=sys.stderr)
            tools = [t for t in tools if t.name not in missing]
        try:
            if not opts.skip_compare:
                server_cpu = run_compare(tools, opts.seconds, opts.settle, width, height)
                print_compare(tools, opts.seconds, server_cpu, width, height)
            if not opts.skip_hour:
                print_hour(run_hour(opts.ticks, width, height), width, height)
        except KeyboardInterrupt:
            print("\nbench_dashboard: interrupted; tmux sessions and processes cleaned up", file=sys.stderr)
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
