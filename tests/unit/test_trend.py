"""Creep detection: no alert for noise, a one-off step or a sawtooth; an alert for steady growth, with the
pool's ETAs to the lines and a readable message."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sparktop.analysis.history import History
from sparktop.analysis.trend import (
    CREEP_HOLD_S,
    CreepAlert,
    CreepHold,
    collecting_s,
    detect_creep,
    eta_s,
    rate_per_min,
)
from sparktop.core.snapshot import GB, GIB, Accounting, Consumer, GpuReport, HostMemory, Snapshot
from tests.fixtures.snapshots import snapshot

TOTAL = 128 * GB
SAFE = 80 * GB
AGGRESSIVE = 100 * GB
BASE = 40 * GB  # the rest of the pool, steady
KEY = "process:4242:1700000000"


def history_of(
    values: list[float], step: float = 1.0, start: float = 1_700_000_000.0, appears_at: int = 0
) -> History:
    """A history where one consumer ("train.py") takes `values[i]` bytes at tick i, on top of BASE; before
    tick `appears_at` it is not there (a process that starts later)."""
    h = History()
    for _ in ticks_into(h, values, step, start, appears_at):
        pass
    return h


def ticks_into(
    h: History, values: list[float], step: float = 1.0, start: float = 1_700_000_000.0, appears_at: int = 0
) -> Iterator[History]:
    """Feeds `h` the ticks of history_of(values), yielding it after each: after tick n it is exactly
    history_of(values[:n + 1]) (History.add is incremental), so a test that judges every prefix builds one
    history, not one per prefix (issue 34: that was most of this file's CPU)."""
    s = Snapshot(
        timestamp=start,
        memory=HostMemory(total=TOTAL, available=TOTAL, free=TOTAL),
        gpu=GpuReport(available=False, reason="test"),
        accounting=Accounting(used=0, consumers=[Consumer(key=KEY, label="train.py", kind="process")]),
    )
    for i, v in enumerate(values):
        used = BASE + int(v)
        s.timestamp = start + i * step
        s.memory = HostMemory(total=TOTAL, available=TOTAL - used, free=TOTAL - used)
        s.accounting.used = used
        s.accounting.consumers[0].cpu_bytes = int(v)
        s.accounting.unattributed = BASE
        if i < appears_at:
            h.add(s.model_copy(update={"accounting": Accounting(used=used, consumers=[], unattributed=used)}))
        else:
            h.add(s)
        yield h


def accounted(t: float, consumers: list[Consumer]) -> Snapshot:
    """A snapshot at `t` whose pool holds exactly `consumers`."""
    used = sum(c.total for c in consumers)
    return snapshot(t=t, total=TOTAL, used=used, accounting=Accounting(used=used, consumers=consumers))


def alerts(values: list[float], step: float = 1.0) -> list[CreepAlert]:
    return detect_creep(history_of(values, step), SAFE, AGGRESSIVE, TOTAL)


def jitter(rng: random.Random, amplitude: float) -> float:
    return rng.uniform(-amplitude, amplitude)


# --- no alert --------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), amplitude=st.floats(0.0, 0.5e9))
def test_zero_mean_jitter_never_alerts(seed: int, amplitude: float) -> None:
    rng = random.Random(seed)
    assert alerts([20 * GB + jitter(rng, amplitude) for _ in range(301)]) == []


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    at=st.integers(0, 300), jump=st.floats(1e9, 30e9), noise=st.floats(0.0, 0.3e9), seed=st.integers(0, 99)
)
def test_one_off_step_never_alerts(at: int, jump: float, noise: float, seed: int) -> None:
    """A model loading: flat, a jump of 1–30 GB anywhere in the window, flat again."""
    rng = random.Random(seed)
    values = [10 * GB + (jump if i >= at else 0) + jitter(rng, noise) for i in range(301)]
    assert alerts(values) == []


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    ramp_s=st.integers(1, 6),
    jump=st.floats(0.3e9, 10e9),
    after_s=st.integers(0, 60),
    noise=st.floats(0.0, 30e6),
    seed=st.integers(0, 99),
    new_process=st.booleans(),
)
@example(ramp_s=6, jump=2 * GIB, after_s=0, noise=1e6, seed=0, new_process=True)  # the report's, at 6 s
def test_a_step_taken_over_a_few_seconds_never_alerts_on_a_small_pool(
    ramp_s: int, jump: float, after_s: int, noise: float, seed: int, new_process: bool
) -> None:
    """An allocation touched page by page over 1-6 s (a model loading, a file written to /dev/shm, a new
    `python3 -c` allocating 2 GiB: the fast rule judged its first 6 s and said +20.7 GiB/min), seen any time
    from the tick it ends to a minute later, on a 60 GB pool where the fast rule is armed."""
    rng = random.Random(seed)
    calm = [5 * GB + jitter(rng, noise) for _ in range(200)]
    ramp = [5 * GB + jump * i / ramp_s + jitter(rng, noise) for i in range(1, ramp_s + 1)]
    flat = [5 * GB + jump + jitter(rng, noise) for _ in range(after_s)]
    history = history_of(calm + ramp + flat, appears_at=len(calm) if new_process else 0)
    assert detect_creep(history, SAFE, AGGRESSIVE, 60 * GB) == []


@settings(max_examples=40, deadline=None, derandomize=True)
@given(period=st.floats(20.0, 150.0), amplitude=st.floats(1e9, 20e9), phase=st.floats(0.0, 1.0))
def test_sawtooth_returning_to_base_never_alerts(period: float, amplitude: float, phase: float) -> None:
    """Allocate, grow, release back to the base, again and again (a batch job, a cache that is flushed)."""
    values = [10 * GB + amplitude * (((i / period) + phase) % 1.0) for i in range(301)]
    assert alerts(values) == []


def test_growth_that_just_returned_to_base_does_not_alert() -> None:
    values = [10 * GB + 1.3e9 * i / 60 for i in range(300)] + [10 * GB]
    assert alerts(values) == []


def test_triangle_allocate_and_release_does_not_alert() -> None:
    values = [10 * GB + 5 * GB * abs((i % 100) / 50 - 1) for i in range(301)]
    assert alerts(values) == []


def test_growth_too_slow_does_not_alert() -> None:
    values = [10 * GB + 30e6 * i / 60 for i in range(301)]  # 30 MB/min < 50 MB/min
    assert alerts(values) == []


def test_a_new_consumer_is_not_judged_before_it_covers_most_of_the_window() -> None:
    """Two minutes of steady growth is a model still loading as far as we can tell: 60 % of 300 s needed."""
    assert alerts([10 * GB + 1.3e9 * i / 60 for i in range(150)]) == []
    assert alerts([10 * GB + 1.3e9 * i / 60 for i in range(200)]) != []


def test_shrinking_memory_does_not_alert() -> None:
    assert alerts([30 * GB - 1.3e9 * i / 60 for i in range(301)]) == []


# --- alert ----------------------------------------------------------------------------------------------


def test_steady_growth_with_noise_alerts() -> None:
    rng = random.Random(7)
    rate = 1.3e9 / 60  # bytes per second
    found = alerts([10 * GB + rate * i + jitter(rng, 0.5e9) for i in range(301)])
    assert [a.key for a in found] == [KEY]
    assert found[0].label == "train.py"
    assert found[0].rate_bytes_per_s == pytest.approx(rate, rel=0.05)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(gb_per_min=st.floats(0.2, 5.0), seed=st.integers(0, 2**32 - 1))
def test_steady_growth_alerts_at_any_rate_from_slow_to_fast(gb_per_min: float, seed: int) -> None:
    rng = random.Random(seed)
    rate = gb_per_min * 1e9 / 60
    noise = min(0.5e9, 0.1 * rate * 300)  # jitter up to a tenth of the window's growth
    found = alerts([10 * GB + rate * i + jitter(rng, noise) for i in range(301)])
    assert len(found) == 1
    assert found[0].rate_bytes_per_s == pytest.approx(rate, rel=0.1)


def test_slow_steady_growth_alerts() -> None:
    rng = random.Random(3)
    found = alerts([10 * GB + 0.2e9 * i / 60 + jitter(rng, 50e6) for i in range(301)])
    assert len(found) == 1
    assert found[0].rate_bytes_per_min == pytest.approx(0.2e9, rel=0.05)


def test_staircase_growth_alerts() -> None:
    """KV-cache blocks allocated every 20 s: steps, but in every third of the window."""
    values = [10 * GB + 0.5 * GB * (i // 20) for i in range(301)]
    assert len(alerts(values)) == 1


def test_growth_sampled_every_two_seconds_alerts() -> None:
    assert len(alerts([10 * GB + 1.3e9 * i * 2 / 60 for i in range(151)], step=2.0)) == 1


def test_alerts_are_sorted_by_rate_and_only_for_growing_keys() -> None:
    h = History()
    for i in range(301):
        consumers = [
            Consumer(key="slow", label="slow", kind="process", cpu_bytes=int(5 * GB + 0.3e9 * i / 60)),
            Consumer(key="fast", label="fast", kind="container", cpu_bytes=int(5 * GB + 2e9 * i / 60)),
            Consumer(key="flat", label="flat", kind="container", cpu_bytes=20 * GB),
        ]
        h.add(accounted(float(i), consumers))
    found = detect_creep(h, SAFE, AGGRESSIVE, TOTAL)
    assert [a.key for a in found] == ["fast", "slow"]


def test_no_history_no_alerts() -> None:
    assert detect_creep(History(), SAFE, AGGRESSIVE, TOTAL) == []


# --- rate and ETAs ---------------------------------------------------------------------------------------


def test_rate_per_min_of_an_exact_line_and_none_with_too_few_points() -> None:
    h = history_of([10 * GB + 1e9 * i / 60 for i in range(301)])
    assert rate_per_min(h, KEY) == pytest.approx(1e9)
    assert rate_per_min(h, KEY, window_s=60) == pytest.approx(1e9)
    assert rate_per_min(h, "no-such-key") is None
    assert rate_per_min(history_of([GB, 2 * GB, 3 * GB]), KEY) is None


def test_etas_are_for_the_whole_pool_worked_by_hand() -> None:
    # The consumer grows exactly 1.3 GB/min from 26 GB to 32.5 GB over 300 s; BASE is 40 GB, so the pool's
    # used is 72.5 GB now. Safe 80 GB: 7.5 GB away at 1.3 GB/min = 5.769 min = 346.15 s.
    # Aggressive 100 GB: 27.5 GB / 1.3 = 21.154 min = 1269.2 s. Pool 128 GB: 55.5 GB / 1.3 = 42.69 min.
    rate = 1.3e9 / 60
    found = alerts([26 * GB + rate * i for i in range(301)])
    assert len(found) == 1
    a = found[0]
    assert a.pool_used_bytes == 72_500_000_000
    assert a.current_bytes == 32_500_000_000
    assert a.eta_safe_s == pytest.approx(346.15, abs=0.1)
    assert a.eta_aggressive_s == pytest.approx(1269.2, abs=0.1)
    assert a.eta_pool_s == pytest.approx(2561.5, abs=0.1)
    assert a.message("GB") == (
        "train.py +1.3 GB/min — crosses safe 80 GB in ~6 min, aggressive 100 GB in ~21 min,"
        " the pool in ~43 min"
    )


def test_etas_when_the_pool_is_already_over_a_line() -> None:
    rate = 1.3e9 / 60
    found = alerts([45 * GB + rate * i for i in range(301)])  # pool at 91.5 GB at the end
    a = found[0]
    assert a.eta_safe_s == 0.0
    assert a.eta_aggressive_s == pytest.approx(8.5e9 / rate)
    assert a.message("GB").startswith(
        "train.py +1.3 GB/min — already over safe 80 GB, crosses aggressive 100 GB in ~"
    )


def test_eta_s() -> None:
    assert eta_s(70 * GB, 1e9, 80 * GB) == 10.0
    assert eta_s(80 * GB, 1e9, 80 * GB) == 0.0
    assert eta_s(90 * GB, 1e9, 80 * GB) == 0.0
    assert eta_s(70 * GB, 0.0, 80 * GB) is None
    assert eta_s(70 * GB, -1e9, 80 * GB) is None
    assert eta_s(70 * GB, 1e9, 0) is None


# --- the message -----------------------------------------------------------------------------------------


def alert(
    safe: float | None, aggressive: float | None, pool: float | None, rate_gb_min: float = 1.3
) -> CreepAlert:
    return CreepAlert(
        key=KEY,
        label="train.py",
        rate_bytes_per_s=rate_gb_min * 1e9 / 60,
        current_bytes=30 * GB,
        eta_safe_s=safe,
        eta_aggressive_s=aggressive,
        eta_pool_s=pool,
        safe_bytes=SAFE,
        max_bytes=AGGRESSIVE,
    )


def test_message_like_the_brief() -> None:
    assert alert(180, 840, 1860).message("GB") == (
        "train.py +1.3 GB/min — crosses safe 80 GB in ~3 min, aggressive 100 GB in ~14 min,"
        " the pool in ~31 min"
    )


def test_message_in_gib_keeps_gb_line_labels() -> None:
    # 1.3e9 B/min = 1.21 GiB/min
    assert alert(180, 840, 1860).message("GiB") == (
        "train.py +1.2 GiB/min — crosses safe 80 GB in ~3 min, aggressive 100 GB in ~14 min,"
        " the pool in ~31 min"
    )


def test_message_seconds_hours_and_lines_passed() -> None:
    assert alert(45, 600, 7500).message("GB") == (
        "train.py +1.3 GB/min — crosses safe 80 GB in ~45 s, aggressive 100 GB in ~10 min,"
        " the pool in ~2 h 05 min"
    )
    assert alert(0, 600, 1500).message("GB") == (
        "train.py +1.3 GB/min — already over safe 80 GB, crosses aggressive 100 GB in ~10 min,"
        " the pool in ~25 min"
    )
    assert alert(0, 0, 300).message("GB") == (
        "train.py +1.3 GB/min — already over safe 80 GB and aggressive 100 GB, crosses the pool in ~5 min"
    )
    assert alert(0, 0, 0).message("GB") == (
        "train.py +1.3 GB/min — already over safe 80 GB and aggressive 100 GB and the pool is full"
    )
    assert alert(None, None, None).message("GB") == "train.py +1.3 GB/min"


def test_message_small_rate_uses_the_small_unit() -> None:
    assert alert(3000, 6000, 9000, rate_gb_min=0.2).message("GB").startswith("train.py +0.2 GB/min — ")
    assert alert(3000, 6000, 9000, rate_gb_min=0.05).message("GB").startswith("train.py +50 MB/min — ")


def test_message_without_line_sizes_names_the_lines() -> None:
    a = CreepAlert(KEY, "x", 1e9 / 60, GB, 60.0, 120.0, None)
    assert a.message("GB") == "x +1.0 GB/min — crosses safe in ~60 s, aggressive in ~2 min"


def test_detection_is_cheap_enough_for_every_tick() -> None:
    """50 consumers × 300 points: the per-tick cost must stay far below the 1 s tick."""
    import time

    h = History()
    for i in range(301):
        consumers = [
            Consumer(
                key=f"c{j}", label=f"c{j}", kind="container", cpu_bytes=int(GB + j * 1e7 * math.sin(i / 9))
            )
            for j in range(50)
        ]
        h.add(accounted(float(i), consumers))
    # CPU time of this thread, not wall time: a loaded machine stretches the wall clock (it took 0.25 s+ under
    # the suite's load), not the work. ~8 ms here: a quadratic pass over the points would take seconds.
    begin = time.thread_time()
    detect_creep(h, SAFE, AGGRESSIVE, TOTAL)
    assert time.thread_time() - begin < 0.25


# --- fast growth, small pools, the collecting hint ---------------------------------------------------------


def test_fast_growth_alerts_within_15_s() -> None:
    """2 GB at 100 MB/s never alerted (the steady rule needs 3 minutes): after a calm minute, it must alert
    within ~15 s of the start and name the rate; once it stops, the alert goes."""
    calm = [5 * GB] * 60
    first = None
    ramp = [5 * GB + 100e6 * i for i in range(1, 21)]
    # the history `seconds` into the ramp, for each of its 20 seconds
    for seconds, history in enumerate(ticks_into(History(), calm + ramp), start=1 - len(calm)):
        if seconds < 1:
            continue
        found = detect_creep(history, SAFE, AGGRESSIVE, 60 * GB)  # a 60 GB machine: 2 GB matters
        if found and first is None:
            first = seconds
            assert found[0].label == "train.py" and 80e6 <= found[0].rate_bytes_per_s <= 105e6
    assert first is not None and first <= 15
    stopped = calm + [5 * GB + 100e6 * i for i in range(1, 21)] + [7 * GB] * 5
    assert detect_creep(history_of(stopped), SAFE, AGGRESSIVE, 60 * GB) == []


def test_fast_growth_into_plenty_of_room_or_a_sawtooth_does_not_alert() -> None:
    # 100 MB/s toward a pool 80 GB away: the aggressive line is ~10 min off at that rate, fine; 20 MB/s not.
    slow_far = [10 * GB] * 60 + [10 * GB + 20e6 * i for i in range(1, 16)]
    assert alerts(slow_far) == []
    # The rising edge of a 30 s sawtooth of 2 GB: it released as much a moment ago.
    saw = [10 * GB + 2 * GB * ((i % 30) / 30) for i in range(120)] + [10 * GB + 70e6 * i for i in range(10)]
    assert detect_creep(history_of(saw), SAFE, AGGRESSIVE, 60 * GB) == []


def test_message_on_a_small_pool_lists_lines_in_time_order_and_leaves_out_those_above_it() -> None:
    """`crosses safe 80 GB in ~2 h 02 min, aggressive … the pool in ~35 min` on a 24 GB machine: the lines
    above the pool are never reached; what is left comes soonest first."""
    a = CreepAlert(KEY, "train.py", 0.6 * GIB / 60, GB, 7320.0, 9000.0, 2100.0, SAFE, AGGRESSIVE, 20 * GB)
    assert a.message("GiB") == "train.py +0.6 GiB/min — crosses the pool in ~35 min"
    b = CreepAlert(KEY, "train.py", 1e9 / 60, GB, 300.0, 2400.0, 1800.0, SAFE, AGGRESSIVE, 70 * GB)
    assert b.message("GB") == "train.py +1.0 GB/min — crosses safe 80 GB in ~5 min, the pool in ~30 min"


def test_collecting_says_how_much_data_the_steady_rule_still_needs() -> None:
    assert collecting_s(History()) == 180.0
    assert collecting_s(history_of([GB] * 61)) == 120.0
    assert collecting_s(history_of([GB] * 181)) is None


@st.composite
def _series(draw: st.DrawFn) -> tuple[list[float], list[int]]:
    """Up to 60 distinct times and as many values: any bytes, or two levels (a step is the series whose
    slope comes closest to the bound). The values are drawn for the times there are: 60 drawn for every
    series (and cut to its length) were most of the test's draws."""
    times = draw(st.lists(st.floats(0, 600, allow_nan=False), min_size=2, max_size=60, unique=True))
    n = len(times)
    level = draw(st.one_of(st.just(st.integers(0, 8 * GIB)), st.just(st.sampled_from([0, 8 * GIB]))))
    return times, draw(st.lists(level, min_size=n, max_size=n))


# 200 fixed examples (derandomized, as the others here): 600 random ones caught no mutation these miss
# (Popoviciu's bound or sqrt(n) changed: caught; the rounding margin removed: caught by neither), and a run
# never meets an example the last did not.
@settings(max_examples=200, deadline=None, derandomize=True)
@given(_series(), st.floats(0.01, 1.0))
# Two times an ulp apart: the mean of the raw times lost the half ulp and doubled Stt.
@example(series=([600.0, 599.9999999999999], [0, 1]), share=1.0)
# Two times 6e-152 s apart: the fitted slope squared overflowed to inf, and "inf > any bound" said it could
# not be reached.
@example(series=([0.0, 5.938312724093883e-152], [0, 8 * GIB]), share=1.0)
def test_the_flat_series_shortcut_never_hides_a_slope_it_would_reach(
    series: tuple[list[float], list[int]], share: float
) -> None:
    """The pre-check that skips the fit of a flat series never says "cannot reach" for a rate the
    least-squares slope does reach."""
    from sparktop.analysis.trend import _slope_cannot_reach, slope_per_s

    times, vs = series
    ts = sorted(times)
    fitted = slope_per_s(ts, vs)
    if fitted is not None and fitted > 0:
        assert not _slope_cannot_reach(ts, vs, fitted * share * (1 - 1e-9))
        assert not _slope_cannot_reach(ts, vs, fitted * (1 - 1e-9))
    assert _slope_cannot_reach(ts, [vs[0]] * len(ts), 1e-9)  # a flat series reaches no slope


# --- an alert that the rule raises and drops with noise stays on show --------------------------------------


def held_alerts(values: list[float]) -> list[list[str]]:
    """The labels on show after each tick, with the hold, as the session shows them."""
    hold = CreepHold()
    shown = []
    for history in ticks_into(History(), values):
        raised = detect_creep(history, SAFE, AGGRESSIVE, TOTAL)
        now = history.latest_time
        assert now is not None
        shown.append([a.label for a in hold.update(raised, history, now, TOTAL)])
    return shown


def climb(n: int, rate_per_s: float = 1.3e9 / 60, noise: float = 30e6, seed: int = 4) -> list[float]:
    rng = random.Random(seed)
    return [45 * GB + rate_per_s * i + jitter(rng, noise) for i in range(n)]  # the pool at 85 GB and up


def test_a_noisy_fast_climb_stays_alerted_once_raised() -> None:
    """A training run at 1.3 GB/min with noise: the fast rule passes and fails from tick to tick (it did,
    and the alert blinked); once raised, the alert stays while the climb goes on."""
    values = climb(90)
    raw = [bool(detect_creep(h, SAFE, AGGRESSIVE, TOTAL)) for h in ticks_into(History(), values)]
    first = raw.index(True)
    assert not all(raw[first:]), "the rule alone should blink on this climb (else this test shows nothing)"
    shown = held_alerts(values)
    assert all(labels == ["train.py"] for labels in shown[first:]), shown[first:]


def test_a_held_alert_goes_within_seconds_once_growth_stops_or_memory_is_released() -> None:
    """It was held CREEP_HOLD_S (30 s) after the climb stopped: a stopped climb is no creep."""
    values = climb(40)
    flat = values + [values[-1] + (4096 if i % 2 else 0) for i in range(60)]  # stops (a page's wiggle)
    shown = held_alerts(flat)
    assert shown[39] == ["train.py"]
    assert not any(shown[39 + 6 :]), [i for i, s in enumerate(shown) if s]  # gone within 6 s of the stop
    released = values + [values[0]] * 5  # freed what it grew
    assert held_alerts(released)[41] == []  # at once


def test_the_hold_never_outlives_its_limit_even_while_the_climb_goes_on() -> None:
    """Held only while the climb goes on and the rule last raised it at most CREEP_HOLD_S ago."""
    values = climb(40)
    history = history_of(values)
    hold = CreepHold()
    now = history.latest_time
    assert now is not None
    raised = detect_creep(history, SAFE, AGGRESSIVE, TOTAL)
    assert [a.label for a in hold.update(raised, history, now, TOTAL)] == ["train.py"]
    assert [a.label for a in hold.update([], history, now + CREEP_HOLD_S, TOTAL)] == ["train.py"]
    assert hold.update([], history, now + CREEP_HOLD_S + 1, TOTAL) == []
