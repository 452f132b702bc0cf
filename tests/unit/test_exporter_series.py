"""Series churn: over a machine whose processes come and go with new pids, the exporter's consumer series stay
bounded by what a user can name (a process name, "other host processes"), not by every pid that ever ran.

The machine is real collectors on fixture trees: `LiveSource` over a fixture /proc, NVML through the real
pynvml with the GPU's answers given at the C library boundary (its process list churns with the workers).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sparktop.collect.nvml import NvmlCollector
from sparktop.core.snapshot import GB
from sparktop.exporter.metrics import ExportOptions
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.sources.live import LiveSource
from tests.fixtures.sources import NoDocker
from tests.fixtures.trees import MIB, CgroupTree, ProcTree, meminfo_text
from tests.unit.fake_nvml import FakeNvml, gb10, install_nvml

PAGE = 4096
STEADY = {100: ("postgres", 2048), 101: ("python3", 1536), 102: ("ollama", 1024), 103: ("Xorg", 200),
          104: ("gnome-shell", 300)}  # fmt: skip
HELPERS = ("sh", "git", "grep")  # short-lived and small: they end up in "other host processes"
TICKS = 20
CONSUMER_SERIES = (
    "sparktop_consumer_cpu_bytes",
    "sparktop_consumer_gpu_bytes",
    "sparktop_consumer_processes",
)


@dataclass
class ChurningMachine:
    """Steady processes, three `node` workers and two `python3` workers replaced by new pids every tick (each
    worker holding GPU memory), and 2-8 small helpers that come and go."""

    proc: ProcTree
    nvml: FakeNvml
    pids: Iterator[int] = field(default_factory=lambda: itertools.count(1000))
    churning: list[int] = field(default_factory=list)

    def tick(self, n: int) -> None:
        for pid in self.churning:
            self.proc.remove(pid)
        self.churning = []
        workers = [("node", 500), ("node", 450), ("node", 400), ("python3", 350), ("python3", 320)]
        helpers = [(HELPERS[i % len(HELPERS)], 1) for i in range(2 + n % 7)]
        gpu: list[tuple[int, int]] = []
        for name, mib in workers + helpers:
            pid = next(self.pids)
            self.proc.add(pid, name, rss_pages=mib * MIB // PAGE, starttime=1000 + pid)
            self.churning.append(pid)
            if mib >= 100:
                gpu.append((pid, 256 * MIB))
        self.nvml.gpus[0].compute = gpu


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ChurningMachine, LiveSource]]:
    fake = FakeNvml([gb10(compute=[], graphics=[])])
    install_nvml(monkeypatch, fake)
    # 28 GiB used of 128: room for every process's RSS and GPU memory, so none is trimmed off "other"
    proc = ProcTree(
        tmp_path / "proc", meminfo=meminfo_text(total_kb=128 * 1024**2, available_kb=100 * 1024**2)
    )
    for pid, (name, mib) in STEADY.items():
        proc.add(pid, name, rss_pages=mib * MIB // PAGE)
    cgroup = CgroupTree(tmp_path / "cgroup", version=2)
    nvml = NvmlCollector(retry_interval=0)
    source = LiveSource(proc.root, cgroup.root, nvml=nvml, docker=NoDocker(), collectors=[])
    try:
        yield ChurningMachine(proc, fake), source
    finally:
        source.close()


Series = tuple[str, frozenset[tuple[str, str]]]


def _run(
    machine: ChurningMachine, source: LiveSource, options: ExportOptions, ticks: int = TICKS
) -> list[tuple[set[Series], dict[str, float]]]:
    """Each tick's consumer series (name, labels) and its `other host processes` figures."""
    loop = SamplingLoop(source, 1.0, 80 * GB, 100 * GB)
    registry = ExporterServer(loop, "127.0.0.1", 0, options).app.registry
    out = []
    for n in range(ticks):
        machine.tick(n)
        state = loop.step()
        assert state is not None and state.snapshot.accounting is not None
        series: set[Series] = set()
        figures: dict[str, float] = {}
        for family in text_string_to_metric_families(generate_latest(registry).decode()):
            for sample in family.samples:
                if sample.name in CONSUMER_SERIES:
                    series.add((sample.name, frozenset(sample.labels.items())))
                    if sample.labels["kind"] == "host-other":
                        figures[sample.name] = sample.value
        (other,) = [c for c in state.snapshot.accounting.consumers if c.kind == "host-other"]
        figures["shown"] = float(re.fullmatch(r"other host processes \((\d+)\)", other.label)[1])  # type: ignore[index]
        out.append((series, figures))
    return out


def test_consumer_series_are_bounded_by_names_not_pids(machine: tuple[ChurningMachine, LiveSource]) -> None:
    ticks = _run(*machine, ExportOptions())
    seen: set[Series] = set().union(*(series for series, _ in ticks))
    at_once = max(len(series) for series, _ in ticks)
    consumers = {dict(labels)["consumer"] for _, labels in seen}
    # 100 worker pids and ~100 helper pids ran; the series are the names a user can give.
    assert consumers <= {name for name, _ in STEADY.values()} | {"node", "other host processes"}
    assert all("pid" not in dict(labels) for _, labels in seen)
    assert len(seen) <= at_once + 3, f"{len(seen)} distinct series, {at_once} at most at once"
    # after the first ticks no series is new: the set does not grow with the pids
    assert set().union(*(series for series, _ in ticks[8:])) <= set().union(*(s for s, _ in ticks[:8]))
    for _, figures in ticks:
        # how many processes "other host processes" holds is a value, the figure the dashboard shows
        assert figures["sparktop_consumer_processes"] == figures["shown"] >= 2
        assert figures["sparktop_consumer_cpu_bytes"] > 0


def test_processes_of_one_name_are_one_series(machine: tuple[ChurningMachine, LiveSource]) -> None:
    churning, source = machine
    churning.tick(0)
    loop = SamplingLoop(source, 1.0, 80 * GB, 100 * GB)
    state = loop.step()
    assert state is not None and state.snapshot.accounting is not None
    text = generate_latest(ExporterServer(loop, "127.0.0.1", 0).app.registry).decode()
    got = {
        (s.name, s.labels["consumer"]): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name in CONSUMER_SERIES
    }
    named = [c for c in state.snapshot.accounting.consumers if c.kind == "process"]
    nodes = [c for c in named if c.label.startswith("node (")]
    assert len(nodes) == 3  # three node workers among the top processes: one series, their sum
    assert got["sparktop_consumer_processes", "node"] == 3
    assert got["sparktop_consumer_cpu_bytes", "node"] == sum(c.cpu_bytes for c in nodes)
    assert got["sparktop_consumer_gpu_bytes", "node"] == sum(c.gpu_bytes for c in nodes) == 3 * 256 * MIB


def test_per_pid_series_only_when_asked(machine: tuple[ChurningMachine, LiveSource]) -> None:
    ticks = _run(*machine, ExportOptions(consumer_pids=True), ticks=6)
    seen: set[Series] = set().union(*(series for series, _ in ticks))
    processes = [dict(labels) for _, labels in seen if dict(labels)["kind"] == "process"]
    assert processes and all(p["pid"].isdigit() and p["consumer"] == p["process"] for p in processes)
    # one series per worker pid: the churn the default avoids, on request
    assert len({p["pid"] for p in processes}) > 6 * 3
