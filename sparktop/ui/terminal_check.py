"""Can this terminal show the dashboard? Asked by the CLI before Textual takes the terminal over.

A terminal that cannot draw it (TERM=dumb, an editor's shell buffer) or is too small for any layout gets one
line that points to `--once`, instead of truecolor, alternate-screen and mouse codes it would print raw.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping

MIN_WIDTH = 60
MIN_HEIGHT = 18

# TERM values of terminals without cursor addressing: Textual's codes would come out as garbage there.
INCAPABLE_TERMS = frozenset({"", "dumb", "unknown"})


def terminal_size(fds: tuple[int, ...] = (2, 1, 0)) -> tuple[int, int] | None:
    """The size of the first of `fds` that is a terminal (Textual draws on stderr); None if none is."""
    for fd in fds:
        try:
            size = os.get_terminal_size(fd)
        except OSError:
            continue
        if size.columns and size.lines:
            return size.columns, size.lines
    return None


def dashboard_refusal(env: Mapping[str, str], size: tuple[int, int] | None) -> str | None:
    """Why the dashboard must not start in this terminal (one line for the user), or None if it can."""
    term = env.get("TERM", "")
    if term in INCAPABLE_TERMS:
        shown = f"TERM={term}" if term else "TERM is not set"
        return (
            f"this terminal cannot draw the dashboard ({shown}); "
            "use `sparktop --once` for plain text (`--once --json` for JSON)"
        )
    if size is not None:
        width, height = size
        if width < MIN_WIDTH or height < MIN_HEIGHT:
            return (
                f"the terminal is {width}×{height}, the dashboard needs at least {MIN_WIDTH}×{MIN_HEIGHT}: "
                "enlarge it, or use `sparktop --once` for plain text"
            )
    return None


def terminal_gone(fds: tuple[int, ...] = (2, 0)) -> bool:
    """True when the terminal was hung up (a closed SSH session, a killed tmux pane): the file descriptors
    are still open but every call on them fails. None of `fds` being a terminal at all is not "gone"."""
    import termios

    was_terminal = False
    for fd in fds:
        try:
            termios.tcgetattr(fd)
        except termios.error as exc:
            if exc.args and exc.args[0] == errno.EIO:
                was_terminal = True
                continue
            continue
        except OSError:
            continue
        return False
    return was_terminal
