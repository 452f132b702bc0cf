"""A hostile process stopped from the dashboard in a real terminal (issue 13, "Done when").

The process named itself `[/b]evil` and carries `ESC]2;PWNED BEL ESC[31mRED` in its command line; it is found
with `/` and signalled with `k y`. The dashboard keeps running, the terminal's title and colours are not
touched (tmux keeps the pane's title, and `pipe-pane` has every byte written), exactly that process gets
SIGTERM, and the action log names it plainly.

The same dashboard then checks what test_drip_server_quit.py (now gone) checked on a dashboard of its own
(one sparktop start fewer): its model probe (OLLAMA_HOST) is a server that drips its answer a byte every
0.5 s, and `q` still quits within 2 s (issue 27 item 2: it took 241 s, its exit joining the executor's probe
threads, each waiting on a byte)."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from tests.fixtures.hostile import EVIL_NAME, HOSTILE_ARG_SHOWN, spawn_hostile
from tests.fixtures.http_servers import DripServer, http_answer
from tests.fixtures.load import wall_limit
from tests.terminal.tmux import TmuxPane, sparktop_command


def test_a_process_named_like_markup_and_escapes_is_stopped_then_q_quits_beside_a_drip_server(
    tmp_path: Path,
) -> None:
    child = spawn_hostile(tmp_path)
    drip = DripServer(http_answer(json.dumps({"models": []}).encode() + b" " * 400), gap=0.5)
    state = tmp_path / "state"
    env = {
        "TERM": "xterm-256color",
        "OLLAMA_HOST": drip.url,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(state),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    pane = TmuxPane(tmp_path, 160, 40, env=env)
    try:
        title = pane.title()
        pane.run(sparktop_command())
        assert pane.wait_for(lambda: "Memory pool" in pane.screen()), pane.screen()
        # Each key waits for what it opens: keys typed ahead of the filter box would go to the table.
        pane.keys("3")
        assert pane.wait_for(lambda: "PID" in pane.screen()), pane.screen()
        pane.keys("/")
        assert pane.wait_for(lambda: "▔▔▔" in pane.screen()), pane.screen()  # the filter box is open
        # By its PID too: tests/ui/test_hostile_text.py's own `[/b]evil` may run beside it on another worker,
        # and `k y` on the first `evil` row once stopped that one (this child waited 20 s for its SIGTERM).
        wanted = f"{child.pid} {EVIL_NAME}"
        pane.keys("-l", wanted)
        assert pane.wait_for(lambda: f"filter: '{wanted}'" in pane.screen() and "[/b]evil" in pane.screen())
        pane.keys("Enter")
        assert pane.wait_for(lambda: "▔▔▔" not in pane.screen() and "s Stop" in pane.screen()), pane.screen()
        assert HOSTILE_ARG_SHOWN in pane.screen(), pane.screen()  # its command line, made visible
        pane.keys("k")
        assert pane.wait_for(lambda: "SIGTERM" in pane.screen()), pane.screen()  # the dialog names the signal
        pane.keys("y")
        assert child.wait(timeout=20) == -signal.SIGTERM
        log = state / "sparktop" / "actions.log"
        assert pane.wait_for(lambda: log.exists() and log.read_text().strip() != "")
        ((_, action, target, result),) = [line.split("\t") for line in log.read_text().splitlines()]
        assert (action, target, result) == ("SIGTERM", f"pid {child.pid} ({EVIL_NAME})", "sent")
        # Still running (no exit status printed), title and colours untouched.
        assert pane.exit_status() is None and "sparktop" in pane.screen()
        after = pane.title()
        assert after == title and "PWNED" not in after
        written = pane.written()
        assert b"\x1b]2;PWNED" not in written and b"\x1b[31mRED" not in written
        # A probe has been waiting on the drip for seconds now (its 400 bytes take 200 s): `q` quits at once.
        assert pane.wait_for(lambda: drip.connections >= 1, timeout=10), "no model probe reached the drip"
        pane.keys("q")
        quit_at = time.monotonic()
        assert pane.wait_for(lambda: pane.exit_status() is not None, timeout=10), pane.screen()
        took = time.monotonic() - quit_at
        assert took < wall_limit(2.0, defect=60), f"q beside a dripping model server took {took:.1f} s"
        assert pane.exit_status() == 0
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        pane.close()
        drip.close()
