"""Every outgoing request goes through sparktop's one HTTP client (issue 25 item 7, issue 27 item 6): the
cluster view's fetch, the guard's webhook and the model servers follow no redirect, and an http_proxy set for
the internet never catches loopback. Real exporters, webhooks and proxies on loopback."""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparktop.analysis.lines import LineChoice
from sparktop.cluster.exporters import ExporterNodes
from sparktop.collect.servers import ollama
from sparktop.collect.servers.probe import ServerError
from sparktop.core.snapshot import GB
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.guard.alerts import Alert, Alerts
from sparktop.sources.demo import DemoSource
from tests.fixtures.cli import run_main
from tests.fixtures.http_servers import Canned, RecordingServer, json_route

SPARKTOP = str(Path(sys.executable).with_name("sparktop"))
DEAD_PROXY = "http://127.0.0.1:9"  # nothing listens on discard


@pytest.fixture
def exporter() -> Iterator[str]:
    loop = SamplingLoop(DemoSource("training", seed=3), 1.0, 80 * GB, 100 * GB)
    server = ExporterServer(loop, "127.0.0.1", 0)
    server.start()
    loop.step()
    host, port = server.address
    try:
        yield f"http://{host}:{port}"
    finally:
        server.shutdown()


def test_the_cluster_view_reads_a_loopback_exporter_with_a_proxy_set(
    exporter: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """urllib's default opener sent 127.0.0.1 through http_proxy: the node was down (connection refused)."""
    monkeypatch.setenv("http_proxy", DEAD_PROXY)
    monkeypatch.setenv("HTTPS_PROXY", DEAD_PROXY)
    monkeypatch.setenv("ALL_PROXY", DEAD_PROXY)
    (view,) = ExporterNodes([exporter], LineChoice(80 * GB, 100 * GB)).fetch()
    assert view.status == "up", view.reason


def test_exporter_once_with_a_proxy_set_prints_the_node(
    exporter: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`http_proxy=http://127.0.0.1:9 sparktop --exporter http://127.0.0.1:19877 --once` printed an 81-line
    traceback, exit status 1. (main() in this process: the proxy is read from the environment per request.)"""
    monkeypatch.setenv("http_proxy", DEAD_PROXY)
    monkeypatch.setenv("HOME", str(tmp_path))
    done = run_main("--exporter", exporter, "--once")
    assert done.returncode == 0, done.stderr[-600:]
    assert "Traceback" not in done.stderr and done.stdout.startswith("pool")


def test_the_cluster_view_follows_no_redirect(exporter: str) -> None:
    redirecting = RecordingServer(lambda m, t: Canned(302, headers={"Location": f"{exporter}{t}"}))
    try:
        (view,) = ExporterNodes([redirecting.url], LineChoice(80 * GB, 100 * GB)).fetch()
    finally:
        redirecting.close()
    assert view.status == "down" and "HTTP 302" in (view.reason or "")
    assert view.used is None  # not the numbers of the exporter it pointed to


def test_the_webhook_follows_no_redirect() -> None:
    """urllib turned a 302 to a POST into a GET of wherever the answer pointed."""
    elsewhere = RecordingServer()
    hook = RecordingServer(lambda m, t: Canned(302, headers={"Location": f"{elsewhere.url}/collect"}))
    alerts = Alerts(webhook=f"{hook.url}/hook", journal=False, out=io.StringIO())
    try:
        alerts.send(Alert("warning", "pool 95 % used", time.time()))
        alerts.flush()
    finally:
        hook.close()
        elsewhere.close()
    assert [s.method for s in hook.seen] == ["POST"] and elsewhere.seen == []
    (problem,) = alerts.errors
    assert "HTTP 302" in problem and "not followed" in problem


def test_a_model_server_that_redirects_elsewhere_is_not_read() -> None:
    """A 302 from :11434 to another host showed that host's models as the local Ollama."""
    elsewhere = RecordingServer(json_route({"/api/ps": {"models": [{"name": "not-yours:70b", "size": 1}]}}))
    redirecting = RecordingServer(lambda m, t: Canned(302, headers={"Location": f"{elsewhere.url}{t}"}))
    try:
        with pytest.raises(ServerError, match=r"HTTP 302 Found .*not followed"):
            ollama.read(redirecting.url, timeout=2.0)
    finally:
        redirecting.close()
        elsewhere.close()
    assert elsewhere.seen == []
