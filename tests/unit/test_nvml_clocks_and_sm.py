"""Per-process SM utilisation and clocks event (throttle) reasons: the real pynvml on a fake library."""

from __future__ import annotations

import io
import json
import time

import pynvml
import pytest

from sparktop.analysis.throttle import (
    ThrottleWatch,
    lasting_throttle,
    throttle_line,
)
from sparktop.collect.nvml import NvmlCollector
from sparktop.commands.dashboard import summarize
from sparktop.core.clock_reasons import REASONS, THROTTLE_GAP_S, decode, slowing_reasons
from sparktop.core.snapshot import Snapshot
from sparktop.guard.alerts import Alerts
from sparktop.guard.service import Guard
from sparktop.session.session import Session
from sparktop.settings.guard import GuardSettings
from sparktop.sources.live import LiveSource
from tests.fixtures.machine import META, build_machine
from tests.fixtures.snapshots import snapshot, spark_gpu
from tests.fixtures.sources import FakeDocker
from tests.unit.fake_nvml import GIB, NOT_SUPPORTED, FakeNvml, gb10, h100, install_nvml

NEWER = "nvmlDeviceGetProcessesUtilizationInfo"
OLDER = "nvmlDeviceGetProcessUtilization"
T0 = 1_700_000_000.0  # the wall clock at the first read
US = 1_000_000


class Wall:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def install(monkeypatch):
    def put(fake: FakeNvml) -> FakeNvml | None:
        return install_nvml(monkeypatch, fake)

    return put


@pytest.fixture
def wall():
    return Wall()


@pytest.fixture
def collector(wall):
    c = NvmlCollector(retry_interval=0, wall_clock=wall)
    yield c
    c.close()


def sm_by_pid(report) -> dict[int, float | None]:
    return {p.pid: p.sm_pct for p in report.gpus[0].processes}


def at(seconds: float) -> int:
    """An NVML sample timestamp (µs, CPU clock) `seconds` after T0."""
    return int((T0 + seconds) * US)


# --- per-process SM utilisation ---------------------------------------------------------------------------


def test_newer_call_latest_sample_per_pid_in_the_window(install, collector, wall):
    samples = [
        (4242, at(-5), 99),  # 4242's older sample: not the latest
        (2277, at(-4), 30),  # more than 2 s before the newest sample NVML keeps: history, not now
        (4242, at(-1.0), 40),
        (4242, at(-0.5), 62),  # the latest of 4242's
        (5120, at(-0.8), 17),
    ]
    fake = install(FakeNvml([gb10(samples=samples)]))
    report = collector.collect()
    assert sm_by_pid(report) == {1801: 0.0, 2277: 0.0, 4242: 62.0, 5120: 17.0}
    assert fake.asked_since == [0]  # all it keeps: sparktop assumes nothing about NVML's clock
    assert fake.calls[OLDER] == 0  # the newer call answered: the older is not asked
    assert report.sm_pct_by_pid()[4242] == 62.0
    assert "sm_pct" not in report.gpus[0].unsupported

    # The next read asks for what came after the newest sample read; nothing new: NOT_FOUND, every
    # process ran no kernel since, a measured 0 (not unknown).
    wall.now += 1
    report = collector.collect()
    assert fake.asked_since[1] == at(-0.5)
    assert set(sm_by_pid(report).values()) == {0.0}
    assert fake.calls[OLDER] == 1  # probed too, in case only it has samples

    fake.gpus[0].samples.append((5120, at(0.7), 88))
    report = collector.collect()
    assert sm_by_pid(report)[5120] == 88.0 and sm_by_pid(report)[4242] == 0.0


def test_older_call_when_the_driver_lacks_the_newer(install, collector):
    fake = install(FakeNvml([gb10(samples=[(4242, at(-1), 71)])], without=(NEWER,)))
    report = collector.collect()
    assert sm_by_pid(report)[4242] == 71.0
    assert report.gpus[0].unsupported["process_utilization_info"] == "not in this driver's NVML"
    collector.collect()
    assert fake.calls[NEWER] == 0 and fake.asked_since == [0, at(-1)]


def test_older_call_when_the_newer_is_not_supported(install, collector):
    fake = install(FakeNvml([h100(samples=[(777, at(-1), 55)])]))
    fake.errors[NEWER] = NOT_SUPPORTED
    for _ in range(3):
        report = collector.collect()
    assert fake.calls[NEWER] == 1  # learnt once
    assert report.gpus[0].processes[0].sm_pct == 0.0  # no sample since the first read
    fake.gpus[0].samples.append((777, at(0.5), 64))
    assert collector.collect().gpus[0].processes[0].sm_pct == 64.0


def test_blackwell_older_call_answers_nothing_newer_does(install, collector):
    """reference/gb10-telemetry.md: the older call returns nothing on some Blackwell parts."""
    fake = install(FakeNvml([gb10(samples=[(4242, at(-1), 93)])]))
    fake.errors[OLDER] = pynvml.NVML_ERROR_NOT_FOUND
    assert sm_by_pid(collector.collect())[4242] == 93.0


def test_neither_call_answers_hides_the_figure_with_the_reason(install, collector):
    fake = install(FakeNvml([gb10(samples=[(4242, at(-1), 93)])], without=(NEWER,)))
    fake.errors[OLDER] = NOT_SUPPORTED
    for _ in range(2):
        report = collector.collect()
    assert set(sm_by_pid(report).values()) == {None}  # unknown, never 0
    assert report.sm_pct_by_pid() == {}
    reason = report.gpus[0].unsupported["sm_pct"]
    assert reason == (
        "ProcessesUtilizationInfo: not in this driver's NVML; "
        "ProcessUtilization: not supported on this device"
    )
    assert fake.calls[OLDER] == 1


def test_both_calls_not_supported(install, collector):
    fake = install(FakeNvml([h100(samples=[(777, at(-1), 93)])]))
    fake.errors[NEWER] = fake.errors[OLDER] = NOT_SUPPORTED
    (gpu,) = collector.collect().gpus
    assert gpu.processes[0].sm_pct is None
    assert gpu.unsupported["sm_pct"] == "not supported on this device (both per-process utilisation calls)"


def test_a_transient_error_blanks_the_figure_for_one_tick(install, collector):
    fake = install(FakeNvml([gb10(samples=[(4242, at(-1), 30)])], without=(NEWER,)))
    fake.errors[OLDER] = pynvml.NVML_ERROR_UNKNOWN
    report = collector.collect()
    assert sm_by_pid(report)[4242] is None
    assert "driver error" in report.gpus[0].unsupported["sm_pct"]
    del fake.errors[OLDER]
    assert sm_by_pid(collector.collect())[4242] == 30.0


def test_impossible_sample_values_are_skipped(install, collector):
    install(FakeNvml([gb10(samples=[(4242, at(-1), 0xFFFFFFFF), (5120, at(-1), 12)])]))
    got = sm_by_pid(collector.collect())
    assert got[4242] == 0.0 and got[5120] == 12.0


# --- clocks event reasons ---------------------------------------------------------------------------------

NVML_BITS = {
    "SW power cap": pynvml.nvmlClocksEventReasonSwPowerCap,
    "HW slowdown": pynvml.nvmlClocksEventReasonHwSlowdown,
    "HW thermal slowdown": pynvml.nvmlClocksEventReasonHwThermalSlowdown,
    "HW power brake slowdown": pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown,
    "SW thermal slowdown": pynvml.nvmlClocksEventReasonSwThermalSlowdown,
    "sync boost": pynvml.nvmlClocksEventReasonSyncBoost,
    "applications clocks setting": pynvml.nvmlClocksEventReasonApplicationsClocksSetting,
    "display clock setting": pynvml.nvmlClocksEventReasonDisplayClockSetting,
    # nvml.h's values: nvidia-ml-py 13.580.65 (the floor) knows the bits but not these two names (the floor
    # job found it)
    "board limit": getattr(pynvml, "nvmlClocksThrottleReasonBoardLimit", 0x200),
    "reliability": getattr(pynvml, "nvmlClocksThrottleReasonReliability", 0x400),
    "GPU idle": pynvml.nvmlClocksEventReasonGpuIdle,
}


def test_the_table_matches_pynvml():
    assert dict((name, bit) for bit, name in REASONS) == NVML_BITS


@pytest.mark.parametrize("name", [n for n in NVML_BITS if n != "GPU idle"])
def test_each_bit_read_and_named(install, collector, name):
    install(FakeNvml([h100(sm_clock_mhz=1210, sm_clock_max_mhz=1980, clocks_event_reasons=NVML_BITS[name])]))
    (gpu,) = collector.collect().gpus
    assert gpu.clocks_event_reasons == NVML_BITS[name]
    assert gpu.sm_clock_max_mhz == 1980
    assert slowing_reasons(gpu) == [name]
    assert throttle_line(gpu, now=T0 + 42) == f"SM 1.21 GHz of 1.98: {name} (for 42 s)"
    assert gpu.throttle_since == T0


def test_idle_is_not_a_throttle(install, collector):
    idle = pynvml.nvmlClocksEventReasonGpuIdle
    install(FakeNvml([gb10(sm_clock_mhz=800, clocks_event_reasons=idle)]))
    (gpu,) = collector.collect().gpus
    assert gpu.clocks_event_reasons == idle and decode(idle) == ["GPU idle"]
    assert slowing_reasons(gpu) == [] and throttle_line(gpu) is None and gpu.throttle_since is None


def test_a_reason_at_full_clock_is_not_a_throttle(install, collector):
    install(FakeNvml([h100(clocks_event_reasons=pynvml.nvmlClocksEventReasonSwPowerCap)]))
    (gpu,) = collector.collect().gpus
    assert gpu.sm_clock_mhz == gpu.sm_clock_max_mhz and throttle_line(gpu) is None


def test_several_and_unknown_bits():
    assert decode(0x4 | 0x40 | 0x8000) == ["SW power cap", "HW thermal slowdown", "unknown 0x8000"]


def test_older_driver_throttle_reasons_call(install, collector):
    fake = install(
        FakeNvml(
            [gb10(sm_clock_mhz=1210, sm_clock_max_mhz=2600, clocks_event_reasons=0x4)],
            without=("nvmlDeviceGetCurrentClocksEventReasons",),
        )
    )
    (gpu,) = collector.collect().gpus
    assert throttle_line(gpu) == "SM 1.21 GHz of 2.6: SW power cap"
    assert fake.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 1


def test_reasons_not_supported(install, collector):
    fake = install(FakeNvml([gb10()]))
    fake.errors["nvmlDeviceGetCurrentClocksEventReasons"] = NOT_SUPPORTED
    fake.errors["nvmlDeviceGetMaxClockInfo"] = NOT_SUPPORTED
    for _ in range(2):
        (gpu,) = collector.collect().gpus
    assert gpu.clocks_event_reasons is None and gpu.sm_clock_max_mhz is None
    assert gpu.unsupported["clocks_event_reasons"] == "not supported on this device"
    assert fake.calls["nvmlDeviceGetCurrentClocksEventReasons"] == 1


def test_how_long_a_throttle_lasts(install, collector, wall):
    fake = install(FakeNvml([h100(sm_clock_mhz=1210, sm_clock_max_mhz=1980, clocks_event_reasons=0x40)]))
    (gpu,) = collector.collect().gpus
    assert gpu.throttle_since == T0 and not lasting_throttle(gpu, wall.now)
    wall.now += 20
    fake.gpus[0].clocks_event_reasons = 0x40 | 0x4  # the reasons change: the same throttle goes on
    (gpu,) = collector.collect().gpus
    assert gpu.throttle_since == T0 and not lasting_throttle(gpu, wall.now)
    wall.now += 15
    (gpu,) = collector.collect().gpus
    assert lasting_throttle(gpu, wall.now)
    assert gpu.utilization_pct is not None
    assert not lasting_throttle(gpu.model_copy(update={"utilization_pct": 3.0}), wall.now)  # no load
    fake.gpus[0].sm_clock_mhz = 1980  # back at full clock: over
    (gpu,) = collector.collect().gpus
    assert gpu.throttle_since is None
    fake.gpus[0].sm_clock_mhz = 1500
    wall.now += THROTTLE_GAP_S + 1
    assert collector.collect().gpus[0].throttle_since == wall.now  # a new one


def test_a_power_capped_clock_touching_its_maximum_for_a_sample_is_the_same_throttle(
    install, collector, wall
):
    """Under a power cap an H100 clocked 1365–1965 MHz of 1980: a sample at full clock is not the end of the
    throttle, and what follows is not a new one (it was announced ended, then again 30 s later)."""
    fake = install(FakeNvml([h100(sm_clock_mhz=1500, sm_clock_max_mhz=1980, clocks_event_reasons=0x4)]))
    for _ in range(40):  # a sample a second
        assert collector.collect().gpus[0].throttle_since == T0
        wall.now += 1
    fake.gpus[0].sm_clock_mhz = 1980
    (dip,) = collector.collect().gpus
    assert dip.throttle_since is None and throttle_line(dip) is None  # this sample is at full clock
    wall.now += 1
    fake.gpus[0].sm_clock_mhz = 1400
    (gpu,) = collector.collect().gpus
    assert gpu.throttle_since == T0 and lasting_throttle(gpu, wall.now)


# --- a throttle that lasts: a message, and a guard warning ------------------------------------------------


def spark_at(t: float, clock: int, reasons: int, since: float | None, util: float = 95.0) -> Snapshot:
    gpu = spark_gpu(
        sm_count=None,
        unified_memory=False,
        utilization_pct=util,
        sm_clock_mhz=clock,
        sm_clock_max_mhz=2600,
        clocks_event_reasons=reasons,
        throttle_since=since,
    )
    total = 128 * 1024**3
    return snapshot(t=t, total=total, available=total // 2, free=total // 4, gpus=[gpu], hostname="spark")


def test_a_lasting_throttle_is_said_once_and_its_end_once():
    watch = ThrottleWatch()
    said = [watch.update(spark_at(T0 + s, 1210, 0x4, T0).gpu.gpus, T0 + s) for s in (0, 10, 29, 30, 45)]
    assert said[:3] == [([], [])] * 3
    assert said[3] == (
        ["GPU 0 (NVIDIA GB10) slowed under load: SM 1.21 GHz of 2.6: SW power cap (for 30 s)"],
        [],
    )
    assert said[4] == ([], [])
    # a sample at full clock, and the throttle goes on (the collector keeps its start): nothing to say
    assert watch.update(spark_at(T0 + 46, 2600, 0, None).gpu.gpus, T0 + 46) == ([], [])
    assert watch.update(spark_at(T0 + 47, 1210, 0x4, T0).gpu.gpus, T0 + 47) == ([], [])
    # at full clock for longer than a gap: over, said once
    assert watch.update(spark_at(T0 + 48, 2600, 0, None).gpu.gpus, T0 + 48) == ([], [])
    assert watch.update(
        spark_at(T0 + 48 + THROTTLE_GAP_S, 2600, 0, None).gpu.gpus, T0 + 48 + THROTTLE_GAP_S
    ) == (
        [],
        ["GPU 0 (NVIDIA GB10) no longer slowed"],
    )
    assert watch.update(spark_at(T0 + 70, 2600, 0, None).gpu.gpus, T0 + 70) == ([], [])
    # idle at a low clock for minutes is rest, not a throttle
    idle = [watch.update(spark_at(T0 + s, 208, 0x1, None, 0.0).gpu.gpus, T0 + s) for s in (100, 200)]
    assert idle == [([], [])] * 2
    # a power cap while the GPU computes next to nothing: not "under load"
    light = spark_at(T0 + 300, 1210, 0x4, T0 + 250, util=3.0)
    assert watch.update(light.gpu.gpus, T0 + 300) == ([], [])


def test_the_guard_warns_of_a_lasting_throttle(tmp_path):
    out = io.StringIO()
    session = Session()
    guard = Guard(GuardSettings(), session, Alerts(journal=False, out=out), state_path=tmp_path / "g.json",
                  clock=lambda: T0)  # fmt: skip
    for s in (0, 20, 40, 60):
        guard.on_snapshot(session.ingest(spark_at(T0 + s, 1210, 0x20, T0)))
    for s in (61, 62, 60 + THROTTLE_GAP_S, 61 + THROTTLE_GAP_S):
        guard.on_snapshot(session.ingest(spark_at(T0 + s, 2600, 0, None)))
    guard.close()
    lines = [line for line in out.getvalue().splitlines() if "GPU 0" in line]
    assert lines == [
        "sparktop guard: warning: GPU 0 (NVIDIA GB10) slowed under load: SM 1.21 GHz of 2.6: SW thermal "
        "slowdown (for 40 s)",
        "sparktop guard: clear: GPU 0 (NVIDIA GB10) no longer slowed",
    ]


def test_the_probe_script_prints_each_answer(install, monkeypatch, capsys):
    """scripts/nvml_probe.py (for the lead's GPU machine) runs on pynvml and prints raw answers and errors."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "nvml_probe.py"
    spec = importlib.util.spec_from_file_location("nvml_probe", path)
    assert spec is not None and spec.loader is not None
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    now = time.time()
    fake = install(
        FakeNvml(
            [h100(sm_clock_mhz=1210, clocks_event_reasons=0x44, samples=[(777, int((now - 0.5) * US), 81)])],
            without=("nvmlDeviceGetCurrentClocksThrottleReasons",),
        )
    )
    fake.errors[OLDER] = NOT_SUPPORTED
    monkeypatch.setattr(probe.time, "sleep", lambda s: None)
    monkeypatch.setattr("sys.argv", ["nvml_probe.py"])
    assert probe.main() == 0
    out = capsys.readouterr().out
    assert "nvmlDeviceGetCurrentClocksEventReasons: 68" in out
    assert "= 0x44: SW power cap, HW thermal slowdown" in out
    assert "nvmlDeviceGetCurrentClocksThrottleReasons: NVMLError 13" in out  # function not found
    assert f"nvmlDeviceGetProcessesUtilizationInfo (last 2 s): [(777, {int((now - 0.5) * US)}, 81, 0)]" in out
    assert "nvmlDeviceGetProcessUtilization (all kept): NVMLError 3" in out  # not supported
    assert "sm % by pid {777: 0.0}" in out  # the second read found no newer sample
    assert "throttle: SM 1.21 GHz of 1.98: SW power cap, HW thermal slowdown" in out


def test_first_read_on_another_clock_keeps_the_newest_two_seconds(install, collector):
    """A driver stamping samples with another clock (here: µs since boot) still gives figures."""
    boot = 5_000 * US
    install(FakeNvml([gb10(samples=[(4242, boot - 3 * US, 99), (4242, boot, 40), (5120, boot - 1 * US, 7)])]))
    got = sm_by_pid(collector.collect())
    assert got[4242] == 40.0 and got[5120] == 7.0


def test_first_read_drops_samples_older_than_two_seconds_on_the_wall_clock(install, collector):
    install(FakeNvml([gb10(samples=[(4242, at(-30), 99), (5120, at(-0.3), 12)])]))
    got = sm_by_pid(collector.collect())
    assert got[4242] == 0.0 and got[5120] == 12.0  # 4242 computed half a minute ago, not now


def test_once_json_has_the_sm_figures_and_the_reasons(tmp_path, install):
    """What `sparktop --once --json` prints (the snapshot's JSON) on a live machine with NVML."""
    proc, cg, _ = build_machine(tmp_path, 2)
    proc.add(5000, "python", cmdline=["python", "train.py"], rss_pages=1000, pss_kb=4000)
    now = time.time()
    fake = FakeNvml(
        [
            h100(
                compute=[(5000, 10 * GIB), (2001, 20 * GIB)],  # 2001: a process in container B
                sm_clock_mhz=1410,
                clocks_event_reasons=pynvml.nvmlClocksEventReasonSwPowerCap,
                samples=[(5000, int((now - 0.4) * US), 81), (2001, int((now - 0.2) * US), 9)],
            )
        ]
    )
    install(fake)
    collector = NvmlCollector(retry_interval=0)
    try:
        source = LiveSource(proc_root=proc.root, cgroup_root=cg.root, nvml=collector, docker=FakeDocker(META))
        snapshot = Session().ingest(source.sample())
    finally:
        collector.close()
    document = json.loads(snapshot.model_dump_json())
    (gpu,) = document["gpu"]["gpus"]
    assert {p["pid"]: p["sm_pct"] for p in gpu["processes"]} == {2001: 9.0, 5000: 81.0}
    assert gpu["clocks_event_reasons"] == 4 and gpu["clocks_event_reason_names"] == ["SW power cap"]
    assert gpu["sm_clock_max_mhz"] == 1980 and gpu["throttle_since"] is not None
    procs = {p["pid"]: p for p in document["processes"]}
    assert procs[5000]["gpu_sm_pct"] == 81.0
    ollama = next(c for c in document["containers"] if 2001 in c["pids"])
    assert ollama["gpu_sm_pct"] == 9.0
    text = summarize(snapshot)
    # a throttle this one reading found: how long it has lasted is unknown ("for 0 s" said it had just begun)
    assert "gpu0   slowed: SM 1.41 GHz of 1.98: SW power cap\n" in text
    assert "sm  81 %" in text
