"""dcgm-exporter's names, units and labels for what sparktop already reads, so dashboards built on DCGM
(NVIDIA's own Grafana dashboard among them) work on a machine dcgm-exporter cannot fully serve.

Which fields, where (`--dcgm`):
- `auto` (default): all of them for a unified-memory GPU (GB10), none for a discrete GPU. DCGM registers no
  framebuffer fields on GB10, so only sparktop can fill FB_USED/FREE there; on a discrete GPU dcgm-exporter is
  the standard exporter and reports every field itself.
- `fb`: only FB_USED/FREE, only for a unified-memory GPU: beside dcgm-exporter on a Spark, whose GPU_TEMP,
  POWER_USAGE, SM_CLOCK, GPU_UTIL and energy fields work there, so no field comes from both exporters.
- `all`: every field on every GPU (a discrete GPU's FB from NVML's device memory), where no dcgm-exporter
  runs.
- `off`: none.

Labels are dcgm-exporter's (4.5.3-4.8.2): `gpu`, `UUID`, `pci_bus_id`, `device` (`nvidia0`) and `Hostname`.
Its `modelName` is left out: `promtool check metrics` rejects camelCase label names; the model is the `name`
of `sparktop_gpu_info`. Units are DCGM's: °C, W, MHz, %, mJ, MiB. dcgm-exporter types the energy field a
counter, but a counter's name must end in `_total` (promtool, OpenMetrics), so it is untyped here: `rate()`
works on it all the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Literal

from prometheus_client.core import GaugeMetricFamily, Metric, UnknownMetricFamily

from sparktop.core.safe_text import visible
from sparktop.core.snapshot import MIB, GpuState, Snapshot

DcgmMode = Literal["auto", "all", "fb", "off"]
DCGM_MODES: tuple[DcgmMode, ...] = ("auto", "all", "fb", "off")

# dcgm-exporter's labels on a GPU's series, in this order (4.5.3-4.8.2 names the last one `Hostname`; its
# main branch renames it `hostname` after that release).
GPU_LABELS = ["gpu", "UUID", "pci_bus_id", "device", "Hostname"]

FB_FIELDS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")


def gpu_labels(gpu: GpuState, hostname: str) -> list[str]:
    """dcgm-exporter's label values for one GPU, in the order of `GPU_LABELS` (plain text)."""
    values = [str(gpu.index), gpu.uuid or "", gpu.pci_bus_id or "", f"nvidia{gpu.index}", hostname]
    return [visible(v) for v in values]


def exports_gpu_fields(gpu: GpuState, mode: DcgmMode) -> bool:
    """Whether `gpu`'s own DCGM fields (all but FB_USED/FREE) are exported in `mode`: what a field added
    later (the clock event reasons, say) asks too, so it never comes from sparktop and dcgm-exporter both."""
    return mode == "all" or (mode == "auto" and gpu.unified_memory)


def fields_for(gpu: GpuState, mode: DcgmMode) -> frozenset[str]:
    """The DCGM field names sparktop exports for `gpu` in `mode` (see the module's docstring)."""
    if exports_gpu_fields(gpu, mode):
        return frozenset(name for name, *_ in _FIELDS) | {ENERGY, *FB_FIELDS}
    if mode == "fb" and gpu.unified_memory:
        return frozenset(FB_FIELDS)
    return frozenset()


def _framebuffer(gpu: GpuState, snap: Snapshot) -> tuple[int | None, int | None]:
    """(used, free) in MiB: the pool for a unified-memory GPU, NVML's device memory for a discrete one."""
    if gpu.unified_memory:
        return snap.memory.used // MIB, snap.memory.available // MIB
    if gpu.memory_total is None or gpu.memory_used is None:
        return None, None
    return gpu.memory_used // MIB, (gpu.memory_total - gpu.memory_used) // MIB


# name, help (dcgm-exporter's own, from its default-counters.csv), the value in DCGM's unit
_FIELDS: tuple[tuple[str, str, Callable[[GpuState], float | None]], ...] = (
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda g: g.temperature_c),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda g: g.power_w),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda g: g.sm_clock_mhz),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda g: g.utilization_pct),
    # Field 112 (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS before DCGM 3.2): dcgm-exporter exports it when a counters
    # file lists it (its default files do not); the same NVML bitmask.
    (
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "Current clocks event (throttle) reasons (bitmask).",
        lambda g: g.clocks_event_reasons,
    ),
)
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


def dcgm_metrics(snap: Snapshot, mode: DcgmMode) -> Iterator[Metric]:
    """The DCGM-named families for `snap`'s GPUs; a family no GPU fills is not yielded, a value a GPU cannot
    report is left out (never 0)."""
    hostname = snap.hostname or "unknown"
    gauges = {name: GaugeMetricFamily(name, doc, labels=GPU_LABELS) for name, doc, _ in _FIELDS}
    energy = UnknownMetricFamily(
        ENERGY, "Total energy consumption since boot (in mJ); untyped: a counter's name ends in _total",
        labels=GPU_LABELS,
    )  # fmt: skip
    fb_used = GaugeMetricFamily(
        "DCGM_FI_DEV_FB_USED",
        "Framebuffer memory used (in MiB); by sparktop: on unified memory the pool, MemTotal-MemAvailable",
        labels=GPU_LABELS,
    )
    fb_free = GaugeMetricFamily(
        "DCGM_FI_DEV_FB_FREE",
        "Framebuffer memory free (in MiB); by sparktop: on unified memory the pool's MemAvailable",
        labels=GPU_LABELS,
    )
    for gpu in snap.gpu.gpus:
        wanted = fields_for(gpu, mode)
        if not wanted:
            continue
        labels = gpu_labels(gpu, hostname)
        for name, _, read in _FIELDS:
            value = read(gpu)
            if name in wanted and value is not None:
                gauges[name].add_metric(labels, value)
        if ENERGY in wanted and gpu.energy_j is not None:
            energy.add_metric(labels, gpu.energy_j * 1000)
        used, free = _framebuffer(gpu, snap)
        if "DCGM_FI_DEV_FB_USED" in wanted and used is not None:
            fb_used.add_metric(labels, used)
        if "DCGM_FI_DEV_FB_FREE" in wanted and free is not None:
            fb_free.add_metric(labels, free)
    for family in (*gauges.values(), energy, fb_used, fb_free):
        if family.samples:
            yield family
