"""A model server's consumer split into one slice per loaded model; the parts still add up to `used`."""

from __future__ import annotations

from sparktop.analysis.accounting import account
from sparktop.analysis.served import model_rows, split_models
from sparktop.core.snapshot import (
    GpuProcess,
    ProcessInfo,
    ServedModel,
    ServiceReport,
    Snapshot,
)
from sparktop.session.session import Session
from sparktop.sources.demo import DemoSource
from tests.fixtures.snapshots import snapshot, spark_gpu

GB = 1000**3


def total(accounting) -> int:
    return sum(c.total for c in accounting.consumers) + accounting.unattributed


def test_demo_ollama_and_vllm_are_split_per_model_and_still_add_up():
    source, session = DemoSource("servers"), Session()
    for _ in range(5):
        snap = session.ingest(source.sample())
    split = split_models(snap)
    assert total(split) == total(snap.accounting) == snap.accounting.used
    labels = {c.label for c in split.consumers}
    assert {"qwen3:32b (ollama)", "gemma3:12b (ollama)", "Qwen/Qwen3-8B (vllm)"} <= labels
    ollama = next(c for c in split.consumers if c.label == "ollama")
    before = next(c for c in snap.accounting.consumers if c.key == ollama.key)
    models = [c for c in split.consumers if c.label.endswith("(ollama)")]
    assert sum(m.total for m in models) + ollama.total == before.total


def _host_ollama_snapshot(claimed_gpu: int) -> Snapshot:
    """`ollama serve` (pid 100) with one `ollama runner` child (pid 101) holding the model on the GPU."""
    procs = [
        ProcessInfo(pid=100, ppid=1, name="ollama", cmdline="ollama serve", rss=GB // 10, start_time=5.0),
        ProcessInfo(pid=101, ppid=100, name="ollama", cmdline="ollama runner", rss=GB, gpu_bytes=40 * GB,
                    start_time=6.0),
    ]  # fmt: skip
    snap = snapshot(
        t=1000.0,
        total=120 * GB,
        available=70 * GB,
        free=60 * GB,
        gpus=[spark_gpu(sm_count=None, processes=[GpuProcess(pid=101, used_bytes=40 * GB)])],
        processes=procs,
    )
    snap.accounting = account(snap.memory, snap.gpu, procs, [])
    snap.services = [
        ServiceReport(collector="servers", endpoint="http://127.0.0.1:11434", server="ollama",
                      owner="process:100:5",
                      models=[ServedModel(name="llama3.1:70b", gpu_bytes=claimed_gpu, cpu_bytes=0)])
    ]  # fmt: skip
    return snap


def test_host_ollama_model_is_taken_from_its_runner_child():
    snap = _host_ollama_snapshot(39 * GB)
    split = split_models(snap)
    model = next(c for c in split.consumers if c.key.startswith("model:"))
    assert model.gpu_bytes == 39 * GB
    runner = next(c for c in split.consumers if c.key == "process:101:6")
    assert runner.gpu_bytes == GB
    assert total(split) == snap.accounting.used


def test_a_model_never_takes_more_than_was_measured():
    snap = _host_ollama_snapshot(55 * GB)  # the server claims more than NVML saw
    split = split_models(snap)
    model = next(c for c in split.consumers if c.key.startswith("model:"))
    assert model.gpu_bytes == 40 * GB
    assert total(split) == snap.accounting.used


def test_rows_say_time_until_unload_and_never_for_keep_alive_forever():
    snap = _host_ollama_snapshot(39 * GB)
    snap.services[0].models.append(ServedModel(name="pinned", expires_at=snap.timestamp + 300 * 365 * 86400))
    snap.services[0].models[0].expires_at = snap.timestamp + 240
    snap.services[0].fields = ["size_vram", "expires_at"]
    snap.services.append(
        ServiceReport(
            collector="servers",
            endpoint="http://127.0.0.1:8000",
            error="vllm at http://127.0.0.1:8000: connection refused (retry in 8 s)",
        )
    )
    rows, problems, sources = model_rows(snap)
    assert [r.unload_in_s for r in rows] == [240, None]
    assert problems == ["vllm at http://127.0.0.1:8000: connection refused (retry in 8 s)"]
    assert sources == ["ollama at http://127.0.0.1:11434: size_vram, expires_at"]


def test_served_split_gives_each_owner_its_parts_and_what_they_took():
    from sparktop.analysis.served import NO_SPLIT, served_split

    snap = _host_ollama_snapshot(39 * GB)
    snap.services[0].models[0].expires_at = snap.timestamp + 30
    served = served_split(snap, split_models(snap))
    (part,) = served.parts["process:100:5"]  # drawn under the server's row, though paid by its runner
    assert (part.name, part.server, part.gpu_bytes, part.cpu_bytes) == ("llama3.1:70b", "ollama", 39 * GB, 0)
    assert part.note == "unloads in 30 s"
    assert served.taken == {"process:101:6": (0, 39 * GB)}
    assert served_split(snap, snap.accounting) is NO_SPLIT  # nothing split: nothing to draw


def test_model_part_notes():
    from sparktop.analysis.served import ModelPart

    def part(**kw) -> ModelPart:
        return ModelPart("k", "m", "ollama", "o", 0, 1, **{"unload_in_s": None, **kw})

    assert part(unload_in_s=250.0).note == "unloads in 4 min"
    assert part(unload_in_s=0.0).note == "unloading"
    assert part(stays_loaded=True).note == "stays loaded"
    assert part(reserved=True).note == "reserved at start"
    assert part().note == ""
