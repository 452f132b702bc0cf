"""GPU telemetry from NVML (nvidia-ml-py's `pynvml`), tolerant of GB10 and of everything that can go wrong.

As nvitop and btop do, each device's capabilities are learnt once: a metric that answers NOT_SUPPORTED (or
whose function this driver's NVML lacks) is remembered with its reason in `GpuState.unsupported` and not asked
again. Nothing here raises: no library, no driver, no GPU or a GPU lost mid-run becomes
`GpuReport(available=False, reason=...)`, and the next `collect()` initialises NVML again, so the dashboard
recovers when the driver comes back.

GB10 (DGX Spark) specifics, from reference/gb10-telemetry.md:
- device memory info is NOT_SUPPORTED (an unverified report says SUCCESS with total ~ MemTotal): on a
  unified-memory device the NVML totals are never reported, the pool is /proc/meminfo's;
- per-process memory works, from both the compute and the graphics lists; a PID in both is one context, so
  its memory is the larger figure, not the sum;
- fan, power limit, memory clock, memory utilisation and PCIe answer N/A, 0 or a fake "Gen1 x1": on a
  unified-memory device they are never asked and are listed as not meaningful.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from sparktop.core.clock_reasons import THROTTLE_GAP_S, slowing_reasons
from sparktop.core.snapshot import ContainerInfo, GpuProcess, GpuReport, GpuState, ProcessInfo

# Metrics that mean nothing on a unified-memory GPU: never read there, listed in `unsupported` instead.
HIDDEN_ON_UNIFIED = ("fan_speed", "power_limit", "memory_clock", "memory_utilization", "pcie")

# The two process lists NVML keeps (GpuProcess.kind, the infix of its nvmlDeviceGet*RunningProcesses call).
_PROCESS_LISTS: tuple[tuple[Literal["compute", "graphics"], str], ...] = (
    ("compute", "Compute"),
    ("graphics", "Graphics"),
)

# CUDA cores per SM by compute capability major version (Volta/Turing/A100: 64; consumer Ampere, Ada,
# Hopper, Blackwell: 128). 8.0 (A100) is the exception of its major version.
_CORES_PER_SM = {7: 64, 8: 128, 9: 128, 10: 128, 11: 128, 12: 128}
_CORES_PER_SM_EXACT = {(8, 0): 64}

_ADDRESSING = {0: "none", 1: "HMM", 2: "ATS"}

# Per-process SM utilisation: the newer call first, then the older one (which answers nothing on some
# Blackwell parts, reference/gb10-telemetry.md). Metric names as kept in `unsupported`.
_PROCESS_UTILISATION = (
    ("process_utilization_info", "nvmlDeviceGetProcessesUtilizationInfo"),
    ("process_utilization", "nvmlDeviceGetProcessUtilization"),
)
# The first read asks for every sample NVML keeps (timestamp 0) and uses those of the last 2 s: before now
# where NVML stamps them with the wall clock, else before its newest (no assumption about NVML's clock).
_FIRST_WINDOW_US = 2_000_000
_SAME_CLOCK_US = 86_400_000_000  # samples within a day of time.time() are on the wall clock

REASON_NO_LIBRARY = "NVML library not found (no NVIDIA driver installed)"
REASON_NO_PACKAGE = "NVML library not found (the nvidia-ml-py package is not installed)"
NVML_LIBRARY = "libnvidia-ml.so.1"  # the name pynvml loads on Linux
NOT_SUPPORTED = "not supported on this device"


class _GpuLost(Exception):
    """NVML stopped working mid-run: drop every handle and initialise again on the next collect()."""


@dataclass
class _Device:
    index: int
    handle: Any
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    compute_capability: str | None = None
    sm_count: int | None = None
    addressing_mode: str | None = None
    unified: bool = False
    memory_readable: bool = True  # read device memory every tick (discrete GPUs)
    sm_clock_max_mhz: int | None = None
    # NVML timestamp (µs) of the newest per-process utilisation sample read: the next read asks for newer ones
    samples_seen_us: int | None = None
    throttle_since: float | None = None  # Unix time the current throttle began
    calm_since: float | None = None  # Unix time of the first sample without throttle after one with
    # metric -> reason, learnt once: these are not asked again
    unsupported: dict[str, str] = field(default_factory=dict)


def attach_sm_utilisation(
    gpu: GpuReport, processes: list[ProcessInfo], containers: list[ContainerInfo]
) -> None:
    """Copy NVML's per-process SM utilisation onto the processes, and sum it per container (over the
    processes measured; None where none is)."""
    by_pid = gpu.sm_pct_by_pid()
    if not by_pid:
        return
    for proc in processes:
        proc.gpu_sm_pct = by_pid.get(proc.pid)
    for container in containers:
        measured = [by_pid[pid] for pid in container.pids if pid in by_pid]
        container.gpu_sm_pct = sum(measured) if measured else None


def unified_unsupported(name: str, nvml_total: int | None = None) -> dict[str, str]:
    """What a unified-memory GPU (GB10) does not report, with the reasons shown to the user. `nvml_total`:
    the device memory total NVML gave anyway (an unverified GB10 report), which is not used either."""
    where = "GB10" if "GB10" in name else "a unified-memory GPU"
    if nvml_total is None:
        memory = f"not supported on {where} (unified memory: the pool is MemTotal)"
    else:
        memory = f"not used on {where} (NVML says {nvml_total / 1024**3:.1f} GiB; the pool is MemTotal)"
    out = {"memory_total": memory, "memory_used": memory}
    out.update((metric, f"not meaningful on {where}") for metric in HIDDEN_ON_UNIFIED)
    return out


def _library_loads() -> bool:
    """Whether NVML's library can be loaded, asked before pynvml is imported: pynvml is ~2.4 MiB resident
    (hundreds of ctypes structures), which a machine without the NVIDIA driver would keep for nothing, asked
    again every few seconds. Once pynvml is imported (elsewhere in the process) it decides, as before."""
    if "pynvml" in sys.modules or not sys.platform.startswith("linux"):
        return True  # imported already, nothing to save; or a system where pynvml knows other places
    try:
        ctypes.CDLL(NVML_LIBRARY)
    except OSError:
        return False
    return True


class NvmlCollector:
    """`collect()` returns one `GpuReport`; `close()` shuts NVML down. Safe to call from a worker thread.

    After a failed start (no driver, GPU lost) NVML is tried again at most every `retry_interval` seconds;
    in between, `collect()` repeats the last reason without touching the library."""

    def __init__(
        self,
        retry_interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.retry_interval = retry_interval
        self._clock = clock
        self._wall_clock = wall_clock  # Unix time: when a throttle began
        self._failed: GpuReport | None = None
        self._retry_at = 0.0
        self._lock = threading.Lock()
        self._nvml: Any = None  # the pynvml module once imported
        self._initialised = False  # nvmlInit succeeded and needs a matching nvmlShutdown
        self._ready = False  # devices probed
        self._devices: list[_Device] = []
        self._driver_version: str | None = None

    # --- public -------------------------------------------------------------------------------------------

    def collect(self) -> GpuReport:
        with self._lock:
            if not self._ready:
                if self._failed is not None and self._clock() < self._retry_at:
                    return self._failed
                problem = self._init()
                if problem is not None:
                    return self._fail(GpuReport(available=False, reason=problem))
            try:
                gpus = [self._read(dev) for dev in self._devices]
            except _GpuLost as exc:
                self._shutdown()
                return self._fail(
                    GpuReport(available=False, reason=str(exc), driver_version=self._driver_version)
                )
            self._failed = None
            return GpuReport(available=True, driver_version=self._driver_version, gpus=gpus)

    def _fail(self, report: GpuReport) -> GpuReport:
        self._failed = report
        self._retry_at = self._clock() + self.retry_interval
        return report

    def close(self) -> None:
        with self._lock:
            self._shutdown()

    # --- initialisation -----------------------------------------------------------------------------------

    def _init(self) -> str | None:
        """Load NVML and learn the devices; returns why the GPU cannot be read, or None."""
        if importlib.util.find_spec("pynvml") is None:
            return REASON_NO_PACKAGE
        if not _library_loads():
            return REASON_NO_LIBRARY
        try:
            import pynvml
        except ImportError:
            return REASON_NO_PACKAGE
        self._nvml = nv = pynvml
        try:
            nv.nvmlInit()
        except nv.NVMLError_LibraryNotFound:
            return REASON_NO_LIBRARY
        except nv.NVMLError_DriverNotLoaded:
            return "NVIDIA driver not loaded (NVML: Driver Not Loaded)"
        except nv.NVMLError_NoPermission:
            return "no permission to use NVML (is /dev/nvidiactl readable?)"
        except nv.NVMLError_LibRmVersionMismatch:
            return "NVML library and kernel driver versions differ (reboot after the driver update?)"
        except nv.NVMLError as exc:
            return f"NVML failed to initialise: {exc}"
        except OSError as exc:  # a broken libnvidia-ml that cannot be loaded
            return f"NVML library could not be loaded: {exc}"
        self._initialised = True
        try:
            self._driver_version = nv.nvmlSystemGetDriverVersion()
        except nv.NVMLError:
            self._driver_version = None
        try:
            count = nv.nvmlDeviceGetCount()
            if count == 0:
                self._shutdown()
                return "no NVIDIA GPU found (NVML sees 0 devices)"
            self._devices = [self._probe(i, nv.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
        except _GpuLost as exc:
            self._shutdown()
            return str(exc)
        except nv.NVMLError as exc:
            self._shutdown()
            return f"NVML could not list the GPUs: {exc}"
        self._ready = True
        return None

    def _probe(self, index: int, handle: Any) -> _Device:
        """What never changes for a device, and what it can report: asked once."""
        nv = self._nvml
        dev = _Device(index=index, handle=handle, name=f"GPU {index}")
        name = self._call(dev, "name", nv.nvmlDeviceGetName, handle)
        dev.name = name or dev.name
        dev.uuid = self._call(dev, "uuid", nv.nvmlDeviceGetUUID, handle)
        pci = self._call(dev, "pci_bus_id", getattr(nv, "nvmlDeviceGetPciInfo", None), handle)
        if pci is not None:
            bus_id = pci.busId
            dev.pci_bus_id = bus_id.decode(errors="replace") if isinstance(bus_id, bytes) else str(bus_id)
        cc = self._call(dev, "compute_capability", nv.nvmlDeviceGetCudaComputeCapability, handle)
        if cc is not None:
            dev.compute_capability = f"{cc[0]}.{cc[1]}"
        dev.sm_count = self._sm_count(dev, cc)
        dev.sm_clock_max_mhz = self._call(
            dev, "sm_clock_max_mhz", getattr(nv, "nvmlDeviceGetMaxClockInfo", None), handle, nv.NVML_CLOCK_SM
        )
        mode = self._call(dev, "addressing_mode", getattr(nv, "nvmlDeviceGetAddressingMode", None), handle)
        if mode is not None:
            dev.addressing_mode = _ADDRESSING.get(mode, f"unknown ({mode})")
        memory = self._memory_info(dev, {})
        memory_unsupported = dev.unsupported.get("memory_total") == NOT_SUPPORTED
        dev.unified = (
            dev.addressing_mode == "ATS"
            or memory_unsupported
            or dev.compute_capability == "12.1"
            or "GB10" in dev.name
        )
        if dev.unified:
            dev.memory_readable = False
            dev.unsupported.update(unified_unsupported(dev.name, None if memory is None else memory.total))
        return dev

    def _sm_count(self, dev: _Device, cc: tuple[int, int] | None) -> int | None:
        """NVML has no SM count; CUDA cores divided by the cores per SM of the architecture."""
        cores = self._call(dev, "sm_count", getattr(self._nvml, "nvmlDeviceGetNumGpuCores", None), dev.handle)
        if cores is None:
            return None
        if cc is None:
            dev.unsupported["sm_count"] = "unknown: no compute capability to size an SM"
            return None
        per_sm = _CORES_PER_SM_EXACT.get(cc) or _CORES_PER_SM.get(cc[0])
        if per_sm is None:
            why = f"unknown: CUDA cores per SM not known for compute capability {cc[0]}.{cc[1]}"
            dev.unsupported["sm_count"] = why
            return None
        return cores // per_sm

    def _shutdown(self) -> None:
        if self._initialised:
            # shutting down a lost GPU may fail too; nothing to do about it
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
        self._initialised = False
        self._ready = False
        self._devices = []

    # --- one tick -----------------------------------------------------------------------------------------

    def _read(self, dev: _Device) -> GpuState:
        nv = self._nvml
        h = dev.handle
        now: dict[str, str] = {}  # reasons for this tick only (a transient driver error)

        util = self._call(dev, "utilization_pct", nv.nvmlDeviceGetUtilizationRates, h, now=now)
        clock = self._call(dev, "sm_clock_mhz", nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM, now=now)
        temp = self._call(
            dev,
            "temperature_c",
            nv.nvmlDeviceGetTemperature,
            h,
            nv.NVML_TEMPERATURE_GPU,
            now=now,
            fallback=getattr(nv, "nvmlDeviceGetTemperatureV1", None),
        )
        power = self._call(dev, "power_w", nv.nvmlDeviceGetPowerUsage, h, now=now)
        pstate = self._call(dev, "pstate", nv.nvmlDeviceGetPerformanceState, h, now=now)
        energy = self._call(dev, "energy_j", nv.nvmlDeviceGetTotalEnergyConsumption, h, now=now)
        memory = self._memory_info(dev, now) if dev.memory_readable else None
        reasons = self._call(
            dev,
            "clocks_event_reasons",
            getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None),
            h,
            now=now,
            fallback=getattr(nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None),  # before driver 535
        )
        processes = self._processes(dev, now)
        self._process_sm(dev, processes, now)

        unsupported = dict(dev.unsupported)
        unsupported.update(now)
        state = GpuState(
            index=dev.index,
            name=dev.name,
            uuid=dev.uuid,
            pci_bus_id=dev.pci_bus_id,
            utilization_pct=None if util is None else float(util.gpu),
            sm_clock_mhz=clock,
            temperature_c=None if temp is None else float(temp),
            power_w=None if power is None else power / 1000.0,
            pstate=None if pstate is None or pstate == 32 else int(pstate),  # 32: NVML_PSTATE_UNKNOWN
            energy_j=None if energy is None else energy / 1000.0,
            sm_count=dev.sm_count,
            compute_capability=dev.compute_capability,
            addressing_mode=dev.addressing_mode,
            unified_memory=dev.unified,
            memory_total=None if memory is None else int(memory.total),
            memory_used=None if memory is None else int(memory.used),
            processes=processes,
            sm_clock_max_mhz=dev.sm_clock_max_mhz,
            clocks_event_reasons=None if reasons is None else int(reasons),
            unsupported=unsupported,
        )
        # When the throttle began: kept while the GPU goes on throttling, whatever the reasons become, and
        # across pauses shorter than THROTTLE_GAP_S (a sample at full clock under a power cap).
        wall_now = self._wall_clock()
        if slowing_reasons(state):
            if dev.throttle_since is None or (
                dev.calm_since is not None and wall_now - dev.calm_since >= THROTTLE_GAP_S
            ):
                dev.throttle_since = wall_now
            dev.calm_since = None
            state.throttle_since = dev.throttle_since
        elif dev.throttle_since is not None:
            dev.calm_since = dev.calm_since if dev.calm_since is not None else wall_now
            if wall_now - dev.calm_since >= THROTTLE_GAP_S:
                dev.throttle_since = dev.calm_since = None
        return state

    def _memory_info(self, dev: _Device, now: dict[str, str]) -> Any:
        nv = self._nvml
        version = getattr(nv, "nvmlMemory_v2", None)
        v2 = (lambda h: nv.nvmlDeviceGetMemoryInfo(h, version=version)) if version else None
        memory = self._call(
            dev,
            "memory_total",
            v2 or nv.nvmlDeviceGetMemoryInfo,
            dev.handle,
            now=now,
            fallback=nv.nvmlDeviceGetMemoryInfo if v2 else None,
        )
        if memory is None:
            reason = dev.unsupported.get("memory_total") or now.get("memory_total")
            if reason:
                (dev.unsupported if "memory_total" in dev.unsupported else now)["memory_used"] = reason
        return memory

    def _processes(self, dev: _Device, now: dict[str, str]) -> list[GpuProcess]:
        """Compute and graphics contexts, one entry per PID (a PID in both lists is one context)."""
        nv = self._nvml
        lists = [  # the current call (v3 structs), and the one older drivers have
            (
                kind,
                getattr(nv, f"nvmlDeviceGet{title}RunningProcesses", None),
                getattr(nv, f"nvmlDeviceGet{title}RunningProcesses_v2", None),
            )
            for kind, title in _PROCESS_LISTS
        ]
        by_pid: dict[int, GpuProcess] = {}
        for kind, fn, older in lists:
            found = self._call(dev, f"processes_{kind}", fn, dev.handle, now=now, fallback=older)
            for proc in found or ():
                used = proc.usedGpuMemory  # pynvml turns NVML_VALUE_NOT_AVAILABLE into None
                seen = by_pid.get(proc.pid)
                if seen is None:
                    by_pid[proc.pid] = GpuProcess(pid=proc.pid, used_bytes=used, kind=kind)
                    continue
                if seen.kind != kind:
                    seen.kind = "both"
                if used is not None and (seen.used_bytes is None or used > seen.used_bytes):
                    seen.used_bytes = used
        return sorted(by_pid.values(), key=lambda p: p.pid)

    def _process_sm(self, dev: _Device, processes: list[GpuProcess], now: dict[str, str]) -> None:
        """Each process's SM utilisation: the latest sample per PID since the last read (0 when it has none:
        its kernels did not run). Both calls are asked until one gives samples; where neither answers, every
        `sm_pct` stays None and `sm_pct` in the reasons says why."""
        nv = self._nvml
        first = dev.samples_seen_us is None
        since = dev.samples_seen_us or 0
        answered = False
        latest: dict[int, tuple[int, int]] = {}  # pid -> (timestamp, smUtil)
        for metric, name in _PROCESS_UTILISATION:
            read = _samples_or_none(nv, getattr(nv, name, None))
            samples = self._call(dev, metric, read, dev.handle, since, now=now)
            if samples is None:
                continue
            answered = True
            for sample in samples:
                if sample.smUtil > 100:  # NVML_VALUE_NOT_AVAILABLE and garbage
                    continue
                seen = latest.get(sample.pid)
                if seen is None or sample.timeStamp >= seen[0]:
                    latest[sample.pid] = (sample.timeStamp, sample.smUtil)
            if latest:
                break
        if first and latest:
            newest = max(ts for ts, _ in latest.values())
            cutoff = newest - _FIRST_WINDOW_US
            wall_us = int(self._wall_clock() * 1e6)
            if abs(newest - wall_us) < _SAME_CLOCK_US:  # stamped with the wall clock, as drivers do today
                cutoff = max(cutoff, wall_us - _FIRST_WINDOW_US)
            latest = {pid: seen for pid, seen in latest.items() if seen[0] >= cutoff}
        if not answered:
            reasons = [dev.unsupported.get(m) or now.get(m) or "?" for m, _ in _PROCESS_UTILISATION]
            if len(set(reasons)) == 1:
                why = f"{reasons[0]} (both per-process utilisation calls)"
            else:
                why = "; ".join(f"{name[len('nvmlDeviceGet'):]}: {r}" for (_, name), r in
                                zip(_PROCESS_UTILISATION, reasons, strict=True))  # fmt: skip
            permanent = all(m in dev.unsupported for m, _ in _PROCESS_UTILISATION)
            (dev.unsupported if permanent else now)["sm_pct"] = why
            return
        if latest:
            dev.samples_seen_us = max(ts for ts, _ in latest.values())
        for proc in processes:
            proc.sm_pct = float(latest[proc.pid][1]) if proc.pid in latest else 0.0

    # --- the one place NVML is called --------------------------------------------------------------------

    def _call(
        self,
        dev: _Device,
        metric: str,
        fn: Callable[..., Any] | None,
        *args: Any,
        now: dict[str, str] | None = None,
        fallback: Callable[..., Any] | None = None,
    ) -> Any:
        """Call NVML for one metric. Returns None (with the reason recorded) instead of raising; raises
        _GpuLost when the whole GPU is gone. A permanent answer (not supported, not in this NVML) is
        remembered in `dev.unsupported` and the metric is not asked again."""
        nv = self._nvml
        if metric in dev.unsupported:
            return None
        if fn is None:
            dev.unsupported[metric] = "not in this version of nvidia-ml-py"
            return None
        older_driver = (
            nv.NVMLError_FunctionNotFound,
            nv.NVMLLibraryMismatchError,
            getattr(nv, "NVMLError_ArgumentVersionMismatch", nv.NVMLError_FunctionNotFound),
        )
        try:
            return fn(*args)
        except older_driver:
            if fallback is not None:
                return self._call(dev, metric, fallback, *args, now=now)
            dev.unsupported[metric] = "not in this driver's NVML"
        except nv.NVMLError_NotSupported:
            dev.unsupported[metric] = NOT_SUPPORTED
        except nv.NVMLError_NoPermission:
            dev.unsupported[metric] = "no permission"
        except (
            nv.NVMLError_GpuIsLost,
            nv.NVMLError_Uninitialized,
            nv.NVMLError_DriverNotLoaded,
            nv.NVMLError_ResetRequired,
            nv.NVMLError_LibRmVersionMismatch,
        ) as exc:
            raise _GpuLost(f"GPU {dev.index} ({dev.name}) stopped answering: {exc}; retrying") from exc
        except nv.NVMLError as exc:
            (now if now is not None else dev.unsupported)[metric] = f"driver error: {exc}"
        return None


def _samples_or_none(nv: Any, fn: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """A per-process utilisation call where "no sample since then" is an empty list, not an error: NVML says
    NOT_FOUND, and pynvml raises NVMLError(SUCCESS) when the sizing call finds nothing to size."""
    if fn is None:
        return None

    def read(handle: Any, since: int) -> Any:
        try:
            return fn(handle, since)
        except nv.NVMLError as exc:
            if exc.value in (nv.NVML_ERROR_NOT_FOUND, nv.NVML_SUCCESS):
                return []
            raise

    return read
