"""The measured-footprint store on a real SQLite file: two writer processes, a corrupt file, a locked file,
a read-only state directory — the dashboard side keeps running and says so."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import pytest

from sparktop.core.snapshot import (
    Accounting,
    CgroupMemory,
    Consumer,
    ContainerInfo,
    GpuReport,
    HostMemory,
    ProcessInfo,
    ServedModel,
    ServiceReport,
    Snapshot,
)
from sparktop.footprints.store import FootprintCollector, FootprintStore, observe
from tests.fixtures.load import wall_limit
from tests.fixtures.recordings import write_first_footprints_file

GIB = 1024**3


class Clock:
    def __init__(self, now: float = 1_795_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_peaks_survive_a_restart_and_only_grow(tmp_path):
    clock = Clock()
    path = tmp_path / "state" / "footprints.sqlite3"
    store = FootprintStore(path, clock=clock)
    store.record("container", "vllm-qwen", 40 * GIB)
    clock.now += 60
    store.record("container", "vllm-qwen", 46 * GIB)
    peak_time = clock.now
    clock.now += 60
    store.record("container", "vllm-qwen", 30 * GIB)
    store.close()

    again = FootprintStore(path, clock=clock)
    fp = again.peak("container", "vllm-qwen")
    assert fp is not None and fp.peak_bytes == 46 * GIB and fp.peak_at == peak_time
    assert again.status is None
    again.close()


def test_bounded_size_drops_the_longest_unseen(tmp_path):
    clock = Clock()
    store = FootprintStore(tmp_path / "f.sqlite3", max_rows=10, clock=clock)
    for i in range(25):
        clock.now += 1
        store.record("process", f"p{i}", GIB)
    store.flush()
    rows = sqlite3.connect(tmp_path / "f.sqlite3").execute("SELECT name FROM footprint").fetchall()
    assert sorted(int(n[1:]) for (n,) in rows) == list(range(15, 25))


WRITERS = """
import os, sys, traceback
from pathlib import Path
from sparktop.footprints.store import FootprintStore

def write(path, offset):
    store = FootprintStore(path, flush_s=0)
    for i in range(200):
        for name in ("a", "b", "c"):
            store.record("model", name, 1000 + i * 10 + offset)
        store.flush()
        assert store.status is None or "locked" in store.status, store.status
    store.close()
    print(store.status or "ok", flush=True)

def fork(job):
    pid = os.fork()
    if pid == 0:
        try:
            job()
            code = 0
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return pid

def late(path, opened, go):
    # opened before the others write, so it knows no peak of theirs; then it writes a lower one
    store = FootprintStore(path, flush_s=0)
    os.write(opened, b"x")
    os.read(go, 1)
    store.record("model", "a", 1500)
    store.flush()
    store.close()
    print(store.status or "ok", flush=True)

path = Path(sys.argv[1])
opened_r, opened_w = os.pipe()
go_r, go_w = os.pipe()
pids = [fork(lambda: late(path, opened_w, go_r))]
os.read(opened_r, 1)
# the import once, then a process per writer, forked at once: both write together
pids += [fork(lambda offset=offset: write(path, offset)) for offset in (0, 5)]
statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids[1:]]
os.write(go_w, b"x")
statuses.append(os.waitstatus_to_exitcode(os.waitpid(pids[0], 0)[1]))
sys.exit(1 if any(statuses) else 0)
"""


def test_two_processes_writing_at_once_keep_the_highest_peak(tmp_path):
    """Two processes, each with its own connection, writing the same rows at once, and a third that opened
    the file before them writing a lower peak after them: the file keeps the highest (forked from one
    interpreter: its imports cost ~0.3 s a process, and a fresh interpreter is not the point)."""
    path = tmp_path / "shared.sqlite3"
    FootprintStore(path).close()  # create it, so both writers open an existing WAL database
    done = subprocess.run(
        [sys.executable, "-c", WRITERS, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 3, (done.stdout, done.stderr)
    store = FootprintStore(path)
    assert {f.name: f.peak_bytes for f in store.all()} == {"a": 1000 + 1990 + 5, "b": 2995, "c": 2995}
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


def test_corrupt_file_is_reported_and_peaks_kept_in_memory(tmp_path):
    path = tmp_path / "footprints.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    store = FootprintStore(path)
    assert store.status is not None and "corrupt" in store.status and str(path) in store.status
    store.record("container", "x", GIB)
    store.flush()  # no file to write: must not raise
    assert store.peak("container", "x").peak_bytes == GIB
    assert path.read_bytes().startswith(b"this is not sqlite")  # the user's file is left alone
    store.close()


def test_locked_file_delays_the_write_then_it_lands(tmp_path):
    path = tmp_path / "footprints.sqlite3"
    store = FootprintStore(path, flush_s=0)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another instance in the middle of a write
    store.record("container", "x", 3 * GIB)
    started = time.perf_counter()
    store.flush()
    # a short busy timeout: the tick is not held (sqlite's default waits 5 s)
    assert time.perf_counter() - started < wall_limit(1.0, defect=5.0)
    assert store.status is not None and "locked" in store.status
    other.execute("ROLLBACK")
    other.close()
    store.flush()
    assert store.status is None
    assert sqlite3.connect(path).execute("SELECT peak_bytes FROM footprint").fetchone() == (3 * GIB,)
    store.close()


@pytest.fixture
def read_only_dir(tmp_path):
    target = tmp_path / "ro"
    target.mkdir()
    if os.geteuid() == 0:  # root ignores permission bits: a read-only mount is the real thing
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(target)])
        assert mounted.returncode == 0, "cannot mount a read-only tmpfs (the tests run as root, as in CI)"
        yield target
        subprocess.run(["umount", str(target)], check=True)
    else:
        target.chmod(0o555)
        yield target
        target.chmod(0o755)


def test_read_only_state_directory(read_only_dir):
    store = FootprintStore(read_only_dir / "sparktop" / "footprints.sqlite3")
    assert store.status is not None and "for this session only" in store.status
    collector = FootprintCollector(store)
    snap = Snapshot(
        timestamp=time.time(), memory=HostMemory(total=1, available=1, free=1), gpu=GpuReport(available=False)
    )
    (report,) = collector.collect(snap)
    assert report.collector == "footprints" and "footprints" in report.error
    collector.close()


def test_observe_records_containers_models_and_long_running_processes(tmp_path):
    now = 1_795_000_000.0
    store = FootprintStore(tmp_path / "f.sqlite3", clock=Clock(now))
    cid = "a" * 64
    snap = Snapshot(
        timestamp=now,
        memory=HostMemory(total=120 * GIB, available=60 * GIB, free=50 * GIB),
        gpu=GpuReport(available=False),
        containers=[
            ContainerInfo(
                id=cid,
                name="vllm-qwen",
                image="vllm/vllm-openai:v0.11.0",
                memory=CgroupMemory(usage=5 * GIB, working_set=4 * GIB),
            )
        ],
        processes=[
            ProcessInfo(pid=10, name="python3", rss=2 * GIB, start_time=now - 3600),
            ProcessInfo(pid=11, name="cc1plus", rss=GIB, start_time=now - 20),
            ProcessInfo(
                pid=12, name="ollama", user="ollama", rss=GIB, gpu_bytes=43 * GIB, start_time=now - 3600
            ),
        ],
        accounting=Accounting(
            used=60 * GIB,
            consumers=[
                Consumer(
                    key=f"container:{cid}",
                    label="vllm-qwen",
                    kind="container",
                    cpu_bytes=4 * GIB,
                    gpu_bytes=40 * GIB,
                ),
                Consumer(
                    key="process:10:1794996400", label="python3 (10)", kind="process", cpu_bytes=2 * GIB
                ),
                Consumer(key="process:11:1794999980", label="cc1plus (11)", kind="process", cpu_bytes=GIB),
            ],
        ),
        services=[
            ServiceReport(
                collector="servers",
                server="ollama",
                models=[ServedModel(name="llama3.1:70b", gpu_bytes=43 * GIB, cpu_bytes=0)],
                owner="process:12:1794996400",  # the server process below holds the model's memory
            )
        ],
    )
    observe(store, snap)
    assert store.peak("container", "vllm-qwen").peak_bytes == 44 * GIB
    assert store.peak("image", "vllm/vllm-openai:v0.11.0").peak_bytes == 44 * GIB
    assert store.peak("model", "ollama:llama3.1:70b").peak_bytes == 43 * GIB
    assert store.peak("model", "ollama:llama3.1:70b").owner == "ollama (pid 12, user ollama)"
    assert store.peak("process", "python3").peak_bytes == 2 * GIB
    assert store.peak("process", "cc1plus") is None  # 20 s old: not a workload yet
    store.close()


def test_a_file_from_an_older_sparktop_gets_the_owner_columns(tmp_path):
    path = tmp_path / "footprints.sqlite3"
    write_first_footprints_file(path, "ollama:x")
    store = FootprintStore(path, flush_s=0, clock=Clock())
    old = store.peak("model", "ollama:x")
    assert old is not None and old.owner is None and old.first_seen is None and store.status is None
    store.record("model", "ollama:x", 9, "ollama (pid 1, user root)")
    store.flush()
    store.close()
    again = FootprintStore(path).peak("model", "ollama:x")
    assert again is not None and (again.peak_bytes, again.owner) == (9, "ollama (pid 1, user root)")


def test_observe_without_accounting_uses_the_raw_readings(tmp_path):
    """An add-on collector sees the snapshot before the session accounts it."""
    now = 1_795_000_000.0
    store = FootprintStore(tmp_path / "f.sqlite3", clock=Clock(now))
    snap = Snapshot(
        timestamp=now,
        memory=HostMemory(total=120 * GIB, available=60 * GIB, free=50 * GIB),
        gpu=GpuReport(available=False),
        containers=[
            ContainerInfo(id="b" * 64, name="train", memory=CgroupMemory(usage=5 * GIB, working_set=4 * GIB),
                          gpu_bytes=12 * GIB)
        ],
        processes=[ProcessInfo(pid=10, name="python3", rss=2 * GIB, gpu_bytes=GIB, start_time=now - 3600)],
    )  # fmt: skip
    observe(store, snap)
    assert store.peak("container", "train").peak_bytes == 16 * GIB
    assert store.peak("process", "python3").peak_bytes == 3 * GIB
    store.close()
