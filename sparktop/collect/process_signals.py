"""Signals to host processes (outside containers), safe against PID reuse.

The process the user confirmed is named by its PID *and* its start time in clock ticks after boot
(`/proc/PID/stat` field 22, exact). A pidfd is opened first: it holds that PID's process for good, so once
the start ticks read through /proc match, the signal sent through the fd reaches that very process even if
it exits and its PID is reused in between (a plain kill(pid) after the check could hit the new one).
"""

from __future__ import annotations

import os
import signal

from sparktop.collect.control import ControlError
from sparktop.collect.tree_files import read_bytes
from sparktop.core.safe_text import visible


def read_stat(pid: int, proc_root: str = "/proc") -> tuple[str, int]:
    """(comm, start ticks) of `pid` from /proc/PID/stat. Raises OSError (FileNotFoundError: it is gone)."""
    stat = read_bytes(f"{proc_root}/{pid}/stat", 4096, beneath=proc_root)
    lpar, rpar = stat.index(b"("), stat.rindex(b")")
    fields = stat[rpar + 2 :].split()
    # fields[0] is field 3 (state): field 22 (starttime) is fields[19]
    return stat[lpar + 1 : rpar].decode("utf-8", "replace"), int(fields[19])


def signal_process(
    pid: int, sig: signal.Signals, expected_start_ticks: int | None = None, proc_root: str = "/proc"
) -> None:
    """Send `sig` to `pid`. With `expected_start_ticks`, refuse unless the process now holding `pid` started
    at exactly that tick: the one the user confirmed has exited and its PID was reused.
    Raises ControlError with one readable line; never lets an OSError through."""
    name = sig.name
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        raise ControlError(f"process {pid} is already gone") from None
    except OSError as exc:
        raise ControlError(f"could not send {name} to process {pid}: {exc.strerror or exc}") from None
    try:
        if expected_start_ticks is not None:
            try:
                comm, ticks = read_stat(pid, proc_root)
            except (OSError, ValueError, IndexError):
                raise ControlError(f"process {pid} is already gone") from None
            if ticks != expected_start_ticks:
                now = visible(comm)
                raise ControlError(f"process {pid} has exited (its PID now belongs to {now}): nothing sent")
        signal.pidfd_send_signal(pidfd, sig)
    except ProcessLookupError:
        raise ControlError(f"process {pid} is already gone") from None
    except PermissionError:
        raise ControlError(
            f"permission denied sending {name} to process {pid}: it belongs to another user "
            "(run sparktop as that user, or with sudo)"
        ) from None
    except OSError as exc:
        raise ControlError(f"could not send {name} to process {pid}: {exc.strerror or exc}") from None
    finally:
        os.close(pidfd)


TERM = signal.SIGTERM
KILL = signal.SIGKILL
