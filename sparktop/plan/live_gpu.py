"""What the live baseline says about the GPU, for the planner: the GPU work already running (it competes with
the plan for the SMs and the bandwidth, so it joins the compute verdict as a plan member), whether the machine
has a GPU at all, and, on a discrete GPU, the device's own memory (GPU-side memory is planned against it)."""

from __future__ import annotations

from dataclasses import dataclass

from sparktop.core.snapshot import Snapshot
from sparktop.plan.verdict import DEFAULT_DUTY, HEAVY_BYTES_PER_TOKEN, GpuLoad

# NVML utilisation (share of the last sample period a kernel ran): at or above BUSY the GPU is saturated the
# way a training run saturates it; between ACTIVE and BUSY something computes part of the time; below ACTIVE
# the processes holding GPU memory are idle servers that answer when asked.
BUSY_PCT = 70.0
ACTIVE_PCT = 10.0
RUNNING_GROUP = "running"


@dataclass(frozen=True)
class DeviceMemory:
    """A discrete GPU's own memory (bytes), summed over the GPUs NVML reports."""

    total: float
    used: float
    name: str


def has_gpu(snap: Snapshot) -> bool:
    return bool(snap.gpu and snap.gpu.available and snap.gpu.memory_kind != "no-gpu")


def device_memory(snap: Snapshot) -> DeviceMemory | None:
    """The GPU's own memory on a discrete GPU; None on a unified pool (a Spark) or when NVML cannot say."""
    if not has_gpu(snap) or snap.gpu.memory_kind != "discrete":
        return None
    gpus = [g for g in snap.gpu.gpus if g.memory_total]
    if not gpus:
        return None
    total = float(sum(g.memory_total or 0 for g in gpus))
    used = float(sum(g.memory_used or 0 for g in gpus))
    names = sorted({g.name for g in gpus})
    label = names[0] if len(gpus) == 1 else f"{len(gpus)} GPUs ({', '.join(names)})"
    return DeviceMemory(total=total, used=used, name=label)


def _consumer_names(snap: Snapshot) -> list[tuple[str, int]]:
    """(name, GPU bytes) of each compute process holding GPU memory, by container where it runs in one;
    the busiest first where NVML measures per-process SM use, then the biggest. Graphics-only clients (the
    desktop) do not compete for compute."""
    names = {p.pid: p.name for p in snap.processes}
    containers = {c.id: c.label for c in snap.containers}
    in_container = {p.pid: containers.get(p.container_id or "", "") for p in snap.processes if p.container_id}
    held: dict[str, int] = {}
    busy: dict[str, float] = {}
    for gpu in snap.gpu.gpus:
        for proc in gpu.processes:
            if proc.kind == "graphics":
                continue
            name = in_container.get(proc.pid) or names.get(proc.pid) or f"pid {proc.pid}"
            held[name] = held.get(name, 0) + (proc.used_bytes or 0)
            busy[name] = busy.get(name, 0.0) + (proc.sm_pct or 0.0)
    return sorted(held.items(), key=lambda kv: (-busy[kv[0]], -kv[1]))


def running_utilisation(snap: Snapshot) -> float | None:
    """How busy the running GPU work keeps the SMs (percent): the compute processes' own SM use summed where
    NVML measures it per process (the desktop's drawing and the driver's own work are not plan members),
    else the busiest device's utilisation."""
    measured = [
        p.sm_pct for g in snap.gpu.gpus for p in g.processes if p.kind != "graphics" and p.sm_pct is not None
    ]
    if measured:
        return min(100.0, sum(measured))
    util_values = [g.utilization_pct for g in snap.gpu.gpus if g.utilization_pct is not None]
    return max(util_values) if util_values else None


def running_gpu_loads(snap: Snapshot) -> tuple[GpuLoad, ...]:
    """The GPU work running now, as one plan member for the compute verdict: sustained when the GPU is
    saturated, batch when it computes part of the time (duty = utilisation), and idle GPU-memory holders as
    interactive servers (a big one as a big decoder)."""
    if not has_gpu(snap):
        return ()
    util = running_utilisation(snap)
    holders = _consumer_names(snap)
    count = max(1, len(holders))
    if holders:
        shown = ", ".join(name for name, _ in holders[:2])
        more = f" +{len(holders) - 2} more" if len(holders) > 2 else ""
        label = f"running now ({shown}{more})"
    else:
        label = "GPU work running now"
    if util is not None and util >= BUSY_PCT:
        return (GpuLoad(label, "sustained", min(1.0, util / 100), RUNNING_GROUP, count=count),)
    if util is not None and util >= ACTIVE_PCT:
        return (GpuLoad(label, "batch", util / 100, RUNNING_GROUP, count=count),)
    if holders:
        heavy = holders[0][1] >= HEAVY_BYTES_PER_TOKEN
        duty = DEFAULT_DUTY["interactive"]
        return (GpuLoad(label, "interactive", duty, RUNNING_GROUP, heavy=heavy, count=count),)
    return ()
