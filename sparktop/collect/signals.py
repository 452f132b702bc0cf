"""Signals to host processes (outside containers), safe against PID reuse."""

from __future__ import annotations

import signal

from sparktop.collect.control import ControlError

# Start times from /proc (boot time + ticks) and psutil agree to well under this.
_START_TOLERANCE_S = 1.0


def signal_process(pid: int, sig: signal.Signals, expected_start: float | None = None) -> None:
    """Send `sig` to `pid`. If `expected_start` is given and the PID now belongs to a process started at
    another time, refuse: the process the user confirmed has exited and its PID was reused.
    Raises ControlError with one readable line; never lets an OSError through."""
    import psutil  # here, not at the top: ~25 ms the dashboard's first frame need not wait for

    name = sig.name
    try:
        proc = psutil.Process(pid)
        if expected_start is not None and abs(proc.create_time() - expected_start) > _START_TOLERANCE_S:
            raise ControlError(
                f"process {pid} has exited (its PID now belongs to {proc.name()}): nothing sent"
            )
        proc.send_signal(sig)
    except psutil.NoSuchProcess:
        raise ControlError(f"process {pid} is already gone") from None
    except psutil.AccessDenied:
        raise ControlError(
            f"permission denied sending {name} to process {pid}: it belongs to another user "
            "(run sparktop as that user, or with sudo)"
        ) from None
    except OSError as exc:
        raise ControlError(f"could not send {name} to process {pid}: {exc.strerror or exc}") from None


TERM = signal.SIGTERM
KILL = signal.SIGKILL
