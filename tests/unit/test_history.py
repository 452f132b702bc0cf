"""History: alignment of per-consumer series, top keys, and bounded memory under long runs and key churn."""

from __future__ import annotations

import itertools

import pytest

from sparktop.analysis.history import History
from sparktop.core.snapshot import GB, Accounting, Consumer, Snapshot
from tests.fixtures.snapshots import snapshot

TOTAL = 128 * GB


def snap(
    t: float, consumers: dict[str, int], labels: dict[str, str] | None = None, extra: int = 0
) -> Snapshot:
    """A snapshot whose pool `used` is the consumers' sum plus `extra` unattributed bytes."""
    labels = labels or {}
    used = sum(consumers.values()) + extra
    return snapshot(
        t=t,
        total=TOTAL,
        used=used,
        no_gpu="test",
        accounting=Accounting(
            used=used,
            consumers=[
                Consumer(key=k, label=labels.get(k, k.upper()), kind="container", cpu_bytes=v)
                for k, v in consumers.items()
            ],
            unattributed=extra,
        ),
    )


def test_series_are_aligned_with_times_and_none_where_absent() -> None:
    h = History()
    h.add(snap(100.0, {"a": 1 * GB}))
    h.add(snap(101.0, {"a": 2 * GB, "b": 5 * GB}))
    h.add(snap(102.0, {"b": 6 * GB}))
    h.add(snap(103.0, {"a": 3 * GB, "b": 7 * GB}, extra=GB))

    assert h.times() == [100.0, 101.0, 102.0, 103.0]
    assert h.used() == [1 * GB, 7 * GB, 6 * GB, 11 * GB]
    assert h.series("a") == [1 * GB, 2 * GB, None, 3 * GB]
    assert h.series("b") == [None, 5 * GB, 6 * GB, 7 * GB]
    assert h.series("unattributed") == [0, 0, 0, GB]
    assert h.series("never-seen") == [None, None, None, None]
    assert h.latest_time == 103.0
    assert h.pool_used_now == 11 * GB
    assert len(h) == 4


def test_series_total_is_cpu_plus_gpu() -> None:
    h = History()
    s = snap(1.0, {})
    s.accounting = Accounting(
        used=9 * GB,
        consumers=[Consumer(key="p", label="p", kind="process", cpu_bytes=2 * GB, gpu_bytes=7 * GB)],
    )
    h.add(s)
    assert h.series("p") == [9 * GB]


def test_top_keys_largest_first_without_unattributed() -> None:
    h = History()
    h.add(snap(1.0, {"big-then-gone": 90 * GB, "a": 1 * GB}))
    h.add(snap(2.0, {"a": 10 * GB, "b": 30 * GB, "c": 20 * GB}, extra=50 * GB))
    assert h.top_keys(2) == ["b", "c"]
    assert h.top_keys(10) == ["b", "c", "a"]  # "big-then-gone" is not there now; unattributed never is
    assert h.top_keys(0) == []


def test_label_is_the_latest_one_and_defaults_to_the_key() -> None:
    h = History()
    h.add(snap(1.0, {"container:1": GB}, labels={"container:1": "1a2b3c4d5e6f"}))
    h.add(snap(2.0, {"container:1": GB}, labels={"container:1": "vllm"}))
    assert h.label("container:1") == "vllm"
    assert h.label("unknown-key") == "unknown-key"


def test_empty_history() -> None:
    h = History()
    assert h.times() == [] and h.used() == [] and h.top_keys(3) == []
    assert h.latest_time is None and h.pool_used_now is None
    assert h.series("x") == []
    assert h.window("x", 300) == ([], [])


def test_snapshot_without_accounting_records_used_only() -> None:
    h = History()
    h.add(snap(1.0, {"a": GB}))
    bare = snap(2.0, {"a": 3 * GB})
    bare.accounting = None
    h.add(bare)
    assert h.used() == [GB, 3 * GB]
    assert h.series("a") == [GB, None]
    assert h.top_keys(5) == []


def test_repeated_tick_is_ignored_and_a_clock_step_back_restarts() -> None:
    h = History()
    h.add(snap(10.0, {"a": GB}))
    h.add(snap(10.0, {"a": 2 * GB}))
    assert h.series("a") == [GB]
    h.add(snap(5.0, {"b": GB}))
    assert h.times() == [5.0]
    assert set(h.known_keys()) == {"b", "unattributed"}


def test_window_returns_recent_present_points() -> None:
    h = History()
    for i in range(10):
        h.add(snap(float(i), {"a": i * GB} if i % 3 else {}))
    ts, vs = h.window("a", 4.0)  # t in [5, 9]
    assert ts == [5.0, 7.0, 8.0]
    assert vs == [5 * GB, 7 * GB, 8 * GB]


def test_six_hours_at_one_second_with_10_consumers_stays_small() -> None:
    """Six hours at one second: 21,600 samples in 1,600 points. 10 consumers (50 took 1.8 s of CPU): the
    bound scales with them (numbers kept as Python floats, 32 bytes each, would be 4 times over it)."""
    h = History()
    consumers = {f"container:{i}": (i + 1) * GB // 10 for i in range(10)}
    s = snap(0.0, consumers)
    spike_at = 3600.0  # a 1 s spike 5 h before the end must survive downsampling (buckets keep the peak)
    for i in range(6 * 3600):
        s.timestamp = float(i)
        if i == spike_at:
            s.accounting.consumers[0].cpu_bytes = 99 * GB
        h.add(s)
        if i == spike_at:
            s.accounting.consumers[0].cpu_bytes = consumers["container:0"]

    times = h.times()
    assert len(times) < 1600, len(times)  # 900 raw + 270 × 10 s + 300 × 60 s, give or take a bucket
    assert times[-1] - times[0] <= 6 * 3600
    recent = [t for t in times if t > times[-1] - 850]
    assert all(b - a == 1.0 for a, b in itertools.pairwise(recent))  # raw for the last 15 min
    oldest_gaps = [b - a for a, b in itertools.pairwise(times[:51])]
    assert min(oldest_gaps) >= 59.0  # 60 s buckets beyond an hour
    assert max(v for v in h.series("container:0") if v is not None) == 99 * GB
    assert all(len(h.series(k)) == len(times) for k in h.known_keys())
    assert h.nbytes() < 250_000, h.nbytes()  # ~0.17 MB: 11 series × ~1,470 points × 8 bytes, and labels


def test_key_churn_keeps_memory_bounded() -> None:
    """2,000 ticks, 40 steady consumers plus 10 new process keys every tick (20,000 keys in all). Full (256
    keys, the raw tier's 900 points) by the half, so the second half is flat; without the key bound the
    size was 180 MB at 2,000 ticks. (3,000 ticks showed nothing more, for half as much CPU again.)"""
    h = History(max_keys=256)
    steady = {f"container:{i}": GB for i in range(40)}
    s = snap(0.0, steady)
    steady_consumers = list(s.accounting.consumers)
    sizes = []
    for tick in range(2_000):
        s.timestamp = float(tick)
        s.accounting.consumers = steady_consumers + [
            Consumer(key=f"process:{tick * 10 + j}:0", label="p", kind="process", cpu_bytes=GB // 2)
            for j in range(10)
        ]
        h.add(s)
        if tick % 200 == 199:
            sizes.append(h.nbytes())
    assert len(h.known_keys()) <= 256
    for key in steady:  # keys present now are never the ones forgotten
        assert h.series(key)[-1] == GB
    assert h.top_keys(5)[0].startswith("container:")
    assert max(sizes) < 6_000_000, sizes
    assert sizes[-1] <= sizes[len(sizes) // 2] * 1.2, sizes  # flat once full, not growing with the run
    assert all(len(h.series(k)) == len(h) for k in h.known_keys())


def test_keys_absent_for_the_whole_window_are_dropped() -> None:
    h = History(max_age_s=100)
    h.add(snap(0.0, {"short-lived": GB, "steady": GB}))
    for t in range(1, 102):
        h.add(snap(float(t), {"steady": GB}))
    assert h.times()[0] >= 1.0  # older than 100 s is gone
    assert "short-lived" not in h.known_keys()
    assert h.label("short-lived") == "short-lived"
    assert "steady" in h.known_keys()


def test_max_points_caps_fast_sampling() -> None:
    h = History(max_points=500)
    for i in range(5000):
        h.add(snap(i * 0.1, {"a": GB}))  # 10 Hz: the raw tier alone would hold 9,000 points
    assert len(h) <= 500
    assert h.times()[-1] == pytest.approx(499.9)


def test_short_lived_keys_cost_their_own_points_only() -> None:
    """Process churn: 5 steady consumers and, every tick, 20 new keys that live 1 to 3 ticks, 1,200 ticks at
    1 s (24,000 keys in all, the key bound of 256 reached in seconds; past the raw tier's 900 points, so old
    points are merged into 10 s buckets). The bound follows from what must be kept: 6 full series (the 5 and
    "unattributed") of at most 900 raw + 150 ten-second points, 8 bytes each with a quarter for the arrays'
    spare room, and 256 keys of at most 3 points each plus ~600 bytes for what any key costs (its array and
    span headers, key and label strings, its entries in four dicts). Series padded to the whole axis while
    their key is gone held ~2.3 MB at 2,400 ticks: 256 keys × ~1,000 points × 8 bytes (~1.9 MB here)."""
    h = History(max_keys=256)
    ticks = 1_200
    s = snap(0.0, {f"container:{i}": GB for i in range(5)})
    steady = list(s.accounting.consumers)
    alive: list[tuple[int, Consumer]] = []  # (last tick, consumer)
    for tick in range(ticks):
        alive = [(last, c) for last, c in alive if last >= tick]
        alive += [
            (tick + j % 3, Consumer(key=f"process:{tick}:{j}", label="p", kind="process", cpu_bytes=GB // 4))
            for j in range(20)
        ]
        s.timestamp = float(tick)
        s.accounting.consumers = steady + [c for _, c in alive]
        h.add(s)

    points = len(h)
    assert 900 < points <= 900 + 150 + 2, points
    bound = 6 * (900 + 150) * 8 * 5 // 4 + 256 * (3 * 8 + 600)
    assert h.nbytes() < bound, (h.nbytes(), bound)
    assert h.series("container:0") == [GB] * points
    lived = h.series(f"process:{ticks - 2}:2")  # came at the tick before the last, lives 3 ticks
    assert lived == [None] * (points - 2) + [GB // 4] * 2
    gone = h.series(f"process:{ticks - 4}:0")  # lived one tick, two ticks before the last
    assert gone == [None] * (points - 4) + [GB // 4, None, None, None]
