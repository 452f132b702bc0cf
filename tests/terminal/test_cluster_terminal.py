"""The cluster view in a real terminal (tmux), beside an exporter that answers one byte at a time: SIGTERM
and `q` give the terminal back at once (issue 27 item 8: SIGTERM left the alternate screen on, and
`q` waited 18 s for the slow exporter)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from sparktop.core.snapshot import GB
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.sources.demo import DemoSource
from tests.fixtures.exporters import AnswerServer, answering, exporter_answer
from tests.fixtures.load import wall_limit
from tests.terminal.tmux import TmuxPane, assert_restored, sparktop_command


@pytest.fixture
def nodes() -> Iterator[str]:
    """`good,dripping`: a real exporter over the demo, and one that sends its answer a byte at a time."""
    loop = SamplingLoop(DemoSource("training", seed=3), 1.0, 80 * GB, 100 * GB)
    loop.step()
    server = ExporterServer(loop, "127.0.0.1", 0)
    server.start()
    host, port = server.address
    try:
        with answering(AnswerServer(exporter_answer(f"http://{host}:{port}"))) as drip:
            drip.drip = True
            yield f"{host}:{port},{drip.address}"
    finally:
        server.shutdown()


def start_cluster(pane: TmuxPane, nodes: str) -> None:
    pane.run(sparktop_command("--cluster", "--nodes", nodes))
    # The good node is drawn and the slow one's read is under way (it is "no answer in 3.0 s" after 3 s).
    assert pane.wait_for(lambda: "spark-demo  UP" in pane.screen()), pane.screen()
    assert pane.state()["alternate_on"] == "1"


def test_sigterm_restores_the_terminal_at_once(pane: TmuxPane, nodes: str) -> None:
    # SIGHUP and SIGINT take the same handler (ui/exit_signals.py), tested on the dashboard.
    start_cluster(pane, nodes)
    started = time.monotonic()
    os.kill(pane.program_pid(), signal.SIGTERM)
    assert pane.wait_for(lambda: pane.exit_status() is not None, timeout=10), pane.screen()
    assert time.monotonic() - started < wall_limit(2.5, defect=3.0)  # the slow read's 3 s
    assert_restored(pane, 128 + signal.SIGTERM)


def test_q_leaves_at_once_while_an_exporter_drips(pane: TmuxPane, nodes: str) -> None:
    start_cluster(pane, nodes)
    assert pane.wait_for(lambda: "no answer in" in pane.screen(), timeout=10), pane.screen()
    started = time.monotonic()
    pane.keys("q")
    assert pane.wait_for(lambda: pane.exit_status() is not None, timeout=10), pane.screen()
    assert time.monotonic() - started < wall_limit(2.5, defect=3.0)  # the slow read's 3 s
    assert_restored(pane, 0)
