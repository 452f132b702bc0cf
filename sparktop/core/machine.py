"""Which kind of machine sparktop is looking at, said the same way in the header, `--once` and JSON
(`GpuReport.memory_kind`): a unified-memory DGX Spark, where the GPU allocates from the host pool, a box
with a discrete GPU that has memory of its own (an H100, an RTX card), or no NVIDIA GPU at all."""

from __future__ import annotations

from sparktop.core.format import fmt_size
from sparktop.core.snapshot import GpuReport

SHORT = {"unified": "unified memory", "discrete": "discrete GPU", "no-gpu": "no GPU"}


def machine_label(gpu: GpuReport) -> str:
    """A few words for the header: "unified memory", "discrete GPU", "2 discrete GPUs", "no GPU"."""
    kind = gpu.memory_kind
    if kind == "discrete" and len(gpu.gpus) > 1:
        return f"{len(gpu.gpus)} discrete GPUs"
    return SHORT[kind]


def describe_machine(gpu: GpuReport, units: str = "GiB") -> str:
    """One sentence: what kind of machine, and where GPU memory comes from."""
    kind = gpu.memory_kind
    names = ", ".join(dict.fromkeys(g.name for g in gpu.gpus))
    if kind == "unified":
        return f"unified memory ({names}): GPU allocations come out of the host memory pool"
    if kind == "discrete":
        totals = [g.memory_total for g in gpu.gpus if g.memory_total]
        own = f" with {fmt_size(sum(totals), units)} of its own memory" if totals else ""
        count = f"{len(gpu.gpus)} " if len(gpu.gpus) > 1 else ""
        plural = "s" if len(gpu.gpus) > 1 else ""
        return f"{count}discrete GPU{plural} ({names}){own}, apart from the host memory pool"
    return "no NVIDIA GPU: host memory only"
