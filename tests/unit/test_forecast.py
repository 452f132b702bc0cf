"""The freeze forecast: a steady fill gives the right time to exhaustion (within 10 %); noise, a one-off
step (a model loading) and a sawtooth give no warning; PSI full stalling is exhaustion now."""

from __future__ import annotations

import random

import pytest

from sparktop.analysis.forecast import forecast
from sparktop.analysis.history import History
from sparktop.core.snapshot import (
    GB,
    Accounting,
    Consumer,
    GpuReport,
    HostMemory,
    Pressure,
    PressureLine,
    Snapshot,
)

TOTAL = 128 * GB
BASE = 40 * GB
START = 1_700_000_000.0


def run(values: list[float], psi_full: float | None = None) -> tuple[History, HostMemory]:
    """One consumer ("train.py") holds values[i] bytes at tick i (1 s apart) on top of BASE."""
    history = History()
    memory = HostMemory(total=TOTAL, available=TOTAL, free=TOTAL)
    for i, v in enumerate(values):
        used = BASE + int(v)
        pressure = None
        if psi_full is not None:
            pressure = Pressure(
                some=PressureLine(avg10=psi_full * 1.5, avg60=psi_full, avg300=0, total_us=0),
                full=PressureLine(avg10=psi_full, avg60=psi_full / 2, avg300=0, total_us=0),
            )
        memory = HostMemory(total=TOTAL, available=TOTAL - used, free=TOTAL - used, pressure=pressure)
        history.add(
            Snapshot(
                timestamp=START + i,
                memory=memory,
                gpu=GpuReport(available=False, reason="test"),
                accounting=Accounting(
                    used=used,
                    consumers=[
                        Consumer(key="process:7:1", label="train.py", kind="process", cpu_bytes=int(v))
                    ],
                    unattributed=BASE,
                ),
            )
        )
    return history, memory


@pytest.mark.parametrize("rate_gb_per_min", [1.0, 6.0, 30.0])
def test_steady_fill_gives_the_time_to_exhaustion_within_ten_percent(rate_gb_per_min: float) -> None:
    rate = rate_gb_per_min * GB / 60
    rng = random.Random(5)
    ticks = min(180, int(60 * GB / rate))  # fill at most 60 GB of the 88 GB left
    values = [i * rate + rng.gauss(0, 30e6) for i in range(ticks)]
    history, memory = run(values)
    fc = forecast(history, memory, reserve_bytes=0)
    truth = memory.available / rate
    assert fc.eta_s is not None
    assert abs(fc.eta_s - truth) <= 0.10 * truth
    # warned at the nearest horizon the ETA lies inside (naming the consumer driving it), none beyond them all
    inside = [h for h in (600.0, 120.0) if truth <= h * 0.9]
    if inside:
        assert fc.warned_horizon == min(inside)
        assert fc.driver == "train.py"
        assert fc.driver_rate_bytes_per_s == pytest.approx(rate, rel=0.10)
        assert "pool exhausted in ~" in fc.message() and "train.py" in fc.message()
    elif truth > 600 * 1.1:
        assert fc.warned_horizon is None and fc.driver is None


def test_reserve_is_counted_before_exhaustion() -> None:
    rate = 10 * GB / 60
    history, memory = run([i * rate for i in range(180)])
    reserve = 8 * GB
    fc = forecast(history, memory, reserve_bytes=reserve)
    assert fc.eta_s == pytest.approx((memory.available - reserve) / rate, rel=0.02)


def test_noise_does_not_warn() -> None:
    rng = random.Random(1)
    history, memory = run([rng.gauss(0, 2 * GB) for _ in range(300)])
    fc = forecast(history, memory)
    assert fc.rate_bytes_per_s is None and fc.warned_horizon is None and not fc.warning


def test_a_one_off_step_does_not_warn() -> None:
    # a 70 GB model loading in the middle of the window: flat, jump, flat
    rng = random.Random(2)
    history, memory = run([(70 * GB if i >= 60 else 0) + rng.gauss(0, 50e6) for i in range(120)])
    fc = forecast(history, memory)
    assert fc.warned_horizon is None and fc.rate_bytes_per_s is None


def test_a_sawtooth_does_not_warn() -> None:
    # batches that allocate 20 GB over 20 s and free it: busy, not filling up
    history, memory = run([(i % 20) * 1 * GB for i in range(200)])
    assert forecast(history, memory).warned_horizon is None


def test_psi_full_stalling_is_exhaustion_now_whatever_the_slope() -> None:
    history, memory = run([0.0] * 60, psi_full=25.0)
    fc = forecast(history, memory)
    assert fc.stalling and fc.eta_s == 0.0 and fc.warned_horizon == 120.0
    assert "stalling now" in fc.message()


def test_little_data_gives_no_forecast_rather_than_a_wild_one() -> None:
    history, memory = run([0.0, 5 * GB, 10 * GB])
    assert forecast(history, memory).eta_s is None
