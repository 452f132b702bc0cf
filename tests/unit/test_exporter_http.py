"""The exporter's HTTP surface under load and what it gives away (issue #27 item 9): a burst of scrapes
all answered, HEAD without a body, and no process's command line unless `--command-lines`, with the cluster
view and `--exporter` dashboard working without them."""

from __future__ import annotations

import asyncio
import json
import resource
import socket
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from sparktop.analysis.lines import LineChoice
from sparktop.cluster.exporters import ExporterNodes, ExporterSource
from sparktop.core.snapshot import GB
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.sources.demo import DemoSource
from tests.fixtures.exporters import Exporter, get, start_exporter
from tests.fixtures.load import wall_limit
from tests.fixtures.serving import serve_in_process

# The burst was 1,000; 300 are enough to fill a backlog of 5 many times over: with it put back,
# 85 and 162 of 300 went unanswered in two runs (and the exporter answering 1,000 was most of the file's CPU).
BURST = 300


@pytest.fixture(scope="module")
def exporter() -> Iterator[Exporter]:
    """A real `sparktop serve --demo`, with room for the burst's sockets (soft limit up to the hard one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4 * BURST if hard == resource.RLIM_INFINITY else min(4 * BURST, hard)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))  # the exporter inherits it
    running = start_exporter("--demo")
    try:
        yield running
    finally:
        running.stop()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def served(command_lines: bool) -> ExporterServer:
    loop = SamplingLoop(DemoSource("default", seed=3), 1.0, 80 * GB, 100 * GB)
    loop.step()
    server = ExporterServer(loop, "127.0.0.1", 0, command_lines=command_lines)
    server.start()
    return server


def raw(url_host: str, port: int, request: str) -> tuple[bytes, bytes]:
    """(head, body) of one HTTP/1.1 exchange, read to the end of the connection."""
    with socket.create_connection((url_host, port), timeout=5) as sock:
        sock.sendall(request.encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


async def scrape(port: int, path: str) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    answer = await reader.read()
    writer.close()
    return answer.split(b" ", 2)[1].decode() if answer else "no answer"


async def burst(port: int, path: str, timeout: float) -> Counter[str]:
    async def one() -> str:
        try:
            return await asyncio.wait_for(scrape(port, path), timeout)
        except (TimeoutError, OSError) as exc:
            return type(exc).__name__

    return Counter(await asyncio.gather(*(one() for _ in range(BURST))))


def test_a_burst_of_concurrent_scrapes_all_answer(exporter: Exporter) -> None:
    """socketserver's listen backlog of 5 dropped the burst's SYNs: 304 of 1,000 had no answer in 20 s."""
    started = time.monotonic()
    # Each scrape's own wait stretched by the load (two suites side by side left 97 of 1,000 unanswered in a
    # fixed 10 s), kept under the 20 s in which the defect left 304 with no answer at all. Of /healthz: what
    # is lost is a connection, before any path is read, and rendering /metrics 1,000 times was ~1.7 s of the
    # exporter's CPU (half of the test's); with the backlog put back to 5, 632 to 798 of 1,000 went
    # unanswered in three runs of this burst (818 of the /metrics one).
    statuses = asyncio.run(burst(exporter.port, "/healthz", timeout=wall_limit(10.0, defect=20.0)))
    elapsed = time.monotonic() - started
    # Every connection answered: 200, or on a loaded machine "busy, retry in 1 s" (a request waits 2 s for
    # one of the 16 slots; with the rest of the suite beside it, a third of them did). Before: hundreds had no
    # answer at all.
    assert sum(statuses.values()) == BURST and set(statuses) <= {"200", "503"}, statuses
    assert statuses["200"] >= BURST // 4, statuses
    # Each scrape answered within its wait; the burst as a whole within the 20 s (the client's own
    # connects (1,000 then) are staggered on a loaded machine: 10.03 s once in CI's run beside an install).
    assert elapsed < wall_limit(20.0, defect=60), f"the burst took {elapsed:.1f} s"


def test_head_answers_headers_only(exporter: Exporter) -> None:
    for path in ("/snapshot.json", "/metrics", "/healthz", "/"):
        head, body = raw(
            "127.0.0.1",
            exporter.port,
            f"HEAD {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
        assert head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200"), head
        assert body == b"", f"HEAD {path} sent a {len(body)}-byte body"
    head, _ = raw(
        "127.0.0.1",
        exporter.port,
        "HEAD /snapshot.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    assert b"Content-Type: application/json" in head


def test_command_lines_are_left_out_unless_asked_for() -> None:
    for command_lines in (False, True):
        server = served(command_lines)
        try:
            snapshot = json.loads(get(f"{server.url}/snapshot.json")[2])
        finally:
            server.shutdown()
        processes = snapshot["processes"]
        assert processes
        with_argv = [p for p in processes if p.get("cmdline")]
        if command_lines:
            assert any(" " in p["cmdline"] for p in with_argv)  # the demo's argv, arguments and all
        else:
            assert with_argv == [] and all("cmdline" not in p for p in processes)
            assert all(p["name"] for p in processes)  # the name is still there


def test_serve_leaves_command_lines_out_by_default_and_adds_them_with_the_flag(exporter: Exporter) -> None:
    default = json.loads(get(f"{exporter.url}/snapshot.json")[2])
    assert all("cmdline" not in p for p in default["processes"])
    _, body = serve_in_process(["--demo", "--command-lines"], lambda url: get(f"{url}/snapshot.json")[2])
    assert any(p.get("cmdline") for p in json.loads(body)["processes"])


def test_cluster_view_and_exporter_dashboard_work_without_command_lines(exporter: Exporter) -> None:
    (node,) = ExporterNodes([exporter.address], LineChoice(80 * GB, 100 * GB)).fetch()
    assert node.status == "up" and node.has_numbers and node.consumers, node.reason
    assert node.snapshot is not None and node.snapshot.processes
    source = ExporterSource(exporter.url)
    try:
        snapshot = source.sample()
    finally:
        source.close()
    assert snapshot.processes and all(p.cmdline == "" for p in snapshot.processes)


def test_a_loopback_exporter_refuses_a_foreign_host() -> None:
    """DNS rebinding: a page at evil.example, re-resolved to 127.0.0.1, would read /snapshot.json from the
    admin's own browser (same origin to the browser): its requests carry `Host: evil.example`."""
    server = served(command_lines=False)
    try:
        port = server.address[1]
        for host, status in (
            (f"evil.example:{port}", b"403"),
            ("evil.example", b"403"),
            ("127.0.0.1.nip.io", b"403"),
            (f"127.0.0.1:{port}", b"200"),
            (f"localhost:{port}", b"200"),
            (f"[::1]:{port}", b"200"),
        ):
            request = f"GET /snapshot.json HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            head, body = raw("127.0.0.1", port, request)
            assert head.split(b" ")[1] == status, (host, head)
            if status == b"403":
                assert b"processes" not in body
    finally:
        server.shutdown()
