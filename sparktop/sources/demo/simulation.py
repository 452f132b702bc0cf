"""The simulation behind `DemoSource`: a made-up machine that plays a scenario of `scenarios.py` tick by tick
(memory, page cache, PSI, GPU utilisation, clocks and temperature, the processes' SM shares, model servers'
answers) and stops or kills its containers. Its randomness comes only from generators seeded by the seed and
the scenario."""

from __future__ import annotations

import hashlib
import math
import random
import re
import threading
from dataclasses import dataclass
from typing import Literal, TypedDict

from sparktop.collect.add_on import Collector
from sparktop.collect.control import ControlError, StopTimeout
from sparktop.collect.nvml import attach_sm_utilisation, unified_unsupported
from sparktop.collect.registry import DEMO_ADD_ONS, AddOns
from sparktop.core.clock_reasons import slowing_reasons
from sparktop.core.snapshot import (
    GB,
    MB,
    MIB,
    CgroupMemory,
    ContainerInfo,
    DockerStatus,
    GpuProcess,
    GpuReport,
    GpuState,
    HostMemory,
    Pressure,
    PressureLine,
    ProcessInfo,
    ServedModel,
    ServiceReport,
    Snapshot,
)
from sparktop.sources.demo.scenarios import DEMO_SCENARIOS, HOST_PROCESSES, SCENARIOS, WorkloadSpec
from sparktop.sources.snapshot_source import SnapshotSource

# The simulated machine.
MEM_TOTAL = 127_612_108 * 1024  # MemTotal of a Spark: ~121.7 GiB of the 128 GB pool is visible to Linux
CPU_COUNT = 20
GPU_NAME = "NVIDIA GB10"
# The "discrete" scenario's GPU: an H100 as NVML reports it (81,559 MiB total; ~0.5 GiB kept by the driver).
DISCRETE_GPU_NAME = "NVIDIA H100 80GB HBM3"
DISCRETE_GPU_MEMORY = 81_559 * MIB
DISCRETE_GPU_RESERVED = 530 * MIB
DRIVER_VERSION = "580.95.05"
SM_COUNT = 48
GB10_MAX_SM_CLOCK = 2418  # MHz: the demo GPU's top SM clock, reached when busy and cool
# NVML clocks event reason bits (nvml.h) the demo GPU shows
GPU_IDLE, SW_POWER_CAP, SW_THERMAL = 0x1, 0x4, 0x20
HOSTNAME = "spark-demo"
DISCRETE_HOSTNAME = "h100-demo"
STOP_DELAY_S = 2.0  # how long a well-behaved container takes to exit after SIGTERM

# What NVML cannot tell on GB10 (see reference/gb10-telemetry.md): the same reasons the live collector gives.
GB10_UNSUPPORTED = unified_unsupported(GPU_NAME)

# How much slower each request of a steady model server decodes while training runs beside it (the
# contention scenario): a bandwidth-bound decoder beside sustained GEMMs measured 2.0-2.35x on an H100
# (shared/reference/measured-h100.md section 2).
CONTENTION_SLOWDOWN = 2.2


class _ServiceCommon(TypedDict):
    """The fields every simulated model server's ServiceReport shares."""

    collector: str
    endpoint: str
    owner: str
    checked_at: float


# --- running state ------------------------------------------------------------------------------------


@dataclass
class _Container:
    spec: WorkloadSpec
    id: str
    shim_pid: int
    pids: list[int]
    rng: random.Random
    busy: bool = False
    until: float = 0.0  # simulated time at which the busy/idle phase flips
    remove_at: float | None = None
    peak: int = 0
    ignores_sigterm: bool = False
    file_extra: int = 0


@dataclass
class _Host:
    pid: int
    name: str
    cmdline: str
    rss: int
    cpu: float
    gpu: int
    user: str
    start: float


@dataclass
class _Psi:
    avg10: float
    avg60: float
    avg300: float
    total_us: int = 0

    def advance(self, target: float, dt: float) -> None:
        # The kernel's PSI averages are exponential moving averages over 10, 60 and 300 seconds.
        self.avg10 += (target - self.avg10) * (1 - math.exp(-dt / 10))
        self.avg60 += (target - self.avg60) * (1 - math.exp(-dt / 60))
        self.avg300 += (target - self.avg300) * (1 - math.exp(-dt / 300))
        self.total_us += int(target / 100 * dt * 1_000_000)

    def line(self, scale: float = 1.0) -> PressureLine:
        return PressureLine(
            avg10=round(self.avg10 * scale, 2),
            avg60=round(self.avg60 * scale, 2),
            avg300=round(self.avg300 * scale, 2),
            total_us=int(self.total_us * scale),
        )


def _psi_target(available_fraction: float) -> float:
    """Memory stall share (PSI some, percent) at a given share of the pool available: nil with room to spare,
    ~10 at 10 % available, ~40 near exhaustion (3.5 %)."""
    if available_fraction >= 0.165:
        return 0.0
    return min(95.0, 40.0 * ((0.165 - available_fraction) / 0.13) ** 3)


def _hex_id(seed: int, what: str) -> str:
    return hashlib.sha256(f"sparktop-demo:{seed}:{what}".encode()).hexdigest()


class DemoController:
    """Stops and kills the demo's containers, with the Docker controller's contract: `stop` lets a container
    exit STOP_DELAY_S simulated seconds later, or raises StopTimeout for one that ignores SIGTERM (the
    training run in "default"), so the UI's offer to kill can be shown; `kill` removes it from the next
    sample.
    An unknown id (or one already gone) raises ControlError("no such container: <id>")."""

    def __init__(self, source: DemoSource) -> None:
        self._source = source

    def stop(self, container_id: str, timeout: float = 10.0) -> None:
        self._source._stop(container_id, timeout)

    def kill(self, container_id: str) -> None:
        self._source._kill(container_id)


class DemoSource(SnapshotSource):
    """A deterministic simulated DGX Spark. See the package docstring (`sparktop.sources.demo`)."""

    name = "demo"

    def __init__(
        self,
        scenario: str = "default",
        seed: int = 0,
        start: float = 1_767_225_600.0,
        step: float = 1.0,
        collectors: list[Collector] | None = None,
    ) -> None:
        """`collectors`: simulated add-on collectors run on every snapshot, as a live source runs the real
        ones (None: the registry's `DEMO_ADD_ONS`); they must depend only on the snapshot they are given."""
        if scenario not in SCENARIOS:
            raise ValueError(
                f"unknown demo scenario {scenario!r}; choose one of: {', '.join(DEMO_SCENARIOS)}"
            )
        if step <= 0:
            raise ValueError(f"step must be greater than 0 (got {step})")
        self.scenario = scenario
        self.seed = seed
        self.start = float(start)
        self.step = float(step)
        self._spec = SCENARIOS[scenario]
        self._lock = threading.Lock()
        self._samples = 0
        self._now = self.start  # time of the next sample
        self._rng = random.Random(f"sparktop-demo:{seed}:{scenario}:machine")
        raw = _hex_id(seed, "gpu-uuid")
        self._gpu_uuid = f"GPU-{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:32]}"
        layout = random.Random(f"sparktop-demo:{seed}:layout")
        self._boot = self.start - 3 * 86400 - layout.uniform(0, 86400)
        self._hosts = self._make_hosts(layout)
        self._containers = self._make_containers(layout)
        self._host_cache_extra = 0  # page cache left behind by removed containers
        # PSI averages, set to the scenario's level at the first sample (it has been like this a while)
        self._psi_some = _Psi(0.0, 0.0, 0.0)
        self._psi_full = _Psi(0.0, 0.0, 0.0)
        # warm for what runs from the start (a workload that starts later warms it then)
        steady = sum(
            c.spec.busy_util
            for c in self._containers
            if c.spec.activity == "steady" and not c.spec.starts_after_s
        )
        self._temp = 37.0 + 0.36 * min(100.0, steady)
        self._energy = 5_200_000.0 + layout.uniform(0, 500_000)
        self._last_busy = -math.inf
        self._throttle_since: float | None = None
        self._add_ons = AddOns(collectors, DEMO_ADD_ONS)

    # --- public --------------------------------------------------------------------------------------------

    @property
    def now(self) -> float:
        """The simulated time the next sample will carry."""
        return self._now

    def controller(self) -> DemoController:
        return DemoController(self)

    def sample(self) -> Snapshot:
        with self._lock:
            snapshot = self._build(self._now)
            self._add_ons.collect(snapshot)
            self._samples += 1
            self._now = self.start + self._samples * self.step
            return snapshot

    def close(self) -> None:
        self._add_ons.close()

    # --- layout -------------------------------------------------------------------------------------------

    def _make_hosts(self, layout: random.Random) -> list[_Host]:
        hosts: list[_Host] = []
        pid = 1
        for i, (name, cmd, rss_mb, cpu, gpu_mb, user) in enumerate(HOST_PROCESSES):
            if i:
                pid += layout.randint(2, 90) if i < 28 else layout.randint(200, 2500)
            start = self._boot + (0.4 if i == 0 else 2 + i * layout.uniform(0.5, 3.0))
            if i >= 28:  # the SSH session and what runs in it started this morning
                start = self.start - layout.uniform(3600, 4 * 3600)
            hosts.append(_Host(pid, name, cmd, rss_mb * MIB, cpu, gpu_mb * MIB, user, start))
        return hosts

    def _make_containers(self, layout: random.Random) -> list[_Container]:
        containers: list[_Container] = []
        pid = max(h.pid for h in self._hosts) + layout.randint(400, 3000)
        for spec in self._spec.workloads:
            shim = pid
            pids = []
            for _ in spec.procs:
                pid += layout.randint(2, 40)
                pids.append(pid)
            pid += layout.randint(100, 1500)
            containers.append(
                _Container(
                    spec=spec,
                    id=_hex_id(self.seed, f"container:{spec.name}"),
                    shim_pid=shim,
                    pids=pids,
                    rng=random.Random(f"sparktop-demo:{self.seed}:{self.scenario}:{spec.key}"),
                    ignores_sigterm=spec.ignores_sigterm,
                )
            )
        return containers

    # --- control ------------------------------------------------------------------------------------------

    def _find(self, container_id: str) -> _Container:
        live = [
            c
            for c in self._containers
            if (c.remove_at is None or c.remove_at > self._now)
            and self._now >= self.start + c.spec.starts_after_s
        ]
        for c in live:
            if container_id in (c.id, c.spec.name):
                return c
        matches = [c for c in live if len(container_id) >= 4 and c.id.startswith(container_id)]
        if len(matches) == 1:
            return matches[0]
        raise ControlError(f"no such container: {container_id}")

    def _stop(self, container_id: str, timeout: float) -> None:
        with self._lock:
            c = self._find(container_id)
            if c.ignores_sigterm:
                raise StopTimeout(
                    f"{c.spec.name} did not stop within {timeout:g} s of SIGTERM (it ignores the signal)"
                )
            at = self._now - self.step + STOP_DELAY_S
            c.remove_at = at if c.remove_at is None else min(c.remove_at, at)

    def _kill(self, container_id: str) -> None:
        with self._lock:
            c = self._find(container_id)
            c.remove_at = -math.inf

    # --- one tick -----------------------------------------------------------------------------------------

    def _build(self, t: float) -> Snapshot:
        elapsed = t - self.start
        dt = self.step
        rng = self._rng
        for c in self._containers:
            if c.remove_at is not None and c.remove_at <= t and c.file_extra == 0:
                # Its files stay in the page cache after it exits (reclaimable, so still available).
                c.file_extra = c.spec.file
                self._host_cache_extra += c.spec.file
        live = [
            c
            for c in self._containers
            if (c.remove_at is None or c.remove_at > t) and t >= self.start + c.spec.starts_after_s
        ]
        # Sustained compute beside a model server slows its decoding (the contention scenario).
        compute_busy = any(c.spec.activity == "steady" and not c.spec.server for c in live)

        processes: list[ProcessInfo] = []
        containers: list[ContainerInfo] = []
        services: list[ServiceReport] = []
        gpu_procs: list[GpuProcess] = []
        util = 0.0
        host_cpu = 0.0
        used = 0

        for h in self._hosts:
            rss = h.rss + int(h.rss * rng.uniform(-0.01, 0.01))
            cpu = round(max(0.0, h.cpu * rng.uniform(0.5, 1.5)), 1)
            host_cpu += cpu
            used += rss + self._pool_gpu(h.gpu)
            processes.append(
                ProcessInfo(
                    pid=h.pid,
                    ppid=0 if h.pid == 1 else 1,
                    name=h.name,
                    cmdline=h.cmdline,
                    user=h.user,
                    rss=rss,
                    cpu_percent=cpu,
                    gpu_bytes=h.gpu or None,
                    start_time=round(h.start, 2),
                )
            )
            if h.gpu:
                kind: Literal["graphics", "both"] = "both" if h.name == "gnome-shell" else "graphics"
                gpu_procs.append(GpuProcess(pid=h.pid, used_bytes=h.gpu, kind=kind, sm_pct=0.0))

        for c in live:
            spec = c.spec
            busy_util = self._activity(c, t)
            util += busy_util
            busy = busy_util > 5
            stopping = c.remove_at is not None
            started = self.start - spec.uptime_s  # fixed: a process keeps its start time
            cycle = (elapsed % spec.creep_cycle_s) if spec.creep_cycle_s else elapsed
            creep_gpu = int(spec.creep_gpu * cycle)
            creep_cpu = int(spec.creep_cpu * cycle)

            # the runtime shim on the host
            processes.append(
                ProcessInfo(
                    pid=c.shim_pid,
                    ppid=1,
                    name="containerd-shim",
                    cmdline=f"/usr/bin/containerd-shim-runc-v2 -namespace moby -id {c.id} "
                    f"-address /run/containerd/containerd.sock",
                    user="root",
                    rss=12 * MIB + (c.shim_pid % 7) * MIB,
                    cpu_percent=0.0,
                    start_time=round(started - 0.3, 2),
                )
            )
            used += 12 * MIB + (c.shim_pid % 7) * MIB
            gpu_total = 0
            proc_gpus: list[int] = []
            for i, (proc, pid) in enumerate(zip(spec.procs, c.pids, strict=True)):
                gpu = 0
                if proc.gpu:
                    gpu = proc.gpu + (creep_gpu if i == 0 else 0)
                    if spec.creep_gpu:
                        gpu += int(c.rng.gauss(0, 25 * MB))
                    elif busy:
                        gpu += int(c.rng.uniform(0, 40 * MB))  # activations and scratch while busy
                    gpu -= gpu % (2 * MIB)  # the allocator hands out 2 MiB pages
                    # its kernels: the workload's activity, all of it its first GPU process's
                    sm = 0.0 if gpu_total else float(round(busy_util))
                    gpu_total += gpu
                    gpu_procs.append(GpuProcess(pid=pid, used_bytes=gpu, kind="compute", sm_pct=sm))
                proc_gpus.append(gpu)
                rss = proc.rss + (creep_cpu if i == 0 else 0) + int(proc.rss * c.rng.uniform(-0.004, 0.004))
                cpu = proc.cpu * c.rng.uniform(0.85, 1.1) if busy else proc.cpu * c.rng.uniform(0.0, 0.03)
                host_cpu += cpu
                processes.append(
                    ProcessInfo(
                        pid=pid,
                        ppid=c.shim_pid if i == 0 else c.pids[0],
                        name=proc.name,
                        cmdline=proc.cmdline,
                        user=proc.user,
                        rss=rss,
                        cpu_percent=round(cpu, 1),
                        container_id=c.id,
                        gpu_bytes=gpu or None,
                        start_time=round(started + 0.8 + i * 2.1, 2),
                    )
                )
            anon = spec.anon + creep_cpu + int(c.rng.uniform(-8, 8) * MIB)
            file = spec.file + spec.shmem
            inactive = int(spec.file * 0.4)
            usage = anon + file + 48 * MIB  # + kernel memory charged to the cgroup
            working_set = usage - inactive
            c.peak = max(c.peak, usage)
            memory = CgroupMemory(
                usage=usage,
                working_set=working_set,
                anon=anon,
                file=file,
                shmem=spec.shmem,
                inactive_file=inactive,
                limit=spec.limit,
                peak=c.peak,
                oom_kills=0,
                pressure=Pressure(
                    some=self._psi_some.line(0.8 if spec.creep_gpu or spec.activity == "steady" else 0.5),
                    full=self._psi_full.line(0.8 if spec.creep_gpu or spec.activity == "steady" else 0.5),
                ),
            )
            used += working_set + self._pool_gpu(gpu_total)
            containers.append(
                ContainerInfo(
                    id=c.id,
                    runtime="docker",
                    name=spec.name,
                    image=spec.image,
                    status="stopping" if stopping else "running",
                    compose_project=spec.project,
                    compose_service=spec.service,
                    cgroup_path=f"/system.slice/docker-{c.id}.scope",
                    memory=memory,
                    pids=list(c.pids),
                    gpu_bytes=gpu_total,
                    ports=[spec.port] if spec.server else [],
                )
            )
            if spec.server:
                services.append(self._service(c, t, proc_gpus, busy, compute_busy))

        # kernel, driver (a CUDA context costs the driver a little), page tables
        cuda_contexts = sum(1 for p in gpu_procs if p.kind != "graphics")
        kernel = self._spec.kernel + cuda_contexts * 96 * MIB + int(rng.uniform(-20, 20) * MIB)
        used += kernel
        used = min(used, MEM_TOTAL - 256 * MIB)
        available = MEM_TOTAL - used
        container_files = sum(c.spec.file + c.spec.shmem for c in live)
        host_cache = min(self._spec.host_cache + self._host_cache_extra, int(available * 0.7))
        sreclaimable = min(int(0.9 * GB), available // 10)
        free = max(64 * MIB, available - host_cache - sreclaimable - int(0.35 * GB))
        shmem = sum(c.spec.shmem for c in live) + 210 * MIB

        fraction = available / MEM_TOTAL
        target = _psi_target(fraction)
        if target:
            target *= rng.uniform(0.85, 1.15)
        else:
            target = rng.uniform(0.0, 0.12) if rng.random() < 0.2 else 0.0
        if self._samples == 0:
            self._psi_some = _Psi(target, target, target, total_us=int(target / 100 * 3 * 86400e6 * 0.1))
            self._psi_full = _Psi(target * 0.62, target * 0.62, target * 0.62, self._psi_some.total_us // 2)
        self._psi_some.advance(target, dt)
        self._psi_full.advance(target * 0.62, dt)

        util = min(100.0, util)
        # Time-sliced kernels share the SMs: the processes' shares add up to the device's utilisation at most
        # (a real H100 gave 39 % + 59 % beside 100 %), never 61 % + 98 %.
        claimed = sum(p.sm_pct or 0.0 for p in gpu_procs)
        if claimed > util:
            for gpu_proc in gpu_procs:
                if gpu_proc.sm_pct:
                    gpu_proc.sm_pct = float(round(gpu_proc.sm_pct * util / claimed))
        gpu_state = self._gpu_state(t, util, gpu_procs)

        host_memory = HostMemory(
            total=MEM_TOTAL,
            available=available,
            free=free,
            cached=host_cache + container_files,
            buffers=min(int(0.31 * GB), available // 20),
            shmem=shmem,
            sreclaimable=sreclaimable,
            swap_total=0,
            swap_free=0,
            pressure=Pressure(some=self._psi_some.line(), full=self._psi_full.line()),
            cpu_percent=round(min(100.0, host_cpu / CPU_COUNT), 1),
            cpu_count=CPU_COUNT,
        )
        gpu_report = GpuReport(available=True, driver_version=DRIVER_VERSION, gpus=[gpu_state])
        attach_sm_utilisation(gpu_report, processes, containers)
        processes.sort(key=lambda p: p.pid)
        return Snapshot(
            timestamp=t,
            source="demo",
            hostname=DISCRETE_HOSTNAME if self._spec.discrete else HOSTNAME,
            memory=host_memory,
            gpu=gpu_report,
            processes=processes,
            containers=containers,
            docker=DockerStatus(available=True),
            services=services,
        )

    def _service(
        self, c: _Container, t: float, gpus: list[int], busy: bool, beside_compute: bool = False
    ) -> ServiceReport:
        """What the container's model server would answer: Ollama's /api/ps or vLLM's /metrics, from the
        simulated memory (no random draws, so the other figures of a scenario do not move)."""
        spec = c.spec
        common: _ServiceCommon = {
            "collector": "servers",
            "endpoint": f"http://127.0.0.1:{spec.port}",
            "owner": f"container:{c.id}",
            "checked_at": t,
        }
        if spec.server == "ollama":
            models = []
            for i, (name, proc, gpu) in enumerate(zip(spec.models, spec.procs[1:], gpus[1:], strict=False)):
                ctx = re.search(r"--ctx-size (\d+)", proc.cmdline)
                active = busy and i == 0
                # keep_alive 5 min after the last request: the busy model restarts it, the rest count down
                left = 300.0 if active else 300.0 - ((t + 97 * i) % 240.0)
                models.append(
                    ServedModel(
                        name=name,
                        gpu_bytes=gpu,
                        cpu_bytes=0,  # on GB10 Ollama places every layer "on the GPU": size_vram == size
                        context_length=int(ctx.group(1)) if ctx else None,
                        expires_at=t + left,
                        requests_running=1 if active else 0,
                        # decode reads the weights once per token: bandwidth-bound, ~60 % of 273 GB/s
                        tokens_per_s=round(0.6 * 273e9 / gpu, 1) if active and gpu else 0.0,
                    )
                )
            fields = ["name", "size", "digest", "details", "expires_at", "size_vram", "context_length"]
            return ServiceReport(server="ollama", version="0.12.6", models=models, fields=fields, **common)
        util = spec.gpu_memory_utilization or 0.0
        wave = abs(math.sin(t / 53.0))
        running = 3 + int(4 * wave) if busy else 0
        # Only a steady server feels its neighbour (the other scenarios' vLLM figures stay as they were).
        steady = spec.activity == "steady"
        slower = CONTENTION_SLOWDOWN * (1 + 0.04 * math.sin(t / 7.0)) if beside_compute and steady else 1.0
        weights = 16.4 * GB  # Qwen3-8B in bf16
        per_token = 36 * 8 * 128 * 2 * 2  # layers × KV heads × head dim × (K, V) × bf16 bytes
        model = ServedModel(
            name=spec.models[0],
            reserved_bytes=int(util * MEM_TOTAL),
            gpu_memory_utilization=util,
            context_length=32768,
            kv_cache_tokens=int((util * MEM_TOTAL - weights - 2 * GB) / per_token),
            kv_cache_usage=round(0.08 + 0.5 * wave, 3) if busy else 0.01,
            requests_running=running,
            requests_waiting=int(3 * abs(math.sin(t / 29.0))) if busy else 0,
            tokens_per_s=round(running * 0.55 * 273e9 / weights / slower, 1),
        )
        fields = ["vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                  "vllm:generation_tokens_total", "vllm:cache_config_info"]  # fmt: skip
        return ServiceReport(server="vllm", version="0.11.0", models=[model], fields=fields, **common)

    def _activity(self, c: _Container, t: float) -> float:
        """GPU utilisation this workload adds at time t (percent)."""
        spec = c.spec
        rng = c.rng
        if spec.activity == "idle":
            return 0.0
        if spec.activity == "steady":
            return max(0.0, min(100.0, rng.gauss(spec.busy_util, 1.6)))
        # bursty (an LLM answering requests) or pipeline (short STT/TTS turns now and then)
        busy_mean, idle_mean = (12.0, 30.0) if spec.activity == "bursty" else (2.5, 28.0)
        while t >= c.until:
            if c.until == 0.0:  # first call: start somewhere in an idle phase
                c.busy = False
                c.until = t + rng.expovariate(1 / idle_mean) * 0.5
                continue
            c.busy = not c.busy
            mean = busy_mean if c.busy else idle_mean
            c.until += max(1.0, rng.expovariate(1 / mean))
        if c.busy:
            return max(0.0, min(100.0, rng.gauss(spec.busy_util, 3.0)))
        return rng.choice((0.0, 0.0, 0.0, 1.0))

    def _pool_gpu(self, nbytes: int) -> int:
        """GPU memory drawn from the host pool: all of it on a Spark, none on a discrete GPU."""
        return 0 if self._spec.discrete else nbytes

    def _gpu_state(self, t: float, util: float, procs: list[GpuProcess]) -> GpuState:
        rng = self._rng
        util = round(util)
        if util > 5:
            self._last_busy = t
        target_temp = 37.0 + 0.36 * util
        self._temp += (target_temp - self._temp) * (1 - math.exp(-self.step / 45))
        power = 4.6 + 0.9 * util + rng.uniform(-0.6, 0.6) * (1 + util / 25)
        power = max(3.5, min(100.0, power))
        self._energy += power * self.step
        if util > 5:
            clock = 2418 - max(0, int((self._temp - 62) * 9)) - rng.choice((0, 15, 30))
            pstate = 0
        elif t - self._last_busy < 30:
            clock, pstate = 1_530, 2
        else:
            clock, pstate = 208, 8
        if self._spec.discrete:
            held = sum(p.used_bytes or 0 for p in procs)
            return self._clock_reasons(t, GpuState(
                index=0,
                name=DISCRETE_GPU_NAME,
                uuid=self._gpu_uuid,
                pci_bus_id="00000000:18:00.0",
                utilization_pct=float(util),
                sm_clock_mhz=1980 if util > 5 else 345,
                temperature_c=float(round(self._temp)),
                power_w=round(70 + 6 * util, 2),
                pstate=0 if util > 5 else 8,
                energy_j=round(self._energy, 3),
                sm_count=132,
                compute_capability="9.0",
                addressing_mode="HMM",
                unified_memory=False,
                memory_total=DISCRETE_GPU_MEMORY,
                # what the driver keeps for itself shows in NVML's "used" but in no process
                memory_used=min(DISCRETE_GPU_MEMORY, held + DISCRETE_GPU_RESERVED),
                processes=sorted(procs, key=lambda p: p.pid),
                sm_clock_max_mhz=1980,
            ))  # fmt: skip
        return self._clock_reasons(t, GpuState(
            index=0,
            name=GPU_NAME,
            uuid=self._gpu_uuid,
            pci_bus_id="0000000F:01:00.0",  # as nvidia-smi shows a DGX Spark's GB10
            utilization_pct=float(util),
            sm_clock_mhz=clock,
            temperature_c=float(round(self._temp)),
            power_w=round(power, 2),
            pstate=pstate,
            energy_j=round(self._energy, 3),
            sm_count=SM_COUNT,
            compute_capability="12.1",
            addressing_mode="ATS",
            unified_memory=True,
            memory_total=None,
            memory_used=None,
            processes=sorted(procs, key=lambda p: p.pid),
            unsupported=dict(GB10_UNSUPPORTED),
            sm_clock_max_mhz=GB10_MAX_SM_CLOCK,
        ))  # fmt: skip

    def _clock_reasons(self, t: float, gpu: GpuState) -> GpuState:
        """Why the clock sits where it does, as NVML would say: idle at rest; under load, the power cap below
        the top clock, and thermal slowdown once the GPU runs hot. Remembers when a throttle began."""
        busy = (gpu.utilization_pct or 0) > 5
        reasons = GPU_IDLE
        if busy:  # at the top clock nothing holds it back
            below = gpu.sm_clock_mhz is not None and gpu.sm_clock_mhz < (gpu.sm_clock_max_mhz or 0)
            hot = SW_THERMAL if (gpu.temperature_c or 0) > 62 else 0
            reasons = SW_POWER_CAP | hot if below else 0
        gpu.clocks_event_reasons = reasons
        if not slowing_reasons(gpu):
            self._throttle_since = None
        elif self._throttle_since is None:
            self._throttle_since = t
        gpu.throttle_since = self._throttle_since
        return gpu
