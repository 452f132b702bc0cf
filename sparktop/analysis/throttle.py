"""Why the GPU runs slow, and for how long: a throttle written for people, and when it has lasted.

`nvmlDeviceGetCurrentClocksEventReasons` answers a bitmask; each bit is one reason the clocks sit where they
are. The GPU *throttles* when its SM clock is below its maximum and a reason other than "GPU idle" is active:
an idle GPU clocking down is not slow, it is resting. Pure functions over the snapshot's `GpuState`, shared by
the views, the exporter and the guard (the collector asks core/clock_reasons.py when a throttle began).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktop.core.clock_reasons import THROTTLE_GAP_S, slowing_reasons

if TYPE_CHECKING:
    from sparktop.core.snapshot import GpuState

# A throttle that lasts this long under load is worth a message and a guard warning (a burst is not).
LASTING_S = 30.0
# Utilisation from which the GPU counts as under load (as plan/live_gpu.py's ACTIVE_PCT).
UNDER_LOAD_PCT = 10.0


def throttle_parts(gpu: GpuState, now: float | None = None) -> tuple[str, str, str] | None:
    """(`SM 1.21 GHz of 2.6`, `SW power cap`, `for 42 s` or ""), or None when the GPU does not throttle."""
    reasons = slowing_reasons(gpu)
    if not reasons:
        return None
    clock = "SM ?" if gpu.sm_clock_mhz is None else f"SM {gpu.sm_clock_mhz / 1000:.2f} GHz"
    if gpu.sm_clock_max_mhz is not None:
        clock += f" of {gpu.sm_clock_max_mhz / 1000:.3g}"
    lasted = ""
    # Under a second: a throttle first seen by this very reading (`--once`), whose start nobody knows;
    # "for 0 s" said it had just begun.
    if now is not None and gpu.throttle_since is not None and now - gpu.throttle_since >= 1.0:
        from sparktop.core.format import fmt_duration

        lasted = f"for {fmt_duration(now - gpu.throttle_since)}"
    return clock, ", ".join(reasons), lasted


def throttle_line(gpu: GpuState, now: float | None = None) -> str | None:
    """`SM 1.21 GHz of 2.6: SW power cap (for 42 s)`, or None when the GPU does not throttle."""
    parts = throttle_parts(gpu, now)
    if parts is None:
        return None
    clock, reasons, lasted = parts
    return f"{clock}: {reasons}" + (f" ({lasted})" if lasted else "")


def lasting_throttle(gpu: GpuState, now: float) -> bool:
    """A throttle under load for at least LASTING_S seconds."""
    if gpu.throttle_since is None or not slowing_reasons(gpu):
        return False
    if gpu.utilization_pct is not None and gpu.utilization_pct < UNDER_LOAD_PCT:
        return False
    return now - gpu.throttle_since >= LASTING_S


class ThrottleWatch:
    """Says once when a throttle has lasted (`lasting_throttle`), and once when that throttle is over (no
    throttle for THROTTLE_GAP_S); fed every snapshot's GPUs (the dashboard's messages and the guard's
    warnings)."""

    def __init__(self) -> None:
        self._announced: dict[int, float] = {}  # GPU index -> throttle_since of the throttle announced
        self._calm_since: dict[int, float] = {}  # GPU index -> first sample without the announced throttle

    def update(self, gpus: list[GpuState], now: float) -> tuple[list[str], list[str]]:
        """(messages for throttles that now count as lasting, messages for announced ones that ended)."""
        started: list[str] = []
        ended: list[str] = []
        seen = set()
        for gpu in gpus:
            seen.add(gpu.index)
            announced = self._announced.get(gpu.index)
            if announced is not None:
                if gpu.throttle_since == announced:
                    self._calm_since.pop(gpu.index, None)
                else:
                    calm_since = self._calm_since.setdefault(gpu.index, now)
                    if gpu.throttle_since is not None or now - calm_since >= THROTTLE_GAP_S:
                        # another throttle, or none for a gap: this one is over
                        del self._announced[gpu.index]
                        del self._calm_since[gpu.index]
                        ended.append(f"GPU {gpu.index} ({gpu.name}) no longer slowed")
            if gpu.index not in self._announced and lasting_throttle(gpu, now):
                assert gpu.throttle_since is not None  # lasting_throttle checked it
                self._announced[gpu.index] = gpu.throttle_since
                started.append(f"GPU {gpu.index} ({gpu.name}) slowed under load: {throttle_line(gpu, now)}")
        for index in [i for i in self._announced if i not in seen]:  # a GPU gone (NVML lost)
            del self._announced[index]
            self._calm_since.pop(index, None)
        return started, ended
