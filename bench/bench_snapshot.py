"""Snapshot cost on this machine with 1,000 extra processes and 20 running containers, side by side:

- sparktop's whole live tick (`LiveSource.sample()` plus `Session.ingest`: accounting, history), and its
  process scan alone;
- `psutil.process_iter` over the same per-process fields (and with the cgroup file read too, which
  psutil lacks);
- bare reads of each process's statm/stat/cgroup files (the floor for any per-process scan in Python);
- container memory of the 20 containers from their cgroup files (sparktop) vs the Docker stats API;
- the collector's own RSS over 1,000 ticks with process churn (it must not grow without bound).

Run as root (it starts a private dockerd, as the integration tests do): `python bench/bench_snapshot.py`.
Options: --procs N, --containers N, --ticks N, --reps N, --stats-containers N (how many containers to
time the stats API on).

`--scan-cpu` measures only the process scan's CPU, without Docker: `ProcessScanner().scan()` of the working
tree and, with `--before REV`, of that commit (`git archive`), each in a fresh interpreter, rounds
alternating which goes first; CPU ms a scan is `time.process_time` over `--scans` scans (200) after one warm
scan, with the machine's own processes and again with `--idle` (400) extra sleeping processes, as on a
busy Spark.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from sparktop.collect.cgroups import CgroupFS  # noqa: E402
from sparktop.collect.docker import DockerDiscovery  # noqa: E402
from sparktop.collect.processes import ProcessScanner  # noqa: E402
from sparktop.session.session import Session  # noqa: E402
from sparktop.sources.live import LiveSource  # noqa: E402
from tests.integration.engine import DockerEngine, unique_name  # noqa: E402

PSUTIL_FIELDS = ["pid", "ppid", "name", "cmdline", "username", "memory_info", "cpu_times", "create_time"]


def timed(fn: Callable[[], object], reps: int) -> list[float]:
    fn()  # warm caches the way a running dashboard has them warm
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def psutil_scan(with_cgroup: bool) -> None:
    for proc in psutil.process_iter(PSUTIL_FIELDS):
        if with_cgroup:
            try:
                with open(f"/proc/{proc.pid}/cgroup", "rb") as fh:
                    fh.read()
            except OSError:
                pass


def bare_reads() -> None:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        for name in ("statm", "stat", "cgroup"):
            try:
                with open(f"/proc/{entry}/{name}", "rb") as fh:
                    fh.read()
            except OSError:
                pass


def spawn(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen(["sleep", "3600"]) for _ in range(n)]


def reap(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


RSS_CHILD = """
import sys, time
sys.path.insert(0, {repo!r})
from sparktop.sources.live import LiveSource
from sparktop.collect.docker import DockerDiscovery
src = LiveSource(docker=DockerDiscovery(base_url={url!r}))
def rss():
    with open('/proc/self/statm') as fh:
        return int(fh.read().split()[1]) * 4096
for tick in range(1, {ticks} + 1):
    src.sample()
    if tick in (1, 10, 100, {ticks} // 2, {ticks}):
        print(tick, rss(), flush=True)
    time.sleep({pause})
"""


def rss_under_churn(url: str, ticks: int) -> list[tuple[int, int]]:
    """Run the collector in a child process for `ticks` ticks while 20 processes die and 20 are born
    every tick, and read its own RSS along the way."""
    child = subprocess.Popen(
        [sys.executable, "-c", RSS_CHILD.format(repo=str(REPO), url=url, ticks=ticks, pause=0.005)],
        stdout=subprocess.PIPE,
    )
    churn: list[subprocess.Popen[bytes]] = spawn(20)
    readings = []
    assert child.stdout is not None
    os.set_blocking(child.stdout.fileno(), False)
    buf = b""
    while child.poll() is None:
        reap(churn)
        churn = spawn(20)
        buf += child.stdout.read() or b""  # non-blocking: None when nothing is ready
        time.sleep(0.02)
    buf += child.stdout.read() or b""
    reap(churn)
    for line in buf.decode().splitlines():
        tick, rss = line.split()
        readings.append((int(tick), int(rss)))
    return readings


SCAN_CHILD = """
import os, sys, time
from sparktop.collect import processes
assert processes.__file__.startswith({tree!r}), processes.__file__
scanner = processes.ProcessScanner()
scanner.scan()  # the first scan reads every command line, user and cgroup: not what a tick costs
count = sum(1 for e in os.listdir("/proc") if e.isdigit())
t0 = time.process_time()
for _ in range({scans}):
    scanner.scan()
print(count, (time.process_time() - t0) * 1000 / {scans})
"""


def source_tree(rev: str, dest: Path) -> str:
    """The files of commit `rev` under `dest`; returns its short hash."""
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "--verify", f"{rev}^{{commit}}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", sha], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return sha


def scan_once(tree: Path, scans: int) -> tuple[int, float]:
    """(processes on the machine, CPU ms a scan) of `tree`'s ProcessScanner, in a fresh interpreter."""
    # `-c` puts the working directory first on the path, before the editable install's finder (last)
    out = subprocess.run(
        [sys.executable, "-c", SCAN_CHILD.format(tree=str(tree), scans=scans)],
        cwd=tree, stdout=subprocess.PIPE, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return int(out[0]), float(out[1])


def scan_cpu(before: str | None, idle: int, scans: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="sparktop-bench-scan-") as tmp:
        trees = {"this tree": REPO}
        if before is not None:
            dest = Path(tmp) / "before"
            dest.mkdir()
            trees[f"{before} ({source_tree(before, dest)})"] = dest
        print(f"\nprocess scan, CPU ms a scan ({scans} scans, {rounds} rounds, {os.cpu_count()} CPUs)")
        print("| processes | tree | ms a scan, each round | median | µs a process |")
        print("|---|---|---|---|---|")
        for extra in (0, idle):
            sleepers = spawn(extra)
            try:
                time.sleep(0.5)
                runs: dict[str, list[tuple[int, float]]] = {name: [] for name in trees}
                for r in range(rounds):
                    order = list(trees) if r % 2 == 0 else list(reversed(trees))
                    for name in order:
                        runs[name].append(scan_once(trees[name], scans))
            finally:
                reap(sleepers)
            for name, got in runs.items():
                count = round(statistics.median(c for c, _ in got))
                ms = [m for _, m in got]
                med = statistics.median(ms)
                print(
                    f"| {count} | {name} | {', '.join(f'{m:.2f}' for m in ms)} | {med:.2f} |"
                    f" {med * 1000 / count:.1f} |"
                )


def row(name: str, samples: list[float], note: str = "") -> str:
    med = statistics.median(samples)
    p90 = sorted(samples)[int(0.9 * (len(samples) - 1))]
    return f"| {name:<52} | {med:9.2f} | {p90:9.2f} | {note} |"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--procs", type=int, default=1000)
    parser.add_argument("--containers", type=int, default=20)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--ticks", type=int, default=1000)
    parser.add_argument("--stats-containers", type=int, default=20)
    parser.add_argument("--scan-cpu", action="store_true", help="only the process scan's CPU (no Docker)")
    parser.add_argument("--before", metavar="REV", help="with --scan-cpu: that commit's scanner beside")
    parser.add_argument("--idle", type=int, default=400, help="with --scan-cpu: extra sleeping processes")
    parser.add_argument("--scans", type=int, default=200, help="with --scan-cpu: scans timed a round")
    parser.add_argument("--rounds", type=int, default=5, help="with --scan-cpu: rounds, order alternating")
    args = parser.parse_args()
    if args.scan_cpu:
        scan_cpu(args.before, args.idle, args.scans, args.rounds)
        return 0

    with DockerEngine() as engine:
        engine.start()
        containers = [
            engine.run(
                unique_name("bench"),
                "sh -c 'head -c 20000000 /dev/zero > /dev/shm/x; sleep 3600'",
                shm_size="64m",
                labels={"com.docker.compose.project": "bench", "com.docker.compose.service": f"svc{i}"},
            )
            for i in range(args.containers)
        ]
        extra = spawn(args.procs)
        try:
            time.sleep(1.0)
            nprocs = sum(1 for e in os.listdir("/proc") if e.isdigit())
            source = LiveSource(docker=DockerDiscovery(base_url=engine.socket_url))
            session = Session()
            snap = session.ingest(source.sample())
            seen = sum(1 for c in snap.containers if c.id in {k.id for k in containers})
            scanner = ProcessScanner()
            cgfs = CgroupFS()
            paths = [c.cgroup_path for c in snap.containers if c.cgroup_path and c.memory]

            results = [
                row(
                    "sparktop: whole live tick (LiveSource.sample + Session.ingest)",
                    timed(lambda: session.ingest(source.sample()), args.reps),
                ),
                row("sparktop: process scan alone (ProcessScanner.scan)", timed(scanner.scan, args.reps)),
                row("psutil.process_iter, same fields", timed(lambda: psutil_scan(False), args.reps)),
                row(
                    "psutil.process_iter, same fields + cgroup file",
                    timed(lambda: psutil_scan(True), args.reps),
                ),
                row("bare reads of statm/stat/cgroup (floor)", timed(bare_reads, args.reps)),
                row(
                    f"sparktop: memory of {len(paths)} containers (cgroup files)",
                    timed(lambda: [cgfs.memory(p) for p in paths], args.reps),
                ),
            ]
            n_stats = min(args.stats_containers, len(containers))
            t0 = time.perf_counter()
            for container in containers[:n_stats]:
                container.stats(stream=False)
            stats_ms = (time.perf_counter() - t0) * 1000
            results.append(
                f"| {'Docker stats API, ' + str(n_stats) + ' containers, one pass':<52} | {stats_ms:9.0f} |"
                f" {'':>9} | sequential, one call each |"
            )
            source.close()

            print(
                f"\nmachine: {os.cpu_count()} cores, {nprocs} processes, "
                f"{seen}/{args.containers} containers seen"
            )
            print(f"| {'what (ms per tick)':<52} | {'median':>9} | {'p90':>9} | note |")
            print(f"|{'-' * 54}|{'-' * 11}|{'-' * 11}|------|")
            for line in results:
                print(line)

            readings = rss_under_churn(engine.socket_url, args.ticks)
            print(f"\ncollector RSS over {args.ticks} ticks, 20 processes replaced every tick:")
            print("| tick | RSS MiB |")
            print("|------|---------|")
            for tick, rss in readings:
                print(f"| {tick:>4} | {rss / 2**20:7.1f} |")
        finally:
            reap(extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
