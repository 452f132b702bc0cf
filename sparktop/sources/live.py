"""The live source: one Snapshot of this machine per `sample()`.

Per tick: `/proc/meminfo`, `/proc/pressure/memory` and `/proc/stat`; every process (`ProcessScanner`); each
container's cgroup memory files; NVML (GPU state and per-process memory); the Docker discovery's cached names
and labels (it refreshes itself every few seconds, never per tick); PSS for the top host processes (re-read
every `pss_interval` seconds within a small per-tick time budget, cached in between); then the add-on
collectors (collect/registry.py) add their reports. Accounting is the session's job
(sparktop/session/session.py).

Nothing here raises for a bad reading: each problem becomes one line in `Snapshot.errors`. The one reading
without which a snapshot means little is `/proc/meminfo`: if it fails, the last good reading is reused (and
the error says so); before any good reading, the pool is reported as zeros with the error.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sparktop.collect.add_on import Collector
from sparktop.collect.cgroups import CgroupFS
from sparktop.collect.control import ContainerController
from sparktop.collect.host_paths import HOST_ROOT, HostPaths
from sparktop.collect.nvml import attach_sm_utilisation
from sparktop.collect.processes import ProcessScanner, read_pss
from sparktop.collect.procfs import CpuSampler, ProcReadError, read_meminfo, read_pressure
from sparktop.collect.registry import AddOns, Guarded
from sparktop.core.safe_text import one_line
from sparktop.core.snapshot import (
    ContainerInfo,
    DockerStatus,
    GpuReport,
    HostMemory,
    ProcessInfo,
    Snapshot,
)
from sparktop.sources.snapshot_source import SnapshotSource

if TYPE_CHECKING:
    from sparktop.settings.config import Config

__all__ = ["LiveSource"]


class GpuCollector(Protocol):
    def collect(self) -> GpuReport: ...


class ContainerDiscovery(Protocol):
    def containers(self) -> tuple[dict[str, dict[str, Any]], DockerStatus]: ...


def _nvml_collector() -> GpuCollector:
    from sparktop.collect.nvml import NvmlCollector

    return NvmlCollector()


def _docker_discovery(base_url: str | None = None) -> ContainerDiscovery:
    from sparktop.collect.docker import DockerDiscovery

    return DockerDiscovery(base_url)


_PssKey = tuple[int, float | None, str]  # (PID, start time, command line)
_PSS_RSS_SLACK = 8 * 1024**2  # RSS may move this much (or 2 %) before a PSS read earlier counts as stale


class _PssCache:
    """PSS for the top host processes by RSS, re-read at most every `interval` seconds per process whose RSS
    moved since its read, every `steady_interval` seconds for one whose RSS did not, and for at most about
    `budget` seconds per tick (at least one read), oldest first. Reading `smaps_rollup` costs about 20 µs
    per MiB of RSS, so doing it every tick for big processes would stall the collector; re-reading the
    steady ones every 10 s was a fifth of a live dashboard's idle CPU here."""

    def __init__(
        self,
        proc_root: Path,
        top_n: int,
        interval: float,
        budget: float = 0.010,
        steady_interval: float | None = None,
    ) -> None:
        self.proc_root = str(proc_root)
        self.top_n = top_n
        self.interval = interval
        self.steady_interval = max(interval, steady_interval if steady_interval is not None else 6 * interval)
        self.budget = budget
        # key -> (pss, read at, RSS then); the command line is in the key: an exec keeps PID and start time,
        # and a read of the program before is not the new one's
        self._cache: dict[_PssKey, tuple[int | None, float, int]] = {}

    def fill(self, procs: list[ProcessInfo]) -> None:
        if self.top_n <= 0:
            return
        now = time.monotonic()
        top = sorted((p for p in procs if p.rss > 0), key=lambda p: p.rss, reverse=True)[: self.top_n]
        cache: dict[_PssKey, tuple[int | None, float, int]] = {}
        stale: list[tuple[float, int, ProcessInfo]] = []
        for rank, proc in enumerate(top):
            key = (proc.pid, proc.start_time, proc.cmdline)
            hit = self._cache.get(key)
            if hit is not None:
                cache[key] = hit
                proc.pss = hit[0]
                # RSS is read every tick, PSS every `interval`: one read before the process grew (a 1.2 GiB
                # process shown as 361 MiB for up to 10 s) is marked, and the fresh RSS is counted instead.
                proc.pss_stale = abs(proc.rss - hit[2]) > max(_PSS_RSS_SLACK, proc.rss // 50)
            age = now - hit[1] if hit is not None else math.inf
            if age >= self.steady_interval or (age >= self.interval and proc.pss_stale):
                stale.append((hit[1] if hit is not None else float("-inf"), rank, proc))
        stale.sort()
        started = time.perf_counter()
        for _, _, proc in stale:
            proc.pss = read_pss(proc.pid, self.proc_root)
            proc.pss_stale = False
            cache[(proc.pid, proc.start_time, proc.cmdline)] = (proc.pss, now, proc.rss)
            if time.perf_counter() - started >= self.budget:
                break
        self._cache = cache  # only the current top: bounded


class LiveSource(SnapshotSource):
    """This machine, read from `proc_root` and `cgroup_root` (parameters so tests can use fixture trees).

    `nvml` (`.collect() -> GpuReport`) and `docker` (`.containers() -> (id -> info, DockerStatus)`) default
    to `NvmlCollector()` and `DockerDiscovery()`, made on first use; `collectors` (add-ons, see
    collect/add_on.py) default to the registry's, made with the user's `config` (its `[[servers]]`, say). Each
    goes through one guard (`Guarded`): if one cannot be imported or made, or fails this tick, the snapshot
    says why and everything else still works. `close()` closes them all, whoever made them."""

    name = "live"

    def __init__(
        self,
        proc_root: Path | None = None,
        cgroup_root: Path | None = None,
        nvml: GpuCollector | None = None,
        docker: ContainerDiscovery | None = None,
        pss_top_n: int = 10,
        pss_interval: float = 10.0,
        pss_steady_interval: float | None = None,
        collectors: list[Collector] | None = None,
        config: Config | None = None,
        host: HostPaths | None = None,
    ) -> None:
        # `host`: where the machine is read from (`--root`); `proc_root` / `cgroup_root` override its parts.
        self.host = host or HostPaths(Path(config.host_root) if config is not None else HOST_ROOT)
        self.proc_root = Path(proc_root) if proc_root is not None else self.host.proc
        cgroup_root = Path(cgroup_root) if cgroup_root is not None else self.host.cgroup
        self.scanner = ProcessScanner(self.proc_root)
        self.cgroups = CgroupFS(cgroup_root)
        self._cpu = CpuSampler(self.proc_root)
        self._pressure_path = self.proc_root / "pressure" / "memory"
        self._nvml = Guarded("NVML", _nvml_collector, nvml, what="NVML collector")
        docker_url = self.host.docker_url
        self._docker = Guarded(
            "Docker", lambda: _docker_discovery(docker_url), docker, what="Docker discovery"
        )
        self._add_ons = AddOns(collectors, config=config)
        self._quick_next = False  # the next sample skips discovery and the add-ons (defer_slow_parts)
        self._asked_for: set[str] = set()  # unnamed Docker container ids the engine was asked about again
        self._last_memory: HostMemory | None = None
        self._pss = _PssCache(self.proc_root, pss_top_n, pss_interval, steady_interval=pss_steady_interval)

    # --- the optional collectors ------------------------------------------------------------------------

    def _gpu(self, errors: list[str]) -> GpuReport:
        return self._nvml.call(
            lambda nvml: nvml.collect(), errors, lambda reason: GpuReport(available=False, reason=reason)
        )

    def defer_slow_parts(self) -> None:
        """The next sample is a quick one, for a dashboard's first frame: /proc, cgroups and NVML only. It
        skips Docker discovery (containers by id, status not known yet) and the add-on collectors (model
        servers, footprints, slowdowns, the guard's state); the one after has them all. Importing the Docker
        SDK and asking the engine take ~0.15 s, the add-ons' modules (an HTTP client, prometheus_client,
        sqlite3) ~0.05 s and ~3 MiB: none of it need come before the first frame."""
        self._quick_next = True

    def _discovery(self, errors: list[str]) -> tuple[dict[str, dict[str, Any]], DockerStatus]:
        return self._docker.call(
            lambda docker: docker.containers(),
            errors,
            lambda reason: ({}, DockerStatus(available=False, reason=reason)),
        )

    # --- one tick -------------------------------------------------------------------------------------------

    def _memory(self, errors: list[str]) -> HostMemory:
        try:
            memory = read_meminfo(self.proc_root, notes=errors)
        except ProcReadError as exc:
            if self._last_memory is not None:
                errors.append(f"{exc} (showing the previous reading)")
                memory = self._last_memory.model_copy()
            else:
                errors.append(str(exc))
                memory = HostMemory(total=0, available=0, free=0)
        else:
            self._last_memory = memory
        memory.pressure = read_pressure(self._pressure_path, beneath=self.proc_root)
        try:
            memory.cpu_percent = self._cpu.percent()
        except ProcReadError as exc:
            errors.append(str(exc))
        memory.cpu_count = self._cpu.cpu_count or os.cpu_count()
        return memory

    def _containers(
        self,
        processes: list[ProcessInfo],
        gpu_by_pid: dict[int, int],
        meta: dict[str, dict[str, Any]],
    ) -> list[ContainerInfo]:
        """Every container seen in a process's cgroup or in the known cgroup directories."""
        pids: dict[str, list[int]] = {}
        for proc in processes:
            if proc.container_id:
                pids.setdefault(proc.container_id, []).append(proc.pid)
        walked = self.cgroups.container_cgroups()
        matches = self.scanner.container_matches
        containers: list[ContainerInfo] = []
        for cid in dict.fromkeys([*pids, *walked]):
            match = matches.get(cid)
            runtime = match.runtime if match is not None else walked[cid][0]
            path = self.cgroups.path_for(match) if match is not None else None
            if path is None and cid in walked:
                path = walked[cid][1]
            info = meta.get(cid) or {}
            container_pids = sorted(pids.get(cid, ()))
            containers.append(
                ContainerInfo(
                    id=cid,
                    runtime=runtime,
                    name=info.get("name"),
                    image=info.get("image"),
                    status=info.get("status"),
                    compose_project=info.get("compose_project"),
                    compose_service=info.get("compose_service"),
                    cgroup_path=path,
                    memory=self.cgroups.memory(path) if path else None,
                    pids=container_pids,
                    gpu_bytes=sum(gpu_by_pid.get(pid, 0) for pid in container_pids),
                    ports=info.get("ports") or [],
                )
            )
        containers.sort(key=lambda c: (c.label, c.id))
        return containers

    def sample(self) -> Snapshot:
        quick, self._quick_next = self._quick_next, False
        errors: list[str] = []
        timestamp = time.time()
        memory = self._memory(errors)
        try:
            processes = self.scanner.scan()
        except OSError as exc:  # /proc itself unreadable
            errors.append(f"cannot list {self.proc_root}: {one_line(exc)}")
            processes = []
        gpu = self._gpu(errors)
        gpu_by_pid = gpu.gpu_bytes_by_pid()
        for proc in processes:
            nbytes = gpu_by_pid.get(proc.pid)
            if nbytes is not None:
                proc.gpu_bytes = nbytes
        meta: dict[str, dict[str, Any]] = {}
        docker_status = DockerStatus(available=False, reason=None)  # quick: not known yet, nothing to say
        if not quick:
            meta, docker_status = self._discovery(errors)
        containers = self._containers(processes, gpu_by_pid, meta)
        # A Docker container the engine's last list lacks: started since then, or another engine's. Ask the
        # engine again at once (once per container), so a new one is named now, not a refresh later, and one
        # still unlisted after a fresh list is known to belong to an engine we are not connected to.
        unnamed = {c.id for c in containers if c.runtime == "docker" and c.name is None}
        self._asked_for &= unnamed
        invalidate = getattr(self.discovery, "invalidate", None)
        if unnamed - self._asked_for and docker_status.available and callable(invalidate):
            self._asked_for |= unnamed
            invalidate()
            meta, docker_status = self._discovery(errors)
            containers = self._containers(processes, gpu_by_pid, meta)
        attach_sm_utilisation(gpu, processes, containers)
        # PSS matters for host processes only: a container's memory is its cgroup's.
        self._pss.fill([p for p in processes if p.container_id is None])
        snapshot = Snapshot(
            timestamp=timestamp,
            source="live",
            hostname=self.host.hostname(),
            memory=memory,
            gpu=gpu,
            processes=processes,
            containers=containers,
            docker=docker_status,
            errors=errors,
        )
        # The add-ons read the core snapshot (published ports, say) and add their reports to it.
        if not quick:
            self._add_ons.collect(snapshot)
        else:  # what the views show as "…" until the next sample
            snapshot.pending = ["docker", "servers"] if len(self._add_ons) else ["docker"]
        return snapshot

    @property
    def discovery(self) -> ContainerDiscovery | None:
        """The Docker discovery in use (None until the first sample made one, or when Docker is missing):
        the stop controller talks to the same engine, and invalidates its names after a stop."""
        return self._docker.part

    def controller(self) -> ContainerController:
        """A DockerController on the same engine as the discovery (nothing is connected until a stop)."""
        from sparktop.collect.docker import DockerController

        # None: the default endpoint, which DockerController resolves the same way as the discovery.
        return DockerController(base_url=getattr(self.discovery, "base_url", None) or self.host.docker_url)

    def settle(self, timeout: float) -> bool:
        """Wait (at most `timeout` s) for the add-on collectors' first background readings (`--once`); True
        when a sample now would carry something the last one could not."""
        return self._add_ons.settle(timeout)

    def close(self) -> None:
        for part in (self._nvml, self._docker, self._add_ons):
            part.close()
