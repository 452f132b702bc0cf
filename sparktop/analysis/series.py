"""Short per-tick series for the sparklines: each GPU metric, MemAvailable (percent of the pool) and PSI.

Every sample is pushed, shown or not, so a panel drawn after a pause or a tab switch shows the same line the
whole time would have. Bounded: `SERIES_LENGTH` points each, enough for the widest sparkline.
"""

from __future__ import annotations

from collections import deque

from sparktop.core.snapshot import GpuReport, HostMemory

SERIES_LENGTH = 240

# The GpuState fields with a sparkline: utilisation, SM clock, temperature, power.
GPU_SERIES_FIELDS = ("utilization_pct", "sm_clock_mhz", "temperature_c", "power_w")


class GpuSeries:
    """One series per (GPU, metric); a GPU that leaves the report takes its series with it."""

    def __init__(self, fields: tuple[str, ...] = GPU_SERIES_FIELDS, length: int = SERIES_LENGTH) -> None:
        self.fields = fields
        self.length = length
        self._series: dict[tuple[str, str], deque[float | None]] = {}

    def push(self, report: GpuReport) -> None:
        seen = set()
        for gpu in report.gpus:
            ident = gpu.uuid or str(gpu.index)
            for name in self.fields:
                key = (ident, name)
                seen.add(key)
                value = getattr(gpu, name)
                self._series.setdefault(key, deque(maxlen=self.length)).append(
                    float(value) if value is not None else None
                )
        for key in [k for k in self._series if k not in seen]:
            del self._series[key]

    def get(self, ident: str, field: str) -> list[float | None]:
        """The series of `field` for the GPU with this uuid (or index, when it has none); [] if unknown."""
        return list(self._series.get((ident, field), ()))


class PoolSeries:
    """MemAvailable as a percentage of the pool, and PSI `some` avg10 (None where the kernel has no PSI)."""

    def __init__(self, length: int = SERIES_LENGTH) -> None:
        self.available_pct: deque[float] = deque(maxlen=length)
        self.psi_some: deque[float | None] = deque(maxlen=length)

    def push(self, memory: HostMemory) -> None:
        self.available_pct.append(memory.available / memory.total * 100 if memory.total else 0.0)
        some = memory.pressure.some if memory.pressure else None
        self.psi_some.append(some.avg10 if some else None)
