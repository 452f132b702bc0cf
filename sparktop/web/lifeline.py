"""A child process that must not outlive its parent: `sparktop web`'s browser sessions.

Each browser session is a dashboard process that `sparktop web` starts. If `web` dies (SIGKILL, a crash, or a
SIGTERM while a browser is not reading) nothing else would end the session: it was found orphaned, spinning
at 35-40 % CPU. The kernel's parent-death signal (prctl PR_SET_PDEATHSIG, Linux) ends it with its parent.
SIGKILL: a session owns nothing it must save (its collector is the parent's), and a process whose output
pipe is gone may not get through its own exit path.

A session also bounds its own memory (`bound_memory`, RLIMIT_AS: any Linux, no privilege; a cgroup would
need root or systemd's delegation): whatever a browser makes it draw, it fails alone (MemoryError, its
socket closes) instead of draining the pool the whole machine shares. And it takes the private feed's
token from its environment (`feed_token`), which only its user can read, never from its command line, which
every user can (/proc/PID/cmdline).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# A session's address space: a dashboard at the largest size `web` allows (500x200) mapped 300 MB of it at
# its peak and held 77 MB (80x24: 289 MB, 61 MB); unclamped, 20000x5000 took 3.4 GB. 2 GiB leaves room for
# more threads' malloc arenas on a 20-core Spark and for a long session's history, and stops a runaway.
SESSION_ADDRESS_SPACE = 2 * 1024**3
# Where `sparktop web` hands its sessions the feed's token (the environment textual-serve copies).
FEED_TOKEN_ENV = "SPARKTOP_WEB_FEED_TOKEN"


def exit_with_parent(parent_pid: int) -> None:
    """Die with `parent_pid`, our parent. Exits at once if it is gone already (or is not our parent: the
    signal would then follow the wrong process)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_PDEATHSIG): {os.strerror(errno)}")
    # The parent may have died before the prctl: then we were re-parented, and no signal will come.
    if os.getppid() != parent_pid:
        sys.exit(f"sparktop: parent process {parent_pid} is gone; this browser session ends")


def bound_memory(max_bytes: int = SESSION_ADDRESS_SPACE) -> None:
    """Cap this process's address space (RLIMIT_AS, soft and hard): past it, allocations fail here."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = max_bytes if hard == resource.RLIM_INFINITY else min(max_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def feed_token() -> str | None:
    """The private feed's token `sparktop web` put in this session's environment, taken out of it (no
    child of the session inherits it)."""
    return os.environ.pop(FEED_TOKEN_ENV, None) or None
