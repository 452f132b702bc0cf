"""Headroom as an engine sees it: what `cudaMemGetInfo` reports as free on a unified-memory GPU (GB10).

On GB10 the CUDA driver answers `cudaMemGetInfo` from the kernel's free pages, not from MemAvailable: page
cache the kernel would reclaim at once still counts as used (vLLM #35313: CUDA "free" caps near 102 of
121.7 GiB on an idle Spark; vLLM #48140: the figure is /proc/meminfo MemFree). So

    cuda_free  ≈ MemFree
    droppable  ≈ (Cached − Shmem) + Buffers + SReclaimable     what `sync; echo 3 > drop_caches` can free

(Shmem lives in the page cache but cannot be dropped; dirty pages need the `sync` first.) vLLM's start-up
check compares `gpu_memory_utilization × total` with that free figure and refuses to start when it is
smaller, even with MemAvailable far above it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sparktop.core.snapshot import HostMemory

DROP_CACHES = "sync && echo 3 | sudo tee /proc/sys/vm/drop_caches"


@dataclass(frozen=True)
class EngineHeadroom:
    available: int  # MemAvailable: what the kernel can hand out
    cuda_free: int  # what cudaMemGetInfo would report as free on a unified-memory GPU
    droppable: int  # page cache and reclaimable slab that dropping caches would turn into free pages
    total: int


def engine_headroom(memory: HostMemory) -> EngineHeadroom:
    droppable = max(0, memory.cached - memory.shmem) + memory.buffers + memory.sreclaimable
    return EngineHeadroom(
        available=memory.available,
        cuda_free=max(0, memory.free),
        droppable=droppable,
        total=memory.total,
    )


@dataclass(frozen=True)
class StartupCheck:
    """Whether vLLM's start-up memory check passes now, and whether dropping caches would make it pass."""

    gpu_memory_utilization: float
    requested: int  # gpu_memory_utilization × total
    cuda_free: int
    passes: bool
    passes_after_drop: bool

    def message(self, fmt: Callable[[int], str] = lambda n: f"{n / 1e9:.1f} GB") -> str:
        head = (
            f"vLLM gpu_memory_utilization {self.gpu_memory_utilization:g} asks for {fmt(self.requested)}; "
            f"CUDA would report {fmt(self.cuda_free)} free"
        )
        if self.passes:
            return f"{head}: vLLM's start-up check passes"
        if self.passes_after_drop:
            return f"{head}: vLLM will refuse to start — drop the page cache first ({DROP_CACHES})"
        return f"{head}: vLLM will refuse to start even after dropping caches — lower gpu_memory_utilization"


def vllm_startup_check(gpu_memory_utilization: float, memory: HostMemory) -> StartupCheck:
    """vLLM (v1 worker) raises at start-up when free < gpu_memory_utilization × total (both from CUDA)."""
    room = engine_headroom(memory)
    requested = int(gpu_memory_utilization * memory.total)
    return StartupCheck(
        gpu_memory_utilization=gpu_memory_utilization,
        requested=requested,
        cuda_free=room.cuda_free,
        passes=room.cuda_free >= requested,
        passes_after_drop=room.cuda_free + room.droppable >= requested,
    )
