"""Who keeps the GPU's SMs busy: NVML's per-process SM utilisation by consumer (the keys of `Accounting`)."""

from __future__ import annotations

from sparktop.core.snapshot import Snapshot, process_key


def sm_measured(snapshot: Snapshot) -> bool:
    """True when some GPU process has an SM figure (else every figure is unknown, never shown as 0: NVML
    cannot measure it, no process uses the GPU, or a recording from before sparktop read it)."""
    return snapshot.gpu.available and any(
        p.sm_pct is not None for g in snapshot.gpu.gpus for p in g.processes
    )


def sm_unmeasured_reason(snapshot: Snapshot) -> str | None:
    """Why no per-process SM figure can be shown, when a GPU is there but none measures it."""
    if not snapshot.gpu.available or sm_measured(snapshot):
        return None
    return next((g.unsupported["sm_pct"] for g in snapshot.gpu.gpus if "sm_pct" in g.unsupported), None)


def sm_pct_by_consumer(snapshot: Snapshot) -> dict[str, float]:
    """Consumer key -> SM % (a container: its processes' sum), for the consumers with a GPU figure; none
    when the snapshot has no GPU (a recording whose GPU was lost keeps its processes' old figures)."""
    out: dict[str, float] = {}
    if not snapshot.gpu.available:
        return out
    for container in snapshot.containers:
        if container.gpu_sm_pct is not None:
            out[f"container:{container.id}"] = container.gpu_sm_pct
    for proc in snapshot.processes:
        if proc.gpu_sm_pct is not None and proc.container_id is None:
            out[process_key(proc)] = proc.gpu_sm_pct
    return out
