"""The live baseline's GPU in the planner (issue 12 items 3 and 7): GPU work already running joins the compute
verdict, a machine without a GPU says so, and on a discrete GPU the GPU side of the plan is planned against
the GPU's own memory while the host side goes against RAM."""

from __future__ import annotations

import json

import pytest

from sparktop.commands.plan import main
from sparktop.core.snapshot import (
    ContainerInfo,
    GpuProcess,
    GpuState,
    ProcessInfo,
    Snapshot,
)
from sparktop.plan import Baseline, Plan, evaluate
from sparktop.plan.catalog import load_catalog
from sparktop.plan.estimate import GB
from sparktop.plan.live_gpu import running_gpu_loads
from sparktop.plan.verdict import CAREFUL, NO, OK
from tests.fixtures.snapshots import snapshot, spark_gpu


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(user_file=False, discover=False)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "none"))
    for key in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "LLAMA_CACHE", "SPARKTOP_GGUF_PATH"):
        monkeypatch.delenv(key, raising=False)


def spark(util: float | None, gpu_procs: list[GpuProcess], processes: list[ProcessInfo], containers=()):
    return snapshot(
        total=int(128.5 * GB),
        used=int(30 * GB),
        free=0,
        gpus=[spark_gpu(utilization_pct=util, processes=gpu_procs)],
        processes=processes,
        containers=containers,
        hostname="spark",
    )


def training_at_full_tilt() -> Snapshot:
    return spark(
        100.0,
        [GpuProcess(pid=4242, used_bytes=int(20 * GB))],
        [ProcessInfo(pid=4242, name="python3", rss=int(2 * GB), container_id="c" * 64)],
        [ContainerInfo(id="c" * 64, name="trainer")],
    )


def test_running_training_makes_an_interactive_plan_item_stall(catalog):
    plan = Plan(catalog)
    plan.add("llama3.1:8b")
    ev = evaluate(plan, Baseline.from_snapshot(training_at_full_tilt()))
    assert ev.compute.verdict == NO
    assert ev.compute.reason.startswith("running now (trainer) saturates the 48 SMs")
    assert 2.0 <= ev.items[0].slowdown <= 2.4  # beside a training run, measured 2.0-2.35x
    assert "to itself" not in " ".join(ev.compute.reasons)


def test_a_sustained_item_beside_running_training_shares_the_sms(catalog):
    plan = Plan(catalog)
    plan.add("ssd-tetris")
    ev = evaluate(plan, Baseline.from_snapshot(training_at_full_tilt()))
    assert ev.compute.verdict == CAREFUL
    assert "running now (trainer) and ssd-tetris share the 48 SMs" in ev.compute.reason
    # on an idle machine the same item has the SMs to itself
    idle = evaluate(plan, Baseline.from_snapshot(spark(0.0, [], [])))
    assert idle.compute.verdict == OK and "has all 48 SMs to itself" in idle.compute.reason


def test_an_idle_server_holding_gpu_memory_counts_as_interactive(catalog):
    snap = spark(
        2.0,
        [GpuProcess(pid=77, used_bytes=int(45 * GB))],
        [ProcessInfo(pid=77, name="ollama", rss=int(1 * GB))],
    )
    plan = Plan(catalog)
    plan.add("devstral-small-2-bf16")
    ev = evaluate(plan, Baseline.from_snapshot(snap))
    # a 45 GB model already loaded is a big decoder: two of them is the reference's "no"
    assert ev.compute.verdict == NO and "running now (ollama)" in ev.compute.reason


def test_the_cli_counts_running_gpu_work(capsys):
    code = main(["--json", "--no-discover", "llama3.1:8b"], baseline_provider=training_at_full_tilt)
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["compute"] == NO
    assert "running now (trainer)" in data["compute_detail"]["reason"]


def no_gpu() -> Snapshot:
    return snapshot(
        total=int(32 * GB), used=int(4 * GB), free=0, no_gpu="NVML library not found", hostname="laptop"
    )


def test_no_gpu_on_this_machine(catalog, capsys):
    plan = Plan(catalog)
    plan.add("llama3.1:8b")
    ev = evaluate(plan, Baseline.from_snapshot(no_gpu()))
    assert ev.compute.verdict == CAREFUL
    assert ev.compute.reason.startswith("no GPU on this machine (NVML library not found): llama3.1:8b")
    assert "to itself" not in ev.compute.reason
    main(["--no-discover", "llama3.1:8b"], baseline_provider=no_gpu)
    assert "Compute  CAREFUL   no GPU on this machine" in capsys.readouterr().out
    # a clean machine is a Spark: it has its GPU
    assert "has the GPU to itself" in evaluate(plan).compute.reason


def h100(used_gpu_gb: float = 10.78) -> Snapshot:
    """A host with 64 GB of RAM and a discrete H100 80 GB holding one 10.78 GB process (issue 12 item 7)."""
    gpu = GpuState(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        sm_count=132,
        unified_memory=False,
        utilization_pct=0.0,
        memory_total=int(79.6 * GB),
        memory_used=int(used_gpu_gb * GB),
        processes=[GpuProcess(pid=9, used_bytes=int(used_gpu_gb * GB))],
    )
    return snapshot(
        total=int(64 * GB),
        used=int(6 * GB),
        free=0,
        gpus=[gpu],
        processes=[ProcessInfo(pid=9, name="python3", rss=int(1.5 * GB))],
        hostname="h100-box",
    )


def test_a_discrete_gpu_plans_gpu_memory_against_the_gpu(catalog, capsys):
    plan = Plan(catalog)
    # a full SFT of Qwen3-0.6B at 16 x 1024 (measured 71 GB of GPU memory on an H100): ~72 GB GPU side
    plan.add(kind="training", model="qwen3-0.6b", batch=16, seq_len=1024)
    ev = evaluate(plan, Baseline.from_snapshot(h100()))
    item = ev.items[0]
    gpu_side = item.estimate.side_total("gpu")
    host_side = item.estimate.side_total("host")
    assert ev.gpu_fit is not None
    # GPU: 10.78 GB in use + the run's GPU side, against 79.6 GB: over it at every estimate
    assert ev.gpu_fit.total.mid == pytest.approx(10.78 * GB + gpu_side.mid)
    assert ev.gpu_fit.lines.pool == pytest.approx(79.6 * GB)
    assert ev.gpu_fit.verdict == "won't fit"
    # host: 6 GB + the CPU side only, against 64 GB of RAM: fits
    assert ev.fit.total.mid == pytest.approx(6 * GB + host_side.mid)
    assert ev.fit.verdict == "fits"
    assert ev.verdict == "won't fit"  # the launch guard goes by the worse one
    code = main(["--json", "--no-discover", "sft,kind=training,model=qwen3-0.6b,batch=16,seq_len=1024"],
                baseline_provider=h100)  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert code == 2 and data["fit"] == "won't fit" and data["gpu_fit"]["verdict"] == "won't fit"
    assert data["gpu_fit"]["lines_gb"]["pool"] == pytest.approx(79.6)
    main(["--no-discover", "sft,kind=training,model=qwen3-0.6b,batch=4,seq_len=1024"], baseline_provider=h100)
    out = capsys.readouterr().out
    assert "GPU mem  FITS" in out and "discrete GPU (NVIDIA H100 80GB HBM3" in out


def test_a_unified_pool_has_no_separate_gpu_verdict(catalog):
    plan = Plan(catalog)
    plan.add("llama3.1:8b")
    ev = evaluate(plan, Baseline.from_snapshot(training_at_full_tilt()))
    assert ev.gpu_fit is None and ev.verdict == ev.fit.verdict


def test_per_process_sm_use_decides_how_busy_the_running_work_is(catalog):
    """Issue 26: where NVML measures SM use per process, the running work is what its compute processes use,
    not the device-wide figure (which counts the desktop's drawing too)."""
    desktop_busy = spark(
        85.0,
        [
            GpuProcess(pid=77, used_bytes=int(45 * GB), sm_pct=0.0),
            GpuProcess(pid=1039, used_bytes=int(0.2 * GB), kind="graphics", sm_pct=85.0),
        ],
        [
            ProcessInfo(pid=77, name="ollama", rss=int(1 * GB)),
            ProcessInfo(pid=1039, name="gnome-shell", rss=1),
        ],
    )
    (load,) = running_gpu_loads(desktop_busy)
    assert load.gpu_use == "interactive" and load.name == "running now (ollama)"
    # The device-wide figure alone would have called the idle server saturating work.
    blind = desktop_busy.model_copy(deep=True)
    for proc in blind.gpu.gpus[0].processes:
        proc.sm_pct = None
    assert running_gpu_loads(blind)[0].gpu_use == "sustained"


def test_per_process_sm_use_where_the_device_figure_is_missing(catalog):
    snap = spark(
        None,
        [GpuProcess(pid=4242, used_bytes=int(2 * GB), sm_pct=55.0),
         GpuProcess(pid=77, used_bytes=int(45 * GB), sm_pct=40.0)],
        [ProcessInfo(pid=4242, name="python3", rss=1), ProcessInfo(pid=77, name="vllm", rss=1)],
    )  # fmt: skip
    (load,) = running_gpu_loads(snap)
    assert load.gpu_use == "sustained" and load.duty == pytest.approx(0.95)
    assert load.name == "running now (python3, vllm)"  # the busiest first, not the biggest


def test_several_consumers_running_now_are_not_one_that_has_the_sms_to_itself(catalog):
    """Five GPU consumers running beside an empty plan: "running now (a, b +3 more) has all 48 SMs to itself"
    said one thing had the GPU alone (issue 32, Rough)."""
    names = ["trainer", "ollama", "whisper", "tts", "omni"]
    procs = [GpuProcess(pid=100 + i, used_bytes=int(2 * GB), sm_pct=20.0) for i in range(5)]
    snap = spark(95.0, procs, [ProcessInfo(pid=100 + i, name=n, rss=1) for i, n in enumerate(names)])
    ev = evaluate(Plan(catalog), Baseline.from_snapshot(snap))
    reason = ev.compute.reason
    assert ev.compute.verdict == OK and "+3 more" in reason, reason
    assert "to itself" not in reason and "keep all 48 SMs busy between them" in reason, reason
    # One consumer running alone still has them to itself.
    busy = [GpuProcess(pid=100, used_bytes=int(2 * GB), sm_pct=95.0)]
    alone = spark(95.0, busy, [ProcessInfo(pid=100, name="trainer", rss=1)])
    assert (
        "running now (trainer) has all 48 SMs to itself"
        in evaluate(Plan(catalog), Baseline.from_snapshot(alone)).compute.reason
    )
