"""Signals to host processes (outside containers), safe against PID reuse.

The process the user confirmed is named by its PID *and* its start time in clock ticks after boot
(`/proc/PID/stat` field 22, exact). A pidfd is opened first: it holds that PID's process for good, so once
the start ticks read through /proc match, the signal sent through the fd reaches that very process even if
it exits and its PID is reused in between (a plain kill(pid) after the check could hit the new one).
`terminate_process` keeps that fd to wait for the exit (a pidfd turns readable then) and, past a grace
period, to send SIGKILL to the same process.
"""

from __future__ import annotations

import os
import select
import signal
import time
from dataclasses import dataclass

from sparktop.collect.control import ControlError
from sparktop.collect.tree_files import read_bytes
from sparktop.core.safe_text import visible

TERM = signal.SIGTERM
KILL = signal.SIGKILL
KILL_WAIT_S = 5.0  # how long a process is given to go after SIGKILL (it can be stuck in the kernel)


def read_stat(pid: int, proc_root: str = "/proc") -> tuple[str, int]:
    """(comm, start ticks) of `pid` from /proc/PID/stat. Raises OSError (FileNotFoundError: it is gone)."""
    stat = read_bytes(f"{proc_root}/{pid}/stat", 4096, beneath=proc_root)
    lpar, rpar = stat.index(b"("), stat.rindex(b")")
    fields = stat[rpar + 2 :].split()
    # fields[0] is field 3 (state): field 22 (starttime) is fields[19]
    return stat[lpar + 1 : rpar].decode("utf-8", "replace"), int(fields[19])


def _open_confirmed(pid: int, sig_name: str, expected_start_ticks: int | None, proc_root: str) -> int:
    """A pidfd for `pid`, once its start tick is the one expected. Raises ControlError."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        raise ControlError(f"process {pid} is already gone") from None
    except OSError as exc:
        raise ControlError(f"could not send {sig_name} to process {pid}: {exc.strerror or exc}") from None
    if expected_start_ticks is None:
        return pidfd
    try:
        comm, ticks = read_stat(pid, proc_root)
    except (OSError, ValueError, IndexError):
        os.close(pidfd)
        raise ControlError(f"process {pid} is already gone") from None
    if ticks != expected_start_ticks:
        os.close(pidfd)
        raise ControlError(f"process {pid} has exited (its PID now belongs to {visible(comm)}): nothing sent")
    return pidfd


def _send(pidfd: int, pid: int, sig: signal.Signals) -> None:
    try:
        signal.pidfd_send_signal(pidfd, sig)
    except ProcessLookupError:
        raise ControlError(f"process {pid} is already gone") from None
    except PermissionError:
        raise ControlError(
            f"permission denied sending {sig.name} to process {pid}: it belongs to another user "
            "(run sparktop as that user, or with sudo)"
        ) from None
    except OSError as exc:
        raise ControlError(f"could not send {sig.name} to process {pid}: {exc.strerror or exc}") from None


def signal_process(
    pid: int, sig: signal.Signals, expected_start_ticks: int | None = None, proc_root: str = "/proc"
) -> None:
    """Send `sig` to `pid`. With `expected_start_ticks`, refuse unless the process now holding `pid` started
    at exactly that tick: the one the user confirmed has exited and its PID was reused.
    Raises ControlError with one readable line; never lets an OSError through."""
    pidfd = _open_confirmed(pid, sig.name, expected_start_ticks, proc_root)
    try:
        _send(pidfd, pid, sig)
    finally:
        os.close(pidfd)


def _exits_within(pidfd: int, seconds: float) -> float | None:
    """Seconds until the process behind `pidfd` exited (a pidfd turns readable then); None: not within."""
    started = time.monotonic()
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    while True:
        left = seconds - (time.monotonic() - started)
        if poller.poll(max(0, int(left * 1000))):
            return time.monotonic() - started
        if left <= 0:
            return None


@dataclass(frozen=True)
class Ending:
    """How a `terminate_process` went: `gone` once the process has exited; `how`, one line saying so."""

    gone: bool
    how: str
    killed: bool = False  # SIGKILL was needed


def terminate_process(
    pid: int,
    expected_start_ticks: int | None,
    grace_s: float,
    kill_wait_s: float = KILL_WAIT_S,
    proc_root: str = "/proc",
) -> Ending:
    """SIGTERM to the confirmed process, then SIGKILL if it is still there `grace_s` later, all through one
    pidfd (the same process throughout, whatever happens to its PID). Raises ControlError where not even
    the SIGTERM could be sent; a SIGKILL that could not be sent, or that it outlived (a process stuck in the
    kernel), is an Ending that is not `gone`."""
    pidfd = _open_confirmed(pid, TERM.name, expected_start_ticks, proc_root)
    try:
        _send(pidfd, pid, TERM)
        took = _exits_within(pidfd, grace_s)
        if took is not None:
            return Ending(True, f"exited {took:.1f} s after SIGTERM")
        try:
            _send(pidfd, pid, KILL)
        except ControlError as exc:
            if "already gone" in str(exc):
                return Ending(True, f"exited {grace_s:g} s after SIGTERM")
            return Ending(False, f"still there {grace_s:g} s after SIGTERM, and {exc}")
        took = _exits_within(pidfd, kill_wait_s)
        if took is not None:
            return Ending(
                True, f"still there {grace_s:g} s after SIGTERM: SIGKILL sent, gone {took:.1f} s later", True
            )
        return Ending(
            False, f"still there {grace_s:g} s after SIGTERM and {kill_wait_s:g} s after SIGKILL", True
        )
    finally:
        os.close(pidfd)
