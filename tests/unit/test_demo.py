"""The simulated Spark: deterministic, internally consistent, and stoppable like the real engine."""

from __future__ import annotations

import itertools

import pytest

from sparktop.analysis.accounting import fill_accounting
from sparktop.collect.control import ControlError, StopTimeout
from sparktop.core.snapshot import GB, GIB, Snapshot
from sparktop.session.session import Session
from sparktop.sources.demo import DEMO_SCENARIOS, DemoSource
from sparktop.sources.snapshot_source import SnapshotSource


def run(source: DemoSource, n: int) -> list[Snapshot]:
    """`n` snapshots as every view gets them: accounted by fill_accounting, the one place Session.ingest
    accounts a snapshot (the session's history, trends and analysis are tested elsewhere, and here were a
    third of this file's CPU)."""
    return [fill_accounting(source.sample()) for _ in range(n)]


def container(snapshot: Snapshot, name: str):
    return next(c for c in snapshot.containers if c.name == name)


def consumer_total(snapshot: Snapshot, container_name: str) -> int:
    cid = container(snapshot, container_name).id
    assert snapshot.accounting is not None
    return next(c.total for c in snapshot.accounting.consumers if c.key == f"container:{cid}")


def test_is_a_snapshot_source():
    source = DemoSource()
    assert isinstance(source, SnapshotSource)
    assert source.name == "demo"
    assert source.sample().source == "demo"


def test_same_seed_same_snapshots():
    a = [s.model_dump_json() for s in run(DemoSource("default", seed=7), 40)]
    b = [s.model_dump_json() for s in run(DemoSource("default", seed=7), 40)]
    assert a == b


def test_different_seed_differs():
    a = run(DemoSource("default", seed=1), 5)
    b = run(DemoSource("default", seed=2), 5)
    assert [s.model_dump_json() for s in a] != [s.model_dump_json() for s in b]
    assert {c.id for c in a[0].containers}.isdisjoint({c.id for c in b[0].containers})


def test_time_is_simulated():
    source = DemoSource(start=1000.0, step=2.5)
    stamps = [s.timestamp for s in run(source, 4)]
    assert stamps == [1000.0, 1002.5, 1005.0, 1007.5]
    assert source.now == 1010.0


def test_unknown_scenario_lists_the_valid_ones():
    with pytest.raises(ValueError) as info:
        DemoSource("nope")
    message = str(info.value)
    assert "nope" in message
    for name in DEMO_SCENARIOS:
        assert name in message


@pytest.mark.parametrize("scenario", list(DEMO_SCENARIOS))
def test_every_scenario_is_consistent(scenario: str):
    # The source leaves accounting to the session, like every source.
    assert DemoSource(scenario, seed=3).sample().accounting is None
    for snapshot in run(DemoSource(scenario, seed=3), 30):
        mem = snapshot.memory
        assert 0 < mem.used <= mem.total
        assert mem.free <= mem.available
        assert 120 * GIB < mem.total < 123 * GIB
        assert mem.cpu_count == 20
        acct = snapshot.accounting
        assert acct is not None
        assert sum(c.total for c in acct.consumers) + acct.unattributed == acct.used == mem.used
        # kernel, driver and cache: a few GB that nobody owns, never negative
        assert 1 * GB < acct.unattributed < 6 * GB
        pids = [p.pid for p in snapshot.processes]
        assert len(pids) == len(set(pids))
        ids = [c.id for c in snapshot.containers]
        assert len(ids) == len(set(ids))
        for c in snapshot.containers:
            assert len(c.id) == 64 and int(c.id, 16) >= 0
            assert set(c.pids) <= set(pids)
            assert c.memory is not None and c.memory.working_set <= c.memory.usage <= c.memory.peak
            assert all(p.container_id == c.id for p in snapshot.processes if p.pid in c.pids)
        gpu_pids = [p.pid for p in snapshot.gpu.gpus[0].processes]
        assert len(gpu_pids) == len(set(gpu_pids))
        assert set(gpu_pids) <= set(pids)


@pytest.mark.parametrize("scenario", [s for s in DEMO_SCENARIOS if s != "discrete"])  # that one: an H100
def test_gpu_looks_like_gb10(scenario: str):
    for snapshot in run(DemoSource(scenario), 20):
        assert snapshot.gpu.available and snapshot.gpu.unified_memory
        (gpu,) = snapshot.gpu.gpus
        assert gpu.name == "NVIDIA GB10"
        assert (gpu.compute_capability, gpu.sm_count, gpu.addressing_mode) == ("12.1", 48, "ATS")
        assert gpu.memory_total is None and gpu.memory_used is None
        for metric in ("memory_total", "memory_used", "fan_speed", "power_limit", "pcie"):
            assert metric in gpu.unsupported
        assert 0 <= gpu.utilization_pct <= 100
        assert 3 <= gpu.power_w <= 100
        assert 0 < gpu.sm_clock_mhz <= 2500
        assert 25 <= gpu.temperature_c <= 90
    assert {p.kind for p in gpu.processes} >= {"graphics", "both"}


def test_load_moves_the_gpu():
    idle = run(DemoSource("idle"), 30)
    training = run(DemoSource("training"), 30)
    assert max(s.gpu.gpus[0].utilization_pct for s in idle) < 5
    assert min(s.gpu.gpus[0].utilization_pct for s in training) > 85
    assert max(s.gpu.gpus[0].power_w for s in idle) < 10
    assert min(s.gpu.gpus[0].power_w for s in training) > 60
    energy = [s.gpu.gpus[0].energy_j for s in training]
    assert energy == sorted(energy)


def test_ollama_is_bursty():
    # Within a simulated minute it has been both idle and busy (it was ten minutes: 0.6 s of CPU; with seeds
    # 1-7 both show within the first 25 samples).
    utils = [s.gpu.gpus[0].utilization_pct for s in run(DemoSource("audio", seed=5), 60)]
    assert min(utils) < 5 and max(utils) > 80


def test_default_scenario_contents():
    snapshot = DemoSource("default").sample()
    by_name = {c.name: c for c in snapshot.containers}
    assert by_name["audio-lab-whisper-1"].compose_project == "audio-lab"
    assert by_name["audio-lab-f5-tts-1"].compose_service == "f5-tts"
    assert by_name["ssd-tetris-train-1"].compose_project == "ssd-tetris"
    assert 2.5 * GB < by_name["audio-lab-whisper-1"].gpu_bytes < 3.5 * GB
    assert 38 * GB < by_name["ollama"].gpu_bytes < 42 * GB
    assert 11 * GB < by_name["ssd-tetris-train-1"].gpu_bytes < 13 * GB
    train = [p for p in snapshot.processes if p.container_id == by_name["ssd-tetris-train-1"].id]
    assert any("train.py" in p.cmdline and p.gpu_bytes for p in train)
    runner = [p for p in snapshot.processes if "ollama runner" in p.cmdline]
    assert len(runner) == 1 and runner[0].gpu_bytes > 38 * GB
    host = [p for p in snapshot.processes if p.container_id is None]
    assert len(host) > 25
    assert {"systemd", "sshd", "dockerd", "Xorg", "gnome-shell", "code-server"} <= {p.name for p in host}


def test_training_memory_creeps_about_1_3_gb_per_minute():
    # Ten simulated minutes, a sample every 5 s: the demo's creep is a function of the time elapsed, and a
    # sample a second cost five times the CPU for the same figures.
    source = DemoSource("default", seed=11, step=5.0)
    snapshots = run(source, 121)
    first = consumer_total(snapshots[0], "ssd-tetris-train-1")
    last = consumer_total(snapshots[-1], "ssd-tetris-train-1")
    per_minute = (last - first) / 10
    assert 1.2 * GB < per_minute < 1.45 * GB
    gpu = [container(s, "ssd-tetris-train-1").gpu_bytes for s in snapshots]
    # steady growth with a little noise: every minute is higher than the one before
    minutes = gpu[::12]
    assert all(b > a for a, b in itertools.pairwise(minutes))
    # the other consumers stay put
    ollama = [consumer_total(s, "ollama") for s in snapshots]
    assert max(ollama) - min(ollama) < 0.5 * GB
    # and the pool tracks it
    assert snapshots[-1].memory.used - snapshots[0].memory.used > 11 * GB


def test_critical_is_near_exhaustion_with_sustained_pressure():
    for snapshot in run(DemoSource("critical"), 120):
        mem = snapshot.memory
        assert mem.available / mem.total < 0.05
        assert mem.pressure and mem.pressure.some and mem.pressure.full
        assert 30 < mem.pressure.some.avg10 < 55
        assert 18 < mem.pressure.full.avg10 < 35
        assert mem.pressure.some.avg300 > 30


def test_pressure_follows_load():
    def some_avg10(scenario: str) -> float:
        snapshot = run(DemoSource(scenario), 10)[-1]
        assert snapshot.memory.pressure and snapshot.memory.pressure.some
        return snapshot.memory.pressure.some.avg10

    assert some_avg10("idle") < 1 and some_avg10("audio") < 1
    assert 2 < some_avg10("everything") < some_avg10("critical")


def test_everything_is_about_120_gb():
    snapshot = DemoSource("everything").sample()
    assert 110 * GB < snapshot.memory.used < 124 * GB
    assert len(snapshot.containers) == 5


# --- stop and kill ---------------------------------------------------------------------------------------


def test_stop_removes_the_container_after_two_seconds():
    source = DemoSource("default")
    before = source.sample()
    whisper = container(before, "audio-lab-whisper-1")
    source.controller().stop(whisper.id, timeout=10)
    during = source.sample()
    assert container(during, "audio-lab-whisper-1").status == "stopping"
    after = Session().ingest(source.sample())
    assert whisper.id not in {c.id for c in after.containers}
    assert not {p.pid for p in after.processes} & set(whisper.pids)
    assert not {p.pid for p in after.gpu.gpus[0].processes} & set(whisper.pids)
    assert all(c.key != f"container:{whisper.id}" for c in after.accounting.consumers)
    freed = before.memory.used - after.memory.used
    assert freed > 4 * GB
    with pytest.raises(ControlError, match=f"no such container: {whisper.id}"):
        source.controller().stop(whisper.id)


def test_stop_of_a_container_that_ignores_sigterm_times_out_then_kill_works():
    source = DemoSource("default")
    train = container(source.sample(), "ssd-tetris-train-1")
    controller = source.controller()
    with pytest.raises(StopTimeout, match="ssd-tetris-train-1"):
        controller.stop(train.id, timeout=3)
    assert train.id in {c.id for c in source.sample().containers}
    controller.kill(train.id)
    after = source.sample()
    assert train.id not in {c.id for c in after.containers}
    assert not {p.pid for p in after.processes} & set(train.pids)
    # training gone: only the bursty services use the GPU now
    utils = [s.gpu.gpus[0].utilization_pct for s in run(source, 300)]
    assert sum(utils) / len(utils) < 60 and min(utils) < 5


def test_kill_is_immediate():
    source = DemoSource("audio")
    first = source.sample()
    target = first.containers[0]
    source.controller().kill(target.id)
    assert target.id not in {c.id for c in source.sample().containers}


def test_unknown_container():
    source = DemoSource("default")
    source.sample()
    controller = source.controller()
    with pytest.raises(ControlError, match="no such container: 0123abcd"):
        controller.stop("0123abcd")
    with pytest.raises(ControlError, match="no such container: 0123abcd"):
        controller.kill("0123abcd")


def test_the_help_lists_every_scenario():
    import argparse
    import re

    from sparktop.commands.common import add_source_arguments

    parser = argparse.ArgumentParser()
    add_source_arguments(parser)
    text = " ".join(parser.format_help().split())
    for name in DEMO_SCENARIOS:
        assert re.search(rf"\b{re.escape(name)}\b", text), name


def test_the_processes_sm_shares_add_up_to_the_devices_use_at_most() -> None:
    # The contention demo showed vLLM at 61 % and the training run at 98 % beside a 100 % device.
    from sparktop.sources.demo import DemoSource

    for scenario in ("contention", "default", "everything", "discrete"):
        source = DemoSource(scenario, seed=0)
        for _ in range(150):
            snapshot = source.sample()
            for gpu in snapshot.gpu.gpus:
                shares = sum(p.sm_pct or 0.0 for p in gpu.processes)
                assert shares <= (gpu.utilization_pct or 0.0) + 1, (scenario, shares, gpu.utilization_pct)
