"""The headless commands record footprints too, and say so when they cannot (issue 23.3, issue 25.5).

The exporter's first tick runs on the main thread and the rest on its sampling thread: the store must be
usable from both. A database that cannot be written reaches stderr, /healthz and /metrics."""

from __future__ import annotations

import json
import re
import sqlite3
import time
import urllib.request
from pathlib import Path

import pytest

from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.footprints.store import FootprintCollector, FootprintStore
from sparktop.session.runner import SessionRunner
from sparktop.session.session import Session
from sparktop.sources.live import LiveSource
from tests.fixtures.serving import serve_in_process
from tests.fixtures.sources import NoGpu
from tests.fixtures.trees import CgroupTree, ProcTree

GIB = 1024**3


class ShiftedClock:
    """Wall time plus an offset the test moves: the store's 30-s flush falls due when the test says."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def machine(tmp_path: Path) -> tuple[ProcTree, CgroupTree]:
    proc = ProcTree(tmp_path / "proc")
    proc.add(4242, "trainer", cmdline=["python3", "train.py"], rss_pages=(2 * GIB) // 4096)  # up for years
    return proc, CgroupTree(tmp_path / "cgroup", version=2)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def rows(path: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT kind, name, peak_bytes FROM footprint").fetchall()


def test_the_exporter_writes_footprints_from_its_sampling_thread(tmp_path):
    """As `serve` and `web` run it: the store is opened by the first tick on the main thread, and written by
    the sampling thread once its flush falls due."""
    proc, cg = machine(tmp_path)
    clock = ShiftedClock()
    db = tmp_path / "state" / "footprints.sqlite3"
    store = FootprintStore(db, clock=clock)
    source = LiveSource(proc.root, cg.root, nvml=NoGpu(), docker=None, collectors=[FootprintCollector(store)])
    said: list[str] = []
    loop = SamplingLoop(source, 0.05, 80 * GIB, 100 * GIB, warn=said.append)
    server = ExporterServer(loop, "127.0.0.1", 0)
    loop.step()  # serve_cli: the first scrape already has data
    loop.start()
    server.start()
    try:
        clock.offset = 60.0  # the flush is due: the next tick, on the sampling thread, writes
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not rows(db):
            time.sleep(0.05)
        assert rows(db) == [("process", "trainer", 2 * GIB)]
        snapshot = json.loads(get(f"{server.url}/snapshot.json")[1])
        assert [s for s in snapshot["services"] if s["collector"] == "footprints"] == []
        health = json.loads(get(f"{server.url}/healthz")[1])
        assert health["status"] == "ok" and health["problems"] == []
        metrics = get(f"{server.url}/metrics")[1]
        assert re.search(r"^sparktop_footprints_errors(\{[^}]*\})? 0\.0$", metrics, re.M)
        assert said == []
    finally:
        server.shutdown()
        loop.stop()
        store.close()


def test_the_guard_runner_says_once_when_the_database_is_corrupt(tmp_path):
    proc, cg = machine(tmp_path)
    db = tmp_path / "footprints.sqlite3"
    db.write_bytes(b"not a database" * 100)
    store = FootprintStore(db)
    source = LiveSource(proc.root, cg.root, nvml=NoGpu(), docker=None, collectors=[FootprintCollector(store)])
    said: list[str] = []
    runner = SessionRunner(source, Session(), 0.05, on_error=said.append)
    for _ in range(3):
        runner.tick()
    assert len(said) == 1 and "corrupt" in said[0] and str(db) in said[0]
    source.close()


@pytest.mark.parametrize("damage", ["corrupt", "symlink"])
def test_sparktop_serve_says_on_stderr_healthz_and_metrics_when_the_database_cannot_be_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """`sparktop serve` on this machine (in this process: what it serves and says is the point), with a state
    dir whose database cannot be used."""
    state = tmp_path / "xdg" / "sparktop"
    state.mkdir(parents=True, mode=0o700)
    db = state / "footprints.sqlite3"
    if damage == "corrupt":
        db.write_bytes(b"not a database" * 100)
    else:
        (tmp_path / "elsewhere").mkdir()
        db.symlink_to(tmp_path / "elsewhere" / "footprints.sqlite3")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))

    def degraded(url: str) -> tuple[dict, str]:
        deadline = time.monotonic() + 20
        health: dict = {}
        while time.monotonic() < deadline:
            health = json.loads(get(f"{url}/healthz")[1])
            if health.get("problems"):
                break
            time.sleep(0.1)
        return health, get(f"{url}/metrics")[1]

    result, (health, metrics) = serve_in_process(["--interval", "0.2"], degraded)
    assert health["status"] == "degraded", health
    assert "footprints" in health["problems"][0] and str(db) in health["problems"][0]
    assert re.search(r"^sparktop_footprints_errors(\{[^}]*\})? 1\.0$", metrics, re.M), metrics
    lines = [line for line in result.stderr.splitlines() if "footprints" in line]
    assert len(lines) == 1 and lines[0].startswith("sparktop serve: measured footprints:"), result.stderr
    if damage == "symlink":
        assert "symbolic link" in lines[0]
        assert not (tmp_path / "elsewhere" / "footprints.sqlite3").exists()  # nothing created through it
