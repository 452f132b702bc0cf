"""A child process that must not outlive its parent: `sparktop web`'s browser sessions.

Each browser session is a dashboard process that `sparktop web` starts. If `web` dies (SIGKILL, a crash, or a
SIGTERM while a browser is not reading) nothing else would end the session: it was found orphaned, spinning
at 35-40 % CPU. The kernel's parent-death signal (prctl PR_SET_PDEATHSIG, Linux) ends it with its parent.
SIGKILL: a session owns nothing it must save (its collector is the parent's), and a process whose output
pipe is gone may not get through its own exit path.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


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
