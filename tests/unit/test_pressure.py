"""Pressure levels at the points where nohang, earlyoom and systemd-oomd act, and sustained PSI `full`."""

from __future__ import annotations

import pytest

from sparktop.analysis.pressure import PressureLevel, PressureTracker
from sparktop.core.snapshot import GB, HostMemory, Pressure, PressureLine

TOTAL = 100 * GB


def psi(avg10: float) -> PressureLine:
    return PressureLine(avg10=avg10, avg60=avg10, avg300=avg10, total_us=0)


def mem(
    available_pct: float,
    some: float | None = 0.0,
    full: float | None = 0.0,
    swap_total: int = 0,
    swap_free: int = 0,
    with_psi: bool = True,
) -> HostMemory:
    available = int(TOTAL * available_pct / 100)
    pressure = None
    if with_psi:
        pressure = Pressure(
            some=psi(some) if some is not None else None, full=psi(full) if full is not None else None
        )
    return HostMemory(
        total=TOTAL,
        available=available,
        free=available,
        swap_total=swap_total,
        swap_free=swap_free,
        pressure=pressure,
    )


def test_plenty_available_and_no_pressure_is_ok() -> None:
    a = PressureTracker().update(mem(60), now=0)
    assert a.level is PressureLevel.OK
    assert a.reasons == []
    assert a.available_pct == pytest.approx(60)
    assert a.some_avg10 == 0.0 and a.full_avg10 == 0.0
    assert a.level == "ok"  # a StrEnum: compares and prints as its value


@pytest.mark.parametrize(
    ("available_pct", "level", "says"),
    [
        (20.0, PressureLevel.OK, None),
        (19.9, PressureLevel.WARN, "MemAvailable 19.9 % (< 20 %: nohang would warn)"),
        (10.0, PressureLevel.WARN, "MemAvailable 10.0 % (< 20 %: nohang would warn)"),
        (9.9, PressureLevel.CRITICAL, "MemAvailable 9.9 % (< 10 %: earlyoom would start killing)"),
        # rounded down, never up to the threshold it is under (issue 23 item 12)
        (9.96, PressureLevel.CRITICAL, "MemAvailable 9.9 % (< 10 %: earlyoom would start killing)"),
        (19.97, PressureLevel.WARN, "MemAvailable 19.9 % (< 20 %: nohang would warn)"),
        (
            4.2,
            PressureLevel.CRITICAL,
            "MemAvailable 4.2 % (< 10 %: earlyoom would start killing, at < 5 % with SIGKILL)",
        ),
    ],
)
def test_mem_available_thresholds(available_pct: float, level: PressureLevel, says: str | None) -> None:
    a = PressureTracker().update(mem(available_pct), now=0)
    assert a.level is level
    assert a.reasons == ([says] if says else [])


def test_psi_some_above_10_warns() -> None:
    tracker = PressureTracker()
    assert tracker.update(mem(50, some=10.0), now=0).level is PressureLevel.OK
    a = tracker.update(mem(50, some=12.5), now=1)
    assert a.level is PressureLevel.WARN
    assert a.reasons == ["PSI some avg10 12.5 % (> 10 %: nohang would warn)"]
    assert a.some_avg10 == 12.5


def test_full_pressure_turns_critical_only_when_sustained() -> None:
    tracker = PressureTracker()
    first = tracker.update(mem(50, some=20, full=15), now=100.0)
    assert first.level is PressureLevel.WARN
    assert first.reasons == [
        "PSI some avg10 20.0 % (> 10 %: nohang would warn)",
        "PSI full avg10 15.0 % (>= 10 %: critical if it lasts 10 s)",
    ]
    assert tracker.update(mem(50, some=20, full=15), now=105.0).level is PressureLevel.WARN
    held = tracker.update(mem(50, some=20, full=12), now=110.0)
    assert held.level is PressureLevel.CRITICAL
    assert held.full_sustained_s == 10.0
    assert held.reasons[0] == (
        "PSI full avg10 12.0 % for 10 s (>= 10 % for 10 s: every task stalls on memory)"
    )
    # It eases: the clock starts again from the next spell.
    assert tracker.update(mem(50, some=5, full=3), now=111.0).level is PressureLevel.OK
    again = tracker.update(mem(50, some=20, full=15), now=112.0)
    assert again.level is PressureLevel.WARN
    assert again.full_sustained_s == 0.0
    assert tracker.update(mem(50, some=20, full=15), now=121.0).level is PressureLevel.WARN
    assert tracker.update(mem(50, some=20, full=15), now=122.0).level is PressureLevel.CRITICAL


def test_full_pressure_at_oomd_level_is_critical_at_once() -> None:
    a = PressureTracker().update(mem(50, some=80, full=65), now=0)
    assert a.level is PressureLevel.CRITICAL
    assert a.reasons[0] == "PSI full avg10 65.0 % (>= 60 %: systemd-oomd kills after 30 s)"


def test_missing_psi_judges_on_mem_available_alone() -> None:
    note = "PSI unavailable (no /proc/pressure/memory): judged on MemAvailable alone"
    ok = PressureTracker().update(mem(50, with_psi=False), now=0)
    assert ok.level is PressureLevel.OK
    assert ok.reasons == [note]
    assert ok.some_avg10 is None and ok.full_avg10 is None and not ok.psi_available
    bad = PressureTracker().update(mem(5.5, with_psi=False), now=0)
    assert bad.level is PressureLevel.CRITICAL
    assert bad.reasons == ["MemAvailable 5.5 % (< 10 %: earlyoom would start killing)", note]
    empty = PressureTracker().update(mem(50, some=None, full=None), now=0)  # a Pressure with no lines
    assert empty.reasons == [note]


def test_kernel_without_full_line() -> None:
    a = PressureTracker().update(mem(50, some=30, full=None), now=0)
    assert a.level is PressureLevel.WARN
    assert a.full_avg10 is None
    assert a.reasons[-1] == "PSI has no 'full' line on this kernel: judged on 'some' and MemAvailable"


def test_swap_nearly_full_warns() -> None:
    a = PressureTracker().update(mem(50, swap_total=8 * GB, swap_free=int(0.5 * GB)), now=0)
    assert a.level is PressureLevel.WARN
    assert a.reasons == ["swap 94 % used (>= 90 %: systemd-oomd's swap limit)"]
    assert PressureTracker().update(mem(50, swap_total=8 * GB, swap_free=4 * GB), now=0).level == "ok"


def test_most_serious_reason_comes_first() -> None:
    a = PressureTracker().update(mem(8, some=30, full=70), now=0)
    assert a.level is PressureLevel.CRITICAL
    assert a.reasons[0].startswith("MemAvailable 8.0 %")
    assert a.reasons[1].startswith("PSI full avg10 70.0 %")
    assert a.reasons[2].startswith("PSI some avg10 30.0 %")


def test_clock_going_back_restarts_the_sustained_timer() -> None:
    tracker = PressureTracker()
    tracker.update(mem(50, full=20), now=1000.0)
    assert tracker.update(mem(50, full=20), now=1020.0).level is PressureLevel.CRITICAL
    assert tracker.update(mem(50, full=20), now=5.0).level is PressureLevel.WARN  # a replay restarted


def test_thresholds_are_configurable() -> None:
    tracker = PressureTracker(
        warn_available_pct=30,
        critical_available_pct=15,
        warn_some_avg10=5,
        critical_full_avg10=20,
        sustained_s=2,
    )
    assert tracker.update(mem(25), now=0).level is PressureLevel.WARN
    assert tracker.update(mem(12), now=0).level is PressureLevel.CRITICAL
    assert tracker.update(mem(50, some=6), now=0).level is PressureLevel.WARN
    assert tracker.update(mem(50, full=15), now=0).level is PressureLevel.OK
    tracker.update(mem(50, full=25), now=10)
    assert tracker.update(mem(50, full=25), now=12).level is PressureLevel.CRITICAL


def test_unreadable_total_does_not_divide_by_zero() -> None:
    a = PressureTracker().update(HostMemory(total=0, available=0, free=0), now=0)
    assert a.level is PressureLevel.OK
    assert a.reasons[0] == "MemTotal unreadable: MemAvailable not judged"
