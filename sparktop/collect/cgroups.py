"""Containers from cgroups: which container a process is in (`/proc/PID/cgroup`) and what its cgroup's own
memory files say, for cgroup v1 and v2 alike.

Container memory is read straight from the cgroup files every tick (a handful of small reads per container);
the Docker stats API costs a second or more per container and is never used here. CUDA allocations on GB10 do
not show in these files: the GPU side comes from NVML.

Path shapes recognised (the container is the outermost cgroup naming one):
- Docker, cgroupfs driver (v1, and v2 without systemd): `/docker/<id>`; docker-in-docker
  `/docker/<id>/docker/<id2>` (the outer container)
- systemd driver: `/system.slice/docker-<id>.scope`; rootless `/user.slice/user-1000.slice/user@1000.service/
  app.slice/docker-<id>.scope`
- Podman: `/machine.slice/libpod-<id>.scope` (root), `.../user@1000.service/user.slice/libpod-<id>.scope`
  (rootless), `/libpod_parent/libpod-<id>` (cgroupfs driver); conmon scopes are not containers
- containerd without Kubernetes: `nerdctl-<id>.scope`, `cri-containerd-<id>.scope`
- Kubernetes: `/kubepods/burstable/pod<uid>/<id>`, `/kubepods/pod<uid>/<id>` and `/kubepods.slice/
  kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope` (or `crio-<id>.scope`,
  `docker-<id>.scope`): runtime "kubernetes"
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path

from sparktop.collect.procfs import read_pressure, read_text
from sparktop.core.snapshot import CgroupMemory, ContainerRuntime

__all__ = ["CgroupFS", "CgroupMatch", "container_from_cgroup", "match_cgroup", "match_cgroup_path"]

_HEX64 = re.compile(r"[0-9a-f]{64}")
# A unit or cgroup named after the container; ".mount" units and "*-conmon-<id>" scopes do not match.
_SCOPE = re.compile(r"(docker|libpod|cri-containerd|crio|nerdctl)-([0-9a-f]{64})(?:\.scope)?")
_SCOPE_RUNTIME: dict[str, ContainerRuntime] = {
    "docker": "docker",
    "libpod": "podman",
    "cri-containerd": "containerd",
    "nerdctl": "containerd",
    "crio": "kubernetes",
}
# Parents whose bare 64-hex children are containers (cgroupfs drivers).
_HEX_PARENT_RUNTIME: dict[str, ContainerRuntime] = {
    "docker": "docker",
    "moby": "docker",
    "libpod_parent": "podman",
}

# v1 memory.limit_in_bytes for "no limit" is PAGE_COUNTER_MAX pages (0x7FFFFFFFFFFFF000 with 4 KiB pages,
# less with 64 KiB pages): anything this big means unlimited.
_V1_UNLIMITED = 1 << 62


def match_cgroup_path(path: str) -> tuple[ContainerRuntime, str, str] | None:
    """(runtime, container id, the container's own cgroup path) for one cgroup path, or None."""
    segments = path.split("/")
    kube = False
    for i, seg in enumerate(segments):
        if not seg:
            continue
        if seg.startswith("kubepods"):
            kube = True
            continue
        runtime: ContainerRuntime | None = None
        m = _SCOPE.fullmatch(seg)
        if m:
            runtime, cid = _SCOPE_RUNTIME[m.group(1)], m.group(2)
        elif _HEX64.fullmatch(seg):
            parent = segments[i - 1] if i > 0 else ""
            runtime = "kubernetes" if kube and parent.startswith("pod") else _HEX_PARENT_RUNTIME.get(parent)
            cid = seg
        if runtime is not None:
            if kube:
                runtime = "kubernetes"
            return runtime, cid, "/".join(segments[: i + 1]) or "/"
    return None


@dataclass(frozen=True, slots=True)
class CgroupMatch:
    """What one `/proc/PID/cgroup` says about the process's container.

    `unified_path` is the container's cgroup from the v2 (`0::`) line, `memory_path` from the v1 memory
    controller line; either is None when that line does not name the container (or is absent)."""

    runtime: ContainerRuntime
    container_id: str
    unified_path: str | None = None
    memory_path: str | None = None


def match_cgroup(text: str) -> CgroupMatch | None:
    """Parse the content of `/proc/PID/cgroup`. The first line naming a container decides which container;
    the memory and unified lines give its cgroup paths. Never raises."""
    runtime = cid = unified = memory = None
    for line in text.splitlines():
        hier, sep1, rest = line.partition(":")
        controllers, sep2, path = rest.partition(":")
        if not (sep1 and sep2):
            continue
        m = match_cgroup_path(path)
        if m is None:
            continue
        if cid is None:
            runtime, cid = m[0], m[1]
        elif m[1] != cid:
            continue
        if hier == "0" and controllers == "":
            unified = unified or m[2]
        elif "memory" in controllers.split(","):
            memory = memory or m[2]
    if runtime is None or cid is None:
        return None
    return CgroupMatch(runtime, cid, unified, memory)


def container_from_cgroup(text: str) -> tuple[ContainerRuntime, str] | None:
    """(runtime, container id) from the content of `/proc/PID/cgroup`, or None for a host process."""
    m = match_cgroup(text)
    return (m.runtime, m.container_id) if m else None


def _read(path: str, beneath: str) -> str | None:
    try:
        return read_text(path, beneath=beneath)
    except OSError:  # gone, unreadable, or refused (not a regular file, a link out of the tree)
        return None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def _field(text: str | None, key: str) -> int | None:
    """The value of one `key value` line (memory.stat, memory.events, memory.oom_control), without
    parsing the other lines: memory.stat has dozens and only a few are wanted."""
    if not text:
        return None
    needle = key + " "
    if text.startswith(needle):
        i = 0
    else:
        i = text.find("\n" + needle)
        if i < 0:
            return None
        i += 1
    end = text.find("\n", i)
    return _int(text[i + len(needle) : end if end >= 0 else None])


# Where container cgroups live, relative to the (memory) hierarchy root: one fnmatch pattern per level.
# Only these directories are listed, never the whole tree.
_CONTAINER_DIRS: tuple[tuple[str, ...], ...] = (
    ("docker", "*"),
    ("system.slice", "*-*"),
    ("machine.slice", "libpod-*"),
    ("libpod_parent", "libpod-*"),
    ("kubepods", "pod*", "*"),
    ("kubepods", "*", "pod*", "*"),
    ("kubepods.slice", "kubepods-pod*.slice", "*"),
    ("kubepods.slice", "kubepods-*.slice", "kubepods-*-pod*.slice", "*"),
    ("user.slice", "user-*.slice", "user@*.service", "*.slice", "*-*"),
)


class CgroupFS:
    """One cgroup hierarchy root (`/sys/fs/cgroup`): v2 when `cgroup.controllers` is there, else v1 with the
    memory controller under `memory/` (hybrid systems count as v1: memory lives there)."""

    def __init__(self, root: Path = Path("/sys/fs/cgroup")) -> None:
        self.root = Path(root)
        if (self.root / "cgroup.controllers").exists():
            self.version: int | None = 2
            self._mem_root = str(self.root)
        elif (self.root / "memory").is_dir():
            self.version = 1
            self._mem_root = str(self.root / "memory")
        else:
            self.version = None
            self._mem_root = str(self.root)

    def path_for(self, match: CgroupMatch) -> str | None:
        """The container's cgroup path for this hierarchy's version from a process's match."""
        if self.version == 2:
            return match.unified_path
        if self.version == 1:
            return match.memory_path
        return None

    def _dir(self, cgroup_path: str) -> str | None:
        if self.version is None or not cgroup_path.startswith("/"):
            return None
        if ".." in cgroup_path.split("/"):  # outside our cgroup namespace: not reachable from here
            return None
        return self._mem_root + cgroup_path.rstrip("/")

    def _read(self, path: str) -> str | None:
        return _read(path, self._mem_root)

    def memory(self, cgroup_path: str) -> CgroupMemory | None:
        """The cgroup's memory files; None when the cgroup (or its usage file) is not there. A missing or
        malformed secondary file leaves its field None."""
        base = self._dir(cgroup_path)
        if base is None:
            return None
        pressure = None
        if self.version == 2:
            usage = _int(self._read(base + "/memory.current"))
            if usage is None:
                return None
            stat = self._read(base + "/memory.stat")
            anon, file, shmem = _field(stat, "anon"), _field(stat, "file"), _field(stat, "shmem")
            inactive = _field(stat, "inactive_file")
            limit_text = self._read(base + "/memory.max")
            limit = None if limit_text is None or limit_text.strip() == "max" else _int(limit_text)
            peak = _int(self._read(base + "/memory.peak"))
            oom = _field(self._read(base + "/memory.events"), "oom_kill")
            pressure = read_pressure(base + "/memory.pressure", beneath=self._mem_root)
        else:
            usage = _int(self._read(base + "/memory.usage_in_bytes"))
            if usage is None:
                return None
            stat = self._read(base + "/memory.stat")

            def pick(name: str) -> int | None:
                # total_* include the container's sub-cgroups; older kernels have only the local value
                value = _field(stat, "total_" + name)
                return value if value is not None else _field(stat, name)

            anon, file, shmem, inactive = pick("rss"), pick("cache"), pick("shmem"), pick("inactive_file")
            limit = _int(self._read(base + "/memory.limit_in_bytes"))
            if limit is not None and limit >= _V1_UNLIMITED:
                limit = None
            peak = _int(self._read(base + "/memory.max_usage_in_bytes"))
            oom = _field(self._read(base + "/memory.oom_control"), "oom_kill")
            # cgroup v1 has no per-cgroup PSI files
        # What `docker stats` shows (docker/cli stats_helpers.go), clamped at 0 as the kubelet does.
        working_set = usage if inactive is None else max(0, usage - inactive)
        return CgroupMemory(
            usage=usage,
            working_set=working_set,
            anon=anon,
            file=file,
            shmem=shmem,
            inactive_file=inactive,
            limit=limit,
            peak=peak,
            oom_kills=oom,
            pressure=pressure,
        )

    def container_cgroups(self) -> dict[str, tuple[ContainerRuntime, str]]:
        """container id -> (runtime, cgroup path) for every container cgroup in the known places, so that
        containers with no visible process still appear. Lists only those directories."""
        found: dict[str, tuple[ContainerRuntime, str]] = {}
        if self.version is None:
            return found
        for pattern in _CONTAINER_DIRS:
            self._walk(self._mem_root, "", pattern, found)
        return found

    def _walk(
        self, base: str, rel: str, pattern: tuple[str, ...], found: dict[str, tuple[ContainerRuntime, str]]
    ) -> None:
        head, rest = pattern[0], pattern[1:]
        if not any(c in head for c in "*?["):
            if rest and os.path.isdir(base + rel + "/" + head):
                self._walk(base, rel + "/" + head, rest, found)
            return
        try:
            entries = os.scandir(base + rel)
        except OSError:
            return
        with entries:
            for entry in entries:
                if not fnmatch.fnmatchcase(entry.name, head):
                    continue
                try:
                    if not entry.is_dir(follow_symlinks=False):
                        continue
                except OSError:
                    continue
                child = rel + "/" + entry.name
                if rest:
                    self._walk(base, child, rest, found)
                    continue
                m = match_cgroup_path(child)
                # Only a cgroup that is itself the container (not a sub-cgroup inside one).
                if m is not None and m[2] == child and m[1] not in found:
                    found[m[1]] = (m[0], child)
