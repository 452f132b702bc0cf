"""The live snapshot with real containers: names and compose labels from the engine, PIDs and memory from
procfs and cgroups, and the accounting that puts the /dev/shm container's 64 MB on its consumer.

Expected values are read independently: PIDs from `docker top` and `State.Pid`, memory from the container's
own cgroup files, found through `/proc/<pid>/cgroup` (cgroup v1 memory controller or the v2 unified line),
so the checks hold for cgroupfs (`/docker/<id>`) and systemd (`/system.slice/docker-<id>.scope`) alike."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sparktop.collect.docker import DockerDiscovery
from sparktop.core.snapshot import Snapshot
from sparktop.session.session import Session
from sparktop.sources.live import LiveSource
from tests.fixtures.sources import NoGpu
from tests.integration.engine import SHM_BYTES, DockerEngine

pytestmark = pytest.mark.docker

CGROUP_ROOT = Path("/sys/fs/cgroup")
MB = 1_000_000


def cgroup_of(pid: int) -> tuple[int, str]:
    """(cgroup version, path) of the process's memory cgroup."""
    unified = None
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return 1, path
        if controllers == "":
            unified = path
    assert unified is not None
    return 2, unified


def cgroup_memory_files(pid: int) -> dict[str, int]:
    version, path = cgroup_of(pid)
    if version == 1 or not (CGROUP_ROOT / "cgroup.controllers").exists():
        base = CGROUP_ROOT / "memory" / path.lstrip("/")
        usage = int((base / "memory.usage_in_bytes").read_text())
    else:
        base = CGROUP_ROOT / path.lstrip("/")
        usage = int((base / "memory.current").read_text())
    stat = dict(line.split() for line in (base / "memory.stat").read_text().splitlines())
    shmem = int(stat.get("total_shmem", stat["shmem"]))
    return {"usage": usage, "shmem": shmem, "version": version, "path": path}


def wait_for_shm(pid: int, nbytes: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while cgroup_memory_files(pid)["shmem"] < nbytes:
        assert time.monotonic() < deadline, "the container did not fill /dev/shm"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def snapshot_and_truth(docker_engine: DockerEngine, lab: dict) -> tuple[Snapshot, dict]:
    for c in lab.values():
        c.reload()
    wait_for_shm(lab["shm"].attrs["State"]["Pid"], SHM_BYTES)
    source = LiveSource(
        proc_root=Path("/proc"),
        cgroup_root=CGROUP_ROOT,
        nvml=NoGpu(),
        docker=DockerDiscovery(base_url=docker_engine.socket_url),
    )
    try:
        snap = Session().ingest(source.sample())  # the session accounts it, as every view gets it
    finally:
        source.close()
    truth = {}
    for key, c in lab.items():
        top = docker_engine.client.api.top(c.id, ps_args="-eo pid")
        pid_col = top["Titles"].index("PID")
        truth[key] = {
            "pid": c.attrs["State"]["Pid"],
            "top_pids": sorted(int(row[pid_col]) for row in top["Processes"]),
            "memory": cgroup_memory_files(c.attrs["State"]["Pid"]),
        }
    return snap, truth


def test_containers_have_engine_names_and_compose_labels(snapshot_and_truth, lab, docker_engine) -> None:
    snap, _ = snapshot_and_truth
    assert snap.docker.available, snap.docker.reason
    by_id = {c.id: c for c in snap.containers}
    for key, c in lab.items():
        info = by_id[c.id]
        assert info.runtime == "docker"
        assert info.name == c.name
        assert info.label == c.name
        assert info.image == docker_engine.image
        assert info.status == "running"
        if key == "shm":
            assert info.compose_project is None and info.compose_service is None
        else:
            assert info.compose_project == "audio-lab"
            assert info.compose_service == key


def test_container_pids_match_the_engine(snapshot_and_truth, lab) -> None:
    snap, truth = snapshot_and_truth
    by_id = {c.id: c for c in snap.containers}
    for key, c in lab.items():
        info = by_id[c.id]
        assert truth[key]["pid"] in info.pids
        assert info.pids == truth[key]["top_pids"], key
        procs = {p.pid: p for p in snap.processes}
        for pid in info.pids:
            assert procs[pid].container_id == c.id


def test_container_cgroup_path(snapshot_and_truth, lab) -> None:
    snap, truth = snapshot_and_truth
    by_id = {c.id: c for c in snap.containers}
    for key, c in lab.items():
        mem = truth[key]["memory"]
        assert by_id[c.id].cgroup_path == mem["path"]
        if mem["version"] == 1:
            assert mem["path"] == f"/docker/{c.id}"  # cgroupfs driver on this machine


def test_shm_container_memory_matches_its_cgroup_files(snapshot_and_truth, lab) -> None:
    snap, truth = snapshot_and_truth
    info = {c.id: c for c in snap.containers}[lab["shm"].id]
    files = truth["shm"]["memory"]
    assert info.memory is not None
    assert info.memory.shmem == files["shmem"]
    assert info.memory.shmem >= SHM_BYTES
    # a sleeping container's usage barely moves between the snapshot and our read
    assert abs(info.memory.usage - files["usage"]) < 4 * MB
    assert info.memory.usage >= SHM_BYTES
    # shmem pages sit on the anon LRU lists, so they stay in the working set
    assert info.memory.working_set >= SHM_BYTES
    assert info.memory.limit is None  # no --memory given
    for key in ("whisper", "tts"):
        small = {c.id: c for c in snap.containers}[lab[key].id].memory
        assert small is not None and small.usage < 20 * MB


def test_accounting_puts_the_shm_bytes_on_the_container(snapshot_and_truth, lab) -> None:
    snap, _ = snapshot_and_truth
    acc = snap.accounting
    assert acc is not None, snap.errors
    consumers = {c.key: c for c in acc.consumers}
    shm = consumers[f"container:{lab['shm'].id}"]
    assert shm.kind == "container"
    assert shm.label == lab["shm"].name
    assert shm.cpu_bytes >= SHM_BYTES, (shm, acc.overcount_removed)
    assert shm.gpu_bytes == 0
    for key in ("whisper", "tts"):
        assert f"container:{lab[key].id}" in consumers
    assert sum(c.total for c in acc.consumers) + acc.unattributed == acc.used


def test_without_docker_containers_still_appear_by_id(docker_engine, lab) -> None:
    """No socket: the snapshot says why and still lists the containers from cgroups, with their memory."""
    missing = docker_engine.missing_socket_url()
    source = LiveSource(
        proc_root=Path("/proc"),
        cgroup_root=CGROUP_ROOT,
        nvml=NoGpu(),
        docker=DockerDiscovery(base_url=missing),
    )
    try:
        snap = source.sample()
    finally:
        source.close()
    assert not snap.docker.available
    assert (
        snap.docker.reason
        == f"Docker socket {missing[len('unix://') :]} not found — showing containers by ID"
    )
    by_id = {c.id: c for c in snap.containers}
    shm = by_id[lab["shm"].id]
    assert shm.name is None and shm.label == lab["shm"].id[:12]
    assert shm.memory is not None and shm.memory.shmem >= SHM_BYTES
    assert by_id[lab["whisper"].id].compose_project is None
