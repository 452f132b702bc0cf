"""NVML's clocks event reasons ("throttle reasons" before driver 535): the bits and their names. A leaf module
(no sparktop imports): the snapshot names a GPU's reasons with `decode`, the collectors ask `slowing_reasons`
when a throttle began, and analysis/throttle.py, which says how long it lasted and how to write it, builds on
both."""

from __future__ import annotations

from typing import Protocol

GPU_IDLE = 0x1
# NVML's bits (nvml.h nvmlClocksEventReason*), in the order they are named when several are active.
REASONS: tuple[tuple[int, str], ...] = (
    (0x4, "SW power cap"),
    (0x8, "HW slowdown"),
    (0x40, "HW thermal slowdown"),
    (0x80, "HW power brake slowdown"),
    (0x20, "SW thermal slowdown"),
    (0x10, "sync boost"),
    (0x2, "applications clocks setting"),
    (0x100, "display clock setting"),
    (0x200, "board limit"),
    (0x400, "reliability"),
    (GPU_IDLE, "GPU idle"),
)
_KNOWN = sum(bit for bit, _ in REASONS)
# A throttle that pauses for less than this goes on: a power-capped clock touches its maximum now and then
# (an H100 under its 700 W cap read 1365–1965 MHz of 1980), and each touch must not end it, nor start the
# 30 s of a new one.
THROTTLE_GAP_S = 5.0


class ClockReading(Protocol):
    """What `slowing_reasons` reads of a GPU (the snapshot's `GpuState` has it)."""

    @property
    def clocks_event_reasons(self) -> int | None: ...
    @property
    def sm_clock_mhz(self) -> int | None: ...
    @property
    def sm_clock_max_mhz(self) -> int | None: ...


def decode(mask: int) -> list[str]:
    """The NVML names of the bits set in `mask`; a bit this table does not know reads as its hex value."""
    names = [name for bit, name in REASONS if mask & bit]
    unknown = mask & ~_KNOWN
    if unknown:
        names.append(f"unknown 0x{unknown:x}")
    return names


def slowing_reasons(gpu: ClockReading) -> list[str]:
    """The active reasons when the GPU throttles: its SM clock below its maximum with a reason other than "GPU
    idle" (an idle GPU clocking down is not slow, it is resting); else []."""
    mask = gpu.clocks_event_reasons
    if not mask or mask & GPU_IDLE:
        return []
    clock, top = gpu.sm_clock_mhz, gpu.sm_clock_max_mhz
    if clock is not None and top is not None and clock >= top:
        return []
    return decode(mask)
