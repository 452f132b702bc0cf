"""The live dashboard quits within 2 s of `q` while a model server drips its answers (issue 27 item 2: it
took 241 s, its exit joining the executor's probe threads, each waiting on a byte every 0.9 s)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from tests.fixtures.http_servers import DripServer, http_answer
from tests.fixtures.load import wall_limit
from tests.terminal.tmux import TmuxPane, sparktop_command

assert shutil.which("tmux"), "these tests need tmux: apt-get install tmux (.ci/run does)"


def test_q_quits_within_two_seconds_beside_a_drip_server(tmp_path: Path) -> None:
    drip = DripServer(http_answer(json.dumps({"models": []}).encode() + b" " * 400), gap=0.5)
    env = {
        "TERM": "xterm-256color",
        "OLLAMA_HOST": drip.url,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    pane = TmuxPane(tmp_path, env=env)
    try:
        pane.run(sparktop_command())
        assert pane.wait_for(lambda: "Memory pool" in pane.screen()), pane.screen()
        assert pane.wait_for(lambda: drip.connections >= 1, timeout=10)
        time.sleep(1.0)  # a probe is waiting on the drip now
        pane.keys("q")
        quit_at = time.monotonic()
        assert pane.wait_for(lambda: pane.exit_status() is not None, timeout=10), pane.screen()
        assert time.monotonic() - quit_at < wall_limit(2.0, defect=60)  # it took 241 s
        assert pane.exit_status() == 0
    finally:
        pane.close()
        drip.close()
