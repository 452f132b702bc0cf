"""Containers from cgroups: every `/proc/PID/cgroup` shape, and v1/v2 memory files on fixture trees."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktop.collect.cgroups import CgroupFS, CgroupMatch, container_from_cgroup, match_cgroup
from sparktop.core.snapshot import CgroupMemory
from tests.fixtures.trees import (
    GIB,
    MIB,
    V1_UNLIMITED_4K,
    V1_UNLIMITED_64K,
    CgroupTree,
    cid,
    pod_uid,
    psi_text,
    v1_cgroup,
    v2_cgroup,
)

A, B = cid("a"), cid("b")
UID = pod_uid("pod")
UID_ = UID.replace("-", "_")  # systemd slice names use underscores
ROOTLESS = "/user.slice/user-1000.slice/user@1000.service"
KUBE_V2 = "/kubepods.slice/kubepods-burstable.slice"

# (cgroup file content, expected (runtime, id) or None)
SHAPES = [
    # Docker, cgroupfs driver, cgroup v1: every controller line names the container
    pytest.param(v1_cgroup(f"/docker/{A}"), ("docker", A), id="v1-docker-all-controllers"),
    pytest.param(v1_cgroup(f"/docker/{A}", only_memory=True), ("docker", A), id="v1-docker-memory-line-only"),
    pytest.param(v1_cgroup(f"/docker/{A}", hybrid=True), ("docker", A), id="v1-hybrid"),
    # Docker, systemd driver (v2; Ubuntu 24.04, the Spark)
    pytest.param(v2_cgroup(f"/system.slice/docker-{A}.scope"), ("docker", A), id="v2-systemd"),
    pytest.param(
        v2_cgroup(f"/system.slice/docker-{A}.scope/init.scope"), ("docker", A), id="v2-systemd-inside"
    ),
    pytest.param(v1_cgroup(f"/system.slice/docker-{A}.scope"), ("docker", A), id="v1-systemd-driver"),
    pytest.param(v2_cgroup(f"/docker/{A}"), ("docker", A), id="v2-cgroupfs-driver"),
    # rootless Docker
    pytest.param(v2_cgroup(f"{ROOTLESS}/app.slice/docker-{A}.scope"), ("docker", A), id="rootless-docker"),
    pytest.param(
        v2_cgroup(f"{ROOTLESS}/app.slice/docker.service/docker/{A}"),
        ("docker", A),
        id="rootless-docker-service-nesting",
    ),
    pytest.param(
        v2_cgroup(f"{ROOTLESS}/app.slice/docker.service/docker-{A}.scope"),
        ("docker", A),
        id="rootless-docker-service-scope",
    ),
    # docker-in-docker: the outer container (the one the host's engine knows)
    pytest.param(v1_cgroup(f"/docker/{A}/docker/{B}"), ("docker", A), id="dind-v1"),
    pytest.param(v2_cgroup(f"/system.slice/docker-{A}.scope/docker/{B}"), ("docker", A), id="dind-v2"),
    # Podman
    pytest.param(v2_cgroup(f"/machine.slice/libpod-{A}.scope"), ("podman", A), id="podman-root"),
    pytest.param(v2_cgroup(f"/machine.slice/libpod-{A}.scope/container"), ("podman", A), id="podman-split"),
    pytest.param(v2_cgroup(f"{ROOTLESS}/user.slice/libpod-{A}.scope"), ("podman", A), id="podman-rootless"),
    pytest.param(v1_cgroup(f"/libpod_parent/libpod-{A}"), ("podman", A), id="podman-cgroupfs"),
    pytest.param(v2_cgroup(f"/machine.slice/libpod-conmon-{A}.scope"), None, id="podman-conmon-is-not"),
    # containerd without Kubernetes
    pytest.param(v2_cgroup(f"/system.slice/cri-containerd-{A}.scope"), ("containerd", A), id="containerd"),
    pytest.param(v2_cgroup(f"/system.slice/nerdctl-{A}.scope"), ("containerd", A), id="nerdctl"),
    # Kubernetes
    pytest.param(v1_cgroup(f"/kubepods/burstable/pod{UID}/{A}"), ("kubernetes", A), id="k8s-v1-burstable"),
    pytest.param(v1_cgroup(f"/kubepods/besteffort/pod{UID}/{A}"), ("kubernetes", A), id="k8s-v1-besteffort"),
    pytest.param(v1_cgroup(f"/kubepods/pod{UID}/{A}"), ("kubernetes", A), id="k8s-v1-guaranteed"),
    pytest.param(
        v2_cgroup(f"{KUBE_V2}/kubepods-burstable-pod{UID_}.slice/cri-containerd-{A}.scope"),
        ("kubernetes", A),
        id="k8s-v2-containerd",
    ),
    pytest.param(
        v2_cgroup(f"{KUBE_V2}/kubepods-burstable-pod{UID_}.slice/crio-{A}.scope"),
        ("kubernetes", A),
        id="k8s-v2-crio",
    ),
    pytest.param(
        v2_cgroup(f"/kubepods.slice/kubepods-pod{UID_}.slice/cri-containerd-{A}.scope"),
        ("kubernetes", A),
        id="k8s-v2-guaranteed",
    ),
    pytest.param(
        v2_cgroup(f"{KUBE_V2}/kubepods-burstable-pod{UID_}.slice/docker-{A}.scope"),
        ("kubernetes", A),
        id="k8s-v2-dockershim",
    ),
    pytest.param(v2_cgroup(f"/kubepods/burstable/pod{UID}/{A}"), ("kubernetes", A), id="k8s-v2-cgroupfs"),
    pytest.param(
        v2_cgroup(f"{KUBE_V2}/kubepods-burstable-pod{UID_}.slice/crio-conmon-{A}.scope"),
        None,
        id="k8s-crio-conmon-is-not",
    ),
    pytest.param(v2_cgroup(f"{KUBE_V2}/kubepods-burstable-pod{UID_}.slice"), None, id="k8s-pod-slice-is-not"),
    # host processes, services, mounts, init
    pytest.param(v2_cgroup("/"), None, id="root"),
    pytest.param(v2_cgroup("/init.scope"), None, id="init-scope"),
    pytest.param(v2_cgroup("/user.slice/user-1000.slice/session-3.scope"), None, id="ssh-session"),
    pytest.param(v2_cgroup("/system.slice/docker.service"), None, id="dockerd-itself"),
    pytest.param(v2_cgroup("/system.slice/containerd.service"), None, id="containerd-itself"),
    pytest.param(v2_cgroup(f"/system.slice/docker-{A}.mount"), None, id="mount-unit"),
    pytest.param(
        v2_cgroup(f"/system.slice/var-lib-docker-containers-{A}-mounts-shm.mount"), None, id="shm-mount-unit"
    ),
    pytest.param(
        v2_cgroup(f"/system.slice/run-docker-runtime\\x2drunc-moby-{A}.scope"),
        None,
        id="runc-transient-scope",
    ),
    pytest.param(v1_cgroup("/"), None, id="v1-host"),
    pytest.param(
        v1_cgroup("/process_api/8224b6946a37b2de5eab7b7caedc27cb", only_memory=True),
        None,
        id="32-hex-is-not-a-container",
    ),
    pytest.param(v1_cgroup("/docker/abc123def456"), None, id="short-id-is-not"),
    pytest.param(v2_cgroup(f"/docker/{A.upper()}"), None, id="uppercase-is-not"),
    pytest.param(v2_cgroup(f"/{A}"), None, id="bare-id-at-root-is-not"),
    pytest.param("", None, id="empty"),
    pytest.param("0::", None, id="no-path"),
    pytest.param(f"garbage /docker/{A}\n", None, id="no-colons"),
]


@pytest.mark.parametrize("text, expected", SHAPES)
def test_container_from_cgroup(text: str, expected: tuple[str, str] | None) -> None:
    assert container_from_cgroup(text) == expected


def test_match_gives_the_container_cgroup_of_each_hierarchy() -> None:
    m = match_cgroup(v2_cgroup(f"/system.slice/docker-{A}.scope/init.scope"))
    assert m == CgroupMatch("docker", A, unified_path=f"/system.slice/docker-{A}.scope", memory_path=None)
    m = match_cgroup(v1_cgroup(f"/docker/{A}/docker/{B}", hybrid=True))
    assert m == CgroupMatch("docker", A, unified_path=None, memory_path=f"/docker/{A}")
    # systemd driver on v1 with the unified line pointing at the same scope (hybrid systemd)
    text = f"4:memory:/system.slice/docker-{A}.scope\n1:name=systemd:/system.slice/docker-{A}.scope\n"
    text += f"0::/system.slice/docker-{A}.scope\n"
    m = match_cgroup(text)
    assert m is not None
    assert m.memory_path == m.unified_path == f"/system.slice/docker-{A}.scope"


def test_match_ignores_lines_naming_another_container() -> None:
    text = f"4:memory:/docker/{A}\n0::/system.slice/docker-{B}.scope\n"
    assert match_cgroup(text) == CgroupMatch("docker", A, None, f"/docker/{A}")


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=80),
            st.builds(
                lambda h, c, segs: f"{h}:{c}:/" + "/".join(segs),
                st.sampled_from(["0", "4", "12", "x"]),
                st.sampled_from(["", "memory", "cpu,cpuacct", "name=systemd"]),
                st.lists(
                    st.one_of(
                        st.sampled_from(
                            [
                                "docker",
                                "system.slice",
                                "kubepods",
                                "kubepods.slice",
                                "pod1",
                                f"docker-{A}.scope",
                                A,
                                f"libpod-{B}",
                                f"crio-{A}.scope",
                                "..",
                                "",
                            ]
                        ),
                        st.text(max_size=10),
                    ),
                    max_size=6,
                ),
            ),
        ),
        max_size=6,
    )
)
def test_match_never_raises_and_ids_are_full(lines: list[str]) -> None:
    text = "\n".join(lines)
    m = match_cgroup(text)
    if m is not None:
        assert re.fullmatch(r"[0-9a-f]{64}", m.container_id)
        assert m.container_id in text
        assert m.runtime in ("docker", "podman", "kubernetes", "containerd")
        for path in (m.unified_path, m.memory_path):
            assert path is None or path.endswith(m.container_id) or path.endswith(m.container_id + ".scope")


# --- the hierarchy ------------------------------------------------------------------------------------------


def test_version_detection(tmp_path: Path) -> None:
    assert CgroupFS(CgroupTree(tmp_path / "v2", 2).root).version == 2
    assert CgroupFS(CgroupTree(tmp_path / "v1", 1).root).version == 1  # hybrid: unified/ has no memory
    none = CgroupFS(tmp_path / "nothing")
    assert none.version is None
    assert none.memory("/docker/" + A) is None
    assert none.container_cgroups() == {}


def test_this_machine_version() -> None:
    fs = CgroupFS()
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        assert fs.version == 2
    elif Path("/sys/fs/cgroup/memory").is_dir():
        assert fs.version == 1


def test_v2_memory(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, 2)
    path = f"/system.slice/docker-{A}.scope"
    tree.add(
        path,
        usage=900 * MIB,
        anon=500 * MIB,
        file=380 * MIB,
        shmem=200 * MIB,
        inactive_file=150 * MIB,
        limit=2 * GIB,
        peak=1000 * MIB,
        oom_kills=3,
        psi=psi_text((4.5, 1.0, 0.2), (1.0, 0.5, 0.1), 99, 9),
    )
    mem = CgroupFS(tmp_path).memory(path)
    assert mem is not None
    assert mem.model_dump(exclude={"pressure"}) == CgroupMemory(
        usage=900 * MIB,
        working_set=750 * MIB,
        anon=500 * MIB,
        file=380 * MIB,
        shmem=200 * MIB,
        inactive_file=150 * MIB,
        limit=2 * GIB,
        peak=1000 * MIB,
        oom_kills=3,
    ).model_dump(exclude={"pressure"})
    assert mem.pressure is not None and mem.pressure.some is not None and mem.pressure.some.avg10 == 4.5
    assert mem.pressure.full is not None and mem.pressure.full.total_us == 9


def test_v2_max_means_no_limit_and_old_kernel_files_missing(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, 2)
    path = f"/system.slice/docker-{A}.scope"
    d = tree.add(path, usage=100, limit=None, peak=None, oom_kills=None)
    (d / "memory.pressure").unlink()
    mem = CgroupFS(tmp_path).memory(path)
    assert mem is not None
    assert (mem.limit, mem.peak, mem.oom_kills, mem.pressure) == (None, None, None, None)


def test_v2_missing_stat_means_working_set_is_usage(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, 2)
    path = f"/docker/{A}"
    d = tree.add(path, usage=5000, inactive_file=1000)
    (d / "memory.stat").unlink()
    mem = CgroupFS(tmp_path).memory(path)
    assert mem is not None
    assert (mem.usage, mem.working_set, mem.anon, mem.file, mem.inactive_file) == (
        5000,
        5000,
        None,
        None,
        None,
    )


def test_working_set_is_clamped_at_zero(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, 2)
    tree.add("/docker/" + A, usage=1000, inactive_file=5000)
    mem = CgroupFS(tmp_path).memory("/docker/" + A)
    assert mem is not None and mem.working_set == 0


def test_malformed_files_leave_fields_empty(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, 2)
    path = "/docker/" + A
    d = tree.add(path, usage=1000, stat="anon lots\nfile\ninactive_file -3\nshmem 7")
    (d / "memory.max").write_text("garbage\n")
    (d / "memory.peak").write_text("")
    (d / "memory.events").write_text("oom_kill\n")
    (d / "memory.pressure").write_text("some avg10=1\n")
    mem = CgroupFS(tmp_path).memory(path)
    assert mem is not None
    assert (mem.anon, mem.file, mem.inactive_file, mem.shmem) == (None, None, None, 7)
    assert (mem.limit, mem.peak, mem.oom_kills, mem.pressure, mem.working_set) == (
        None,
        None,
        None,
        None,
        1000,
    )
    (d / "memory.current").write_text("not a number\n")
    assert CgroupFS(tmp_path).memory(path) is None


def test_missing_cgroup_and_bad_paths(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, 2)
    tree.add("/docker/" + A)
    fs = CgroupFS(tmp_path)
    assert fs.memory("/docker/" + B) is None
    assert fs.memory("/") is None  # the root cgroup has no memory.current
    assert fs.memory("docker/" + A) is None  # not absolute
    assert fs.memory("/../../docker/" + A) is None  # outside our cgroup namespace
    assert fs.memory("/docker/" + A + "/") is not None


def test_v1_memory_prefers_hierarchical_totals(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, 1)
    path = f"/docker/{A}"
    tree.add(
        path,
        usage=700 * MIB,
        anon=400 * MIB,
        file=300 * MIB,
        shmem=200 * MIB,
        inactive_file=50 * MIB,
        limit=1 * GIB,
        peak=800 * MIB,
        oom_kills=2,
    )
    # make the local (non-total) values differ, to see which ones are read
    stat = (tree.memory_root / path.strip("/") / "memory.stat").read_text()
    stat = stat.replace(f"\nrss {400 * MIB}\n", "\nrss 1\n").replace(
        f"\ninactive_file {50 * MIB}\n", "\ninactive_file 1\n"
    )
    (tree.memory_root / path.strip("/") / "memory.stat").write_text(stat)
    mem = CgroupFS(tmp_path).memory(path)
    assert mem == CgroupMemory(
        usage=700 * MIB,
        working_set=650 * MIB,
        anon=400 * MIB,
        file=300 * MIB,
        shmem=200 * MIB,
        inactive_file=50 * MIB,
        limit=1 * GIB,
        peak=800 * MIB,
        oom_kills=2,
        pressure=None,
    )


def test_v1_local_values_when_no_totals(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, 1)
    tree.add("/docker/" + A, usage=1000, anon=600, file=400, inactive_file=100, v1_total=False)
    mem = CgroupFS(tmp_path).memory("/docker/" + A)
    assert mem is not None
    assert (mem.anon, mem.file, mem.inactive_file, mem.working_set) == (600, 400, 100, 900)


@pytest.mark.parametrize("unlimited", [V1_UNLIMITED_4K, V1_UNLIMITED_64K])
def test_v1_unlimited_and_old_kernel(tmp_path: Path, unlimited: int) -> None:
    tree = CgroupTree(tmp_path, 1)
    d = tree.add("/docker/" + A, usage=1000, limit=unlimited, peak=None, oom_kills=None)
    mem = CgroupFS(tmp_path).memory("/docker/" + A)
    assert mem is not None
    assert (mem.limit, mem.peak, mem.oom_kills) == (None, None, None)
    (d / "memory.oom_control").unlink()
    assert CgroupFS(tmp_path).memory("/docker/" + A) is not None


def test_this_machine_memory_cgroup_of_self() -> None:
    """Our own cgroup read with the real files (whatever the version), when it has memory accounting."""
    fs = CgroupFS()
    text = Path("/proc/self/cgroup").read_text()
    path = None
    for line in text.splitlines():
        hier, ctrl, p = line.split(":", 2)
        unified = fs.version == 2 and hier == "0"
        if unified or (fs.version == 1 and "memory" in ctrl.split(",")):
            path = p
    if path is None or path == "/":
        return
    mem = fs.memory(path)
    assert mem is not None and mem.usage > 0 and 0 <= mem.working_set <= mem.usage


# --- finding container cgroups ------------------------------------------------------------------------------


def _ids(n: int) -> list[str]:
    return [cid(f"c{i}") for i in range(n)]


def test_container_cgroups_v2(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, 2)
    c = _ids(9)
    tree.add(f"/system.slice/docker-{c[0]}.scope")
    tree.add(f"/system.slice/docker-{c[1]}.scope")
    tree.add(f"/system.slice/docker-{c[1]}.scope/init.scope")  # a sub-cgroup, not another container
    tree.add(f"/machine.slice/libpod-{c[2]}.scope")
    tree.add(f"/docker/{c[3]}")
    tree.add(f"{ROOTLESS}/app.slice/docker-{c[4]}.scope")
    tree.add(f"{KUBE_V2}/kubepods-burstable-pod{UID_}.slice/cri-containerd-{c[5]}.scope")
    tree.add(f"/kubepods.slice/kubepods-pod{UID_}.slice/crio-{c[6]}.scope")
    tree.add(f"{ROOTLESS}/user.slice/libpod-{c[7]}.scope")
    tree.add(f"/system.slice/nerdctl-{c[8]}.scope")
    # not containers
    tree.add_dir("/system.slice/docker.service")
    tree.add_dir(f"/system.slice/docker-{cid('mnt')}.mount")
    tree.add_dir(f"/machine.slice/libpod-conmon-{c[2]}.scope")
    tree.add_dir(f"{KUBE_V2}/kubepods-burstable-pod{UID_}.slice/crio-conmon-{c[5]}.scope")
    tree.add_dir("/init.scope")
    tree.add_dir(f"/somewhere/else/docker-{cid('hidden')}.scope")  # not a known place: not walked
    (tmp_path / "system.slice" / f"docker-{cid('file')}.scope").write_text("")  # a file, not a cgroup
    found = CgroupFS(tmp_path).container_cgroups()
    assert found == {
        c[0]: ("docker", f"/system.slice/docker-{c[0]}.scope"),
        c[1]: ("docker", f"/system.slice/docker-{c[1]}.scope"),
        c[2]: ("podman", f"/machine.slice/libpod-{c[2]}.scope"),
        c[3]: ("docker", f"/docker/{c[3]}"),
        c[4]: ("docker", f"{ROOTLESS}/app.slice/docker-{c[4]}.scope"),
        c[5]: ("kubernetes", f"{KUBE_V2}/kubepods-burstable-pod{UID_}.slice/cri-containerd-{c[5]}.scope"),
        c[6]: ("kubernetes", f"/kubepods.slice/kubepods-pod{UID_}.slice/crio-{c[6]}.scope"),
        c[7]: ("podman", f"{ROOTLESS}/user.slice/libpod-{c[7]}.scope"),
        c[8]: ("containerd", f"/system.slice/nerdctl-{c[8]}.scope"),
    }


def test_container_cgroups_v1(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, 1)
    c = _ids(5)
    tree.add(f"/docker/{c[0]}")
    tree.add(f"/docker/{c[1]}")
    tree.add(f"/docker/{c[1]}/docker/{cid('inner')}")  # docker-in-docker: the outer one only
    tree.add(f"/kubepods/burstable/pod{UID}/{c[2]}")
    tree.add(f"/kubepods/pod{pod_uid('g')}/{c[3]}")
    tree.add(f"/system.slice/docker-{c[4]}.scope")
    tree.add_dir(f"/kubepods/burstable/pod{UID}")
    tree.add_dir("/process_api/8224b6946a37b2de5eab7b7caedc27cb")
    # the other v1 hierarchies are not looked at
    (tmp_path / "cpu_cpuacct" / "docker" / cid("cpu-only")).mkdir(parents=True)
    found = CgroupFS(tmp_path).container_cgroups()
    assert found == {
        c[0]: ("docker", f"/docker/{c[0]}"),
        c[1]: ("docker", f"/docker/{c[1]}"),
        c[2]: ("kubernetes", f"/kubepods/burstable/pod{UID}/{c[2]}"),
        c[3]: ("kubernetes", f"/kubepods/pod{pod_uid('g')}/{c[3]}"),
        c[4]: ("docker", f"/system.slice/docker-{c[4]}.scope"),
    }
    fs = CgroupFS(tmp_path)
    for _runtime, path in found.values():
        assert fs.memory(path) is not None


def test_container_memory_for_20_is_cheap(tmp_path: Path) -> None:
    """The per-tick cost: 20 containers' memory files (the goal on real cgroupfs is < 2 ms; this is a loose
    guard against an accidental slow path such as walking the tree)."""
    tree = CgroupTree(tmp_path, 2)
    paths = [f"/system.slice/docker-{c}.scope" for c in _ids(20)]
    for p in paths:
        tree.add(p, usage=GIB, inactive_file=MIB, peak=2 * GIB)
    fs = CgroupFS(tmp_path)
    best = float("inf")
    for _ in range(5):
        start = time.thread_time()  # CPU time (the reads' system time included): the load does not stretch it
        for p in paths:
            assert fs.memory(p) is not None
        best = min(best, time.thread_time() - start)
    assert best < 0.02
