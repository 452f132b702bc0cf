"""Every way out of the dashboard gives the terminal back as it was (issue 12 item 1, issue 13 item 10).

Run for real: sparktop in a tmux pane, then a key or a signal. tmux tracks the pane's terminal modes, so
"the user does not need `reset`" is checked on the terminal itself, and the bytes written are checked too.
"""

from __future__ import annotations

import os
import signal
import textwrap
from pathlib import Path

import pytest

from tests.terminal.tmux import RESTORED, TmuxPane, assert_restored, sparktop_command


@pytest.fixture
def pane_size() -> tuple[int, int]:
    """The smallest size the dashboard draws at (60×18): the modes it sets and undoes do not depend on it,
    and a smaller screen costs less to draw."""
    return 60, 18


def start_dashboard(pane: TmuxPane, command: str | None = None) -> None:
    pane.run(command or sparktop_command("--demo"))
    # The footer: the app runs and takes keys (at 60×18 the pool's line reads `Pool …`, not `Memory pool`).
    assert pane.wait_for(lambda: "q Quit" in pane.screen()), pane.screen()
    state = pane.state()
    assert state["alternate_on"] == "1" and state["mouse_any_flag"] == "1" and state["cursor_flag"] == "0"


@pytest.mark.parametrize(
    ("signum", "status"),
    [(sig, 128 + sig) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)],
    ids=["SIGTERM", "SIGHUP", "SIGINT"],
)
def test_a_signal_restores_the_terminal(pane: TmuxPane, signum: int, status: int) -> None:
    start_dashboard(pane)
    os.kill(pane.program_pid(), signum)
    # Still reported as killed by that signal (`timeout` and shells look at 128 + N), but cleanly.
    assert_restored(pane, status)


@pytest.mark.parametrize("keys", [["q"], ["C-c"]], ids=["q", "ctrl+c"])
def test_quit_keys_restore_the_terminal(pane: TmuxPane, keys: list[str]) -> None:
    start_dashboard(pane)
    pane.keys(*keys)
    assert_restored(pane, 0)


def test_a_crash_exits_non_zero_with_the_message_after_the_terminal_is_restored(
    pane: TmuxPane, tmp_path: Path
) -> None:
    script = tmp_path / "crash.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from sparktop.commands.main import main
            from sparktop.ui.app import SparktopApp

            def broken_help(self):
                raise RuntimeError("injected failure in a key's action")

            SparktopApp.action_help = broken_help
            sys.exit(main(["--demo"]))
            """
        )
    )
    start_dashboard(pane, f"{sparktop_command()[: -len(' -m sparktop')]} {script}")
    pane.keys("?")
    assert_restored(pane, 1)
    assert "RuntimeError: injected failure in a key's action" in pane.screen()


def test_a_terminal_that_cannot_draw_gets_one_line_and_no_codes(pane: TmuxPane) -> None:
    """TERM=dumb and no TERM at all, one after the other in one shell: each exits 2 with the one line."""
    for term in ("dumb", ""):
        pane.keys("clear", "Enter")
        assert pane.wait_for(lambda: pane.exit_status() is None), pane.screen()
        pane.run(f"TERM={term} {sparktop_command('--demo')}")
        assert pane.wait_for(lambda: pane.exit_status() is not None), f"TERM={term!r}: {pane.screen()}"
        assert pane.exit_status() == 2, f"TERM={term!r}: {pane.screen()}"
        assert "use `sparktop --once`" in pane.screen(), f"TERM={term!r}: {pane.screen()}"
        assert pane.state() == RESTORED, f"TERM={term!r}"
        written = pane.written()
        for code in (b"\x1b[?1049h", b"\x1b[?1000h", b"\x1b[38;2;"):  # alternate screen, mouse, truecolor
            assert code not in written, f"TERM={term!r} wrote {code!r}"


def test_a_terminal_too_small_for_any_layout_gets_one_line(tmp_path: Path) -> None:
    pane = TmuxPane(tmp_path, width=40, height=10, env={"TERM": "xterm-256color"})
    try:
        pane.run(sparktop_command("--demo"))
        assert pane.wait_for(lambda: pane.exit_status() is not None), pane.screen()
        assert pane.exit_status() == 2
        screen = pane.screen().replace("\n", "")
        assert "40×10" in screen and "60×18" in screen and "--once" in screen
        assert b"\x1b[?1049h" not in pane.written()
    finally:
        pane.close()


def test_a_closed_terminal_ends_the_dashboard(pane: TmuxPane) -> None:
    """A dropped SSH session hangs the terminal up: the SIGHUP handler must not hang writing to it."""
    start_dashboard(pane)
    pid = pane.program_pid()
    pane.close()

    def gone() -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
        except OSError:
            return True

    assert pane.wait_for(gone, timeout=10)
