"""Where the host is read from: `/` normally; a mounted copy when sparktop runs in a container
(`--root /host`, as node_exporter's `--path.rootfs`). The container then needs the host's process table
and cgroup namespace (`--pid=host --cgroupns=host`: /proc/PID/cgroup paths are relative to the reader's
namespace) and the host's /proc, /sys/fs/cgroup, Docker socket and /etc/hostname under that root; NVML comes
through the NVIDIA container toolkit and answers host PIDs."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from sparktop.collect.tree_files import LinkRefused, read_bytes, resolve_in_root

HOST_ROOT = Path("/")
_HOSTNAME_BYTES = 4096  # a host name is at most 253 characters: the file's first line is read


@dataclass(frozen=True)
class HostPaths:
    root: Path = HOST_ROOT

    @property
    def proc(self) -> Path:
        return self.root / "proc"

    @property
    def cgroup(self) -> Path:
        return self.root / "sys" / "fs" / "cgroup"

    @property
    def docker_url(self) -> str | None:
        """The mounted host's Docker socket (None on `/`: DOCKER_HOST and the usual places decide)."""
        if self.root == HOST_ROOT:
            return None
        # Links resolved inside the root: on a host mounted at DIR, DIR/var/run is a link to /run, meaning
        # DIR/run, not this container's /run; and a link to /var/run/docker.sock must not reach this
        # machine's own engine.
        try:
            return f"unix://{resolve_in_root(str(self.root), 'var/run/docker.sock')}"
        except LinkRefused as exc:
            return f"unix://{self.root / 'var' / 'run' / 'docker.sock'}: {exc.strerror}"

    def hostname(self) -> str:
        """The host's name: under another root its /etc/hostname (this container's own name is not the
        machine's), else this system's."""
        if self.root != HOST_ROOT:
            # A regular file inside the root only (DIR/etc/hostname -> /etc/shadow is not read), its first
            # line, and no more of it than a name can be.
            try:
                data = read_bytes(
                    str(self.root / "etc" / "hostname"), _HOSTNAME_BYTES, beneath=str(self.root)
                )
            except OSError:
                data = b""
            name = data.decode(errors="replace").strip().split("\n", 1)[0].strip()
            if name:
                return name[:253]
        return socket.gethostname()
