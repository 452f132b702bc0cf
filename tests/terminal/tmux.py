"""sparktop in a real terminal: a private tmux server, a shell in a pane, keys and signals as a user sends.

tmux keeps the pane's terminal state (`alternate_on`, mouse modes, `cursor_flag`), so a test can ask whether
the terminal was given back as it was found, and `pipe-pane` records every byte the program wrote to it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The pane's modes once a program gave the terminal back as it found it: main screen, no mouse, cursor shown.
RESTORED = {
    "alternate_on": "0",
    "mouse_any_flag": "0",
    "mouse_standard_flag": "0",
    "mouse_button_flag": "0",
    "mouse_sgr_flag": "0",
    "cursor_flag": "1",
}


class TmuxPane:
    def __init__(self, workdir: Path, width: int = 120, height: int = 36, env: dict[str, str] | None = None):
        self.socket = f"sparktop-test-{uuid.uuid4().hex[:8]}"
        self.session = "t"
        self.raw = workdir / "pane.raw"
        self.workdir = workdir
        environment = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        environment.update(env or {})
        self._tmux(
            "new-session", "-d", "-s", self.session, "-x", str(width), "-y", str(height),
            "bash --norc --noprofile", env=environment,
        )  # fmt: skip
        self._tmux("set-option", "-t", self.session, "status", "off")
        self._tmux("pipe-pane", "-t", self.session, "-o", f"cat >> {shlex.quote(str(self.raw))}")

    def _tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        command = ["tmux", "-L", self.socket, *args]
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=True, timeout=20)
        return done.stdout

    def run(self, command: str) -> None:
        """Type a command into the pane's shell; its exit status is printed after it as EXIT=<n>."""
        line = f"cd {shlex.quote(str(REPO))}; {command}; echo EXIT=$?"
        self._tmux("send-keys", "-t", self.session, "-l", line)
        self._tmux("send-keys", "-t", self.session, "Enter")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.session, *keys)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.session)

    def title(self) -> str:
        """The pane's title, as a program sets it with OSC 0/2."""
        return self._tmux("display-message", "-p", "-t", self.session, "#{pane_title}").strip()

    def state_of(self, *names: str) -> list[str]:
        """tmux's format variables `names` for the pane (`window_width`, …)."""
        out = self._tmux("display-message", "-p", "-t", self.session, " ".join(f"#{{{n}}}" for n in names))
        return out.split()

    def state(self) -> dict[str, str]:
        names = ("alternate_on", "mouse_any_flag", "mouse_standard_flag", "mouse_button_flag",
                 "mouse_sgr_flag", "cursor_flag")  # fmt: skip
        out = self._tmux("display-message", "-p", "-t", self.session, " ".join(f"#{{{n}}}" for n in names))
        return dict(zip(names, out.split(), strict=True))

    def program_pid(self) -> int:
        """The PID of the program the shell runs (the shell's one child)."""
        shell = int(self._tmux("display-message", "-p", "-t", self.session, "#{pane_pid}").strip())
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        assert len(children) == 1, children
        return int(children[0])

    def wait_for(self, condition: Callable[[], bool], timeout: float = 30.0) -> bool:
        # Each look at the pane starts a tmux client (~3 ms of CPU): five looks a second, not ten.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            time.sleep(0.2)
        return condition()

    def exit_status(self) -> int | None:
        """The status the shell printed, or None before it has. The typed command itself holds `EXIT=$?`,
        which a long temporary path can wrap to the start of a line: only digits count."""
        for line in reversed(self.screen().splitlines()):
            found = re.fullmatch(r"EXIT=(\d+)\s*", line)
            if found:
                return int(found.group(1))
        return None

    def written(self) -> bytes:
        return self.raw.read_bytes() if self.raw.exists() else b""

    def close(self) -> None:
        """End the tmux server; whatever the pane ran and outlived the hang-up (a test that failed on a
        program that does not exit) is killed, so no test leaves a process behind."""
        try:
            shell = int(self._tmux("display-message", "-p", "-t", self.session, "#{pane_pid}").strip())
        except (subprocess.SubprocessError, ValueError):
            shell = None
        left = _descendants(shell) if shell else []
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=20)
        deadline = time.monotonic() + 3
        while left and time.monotonic() < deadline:
            left = [pid for pid in left if _alive(pid)]
            time.sleep(0.1)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        out.extend(int(c) for c in children)
        todo.extend(int(c) for c in children)
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def sparktop_command(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in (sys.executable, "-m", "sparktop", *args))


def assert_restored(pane: TmuxPane, status: int) -> None:
    """The program exited with `status` and gave the terminal back: modes as RESTORED, and the codes that
    undo the dashboard's (alternate screen, cursor, mouse) written after it took the screen."""
    assert pane.wait_for(lambda: pane.exit_status() is not None), pane.screen()
    assert pane.exit_status() == status, pane.screen()
    assert pane.state() == RESTORED
    written = pane.written()
    after = written[written.rindex(b"\x1b[?1049h") :]  # what came after the dashboard took the screen
    for code in (b"\x1b[?1049l", b"\x1b[?25h", b"\x1b[?1000l", b"\x1b[?1003l", b"\x1b[?1006l"):
        assert code in after, f"{code!r} was not written on the way out"
