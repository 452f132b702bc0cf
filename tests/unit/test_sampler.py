"""LiveSource on fixture /proc and cgroup trees (v1 and v2), with NVML and Docker discovery given as small
objects of the real shape (the library boundary), and once on this machine for real."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

import sparktop.sources.live as sampler_mod
from sparktop.core.snapshot import DockerStatus, GpuProcess, GpuReport, GpuState, ServiceReport, Snapshot
from sparktop.session.session import Session
from sparktop.sources.live import LiveSource
from sparktop.sources.snapshot_source import SnapshotSource
from tests.fixtures.machine import META, A, B, C, K, build_machine
from tests.fixtures.sources import FakeDocker
from tests.fixtures.trees import (
    GIB,
    MIB,
    CgroupTree,
    ProcTree,
    meminfo_text,
    v1_cgroup,
    v2_cgroup,
)

PAGE = 4096


class FakeNvml:
    """What NvmlCollector.collect() gives on a GB10: unified memory, per-process memory."""

    def __init__(self, used_by_pid: dict[int, int | None], fail: bool = False) -> None:
        self.used_by_pid = used_by_pid
        self.fail = fail
        self.closed = False

    def collect(self) -> GpuReport:
        if self.fail:
            raise RuntimeError("NVML_ERROR_GPU_IS_LOST\nsecond line")
        return GpuReport(
            available=True,
            driver_version="580.95.05",
            gpus=[
                GpuState(
                    index=0,
                    name="NVIDIA GB10",
                    addressing_mode="ATS",
                    unified_memory=True,
                    compute_capability="12.1",
                    processes=[GpuProcess(pid=pid, used_bytes=n) for pid, n in self.used_by_pid.items()],
                    unsupported={"memory_total": "not supported on this device"},
                )
            ],
        )

    def close(self) -> None:
        self.closed = True


GPU = {1001: 6 * GIB, 2001: 20 * GIB, 3000: 4 * GIB, 9999: 2 * GIB, 1002: None}


def live(tmp_path: Path, version: int, **kw: Any) -> tuple[LiveSource, dict[str, str]]:
    proc, cg, paths = build_machine(tmp_path, version)
    kw.setdefault("nvml", FakeNvml(GPU))
    kw.setdefault("docker", FakeDocker(META))
    return LiveSource(proc_root=proc.root, cgroup_root=cg.root, **kw), paths


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> tuple[ProcTree, CgroupTree]:
    """One v2 machine for the tests that only read it (those that rewrite a file build their own)."""
    proc, cg, _ = build_machine(tmp_path_factory.mktemp("machine"), 2)
    return proc, cg


def read_only(machine: tuple[ProcTree, CgroupTree], **kw: Any) -> LiveSource:
    proc, cg = machine
    kw.setdefault("nvml", FakeNvml(GPU))
    kw.setdefault("docker", FakeDocker(META))
    return LiveSource(proc_root=proc.root, cgroup_root=cg.root, **kw)


def assert_adds_up(snap: Snapshot) -> None:
    """The session's accounting of a live snapshot (the source leaves it out) splits `used` exactly."""
    assert snap.accounting is None  # accounting is the session's job, done once
    acc = Session().ingest(snap).accounting
    assert acc is not None
    assert acc.used == snap.memory.used
    assert sum(c.total for c in acc.consumers) + acc.unattributed == acc.used


@pytest.mark.parametrize("version", [1, 2])
def test_snapshot_on_fixture_tree(tmp_path: Path, version: int) -> None:
    source, paths = live(tmp_path, version)
    assert isinstance(source, SnapshotSource) and source.name == "live"
    snap = source.sample()
    assert snap.errors == []
    assert snap.source == "live" and snap.hostname and abs(snap.timestamp - time.time()) < 60

    mem = snap.memory
    assert (mem.total, mem.available) == (125_000_000 * 1024, 60_000_000 * 1024)
    assert mem.used == mem.total - mem.available
    assert mem.pressure is not None and mem.pressure.some is not None and mem.pressure.some.avg10 == 2.5
    assert mem.cpu_percent is None and mem.cpu_count == 4  # first tick

    procs = {p.pid: p for p in snap.processes}
    assert len(procs) == 28
    assert procs[1001].container_id == procs[1002].container_id == A
    assert procs[2001].container_id == B and procs[2500].container_id == K
    assert procs[1].container_id is None and procs[900].container_id is None
    assert (procs[1001].gpu_bytes, procs[2001].gpu_bytes, procs[3000].gpu_bytes) == (
        6 * GIB,
        20 * GIB,
        4 * GIB,
    )
    assert procs[1].gpu_bytes is None and procs[1002].gpu_bytes is None  # NVML could not say for 1002
    assert procs[3000].pss == 900_000 * 1024

    containers = {c.id: c for c in snap.containers}
    assert set(containers) == {A, B, C, K}  # the exited container has no cgroup: not listed
    a, b, c, k = containers[A], containers[B], containers[C], containers[K]
    assert (a.name, a.image, a.compose_project, a.compose_service, a.runtime) == (
        "whisper",
        "stt:latest",
        "audio",
        "stt",
        "docker",
    )
    assert a.pids == [1001, 1002] and a.gpu_bytes == 6 * GIB
    assert a.cgroup_path == paths[A]  # the container's cgroup, not the /worker sub-cgroup of 1002
    assert a.memory is not None and a.memory.working_set == 3 * GIB - 512 * MIB and a.memory.peak == 4 * GIB
    assert b.memory is not None and b.memory.limit == 16 * GIB and b.gpu_bytes == 20 * GIB
    assert (c.pids, c.name, c.gpu_bytes, c.cgroup_path) == ([], None, 0, paths[C])
    assert c.label == C[:12] and c.memory is not None and c.memory.usage == GIB
    assert (k.runtime, k.pids, k.cgroup_path) == ("kubernetes", [2500], paths[K])
    assert snap.docker.available

    assert_adds_up(snap)
    acc = snap.accounting
    assert acc is not None
    by_key = {x.key: x for x in acc.consumers}
    assert by_key[f"container:{A}"].gpu_bytes == 6 * GIB
    assert by_key["gpu-unexplained"].gpu_bytes == 2 * GIB  # PID 9999: NVML knows it, /proc does not
    host = next(x for x in acc.consumers if x.key.startswith("process:3000:"))
    assert (host.cpu_bytes, host.gpu_bytes) == (900_000 * 1024, 4 * GIB)

    # everything survives the trip through JSON (what --once --json and record write)
    assert Snapshot.model_validate_json(snap.model_dump_json()) == snap


def test_second_tick_has_cpu_and_reuses_caches(tmp_path: Path) -> None:
    source, _ = live(tmp_path, 2)
    source.sample()
    stat = (source.proc_root / "stat").read_text().splitlines()
    cpu = stat[0].split()
    cpu[1] = str(int(cpu[1]) + 300)
    cpu[4] = str(int(cpu[4]) + 700)
    (source.proc_root / "stat").write_text("\n".join([" ".join(cpu), *stat[1:]]) + "\n")
    snap = source.sample()
    assert snap.memory.cpu_percent == pytest.approx(30.0)
    assert all(p.cpu_percent is not None for p in snap.processes)
    assert_adds_up(snap)


def test_container_paths_from_processes_beat_the_walk(tmp_path: Path) -> None:
    """v1 with the systemd driver: the process's memory line names the container's cgroup, which is not in
    a walked place; the container is still measured."""
    proc = ProcTree(tmp_path / "proc")
    cg = CgroupTree(tmp_path / "cgroup", 1)
    path = f"/custom.slice/docker-{A}.scope"
    cg.add(path, usage=5 * MIB)
    proc.add(10, "app", rss_pages=100, cgroup=v1_cgroup(path, only_memory=True, hybrid=True))
    snap = LiveSource(proc.root, cg.root, nvml=FakeNvml({}), docker=FakeDocker({})).sample()
    (c,) = snap.containers
    assert (c.id, c.cgroup_path, c.pids) == (A, path, [10])
    assert c.memory is not None and c.memory.usage == 5 * MIB
    assert_adds_up(snap)


def test_container_without_cgroup_files_counts_its_rss(tmp_path: Path) -> None:
    proc = ProcTree(tmp_path / "proc")
    cg = CgroupTree(tmp_path / "cgroup", 2)
    proc.add(10, "app", rss_pages=100, cgroup=v2_cgroup(f"/system.slice/docker-{A}.scope"))
    snap = LiveSource(proc.root, cg.root, nvml=FakeNvml({}), docker=FakeDocker({})).sample()
    (c,) = snap.containers
    assert c.memory is None and c.pids == [10]
    assert_adds_up(snap)
    acc = snap.accounting
    assert acc is not None
    assert next(x for x in acc.consumers if x.key == f"container:{A}").cpu_bytes == 100 * PAGE


def test_docker_unavailable_keeps_containers_by_id(machine: tuple[ProcTree, CgroupTree]) -> None:
    status = DockerStatus(available=False, reason="permission denied on /var/run/docker.sock")
    source = read_only(machine, docker=FakeDocker({}, status))
    snap = source.sample()
    assert snap.docker == status
    assert {c.id for c in snap.containers} == {A, B, C, K}
    assert all(c.name is None for c in snap.containers)
    assert snap.errors == []


def test_docker_and_nvml_raising_become_one_line_errors(machine: tuple[ProcTree, CgroupTree]) -> None:
    source = read_only(machine, nvml=FakeNvml({}, fail=True), docker=FakeDocker(META, fail=True))
    snap = source.sample()
    assert not snap.gpu.available and "GPU_IS_LOST" in (snap.gpu.reason or "")
    assert not snap.docker.available
    assert len(snap.errors) == 2 and all("\n" not in e for e in snap.errors)
    assert any(e.startswith("NVML:") for e in snap.errors) and any(
        e.startswith("Docker:") for e in snap.errors
    )
    assert {c.id for c in snap.containers} == {A, B, C, K}
    assert all(p.gpu_bytes is None for p in snap.processes)
    assert_adds_up(snap)


def test_missing_collector_modules_are_said_once(
    machine: tuple[ProcTree, CgroupTree], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sparktop.collect.nvml", None)  # import raises ImportError
    monkeypatch.setitem(sys.modules, "sparktop.collect.docker", None)
    proc, cg = machine
    source = LiveSource(proc.root, cg.root)
    for _ in range(2):
        snap = source.sample()
        assert not snap.gpu.available and "NVML" in (snap.gpu.reason or "")
        assert not snap.docker.available and "Docker" in (snap.docker.reason or "")
        assert snap.errors == []
        assert len(snap.containers) == 4
        assert_adds_up(snap)
    source.close()


def test_meminfo_failure_keeps_the_last_reading(tmp_path: Path) -> None:
    source, _ = live(tmp_path, 2)
    meminfo = source.proc_root / "meminfo"
    good = meminfo.read_text()
    meminfo.unlink()
    first = source.sample()
    assert first.memory.total == 0 and len(first.errors) == 1 and "meminfo" in first.errors[0]
    assert_adds_up(first)
    meminfo.write_text(good)
    ok = source.sample()
    assert ok.errors == [] and ok.memory.total == 125_000_000 * 1024
    meminfo.write_text("MemTotal: garbage\n")
    stale = source.sample()
    assert stale.memory.total == ok.memory.total and stale.memory.available == ok.memory.available
    assert len(stale.errors) == 1 and "previous reading" in stale.errors[0]
    assert_adds_up(stale)


def test_missing_psi_and_stat(tmp_path: Path) -> None:
    source, _ = live(tmp_path, 2)
    (source.proc_root / "pressure" / "memory").unlink()
    (source.proc_root / "stat").unlink()
    snap = source.sample()
    assert snap.memory.pressure is None and snap.memory.cpu_percent is None
    assert len(snap.errors) == 1 and "stat" in snap.errors[0]


def test_old_kernel_without_memavailable(tmp_path: Path) -> None:
    source, _ = live(tmp_path, 2)
    (source.proc_root / "meminfo").write_text(meminfo_text(available_kb=None))
    snap = source.sample()
    assert len(snap.errors) == 1 and "MemAvailable" in snap.errors[0]
    assert snap.memory.available > 0
    assert_adds_up(snap)


def test_no_cgroup_filesystem(tmp_path: Path, machine: tuple[ProcTree, CgroupTree]) -> None:
    proc, _ = machine
    snap = LiveSource(proc.root, tmp_path / "nothing", nvml=FakeNvml(GPU), docker=FakeDocker(META)).sample()
    assert {c.id for c in snap.containers} == {A, B, K}  # from processes only, without memory files
    assert all(c.memory is None for c in snap.containers)
    assert_adds_up(snap)


def test_close_closes_both(machine: tuple[ProcTree, CgroupTree]) -> None:
    nvml, docker = FakeNvml({}), FakeDocker({})
    source = read_only(machine, nvml=nvml, docker=docker)
    source.sample()
    source.close()
    assert nvml.closed and docker.closed
    source.close()  # twice is fine


def test_pss_top_n_is_a_parameter(machine: tuple[ProcTree, CgroupTree]) -> None:
    source = read_only(machine, pss_top_n=0)
    assert all(p.pss is None for p in source.sample().processes)


def test_pss_is_for_host_processes_and_cached_between_refreshes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [100.0]
    monkeypatch.setattr(sampler_mod.time, "monotonic", lambda: clock[0])
    source, _ = live(tmp_path, 2, pss_top_n=3, pss_interval=10.0, pss_steady_interval=10.0)
    rollup = source.proc_root / "2001" / "smaps_rollup"  # the biggest process, in a container
    rollup.write_text((source.proc_root / "3000" / "smaps_rollup").read_text())
    procs = {p.pid: p for p in source.sample().processes}
    assert procs[2001].pss is None  # its container's cgroup is what counts
    assert procs[3000].pss == 900_000 * 1024
    assert {p.pid for p in procs.values() if p.pss is not None} == {3000, 4019}  # dockerd (900): no file
    (source.proc_root / "3000" / "smaps_rollup").write_text("x\nPss: 5 kB\n")
    clock[0] += 5
    assert {p.pid: p for p in source.sample().processes}[3000].pss == 900_000 * 1024  # cached
    clock[0] += 6
    assert {p.pid: p for p in source.sample().processes}[3000].pss == 5 * 1024  # re-read


def test_a_steady_process_pss_is_read_again_slowly_and_a_growing_ones_soon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-reading smaps_rollup of every top process every 10 s was a fifth of a live dashboard's idle CPU:
    one whose RSS has not moved is read again after `pss_steady_interval` (60 s); one whose RSS moved (its
    PSS marked stale meanwhile) after `pss_interval` (10 s), as before."""
    clock = [100.0]
    monkeypatch.setattr(sampler_mod.time, "monotonic", lambda: clock[0])
    tree, cg, _ = build_machine(tmp_path, 2)
    source = LiveSource(
        proc_root=tree.root, cgroup_root=cg.root, nvml=FakeNvml(GPU), docker=FakeDocker(META), pss_top_n=3
    )
    rollup = source.proc_root / "3000" / "smaps_rollup"

    def pss_of_3000() -> tuple[int | None, bool]:
        proc = {p.pid: p for p in source.sample().processes}[3000]
        return proc.pss, proc.pss_stale

    assert pss_of_3000() == (900_000 * 1024, False)
    rollup.write_text("x\nPss: 5 kB\n")
    clock[0] += 11
    assert pss_of_3000() == (900_000 * 1024, False)  # steady RSS: the read of 11 s ago stands
    clock[0] += 50
    assert pss_of_3000() == (5 * 1024, False)  # 61 s: read again
    tree.set_rss(3000, tree.rss_pages(3000) * 3)  # it grew far past the slack
    rollup.write_text("x\nPss: 7 kB\n")
    clock[0] += 5
    assert pss_of_3000() == (5 * 1024, True)  # cached, said to be out of date
    clock[0] += 6
    assert pss_of_3000() == (7 * 1024, False)  # moved and 11 s old: read again


def test_a_pss_read_before_an_exec_is_not_the_new_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exec keeps the PID and the start time: the PSS read of the program before (cached for 10 s) is
    not shown for the one after, whose name and command line the same tick shows."""
    clock = [100.0]
    monkeypatch.setattr(sampler_mod.time, "monotonic", lambda: clock[0])
    tree, cg, _ = build_machine(tmp_path, 2)
    source = LiveSource(
        proc_root=tree.root, cgroup_root=cg.root, nvml=FakeNvml(GPU), docker=FakeDocker(META), pss_top_n=3
    )
    assert {p.pid: p for p in source.sample().processes}[3000].pss == 900_000 * 1024
    tree.exec(3000, "python3", ["python3", "serve.py"], start_stack=0x7FFE0000)
    (source.proc_root / "3000" / "smaps_rollup").write_text("x\nPss: 5 kB\n")
    clock[0] += 1
    after = {p.pid: p for p in source.sample().processes}[3000]
    assert (after.name, after.cmdline, after.pss, after.pss_stale) == (
        "python3",
        "python3 serve.py",
        5 * 1024,
        False,
    )


def test_pss_reads_stay_within_a_per_tick_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []

    def slow_read(pid: int, proc_root: object) -> int:
        read.append(pid)
        time.sleep(0.015)  # longer than the budget: one read per tick
        return pid * 1024

    monkeypatch.setattr(sampler_mod, "read_pss", slow_read)
    source, _ = live(tmp_path, 2, pss_top_n=3)
    first = {p.pid: p.pss for p in source.sample().processes if p.pss is not None}
    assert read == [3000] and first == {3000: 3000 * 1024}
    second = {p.pid: p.pss for p in source.sample().processes if p.pss is not None}
    assert read == [3000, 900] and second == {3000: 3000 * 1024, 900: 900 * 1024}
    source.sample()
    source.sample()
    assert read == [3000, 900, 4019]  # then nothing until the interval has passed


# --- this machine, for real ---------------------------------------------------------------------------------


def test_live_on_this_machine() -> None:
    child = subprocess.Popen(["sleep", "30"])
    source = LiveSource()
    try:
        time.sleep(0.05)
        snap = source.sample()
        before_check = {p.pid for p in snap.processes}
        alive = set(psutil.pids())
        # every process it returned exists, or has exited since (then it is gone from psutil's list too)
        for p in snap.processes:
            if p.pid in alive:
                try:
                    created = psutil.Process(p.pid).create_time()
                except psutil.NoSuchProcess:
                    continue
                assert p.start_time is not None and abs(created - p.start_time) < 2.0, p
            else:
                assert not os.path.exists(f"/proc/{p.pid}")
        # and it missed nothing that lived through the whole scan
        assert os.getpid() in before_check and child.pid in before_check and 1 in before_check
        procs = {p.pid: p for p in snap.processes}
        me = procs[os.getpid()]
        assert abs(me.rss - psutil.Process().memory_info().rss) < 64 * MIB
        kid = procs[child.pid]
        assert (kid.name, kid.cmdline, kid.ppid, kid.container_id) == (
            "sleep",
            "sleep 30",
            os.getpid(),
            procs[os.getpid()].container_id,
        )

        mem = snap.memory
        vm = psutil.virtual_memory()
        assert mem.total == vm.total
        assert mem.used == mem.total - mem.available
        assert abs(mem.available - vm.available) < max(256 * MIB, vm.total // 20)
        assert mem.cpu_count == psutil.cpu_count()
        assert_adds_up(snap)
        for c in snap.containers:
            assert set(c.pids) <= set(procs)
            assert len(c.id) == 64

        later = source.sample()
        assert later.memory.cpu_percent is not None and 0 <= later.memory.cpu_percent <= 100
        assert {p.pid: p for p in later.processes}[child.pid].cpu_percent is not None
        assert_adds_up(later)
        assert Snapshot.model_validate_json(later.model_dump_json()) == later
    finally:
        source.close()
        child.kill()
        child.wait()


class _CountingAddOn:
    """An add-on collector (collect/base.py) that reports one service per tick it is asked."""

    name = "counting"

    def __init__(self) -> None:
        self.ticks = 0

    def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
        self.ticks += 1
        return [ServiceReport(collector="counting", endpoint=f"tick {self.ticks}")]

    def close(self) -> None:
        pass


def test_quick_first_sample_leaves_discovery_and_add_ons_for_the_next(tmp_path: Path) -> None:
    # The dashboard's first frame waits for neither the Docker SDK nor the add-on collectors (their imports
    # and first reads): one quick sample by container id, without services; names and services from the next.
    add_on = _CountingAddOn()
    source, _ = live(tmp_path, 2, collectors=[add_on])
    source.defer_slow_parts()
    first = source.sample()
    assert first.docker == DockerStatus(available=False, reason=None)  # not known yet: nothing to say
    assert {c.id for c in first.containers} == {A, B, C, K}
    assert all(c.name is None for c in first.containers)
    assert first.gpu.available and first.gpu.gpus  # NVML is in the quick sample
    assert first.services == [] and add_on.ticks == 0
    second = source.sample()
    assert second.docker.available
    assert {c.id: c.name for c in second.containers}[A] == "whisper"
    assert [s.endpoint for s in second.services] == ["tick 1"]


def test_foreign_engine_names_the_engine_a_stop_cannot_reach() -> None:
    from sparktop.collect.control import foreign_engine
    from sparktop.core.snapshot import ContainerInfo, DockerStatus

    up = DockerStatus(available=True)
    down = DockerStatus(available=False, reason="no socket")
    assert foreign_engine(ContainerInfo(id="a" * 64, runtime="podman"), up) == "podman"
    assert foreign_engine(ContainerInfo(id="a" * 64, runtime="containerd"), down) == "containerd"
    assert foreign_engine(ContainerInfo(id="a" * 64, name="web"), up) is None
    # Unnamed while the engine answers: not its container. Unnamed while it does not: nobody can tell.
    assert foreign_engine(ContainerInfo(id="a" * 64), up) == "another Docker engine"
    assert foreign_engine(ContainerInfo(id="a" * 64), down) is None


# Each block written once, in place (bytearray(b"x" * n) made the bytes, then copied them: 1 GiB at the peak).
GROWER = """
import sys
held = [bytearray(b"x") * (50 * 1024 * 1024)]
print("ready", flush=True)
sys.stdin.readline()
held.append(bytearray(b"y") * (100 * 1024 * 1024))
print("grown", flush=True)
sys.stdin.readline()
"""


def test_a_process_that_grew_since_its_pss_was_read_counts_its_fresh_rss() -> None:
    """A real child grows from 50 to 150 MiB between two ticks while its PSS is cached for 60 s: the 50 MiB
    PSS is marked stale and the accounting counts the fresh RSS (a 1.2 GiB process showed 361 MiB). It moves
    MemAvailable by 150 MiB: the guard tests, whose floors are set from it, wait for it (and it for them).
    (It grew from 200 to 600 MiB: touching those pages was most of the test's CPU.)"""
    import subprocess
    import sys

    from sparktop.core.snapshot import process_key
    from tests.fixtures.memavailable import memavailable_turn

    with memavailable_turn():
        child = subprocess.Popen(
            [sys.executable, "-c", GROWER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert child.stdout.readline().strip() == "ready"
            source = LiveSource(nvml=FakeNvml({}), docker=FakeDocker({}), pss_top_n=40, pss_interval=60.0)
            for _ in range(60):  # a few PSS reads per tick: until the child's is read
                first = next(p for p in source.sample().processes if p.pid == child.pid)
                if first.pss is not None:
                    break
            assert first.pss is not None and not first.pss_stale and first.pss >= 48 * 1024**2
            child.stdin.write("\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "grown"
            snap = Session().ingest(source.sample())  # the session does the accounting
            proc = next(p for p in snap.processes if p.pid == child.pid)
            assert proc.pss == first.pss and proc.pss_stale  # cached, and said to be out of date
            assert proc.cpu_bytes == proc.rss >= 148 * 1024**2
            consumer = next(c for c in snap.accounting.consumers if c.key == process_key(proc))
            assert consumer.cpu_bytes >= 148 * 1024**2
        finally:
            child.kill()
            child.wait()
