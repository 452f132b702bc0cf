"""On a discrete GPU (an H100: NVML reports device memory) the GPU memory of each process and container is
shown against the GPU's own memory, and sparktop says what kind of machine it is on (issue 12 item 7).

The live collector runs for real on fixture /proc and cgroup trees, with the real pynvml answering from a
fake libnvidia-ml at the C boundary (fake_nvml.py): the H100's answers, a process holding 10.78 GB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktop.collect.nvml import NvmlCollector
from sparktop.commands.dashboard import summarize
from sparktop.core.snapshot import Snapshot
from sparktop.session.session import Session
from sparktop.sources.live import LiveSource
from sparktop.sources.snapshot_source import SnapshotSource
from tests.fixtures.machine import META, B, build_machine
from tests.fixtures.sources import FakeDocker
from tests.unit.fake_nvml import GIB, MIB, FakeNvml, gb10, h100, install_nvml

HOLDER_PID = 5000
HOLDER_BYTES = 10_780_000_000  # what the H100 in issue 12 reported for the process
OLLAMA_PID = 2001  # in container B ("ollama")
UNSEEN_PID = 99_999


@pytest.fixture
def nvml(monkeypatch):
    """Install a fake libnvidia-ml for the real pynvml; the collector is closed afterwards."""
    collectors: list[NvmlCollector] = []

    def make(fake: FakeNvml) -> NvmlCollector:
        install_nvml(monkeypatch, fake)
        collectors.append(NvmlCollector(retry_interval=0))
        return collectors[-1]

    yield make
    for collector in collectors:
        collector.close()


def snapshot_with(tmp_path: Path, collector: NvmlCollector) -> Snapshot:
    proc, cg, _ = build_machine(tmp_path, 2)
    # A small host process holding GPU memory: smaller in RAM than the twenty workers, so only its GPU
    # memory can get it named.
    proc.add(HOLDER_PID, "python", cmdline=["python", "serve.py"], rss_pages=1000, pss_kb=4000)
    source = LiveSource(proc_root=proc.root, cgroup_root=cg.root, nvml=collector, docker=FakeDocker(META))
    return Session().ingest(source.sample())  # the session accounts it


def h100_holding() -> FakeNvml:
    processes = [(HOLDER_PID, HOLDER_BYTES), (OLLAMA_PID, 20 * GIB), (UNSEEN_PID, 1 * GIB)]
    used = HOLDER_BYTES + 21 * GIB + 512 * MIB  # the driver keeps half a GiB no process explains
    return FakeNvml([h100(compute=processes, memory=(80 * GIB, used))])


def test_the_process_holding_gpu_memory_shows_it(tmp_path: Path, nvml) -> None:
    snapshot = snapshot_with(tmp_path, nvml(h100_holding()))
    assert snapshot.gpu.memory_kind == "discrete"
    acct = snapshot.accounting
    assert acct is not None
    consumers = {c.label: c for c in acct.consumers}
    holder = consumers[f"python ({HOLDER_PID})"]
    assert holder.device_gpu_bytes == HOLDER_BYTES
    assert holder.gpu_bytes == 0 and holder.total == holder.cpu_bytes  # not in the host pool
    ollama = next(c for c in acct.consumers if c.key == f"container:{B}")
    assert ollama.device_gpu_bytes == 20 * GIB and ollama.gpu_bytes == 0
    # The host pool still adds up to `used`, without the GPU's memory.
    assert sum(c.total for c in acct.consumers) + acct.unattributed == snapshot.memory.used


def test_gpu_memory_is_accounted_against_the_gpus_own_memory(tmp_path: Path, nvml) -> None:
    snapshot = snapshot_with(tmp_path, nvml(h100_holding()))
    assert snapshot.accounting is not None
    [device] = snapshot.accounting.gpu_memory
    assert (device.index, device.name, device.total) == (0, "NVIDIA H100 80GB HBM3", 80 * GIB)
    assert device.used == HOLDER_BYTES + 21 * GIB + 512 * MIB
    shares = {s.label: s.nbytes for s in device.shares}
    assert shares == {"ollama": 20 * GIB, f"python ({HOLDER_PID})": HOLDER_BYTES,
                      "processes not seen in /proc": 1 * GIB}  # fmt: skip
    assert device.other == 512 * MIB
    assert device.free == 80 * GIB - device.used


def test_once_says_discrete_and_shows_the_holders_gpu_memory(tmp_path: Path, nvml) -> None:
    snapshot = snapshot_with(tmp_path, nvml(h100_holding()))
    text = summarize(snapshot)
    assert "machine discrete GPU (NVIDIA H100 80GB HBM3) with 80.0 GiB of its own memory" in text
    holder_line = next(line for line in text.splitlines() if line.startswith(f"  python ({HOLDER_PID})"))
    # the fake driver has no utilisation sample for it: its kernels ran 0 % of the time
    assert holder_line.rstrip().endswith("gpu   10.0 GiB  sm   0 %"), holder_line
    assert "gpu0   memory 31.5 GiB of 80.0 GiB used: ollama 20.0 GiB, python (5000) 10.0 GiB" in text
    document = json.loads(snapshot.model_dump_json())
    assert document["gpu"]["memory_kind"] == "discrete"
    assert document["accounting"]["gpu_memory"][0]["total"] == 80 * GIB


def test_a_spark_stays_one_pool(tmp_path: Path, nvml) -> None:
    fake = FakeNvml([gb10(compute=[(HOLDER_PID, HOLDER_BYTES), (OLLAMA_PID, 20 * GIB)], graphics=[])])
    snapshot = snapshot_with(tmp_path, nvml(fake))
    assert snapshot.gpu.memory_kind == "unified"
    acct = snapshot.accounting
    assert acct is not None and acct.gpu_memory == []
    holder = next(c for c in acct.consumers if c.label == f"python ({HOLDER_PID})")
    assert (holder.gpu_bytes, holder.device_gpu_bytes) == (HOLDER_BYTES, 0)  # in the pool
    assert "machine unified memory (NVIDIA GB10): GPU allocations come out of the host memory pool" in (
        summarize(snapshot)
    )


def test_no_gpu_is_said_too(tmp_path: Path, nvml) -> None:
    snapshot = snapshot_with(tmp_path, nvml(FakeNvml([])))
    assert snapshot.gpu.memory_kind == "no-gpu"
    assert "machine no NVIDIA GPU: host memory only" in summarize(snapshot)


def test_the_demos_discrete_box_looks_like_an_h100() -> None:
    from sparktop.sources.demo import DemoSource

    source, session = DemoSource("discrete"), Session()
    for _ in range(10):
        snapshot = session.ingest(source.sample())
        (gpu,) = snapshot.gpu.gpus
        assert (gpu.name, gpu.unified_memory) == ("NVIDIA H100 80GB HBM3", False)
        assert gpu.memory_total == 81_559 * MIB
        held = sum(p.used_bytes or 0 for p in gpu.processes)
        assert gpu.memory_used is not None and gpu.memory_used == held + 530 * MIB
        acct = snapshot.accounting
        assert acct is not None and acct.gpu_outside_pool == held
        # Host memory holds no GPU allocation: the pool's parts are CPU sides only, and still add up.
        assert all(c.gpu_bytes == 0 for c in acct.consumers)
        assert sum(c.total for c in acct.consumers) + acct.unattributed == snapshot.memory.used


def test_the_exporter_serves_each_holders_memory_on_a_discrete_gpu(tmp_path: Path, nvml) -> None:
    # On a real H100 `sparktop serve` gave every consumer `sparktop_consumer_gpu_bytes 0` (nothing in the host
    # pool) and no series with what it held on the GPU: the GPU memory bar's split, lost to Prometheus.
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from sparktop.exporter.metrics import SparktopCollector
    from sparktop.exporter.state import SamplingLoop

    snapshot = snapshot_with(tmp_path, nvml(h100_holding()))

    class Once(SnapshotSource):
        name = "once"

        def sample(self):  # type: ignore[no-untyped-def]
            return snapshot

        def close(self) -> None:
            pass

    loop = SamplingLoop(Once(), 1.0, None, None)  # type: ignore[arg-type]
    loop.step()
    registry = prometheus_client_registry(SparktopCollector(loop))
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
    device = {s.labels["consumer"]: s.value for s in families["sparktop_consumer_gpu_device_bytes"].samples}
    assert device == {"ollama": 20 * GIB, "python": HOLDER_BYTES}
    in_pool = families["sparktop_consumer_gpu_bytes"].samples
    assert all(s.value == 0 for s in in_pool)  # none of it in the host pool


def prometheus_client_registry(collector):  # type: ignore[no-untyped-def]
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry
