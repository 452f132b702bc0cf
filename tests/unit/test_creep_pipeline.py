"""Creep alerts and growth rates through the dashboard's own path (Session.ingest of whole snapshots, at a
1-2 s tick, with warm history), on the cases that broke trust (issue 23 item 2): a one-off allocation alerted
(`+20.7 GiB/min — crosses the pool in ~17 s`) and stayed 30 s, a grower that stopped kept its alert for
minutes, a flat process after a step showed a growth rate for minutes. The must-not-trigger cases of every
alert rule (a step, a stop, noise) and the fast grower that must alert within 15 s."""

from __future__ import annotations

import functools
import random

from sparktop.core.snapshot import GIB, MIB, GpuReport, HostMemory, ProcessInfo, Snapshot, process_key
from sparktop.session.session import Session

TOTAL = int(23.5 * GIB)  # the 24 GB machine of the report
BASE = 6 * GIB  # kernel, page tables, other things: unattributed
START = 1_700_000_000.0
SAFE, AGGRESSIVE = int(15.8e9), int(19.7e9)  # the lines scaled to this pool


class Machine:
    """Host processes with sizes set per tick, and a session fed their snapshots as the dashboard is."""

    def __init__(self, tick: float = 1.0, seed: int = 1) -> None:
        self.tick = tick
        self.t = START
        self.rng = random.Random(seed)
        self.sizes: dict[int, int] = {1000: 2 * GIB, 1001: 500 * MIB}  # steady neighbours
        self.session = Session(safe_bytes=SAFE, max_bytes=AGGRESSIVE, clock=lambda: self.t)

    def step(self, wiggle: int = 2 * MIB) -> Session:
        """One tick: every process wiggles by up to `wiggle` (allocator noise), the session takes it in."""
        procs = [
            ProcessInfo(
                pid=pid,
                name=f"p{pid}",
                rss=max(0, size + self.rng.randint(-wiggle, wiggle)),
                start_time=START - 3600,
            )
            for pid, size in self.sizes.items()
        ]
        used = BASE + sum(p.rss for p in procs)
        self.session.ingest(
            Snapshot(
                timestamp=self.t,
                memory=HostMemory(total=TOTAL, available=TOTAL - used, free=TOTAL - used),
                gpu=GpuReport(available=False, reason="test"),
                processes=procs,
            )
        )
        self.t += self.tick
        return self.session

    def run(self, seconds: float, **kw: int) -> list[list[str]]:
        """Tick for `seconds`; the labels of the creep alerts on show after each tick."""
        return [[a.label for a in self.step(**kw).creep] for _ in range(round(seconds / self.tick))]

    def key(self, pid: int) -> str:
        return process_key(ProcessInfo(pid=pid, name="x", start_time=START - 3600))


def warm(tick: float = 1.0, seed: int = 1) -> Machine:
    """A machine after over three minutes of steady ticks (every rule can judge every key), simulated once
    per worker per (tick, seed): each caller gets one of its own, its session restored from the checkpoint."""
    checkpoint, t, rng, sizes = _warmed(tick, seed)
    machine = Machine(tick, seed)
    machine.session.restore(checkpoint)
    machine.t, machine.sizes = t, dict(sizes)
    machine.rng.setstate(rng)
    return machine


@functools.cache
def _warmed(tick: float, seed: int) -> tuple[bytes, float, tuple, dict[int, int]]:
    machine = Machine(tick, seed)
    machine.run(200)
    assert machine.session.creep == []
    return machine.session.checkpoint(), machine.t, machine.rng.getstate(), dict(machine.sizes)


def allocate(machine: Machine, pid: int, total: int, over_s: float) -> list[list[str]]:
    """`pid` allocates `total` bytes over `over_s` seconds (one tick at least), then stays."""
    start = machine.sizes.get(pid, 0)
    ticks = max(1, round(over_s / machine.tick))
    shown = []
    for i in range(1, ticks + 1):
        machine.sizes[pid] = start + total * i // ticks
        shown.append([a.label for a in machine.step().creep])
    return shown


# --- a step is not growth ------------------------------------------------------------------------------


def test_a_new_process_that_allocates_2_gib_once_never_alerts() -> None:
    """`python3 -c` allocating 2 GiB at once (in 1 s, or touched page by page over 6 s) and staying."""
    for over_s in (1, 3, 6):
        machine = warm()
        shown = allocate(machine, 4242, 2 * GIB, over_s) + machine.run(60)
        assert not any(shown), (over_s, [i for i, s in enumerate(shown) if s])


def test_a_running_process_or_container_that_steps_up_once_never_alerts() -> None:
    """An existing consumer filling 1.5 GiB of /dev/shm once (in 1-5 s), at a 1 s and a 2 s tick, with the
    allocator's wiggle after it (it made new highs by a few KiB, and the fast rule took that for growth)."""
    for tick, over_s in ((1.0, 1), (1.0, 5), (2.0, 2), (2.0, 4)):
        machine = warm(tick)
        shown = allocate(machine, 1000, int(1.5 * GIB), over_s) + machine.run(60, wiggle=64 * 1024)
        assert not any(shown), (tick, over_s, [i for i, s in enumerate(shown) if s])


def test_after_a_step_the_growth_columns_say_flat_within_seconds() -> None:
    """A flat 3 GiB process after its step showed +0.48 → +0.30 GiB/min for over two minutes."""
    machine = warm()
    allocate(machine, 4242, 3 * GIB, 2)
    allocate(machine, 1000, 3 * GIB, 2)  # the same step in a process the history has known for minutes
    machine.run(70)  # the processes table keeps a point every 5 s and needs a minute of them
    session = machine.session
    rates = [
        session.rate_per_min(machine.key(1000)),  # the containers/consumers tables, from the history
        session.process_rate_per_min(machine.key(1000)),  # the processes table, a point every 5 s
        session.process_rate_per_min(machine.key(4242)),
    ]
    assert all(r is not None and abs(r) < 20 * MIB for r in rates), rates
    assert abs(machine.session.rate_per_min(machine.key(1000)) or 0) < 20 * MIB


def test_a_step_down_is_not_a_shrink_rate_for_minutes_either() -> None:
    machine = warm()
    allocate(machine, 1000, -GIB, 1)
    machine.run(20)
    rate = machine.session.rate_per_min(machine.key(1000))
    assert rate is not None and abs(rate) < 20 * MIB


# --- growth alerts, and clears when it stops -----------------------------------------------------------


def test_a_fast_grower_alerts_within_15_s_and_clears_within_seconds_of_stopping() -> None:
    machine = warm()
    shown = allocate(machine, 4242, 3 * GIB, 30)  # 100 MiB/s for 30 s: a new process
    first = next(i for i, s in enumerate(shown) if s)
    assert first < 15 and all(shown[first:]), shown
    after = machine.run(20)
    assert not any(after[5:]), [i for i, s in enumerate(after) if s]


def test_a_steady_grower_that_stops_clears_within_15_s() -> None:
    """A 0.7 GiB/min grower that stopped kept its alert for six minutes."""
    machine = warm()
    rate = 0.7 * GIB / 60
    shown = []
    for _ in range(300):  # five minutes of steady growth: the steady rule wants growth in each third
        machine.sizes[1000] += int(rate)
        shown.append([a.label for a in machine.step().creep])
    assert all(s == ["p1000 (1000)"] for s in shown[-30:]), "the steady rule alerts on the climb"
    rate_now = machine.session.rate_per_min(machine.key(1000))
    assert rate_now is not None and abs(rate_now - 0.7 * GIB) < 0.1 * GIB
    after = machine.run(120)
    assert not any(after[15:]), [i for i, s in enumerate(after) if s]
    assert abs(machine.session.rate_per_min(machine.key(1000)) or 0) < 20 * MIB


def test_a_noisy_staircase_grower_stays_alerted_while_it_climbs() -> None:
    """KV-cache blocks every 20 s: long pauses are its rhythm, not a stop."""
    machine = warm()
    shown = []
    for i in range(300):
        if i % 20 == 0:
            machine.sizes[1000] += 256 * MIB
        shown.append([a.label for a in machine.step(wiggle=8 * MIB).creep])
    first = next(i for i, s in enumerate(shown) if s)
    assert first < 240 and all(shown[first:]), [i for i, s in enumerate(shown[first:]) if not s]


def test_noise_alone_never_alerts() -> None:
    machine = warm(seed=9)
    assert not any(machine.run(300, wiggle=200 * MIB))


def test_a_noisy_steady_creep_does_not_blink() -> None:
    """The demo's training run climbs 1.2 GiB/min with ±50 MiB a tick: its alert went off and on every few
    ticks (the strict still-rising test failed after each high reading), and the dashboard laid itself out
    on every blink. Once on show it stays while the climb goes on."""
    from sparktop.sources.demo import DemoSource

    source = DemoSource("default", seed=0)
    session = Session()
    for _ in range(360):  # past the creep window, as the dashboard warms up: analysed once, at the end
        session.ingest(source.sample(), analyse=False)
    session.analyse()
    shown = [tuple(alert.label for alert in session.creep)]  # the alert is up
    for _ in range(120):
        session.ingest(source.sample())
        shown.append(tuple(alert.label for alert in session.creep))
    assert set(shown) == {("ssd-tetris-train-1",)}, sorted(set(shown))
