"""The headless commands' stop signals: KeyboardInterrupt in the main thread, from a handler that takes no
lock.

`serve` and `guard` used to set a `threading.Event` from the handler. A handler runs in the main thread
between two bytecodes; delivered while that thread held the event's lock inside `wait()` (the guard re-entered
`wait(0.2)` five times a second), `set()` waited for the lock its own thread held: a `systemctl stop` that
hangs until SIGKILL."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from sparktop.commands.common import interrupt_on_stop_signals
from tests.fixtures.signals import handlers_kept


@pytest.fixture
def restored_handlers():
    with handlers_kept():
        yield


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_interrupts_the_main_thread_holding_a_lock(restored_handlers, signum) -> None:
    interrupt_on_stop_signals(signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    held = threading.Lock()
    with held, pytest.raises(KeyboardInterrupt):  # as Event.wait() holds its condition's lock
        signal.raise_signal(signum)
    assert not held.locked()  # and the stack unwound through it


def test_a_stop_signal_ends_a_wait_nothing_else_would_end(restored_handlers) -> None:
    interrupt_on_stop_signals(signal.SIGTERM)
    never = threading.Event()
    # To the main thread itself (raise_signal from the timer's thread would interrupt that thread, and the
    # main thread would only see the signal when its wait had run out).
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(0.05, signal.pthread_kill, (main, signal.SIGTERM))
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        never.wait(30)
    timer.join()
    assert time.monotonic() - started < 15, "the wait ran out before the signal ended it"
