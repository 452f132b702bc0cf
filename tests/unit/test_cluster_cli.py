"""`sparktop --exporter ... --once` and `sparktop --cluster ... --once` as a script runs them, through main()
in this process (their output and exit status), against real exporters (in-process `ExporterServer`s over
the demo), a closed port and an exporter that answers a byte at a time (issue 23 item 5, issue 25 item 7).
The view's refusal of a terminal that cannot draw it runs as a process: the terminal is the point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from sparktop.cluster.node import MAX_NODES
from sparktop.core.snapshot import GB
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.sources.demo import DemoSource
from tests.fixtures.cli import run_main
from tests.fixtures.exporters import AnswerServer, answering, closed_port, exporter_answer
from tests.fixtures.load import wall_limit


def sparktop(*args: str) -> subprocess.CompletedProcess[str]:
    """In this process: what these tests check is the output and the exit status main() returns."""
    return run_main(*args)


@pytest.fixture
def exporter() -> Iterator[str]:
    # One per test: a module's exporter sampled once went STALE (the README's rule: no new sample for 10 s)
    # for the tests that ran later on a loaded machine.
    loop = SamplingLoop(DemoSource("training", seed=3), 1.0, 80 * GB, 100 * GB)
    loop.step()
    server = ExporterServer(loop, "127.0.0.1", 0)
    server.start()
    try:
        host, port = server.address
        yield f"{host}:{port}"
    finally:
        server.shutdown()


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_an_exporter_that_is_down_is_one_line_and_exit_2(json_flag: list[str]) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    done = sparktop("--exporter", url, "--once", *json_flag)
    assert done.returncode == 2
    assert done.stderr == f"sparktop: {url}: connection refused\n"
    assert done.stdout == ""


def test_an_exporter_that_drips_is_one_line_within_its_deadline(exporter: str) -> None:
    with answering(AnswerServer(exporter_answer(f"http://{exporter}"))) as drip:
        drip.drip = True
        started = time.monotonic()
        done = sparktop("--exporter", drip.address, "--once")
    # start-up and the 3 s deadline; it never waits for the drip
    assert time.monotonic() - started < wall_limit(10, defect=20)
    assert done.returncode == 2
    assert done.stderr.startswith(f"sparktop: {drip.address}: no answer in 3")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_cluster_once_prints_the_nodes_as_text_into_a_pipe(exporter: str) -> None:
    closed = f"127.0.0.1:{closed_port()}"
    done = sparktop("--cluster", "--nodes", f"{exporter},{closed}", "--once")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout  # plain text, not a full-screen app written into the pipe
    lines = done.stdout.splitlines()
    assert lines[0] == "sparktop cluster · 2 exporters · 2 nodes · 1 down"
    assert f"spark-demo ({exporter})  UP" in lines
    assert "ssd-tetris-train-1" in done.stdout and "safe 80 GB" in done.stdout
    down = lines.index(f"{closed}  DOWN")
    assert lines[down + 1 : down + 3] == [
        f"  {closed}: connection refused",
        "  no data: its numbers are unknown, not zero",
    ]


def test_cluster_once_json(exporter: str) -> None:
    closed = f"127.0.0.1:{closed_port()}"
    done = sparktop("--cluster", "--nodes", f"{exporter},{closed}", "--once", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["version"] == 1 and report["source"] == "2 exporters" and report["nodes_left_out"] == 0
    up, down = report["nodes"]
    assert (up["name"], up["status"], up["host"]) == (exporter, "up", "spark-demo")
    assert up["used"] > 0 and up["safe_bytes"] == 80 * GB and up["consumers"][0]["label"]
    assert (down["name"], down["status"], down["used"], down["consumers"]) == (closed, "down", None, [])


def test_cluster_once_with_prometheus_down_is_one_line_and_exit_2() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    done = sparktop("--cluster", "--prometheus", url, "--once")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"sparktop: cannot reach Prometheus at {url}: connection refused\n"


def test_more_exporters_than_the_view_reads_is_refused() -> None:
    nodes = ",".join(f"127.0.0.1:{9000 + i}" for i in range(MAX_NODES + 1))
    done = sparktop("--cluster", "--nodes", nodes, "--once")
    assert done.returncode == 3
    refusal = f"--nodes lists {MAX_NODES + 1} exporters; the cluster view reads at most {MAX_NODES}"
    assert refusal in done.stderr


def test_help_says_what_each_exit_status_means() -> None:
    done = sparktop("--help")
    text = " ".join(done.stdout.split())
    for meaning in ("0 done", "1 a crash", "2 the data source cannot be read", "3 a bad flag", "128+N"):
        assert meaning in text


def test_the_cluster_view_refuses_a_terminal_that_cannot_draw_it(exporter: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sparktop", "--cluster", "--nodes", exporter],
        capture_output=True, text=True, timeout=30, env={**os.environ, "TERM": "dumb"},
    )  # fmt: skip
    assert done.returncode == 2 and "\x1b" not in done.stdout + done.stderr
    assert "cannot draw" in done.stderr and "--cluster ... --once" in done.stderr


def test_a_malformed_proxy_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 32 item 11: `http_proxy='http://[::1' sparktop --cluster ... --once` ended in a ValueError
    traceback (in this process, the exception would reach the test)."""
    monkeypatch.setenv("http_proxy", "http://[::1")
    monkeypatch.setenv("no_proxy", "")
    done = sparktop("--cluster", "--nodes", "h.invalid:9877", "--once")
    assert "Traceback" not in done.stderr, done.stderr
    assert "proxy http://[::1: not a URL" in done.stdout + done.stderr
