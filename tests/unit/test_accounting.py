"""Accounting: the consumers plus `unattributed` add up to `used` exactly, with CPU and GPU sides apart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparktop.analysis.accounting import account
from sparktop.core.snapshot import (
    GIB,
    CgroupMemory,
    ContainerInfo,
    GpuProcess,
    GpuReport,
    GpuState,
    HostMemory,
    ProcessInfo,
)
from tests.fixtures.snapshots import host_memory


def memory(used: int, total: int = 120 * GIB) -> HostMemory:
    return host_memory(total=total, used=used)


def gpu(unified: bool, procs: dict[int, int]) -> GpuReport:
    return GpuReport(
        available=True,
        gpus=[
            GpuState(
                index=0,
                name="NVIDIA GB10" if unified else "NVIDIA H100",
                unified_memory=unified,
                processes=[GpuProcess(pid=pid, used_bytes=n) for pid, n in procs.items()],
            )
        ],
    )


def container(cid: str, working_set: int, pids: list[int]) -> ContainerInfo:
    return ContainerInfo(
        id=cid * 64,
        name=f"c-{cid}",
        memory=CgroupMemory(usage=working_set, working_set=working_set),
        pids=pids,
    )


def proc(pid: int, rss: int, container_id: str | None = None) -> ProcessInfo:
    return ProcessInfo(pid=pid, name=f"p{pid}", rss=rss, container_id=container_id, start_time=100.0)


def by_key(acct):
    return {c.key: c for c in acct.consumers}


def test_gb10_container_footprint_is_cgroup_plus_gpu_and_rest_is_unattributed() -> None:
    ollama = container("a", 2 * GIB, [10])
    procs = [proc(10, 1 * GIB, "a" * 64), proc(20, 3 * GIB)]
    acct = account(memory(60 * GIB), gpu(True, {10: 40 * GIB}), procs, [ollama])
    keys = by_key(acct)
    c = keys[f"container:{'a' * 64}"]
    assert (c.cpu_bytes, c.gpu_bytes) == (2 * GIB, 40 * GIB)
    host = keys["process:20:100"]
    assert host.cpu_bytes == 3 * GIB and host.gpu_bytes == 0
    assert acct.unattributed == 60 * GIB - 45 * GIB
    assert sum(x.total for x in acct.consumers) + acct.unattributed == acct.used


def test_discrete_gpu_memory_is_not_part_of_the_host_pool() -> None:
    acct = account(memory(10 * GIB), gpu(False, {20: 30 * GIB}), [proc(20, 1 * GIB)], [])
    assert by_key(acct)["process:20:100"].gpu_bytes == 0
    assert acct.gpu_outside_pool == 30 * GIB
    assert acct.unattributed == 9 * GIB


def test_gpu_memory_of_pids_not_in_proc_is_its_own_consumer() -> None:
    acct = account(memory(20 * GIB), gpu(True, {999: 5 * GIB}), [proc(20, 1 * GIB)], [])
    assert by_key(acct)["gpu-unexplained"].gpu_bytes == 5 * GIB


def test_top_host_processes_are_named_and_the_rest_grouped() -> None:
    procs = [proc(pid, pid * 1_000_000) for pid in range(1, 21)]
    acct = account(memory(100 * GIB), gpu(True, {}), procs, [], top_processes=5)
    named = [c for c in acct.consumers if c.kind == "process"]
    assert [c.label for c in named] == [f"p{pid} ({pid})" for pid in (20, 19, 18, 17, 16)]
    rest = by_key(acct)["host-other"]
    assert rest.cpu_bytes == sum(pid * 1_000_000 for pid in range(1, 16))
    assert rest.label == "other host processes (15)"


def test_overcount_is_taken_from_host_processes_before_containers() -> None:
    # RSS of host processes double-counts shared pages: 12 GiB of RSS inside 10 GiB used.
    shm = container("b", 4 * GIB, [30])
    procs = [proc(pid, 2 * GIB) for pid in range(1, 5)] + [proc(30, 1 * GIB, "b" * 64)]
    acct = account(memory(10 * GIB), gpu(True, {}), procs, [shm], top_processes=2)
    assert by_key(acct)[f"container:{'b' * 64}"].cpu_bytes == 4 * GIB
    assert acct.overcount_removed == 2 * GIB
    assert acct.unattributed == 0
    assert sum(c.total for c in acct.consumers) == acct.used


@given(
    used_gib=st.integers(min_value=0, max_value=120),
    rss=st.lists(st.integers(min_value=0, max_value=40 * GIB), max_size=30),
    sets=st.lists(st.integers(min_value=0, max_value=40 * GIB), max_size=5),
    gpu_mem=st.lists(st.integers(min_value=0, max_value=10 * GIB), max_size=5),
)
def test_parts_always_sum_to_used(used_gib: int, rss: list[int], sets: list[int], gpu_mem: list[int]) -> None:
    used = used_gib * GIB
    containers = [container(chr(ord("a") + i), ws, [1000 + i]) for i, ws in enumerate(sets)]
    procs = [proc(i + 1, n) for i, n in enumerate(rss)]
    gpus = {1000 + i: n for i, n in enumerate(gpu_mem)}
    acct = account(memory(used), gpu(True, gpus), procs, containers)
    assert all(c.cpu_bytes >= 0 for c in acct.consumers)
    total_gpu = sum(c.gpu_bytes for c in acct.consumers)
    if total_gpu <= used:
        assert sum(c.total for c in acct.consumers) + acct.unattributed == used
        assert acct.unattributed >= 0
