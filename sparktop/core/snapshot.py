"""The data every layer shares: one `Snapshot` of the machine per tick.

Sources (live, demo, replay) produce snapshots; analysis reads them; views draw them. All sizes are bytes,
all rates per second, all times Unix seconds. A metric the machine cannot report is `None`, and the reason
is recorded next to it (`GpuState.unsupported`), never a fake 0.

Every string another user or program can set (names, command lines, labels, error messages) is a `VisibleStr`:
its control characters are made visible when the model is built, so no view can write one to a terminal.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from sparktop.core.clock_reasons import decode
from sparktop.core.safe_text import VisibleStr

GIB = 1024**3
GB = 1000**3
MIB = 1024**2
MB = 1000**2

SNAPSHOT_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


# A moment in Unix seconds. NaN and Infinity are refused: a recording someone else wrote may hold them, and a
# view doing arithmetic on a time (a clock, an age, a chart's axis) would crash on one.
UnixTime = Annotated[float, Field(allow_inf_nan=False)]


# --- host memory -------------------------------------------------------------------------------------------


class PressureLine(_Model):
    """One line of a PSI file: share of wall time (percent) that tasks stalled on memory."""

    avg10: float
    avg60: float
    avg300: float
    total_us: int


class Pressure(_Model):
    """`/proc/pressure/memory` or a cgroup's `memory.pressure`; `full` is absent on old kernels."""

    some: PressureLine | None = None
    full: PressureLine | None = None


class HostMemory(_Model):
    """`/proc/meminfo`: on a unified-memory machine this is the truth for the whole pool."""

    total: int
    available: int
    free: int
    cached: int = 0
    buffers: int = 0
    shmem: int = 0
    sreclaimable: int = 0
    swap_total: int = 0
    swap_free: int = 0
    pressure: Pressure | None = None
    cpu_percent: float | None = None  # whole-machine CPU utilisation since the last tick
    cpu_count: int | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def used(self) -> int:
        """What `free` and btop call used: everything that is not available."""
        return max(0, self.total - self.available)


# --- GPU ---------------------------------------------------------------------------------------------------


class GpuProcess(_Model):
    pid: int
    used_bytes: int | None  # None when the driver cannot say (NVML_VALUE_NOT_AVAILABLE)
    kind: Literal["compute", "graphics", "both"] = "compute"
    # Share of the SMs' time its kernels ran: NVML's latest per-process sample since the last read (0 when it
    # ran none). None when neither per-process utilisation call answers (GpuState.unsupported["sm_pct"]).
    sm_pct: float | None = None


class GpuState(_Model):
    index: int
    name: VisibleStr
    uuid: VisibleStr | None = None
    pci_bus_id: VisibleStr | None = None  # NVML's busId, "0000000F:01:00.0" (dcgm-exporter's `pci_bus_id`)
    utilization_pct: float | None = None
    sm_clock_mhz: int | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    pstate: int | None = None
    energy_j: float | None = None
    sm_count: int | None = None
    compute_capability: str | None = None
    addressing_mode: str | None = None  # "ATS", "HMM", "none" or None when unknown
    unified_memory: bool = False
    # What NVML says about device memory; never used for the pool on a unified-memory device.
    memory_total: int | None = None
    memory_used: int | None = None
    processes: list[GpuProcess] = Field(default_factory=list)
    sm_clock_max_mhz: int | None = None  # nvmlDeviceGetMaxClockInfo(SM)
    # nvmlDeviceGetCurrentClocksEventReasons: the bitmask, as DCGM exports it (decoded by
    # core/clock_reasons.py)
    clocks_event_reasons: int | None = None
    # Unix time the current throttle began (SM clock below its maximum with a reason other than idle active)
    throttle_since: UnixTime | None = None
    # metric name -> why it is None ("not supported on this device", "driver error: ...")
    unsupported: dict[str, VisibleStr] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def clocks_event_reason_names(self) -> list[str]:
        """`clocks_event_reasons` by NVML's names ("SW power cap", "GPU idle", ...), for scripts and eyes."""
        return decode(self.clocks_event_reasons) if self.clocks_event_reasons else []


MemoryKind = Literal["unified", "discrete", "no-gpu"]


class GpuReport(_Model):
    """Everything NVML said this tick. `available` False means no library, no driver or no GPU."""

    available: bool
    reason: VisibleStr | None = None
    driver_version: VisibleStr | None = None
    gpus: list[GpuState] = Field(default_factory=list)

    @property
    def unified_memory(self) -> bool:
        return any(g.unified_memory for g in self.gpus)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def memory_kind(self) -> MemoryKind:
        """What kind of machine this is: "unified" (a DGX Spark: the GPU allocates from the host pool),
        "discrete" (the GPU has memory of its own, NVML reports it) or "no-gpu"."""
        if self.unified_memory:
            return "unified"
        return "discrete" if self.gpus else "no-gpu"

    def sm_pct_by_pid(self) -> dict[int, float]:
        """Per-process SM utilisation summed over GPUs; a PID is absent when no GPU could measure it."""
        out: dict[int, float] = {}
        for gpu in self.gpus:
            for proc in gpu.processes:
                if proc.sm_pct is not None:
                    out[proc.pid] = out.get(proc.pid, 0.0) + proc.sm_pct
        return out

    def gpu_bytes_by_pid(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for gpu in self.gpus:
            for proc in gpu.processes:
                if proc.used_bytes:
                    out[proc.pid] = out.get(proc.pid, 0) + proc.used_bytes
        return out


# --- processes and containers ----------------------------------------------------------------------------


class ProcessInfo(_Model):
    pid: int
    ppid: int | None = None
    name: VisibleStr
    cmdline: VisibleStr = ""
    user: VisibleStr | None = None
    rss: int = 0
    pss: int | None = None  # from smaps_rollup, for the top consumers only
    # PSS is re-read every few seconds: True when RSS has moved since, so that PSS is not for now.
    pss_stale: bool = False
    cpu_percent: float | None = None
    container_id: str | None = None  # full 64-hex id (or pod/runtime id) when the process is in a container
    gpu_bytes: int | None = None
    gpu_sm_pct: float | None = None  # NVML per-process SM utilisation, summed over GPUs; None: not known
    start_time: UnixTime | None = None
    # /proc/PID/stat field 22 (clock ticks after boot): exact, so a signal can tell a reused PID apart.
    start_ticks: int | None = None

    @property
    def cpu_bytes(self) -> int:
        """Its CPU-side memory as counted and shown: PSS where read and current, else the fresh RSS."""
        return self.pss if self.pss is not None and not self.pss_stale else self.rss


def process_key(proc: ProcessInfo) -> str:
    """A process's consumer key, stable across ticks. The start time keeps a reused PID from inheriting
    another process's history. Here, with the data, so collectors and analysis name consumers alike."""
    start = int(proc.start_time) if proc.start_time is not None else 0
    return f"process:{proc.pid}:{start}"


class CgroupMemory(_Model):
    """A cgroup's own memory files (v1 or v2). CUDA allocations on GB10 do not show here."""

    usage: int
    working_set: int  # usage - inactive_file, as `docker stats` shows
    anon: int | None = None
    file: int | None = None
    shmem: int | None = None
    inactive_file: int | None = None
    limit: int | None = None  # None: unlimited
    peak: int | None = None
    oom_kills: int | None = None
    pressure: Pressure | None = None


ContainerRuntime = Literal["docker", "podman", "kubernetes", "containerd", "unknown"]


class ContainerInfo(_Model):
    id: str
    runtime: ContainerRuntime = "docker"
    name: VisibleStr | None = None
    image: VisibleStr | None = None
    status: VisibleStr | None = None
    compose_project: VisibleStr | None = None
    compose_service: VisibleStr | None = None
    cgroup_path: VisibleStr | None = None
    memory: CgroupMemory | None = None
    pids: list[int] = Field(default_factory=list)
    gpu_bytes: int = 0
    gpu_sm_pct: float | None = None  # its processes' NVML SM utilisation summed; None: not known
    # Host TCP ports the container publishes (Docker discovery): where a model server in it answers.
    ports: list[int] = Field(default_factory=list)

    @property
    def short_id(self) -> str:
        return self.id[:12]

    @property
    def label(self) -> str:
        return self.name or self.short_id


class DockerStatus(_Model):
    """Whether names and labels could be fetched; containers appear by cgroup either way."""

    available: bool
    reason: VisibleStr | None = None


# --- accounting ------------------------------------------------------------------------------------------

ConsumerKind = Literal["container", "process", "host-other", "gpu-unexplained", "unattributed"]


class Consumer(_Model):
    """One slice of `used`: CPU side (cgroup working set or RSS) and GPU side (NVML) kept apart."""

    key: str  # stable across ticks: "container:<id>", "process:<pid>:<start>", "host-other", ...
    label: VisibleStr
    kind: ConsumerKind
    cpu_bytes: int = 0
    gpu_bytes: int = 0  # GPU memory drawn from the host pool (a unified-memory GPU): part of `total`
    # GPU memory on a discrete GPU's own memory: the consumer's, but not part of the host pool nor `total`.
    device_gpu_bytes: int = 0
    # The consumer this one was split from (a served model's server container or process): drawn next to it.
    parent: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> int:
        return self.cpu_bytes + self.gpu_bytes


class Accounting(_Model):
    """`used` split into consumers plus `unattributed`, adding up to `used` exactly."""

    used: int
    consumers: list[Consumer] = Field(default_factory=list)
    unattributed: int = 0
    # GPU memory that is not part of the host pool (discrete GPUs): shown, never added to `used`.
    gpu_outside_pool: int = 0
    # Bytes counted twice by consumers (shared pages in RSS), taken off their CPU side so parts sum to used.
    overcount_removed: int = 0
    # Each discrete GPU's own memory split the same way (empty on a unified-memory machine).
    gpu_memory: list[GpuMemoryAccount] = Field(default_factory=list)


class GpuMemoryShare(_Model):
    """One consumer's memory on one discrete GPU; `key` and `label` are its host-pool consumer's."""

    key: str
    label: VisibleStr
    kind: ConsumerKind
    nbytes: int


class GpuMemoryAccount(_Model):
    """A discrete GPU's own memory: who holds it (NVML per-process use), and `other`, what NVML counts as
    used that no listed process explains (driver reservations, contexts of processes NVML does not list)."""

    index: int
    name: VisibleStr
    total: int
    used: int
    shares: list[GpuMemoryShare] = Field(default_factory=list)
    other: int = 0

    @property
    def free(self) -> int:
        return max(0, self.total - self.used)


# --- add-on collectors: model servers ---------------------------------------------------------------------


class ServedModel(_Model):
    """One model a server holds. Every figure is optional: each server version reports different ones."""

    name: VisibleStr
    cpu_bytes: int | None = None  # host-side part (Ollama: size - size_vram)
    gpu_bytes: int | None = None  # GPU-side part (Ollama: size_vram)
    # What the server took at start-up whether used or not (vLLM: gpu_memory_utilization × device memory):
    # on a Spark this is what the pool loses, however empty the KV cache is.
    reserved_bytes: int | None = None
    context_length: int | None = None
    kv_cache_usage: float | None = None  # 0..1 of the KV cache in use
    kv_cache_tokens: int | None = None  # KV-cache capacity in tokens (blocks × block size)
    requests_running: int | None = None
    requests_waiting: int | None = None
    prompt_tokens_total: float | None = None  # counters, for rates
    generation_tokens_total: float | None = None
    tokens_per_s: float | None = None  # generated tokens per second since the previous reading
    expires_at: UnixTime | None = None  # Unix time the server will unload it (Ollama keep_alive)
    parameter_size: VisibleStr | None = None
    quantization: VisibleStr | None = None
    gpu_memory_utilization: float | None = None

    @property
    def total_bytes(self) -> int | None:
        if self.cpu_bytes is None and self.gpu_bytes is None:
            return self.reserved_bytes
        return (self.cpu_bytes or 0) + (self.gpu_bytes or 0)


NeighbourKind = Literal["training", "decoder", "other"]


class Slowdown(_Model):
    """A served model measured slower while another GPU consumer was busy (analysis/slowdown.py has the rule):
    its median tokens/s per running request while the neighbour was busy against its own median just before.
    `ratio` 2.1 reads "2.1× slower"."""

    endpoint: VisibleStr
    server: VisibleStr | None = None
    model: VisibleStr
    neighbour: VisibleStr  # its container's name or its process's name
    neighbour_kind: NeighbourKind  # training (compute-bound), decoder (another model server), other
    since: UnixTime  # Unix time the neighbour was first seen busy
    neighbour_started: UnixTime | None = None  # its earliest process's start, when known
    ratio: float
    solo_tokens_per_s: float  # medians, per running request
    together_tokens_per_s: float
    solo_readings: int
    together_readings: int
    # True: per-process SM use named the neighbour; False: the newest GPU process was taken for it.
    per_process: bool = False


class ServiceReport(_Model):
    """What one add-on collector (`sparktop.collect.registry`) reported this tick: one per endpoint it reads
    (a model server, say). `error` is one readable line when the endpoint could not be read. Collectors
    add their own fields to this model (below: the model servers')."""

    collector: str
    endpoint: VisibleStr = ""
    error: VisibleStr | None = None
    server: VisibleStr | None = None  # "ollama", "vllm", "llama.cpp", "sglang"
    version: VisibleStr | None = None  # as the server reports it, when it does
    models: list[ServedModel] = Field(default_factory=list)
    more_models: int = 0  # models the server listed past the number kept per server: counted, not listed
    # The metric names / fields this server version gave, so the screen can say which version gave what.
    fields: list[VisibleStr] = Field(default_factory=list)
    # The consumer key ("container:<id>", "process:<pid>:<start>") of what runs the server, when known.
    owner: VisibleStr | None = None
    checked_at: UnixTime | None = None  # Unix time of the reading shown
    # A one-line state for the status line (the guard's: armed or watching, its forecast, its last action).
    summary: VisibleStr | None = None
    # Measured slowdowns of served models beside busy neighbours (the "slowdowns" collector's report).
    slowdowns: list[Slowdown] = Field(default_factory=list)


# --- the snapshot ----------------------------------------------------------------------------------------


PendingPart = Literal["docker", "servers"]


def container_label(container: ContainerInfo, names_pending: bool = False) -> str:
    """A container's name; before Docker answered (`names_pending`), its short id then "…"."""
    if container.name or not names_pending or container.runtime != "docker":
        return container.label
    return f"{container.short_id} …"


class Snapshot(_Model):
    version: int = SNAPSHOT_VERSION
    timestamp: UnixTime
    source: Literal["live", "demo", "replay"] = "live"
    hostname: VisibleStr = ""
    memory: HostMemory
    gpu: GpuReport
    processes: list[ProcessInfo] = Field(default_factory=list)
    containers: list[ContainerInfo] = Field(default_factory=list)
    docker: DockerStatus = Field(default_factory=lambda: DockerStatus(available=False, reason="not probed"))
    accounting: Accounting | None = None
    # What the add-on collectors reported this tick (model servers, ...); empty when none is registered.
    services: list[ServiceReport] = Field(default_factory=list)
    # One readable line per problem met this tick (unreadable file, engine gone, ...). Never fatal.
    errors: list[VisibleStr] = Field(default_factory=list)
    # What a reader should know that is no problem (a recording made from the dashboard's history keeps no
    # processes): shown as a note, never counted with the errors.
    notes: list[VisibleStr] = Field(default_factory=list)
    # What has not answered yet: "docker" (a dashboard's quick first sample: containers by id, no names,
    # images or status), "servers" (a model server not probed once yet). A view shows "…" for these, never
    # "none" or 0.
    pending: list[PendingPart] = Field(default_factory=list)

    @property
    def names_pending(self) -> bool:
        """Docker has not been asked yet: a container without a name may yet get one."""
        return "docker" in self.pending


def snapshot_json_schema() -> dict[str, object]:
    """The JSON Schema of a snapshot as serialised (`--once --json`, /snapshot.json, recordings), with the
    contract a client can rely on: within one `version`, fields are only added; a field removed, renamed or
    changed in meaning raises SNAPSHOT_VERSION (and this schema's `$id`)."""
    schema = Snapshot.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"sparktop-snapshot-v{SNAPSHOT_VERSION}",
        "title": f"sparktop snapshot, version {SNAPSHOT_VERSION}",
        "description": (
            "One snapshot of the machine, as `sparktop --once --json` prints it and `sparktop serve` "
            "serves it at /snapshot.json. Sizes in bytes, rates per second, times in Unix seconds; a value "
            "the machine cannot report is null (or absent), never a fake 0. Within version "
            f"{SNAPSHOT_VERSION} fields are only added: a client reads `version` and ignores fields it "
            "does not know."
        ),
        **schema,
    }
