"""SIGTERM, SIGHUP and SIGINT end an app the way `q` does, for every full-screen app of sparktop.

From the moment Textual's driver takes the terminal (alternate screen, mouse reporting, hidden cursor), a
signal's default action (die at once) would leave all of that behind for the user to `reset`. Installed from
the app's `on_load`, before the driver starts, these handlers ask the app to exit instead: the driver gives
the terminal back, and the app's return code is 128 + the signal number, as a killed process's would be.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Iterable
from typing import Any

from textual.app import App

from sparktop.ui.terminal_check import terminal_gone


def end_on_signals(app: App[Any], signums: Iterable[int], release: Callable[[], None] | None = None) -> None:
    """Handle `signums` on the running event loop (call from `on_load`). `release`: what to let go of when
    the terminal is gone and the process must leave at once (a source's handles)."""
    loop = asyncio.get_running_loop()
    for signum in signums:
        loop.add_signal_handler(signum, _end, app, signum, release)


def _end(app: App[Any], signum: int, release: Callable[[], None] | None) -> None:
    if terminal_gone():
        # Hung up (SSH dropped): nothing to restore, and Textual's shutdown would block for ever queueing
        # writes to a terminal its output thread can no longer write to. Let go of the source and leave.
        if release is not None:
            with contextlib.suppress(Exception):
                release()
        os._exit(128 + signum)
    app.exit(return_code=128 + signum)
