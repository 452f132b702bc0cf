"""The Prometheus collector: turns the latest published `NodeState` into metric families.

Every scrape renders from the state the sampling loop already published, so it never reads the machine.
Names carry the `sparktop_` prefix and base units (bytes, seconds, ratios 0–1, hertz, watts, joules, °C);
a value the machine cannot report is left out, never exported as 0.

Labels are bounded by what a user can name, so the number of series stays that of the things on the machine,
not of the processes that ever ran:
- no `host` label: Prometheus's `instance` (a target label) already tells nodes apart, as node_exporter's
  series do; the node's hostname is `sparktop_host_info{hostname}` (join on `instance` where wanted);
- a consumer is its stable identity (`kind`, `consumer`: a container's name, a process's name without its
  pid, "other host processes"); processes of one name are summed into one series and how many processes a
  consumer holds is a value (`sparktop_consumer_processes`), never label text. Per-process series (a `pid`
  label) only with `consumer_pids` (`sparktop serve --consumer-pids`);
- a GPU is its `gpu` index; its identity (name, uuid, PCI bus id, SM count) is one `sparktop_gpu_info`.

dcgm-exporter's names for the GPU fields (and DCGM_FI_DEV_FB_USED/FREE from the pool on unified memory) come
from `dcgm.py`, as `ExportOptions.dcgm` says.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from sparktop import __version__
from sparktop.analysis.accounting import HOST_OTHER_LABEL, host_processes
from sparktop.analysis.gpu_use import sm_pct_by_consumer
from sparktop.analysis.pressure import PressureLevel
from sparktop.analysis.trend import CreepAlert
from sparktop.core.clock_reasons import slowing_reasons
from sparktop.core.safe_text import visible
from sparktop.core.snapshot import SNAPSHOT_VERSION, Accounting, Consumer, ContainerInfo, Snapshot
from sparktop.exporter.dcgm import DcgmMode, dcgm_metrics
from sparktop.exporter.state import NodeState, SamplingLoop
from sparktop.footprints.store import store_problem

PRESSURE_LEVEL_VALUE = {PressureLevel.OK: 0, PressureLevel.WARN: 1, PressureLevel.CRITICAL: 2}
CONSUMER_LABELS = ["kind", "consumer", "container", "compose_project", "compose_service", "process"]
GPU_LABELS = ["gpu"]
_PID_SUFFIX = re.compile(r" \(\d+\)$")  # "node (2884)" -> "node"


@dataclass(frozen=True)
class ExportOptions:
    """What `sparktop serve` exports beyond its own series (its flags)."""

    dcgm: DcgmMode = "auto"  # dcgm-exporter's names: see exporter/dcgm.py
    consumer_pids: bool = False  # one consumer series per process, with a `pid` label


def plain(value: object) -> str:
    """A label value as plain text (snapshots are made visible when built; a label built here is too)."""
    return visible(str(value))


class SparktopCollector(Collector):
    """`collect()` yields the families of `latest()`; nothing at all before the first state."""

    def __init__(self, loop: SamplingLoop, options: ExportOptions | None = None) -> None:
        self._loop = loop
        self.options = options or ExportOptions()

    def describe(self) -> list[Metric]:
        # An empty description keeps the registry from calling collect() at registration.
        return []

    def collect(self) -> Iterator[Metric]:
        yield _info()
        loop = self._loop
        state = loop.latest
        if state is None:
            return
        yield from render(state, loop.age_s(), loop.interval, self.options)


def _info() -> Metric:
    info = GaugeMetricFamily(
        "sparktop_build_info", "sparktop version and snapshot schema (always 1)", labels=["version", "schema"]
    )
    info.add_metric([__version__, str(SNAPSHOT_VERSION)], 1)
    return info


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


def _single(name: str, doc: str, value: float) -> GaugeMetricFamily:
    """A node-level gauge: one series, no labels (`instance` says which node)."""
    return GaugeMetricFamily(name, doc, value=value)


def render(
    state: NodeState, age_s: float | None, interval_s: float, options: ExportOptions | None = None
) -> Iterator[Metric]:
    options = options or ExportOptions()
    snap = state.snapshot
    mem = snap.memory

    host = _gauge("sparktop_host_info", "The node's hostname (always 1)", ["hostname"])
    host.add_metric([plain(snap.hostname or "unknown")], 1)
    yield host
    yield _single("sparktop_snapshot_timestamp_seconds", "Time the latest snapshot was taken", snap.timestamp)
    if age_s is not None:
        yield _single(
            "sparktop_snapshot_age_seconds", "Seconds since the exporter published its latest snapshot", age_s
        )
    yield _single("sparktop_sample_interval_seconds", "Seconds between the exporter's samples", interval_s)
    yield _single(
        "sparktop_collect_errors", "Problems met while collecting the latest snapshot", len(snap.errors)
    )
    yield _single(
        "sparktop_footprints_errors",
        "1 while the measured-footprint database cannot be written (peaks kept in memory only), else 0",
        1 if store_problem(snap) else 0,
    )

    # -- the pool
    for name, doc, value in (
        ("sparktop_pool_total_bytes", "MemTotal: the memory pool visible to Linux", mem.total),
        ("sparktop_pool_used_bytes", "MemTotal - MemAvailable, as free and btop count used", mem.used),
        ("sparktop_pool_available_bytes", "MemAvailable", mem.available),
        ("sparktop_swap_total_bytes", "SwapTotal", mem.swap_total),
        ("sparktop_swap_free_bytes", "SwapFree", mem.swap_free),
    ):
        yield _single(name, doc, value)
    lines = _gauge("sparktop_line_bytes", "The budget lines the node is judged against", ["line"])
    headroom = _gauge(
        "sparktop_headroom_bytes",
        "Bytes left before the pool's used memory reaches each line (negative: over it); what the planner "
        "can add on top of this node's live baseline",
        ["line"],
    )
    for line, value in (("safe", state.safe_bytes), ("aggressive", state.max_bytes)):
        lines.add_metric([line], value)
        headroom.add_metric([line], value - mem.used)
    yield lines
    yield headroom

    # -- consumers (they and unattributed add up to used)
    acct = snap.accounting
    identities: dict[str, tuple[str, ...]] = {}
    if acct is not None:
        yield from _consumer_metrics(snap, acct, options.consumer_pids, identities)
        yield _single(
            "sparktop_unattributed_bytes",
            "Used memory no consumer explains (kernel, driver, page cache)",
            acct.unattributed,
        )
        if acct.gpu_outside_pool:
            yield _single(
                "sparktop_gpu_outside_pool_bytes",
                "GPU memory of a discrete GPU (not in the host pool)",
                acct.gpu_outside_pool,
            )

    # -- pressure
    yield _single(
        "sparktop_pressure_level",
        "Memory pressure level: 0 ok, 1 warn, 2 critical",
        PRESSURE_LEVEL_VALUE[state.assessment.level],
    )
    pressure = mem.pressure
    if pressure is not None:
        for kind, psi_line in (("some", pressure.some), ("full", pressure.full)):
            if psi_line is None:
                continue
            ratio = _gauge(
                f"sparktop_psi_memory_{kind}_ratio",
                f"PSI memory '{kind}': share of time tasks stalled on memory, averaged over the window",
                ["window"],
            )
            for window, avg in (
                ("10s", psi_line.avg10),
                ("60s", psi_line.avg60),
                ("300s", psi_line.avg300),
            ):
                ratio.add_metric([window], avg / 100)
            yield ratio
            yield CounterMetricFamily(
                f"sparktop_psi_memory_{kind}_stall_seconds",
                f"PSI memory '{kind}': total time tasks stalled on memory",
                value=psi_line.total_us / 1e6,
            )

    yield from _gpu_metrics(snap)
    yield from dcgm_metrics(snap, options.dcgm)
    yield from _creep_metrics(state.creep, identities, options.consumer_pids)


def _consumer_metrics(
    snap: Snapshot, acct: Accounting, per_pid: bool, identities: dict[str, tuple[str, ...]]
) -> Iterator[Metric]:
    """Each consumer's CPU and GPU side and how many processes it holds, one series per identity (processes
    of one name summed) or, with `per_pid`, per process. Fills `identities` (consumer key -> its labels)."""
    labels = CONSUMER_LABELS + (["pid"] if per_pid else [])
    containers = {c.id: c for c in snap.containers}
    names = {p.pid: p.name for p in snap.processes}
    named_pids: set[int] = set()
    # labels -> [cpu, gpu in the pool, processes or -1 (not known), gpu on a discrete GPU's own memory]
    totals: dict[tuple[str, ...], list[int]] = {}
    sm_by_consumer = sm_pct_by_consumer(snap)
    sm_totals: dict[tuple[str, ...], float] = {}  # labels -> SM %, where NVML measured it
    for consumer in acct.consumers:
        values, processes = _consumer_identity(consumer, containers, names, per_pid)
        pid = _pid(consumer)
        if pid is not None:
            named_pids.add(pid)
        identities[consumer.key] = values
        total = totals.setdefault(values, [0, 0, 0, 0])
        total[0] += consumer.cpu_bytes
        total[1] += consumer.gpu_bytes
        total[3] += consumer.device_gpu_bytes
        total[2] = -1 if processes is None or total[2] < 0 else total[2] + processes
        if consumer.key in sm_by_consumer:
            sm_totals[values] = sm_totals.get(values, 0.0) + sm_by_consumer[consumer.key]
    other = ("host-other", HOST_OTHER_LABEL, "", "", "", "") + (("",) if per_pid else ())
    if other in totals:  # how many processes the group holds: a value, never part of its label
        hosted = host_processes(snap.processes, snap.containers)
        totals[other][2] = sum(1 for p in hosted if p.pid not in named_pids)
    cpu = _gauge(
        "sparktop_consumer_cpu_bytes",
        "CPU-side memory of a consumer (cgroup working set, or PSS/RSS of a host process)",
        labels,
    )
    gpu = _gauge(
        "sparktop_consumer_gpu_bytes",
        "GPU-side memory of a consumer (NVML per-process memory, in the pool on unified memory)",
        labels,
    )
    count = _gauge(
        "sparktop_consumer_processes",
        "Processes a consumer holds (a container's, those of one name, the other host processes)",
        labels,
    )
    sm = _gauge(
        "sparktop_consumer_gpu_sm_ratio",
        "Share of the GPU's SM time a consumer's kernels ran (NVML per-process utilisation, a container "
        "summing its processes); absent where NVML cannot measure it",
        labels,
    )
    device = _gauge(
        "sparktop_consumer_gpu_device_bytes",
        "GPU memory a consumer holds on a discrete GPU's own memory (NVML per-process; not in the host pool)",
        labels,
    )
    for values, (cpu_bytes, gpu_bytes, processes, device_bytes) in totals.items():
        cpu.add_metric(list(values), cpu_bytes)
        gpu.add_metric(list(values), gpu_bytes)
        if device_bytes:
            device.add_metric(list(values), device_bytes)
        if processes >= 0:
            count.add_metric(list(values), processes)
        if values in sm_totals:
            sm.add_metric(list(values), sm_totals[values] / 100)
    yield cpu
    yield gpu
    yield count
    yield sm
    if device.samples:
        yield device


def _pid(consumer: Consumer) -> int | None:
    """The pid of a process consumer (key "process:<pid>:<start>"), else None."""
    kind, _, rest = consumer.key.partition(":")
    if consumer.kind != "process" or kind != "process":
        return None
    try:
        return int(rest.split(":")[0])
    except ValueError:
        return None


def _consumer_identity(
    consumer: Consumer, containers: dict[str, ContainerInfo], names: dict[int, str], per_pid: bool
) -> tuple[tuple[str, ...], int | None]:
    """(label values, processes it holds or None when not known) of one consumer."""
    label = consumer.label
    container = project = service = process = pid_text = ""
    processes: int | None = None
    if consumer.kind == "container":
        info = containers.get(consumer.key.partition(":")[2])
        container = label = info.label if info else label
        project = (info.compose_project or "") if info else ""
        service = (info.compose_service or "") if info else ""
        processes = len(info.pids) if info else None
    elif consumer.kind == "process":
        pid = _pid(consumer)
        process = label = names.get(pid, _PID_SUFFIX.sub("", label)) if pid is not None else label
        processes = 1 if pid is not None else None
        pid_text = str(pid) if pid is not None else ""
    elif consumer.kind == "host-other":
        label = HOST_OTHER_LABEL
    values = [consumer.kind, label, container, project, service, process] + ([pid_text] if per_pid else [])
    return tuple(plain(v) for v in values), processes


def _creep_metrics(
    creep: list[CreepAlert], identities: dict[str, tuple[str, ...]], per_pid: bool
) -> Iterator[Metric]:
    """Creeping consumers under their consumer identity; two alerts of one identity (two creeping processes
    of one name) show the faster one."""
    labels = ["consumer"] + (["pid"] if per_pid else [])
    worst: dict[tuple[str, ...], CreepAlert] = {}
    for alert in creep:
        known = identities.get(alert.key)
        if known is not None:
            key = (known[1], *known[6:])
        else:  # a consumer gone from this tick's accounting: its label without the pid
            key = (plain(_PID_SUFFIX.sub("", alert.label)),) + (("",) if per_pid else ())
        if key not in worst or alert.rate_bytes_per_s > worst[key].rate_bytes_per_s:
            worst[key] = alert
    rate = _gauge(
        "sparktop_creep_rate_bytes_per_second",
        "Growth rate of a consumer whose memory keeps creeping",
        labels,
    )
    eta = _gauge(
        "sparktop_creep_line_eta_seconds",
        "At a creeping consumer's rate, seconds until the pool reaches each line (0: already over it)",
        [*labels, "line"],
    )
    for key, alert in worst.items():
        rate.add_metric(list(key), alert.rate_bytes_per_s)
        for line, seconds in (
            ("safe", alert.eta_safe_s),
            ("aggressive", alert.eta_aggressive_s),
            ("pool", alert.eta_pool_s),
        ):
            if seconds is not None:
                eta.add_metric([*key, line], seconds)
    yield rate
    yield eta


def _gpu_metrics(snap: Snapshot) -> Iterator[Metric]:
    info = _gauge(
        "sparktop_gpu_info",
        "A GPU's identity: NVML name, UUID, PCI bus id and streaming multiprocessors (always 1)",
        ["gpu", "name", "uuid", "pci_bus_id", "sm_count"],
    )
    families = {
        "util": _gauge(
            "sparktop_gpu_utilization_ratio", "GPU utilisation (share of time a kernel ran)", GPU_LABELS
        ),
        "clock": _gauge("sparktop_gpu_sm_clock_hertz", "GPU SM clock", GPU_LABELS),
        "temp": _gauge("sparktop_gpu_temperature_celsius", "GPU temperature", GPU_LABELS),
        "power": _gauge("sparktop_gpu_power_watts", "GPU power draw", GPU_LABELS),
        "clock_max": _gauge("sparktop_gpu_sm_clock_max_hertz", "GPU SM clock's maximum", GPU_LABELS),
        "reasons": _gauge(
            "sparktop_gpu_clocks_event_reasons",
            "NVML clocks event (throttle) reasons: the bitmask, as DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
            GPU_LABELS,
        ),
        "throttle": _gauge(
            "sparktop_gpu_throttle_seconds",
            "How long the SM clock has been held below its maximum by a reason other than idle (0: not now)",
            GPU_LABELS,
        ),
    }
    reason = _gauge(
        "sparktop_gpu_clocks_event_reason",
        "1 for each NVML clocks event reason active now, by name (GPU idle included)",
        [*GPU_LABELS, "reason"],
    )
    energy = CounterMetricFamily(
        "sparktop_gpu_energy_joules", "GPU energy consumed since the driver loaded", labels=GPU_LABELS
    )
    for gpu in snap.gpu.gpus:
        index = [str(gpu.index)]
        sms = "" if gpu.sm_count is None else str(gpu.sm_count)
        info.add_metric([*index, *(plain(v or "") for v in (gpu.name, gpu.uuid, gpu.pci_bus_id)), sms], 1)
        if gpu.utilization_pct is not None:
            families["util"].add_metric(index, gpu.utilization_pct / 100)
        if gpu.sm_clock_mhz is not None:
            families["clock"].add_metric(index, gpu.sm_clock_mhz * 1e6)
        if gpu.temperature_c is not None:
            families["temp"].add_metric(index, gpu.temperature_c)
        if gpu.power_w is not None:
            families["power"].add_metric(index, gpu.power_w)
        if gpu.energy_j is not None:
            energy.add_metric(index, gpu.energy_j)
        if gpu.sm_clock_max_mhz is not None:
            families["clock_max"].add_metric(index, gpu.sm_clock_max_mhz * 1e6)
        if gpu.clocks_event_reasons is not None:
            families["reasons"].add_metric(index, gpu.clocks_event_reasons)
            for name in gpu.clocks_event_reason_names:
                reason.add_metric([*index, name], 1)
            since = gpu.throttle_since if slowing_reasons(gpu) else None
            families["throttle"].add_metric(index, 0.0 if since is None else max(0.0, snap.timestamp - since))
    yield info
    yield from families.values()
    yield reason
    yield energy
