"""The add-on collector seam: the registry loop (errors are one line, the others keep running), the one guard
every optional part goes through, the Poller that keeps network I/O out of the tick (against a real, slow HTTP
server), and live and demo sources running collectors."""

from __future__ import annotations

import http.server
import itertools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparktop.collect import registry
from sparktop.collect.add_on import Collector, Poller
from sparktop.collect.registry import AddOn, AddOns, Guarded
from sparktop.core.snapshot import DockerStatus, ServiceReport, Snapshot
from sparktop.sources.demo import DemoSource
from sparktop.sources.live import LiveSource
from tests.fixtures.load import wall_limit
from tests.fixtures.snapshots import snapshot
from tests.fixtures.sources import NoDocker, NoGpu
from tests.fixtures.trees import CgroupTree, ProcTree, cid, v2_cgroup


def bare_snapshot() -> Snapshot:
    return snapshot(t=1.0, total=100, available=50, free=10)


class Fixed:
    """A collector whose reports are given; counts its calls and its close."""

    def __init__(self, name: str, *endpoints: str) -> None:
        self.name = name
        self.endpoints = endpoints
        self.calls = 0
        self.closed = 0

    def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
        self.calls += 1
        return [ServiceReport(collector=self.name, endpoint=e) for e in self.endpoints]

    def close(self) -> None:
        self.closed += 1


class Raising(Fixed):
    def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
        self.calls += 1
        raise ConnectionError("connection refused\n  (second line)")


class Wrong(Fixed):
    def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
        return [{"collector": self.name}]  # type: ignore[list-item]


def test_collector_protocol_is_what_the_registry_runs() -> None:
    assert isinstance(Fixed("a"), Collector)
    assert tuple(a for a in registry.ADD_ONS if isinstance(a, AddOn)) == registry.ADD_ONS


def test_one_failing_collector_is_one_line_and_the_others_still_report() -> None:
    good, bad, wrong, later = (
        Fixed("good", "a:1"),
        Raising("bad"),
        Wrong("wrong"),
        Fixed("later", "b:2", "c:3"),
    )
    add_ons = AddOns([good, bad, wrong, later])
    snap = bare_snapshot()
    add_ons.collect(snap)
    assert [(r.collector, r.endpoint) for r in snap.services] == [
        ("good", "a:1"),
        ("later", "b:2"),
        ("later", "c:3"),
    ]
    assert snap.errors == [
        "bad: connection refused (second line)",
        "wrong: collect() returned a dict, not a ServiceReport",
    ]
    # next tick: the failing one is asked again (it may have recovered), nobody is dropped
    add_ons.collect(bare_snapshot())
    assert (good.calls, bad.calls, later.calls) == (2, 2, 2)
    add_ons.close()
    add_ons.close()
    assert (good.closed, bad.closed, later.closed) == (1, 1, 1)


def test_a_collector_that_cannot_be_made_says_why_every_tick() -> None:
    add_ons = AddOns(
        add_ons=(
            AddOn("missing", "sparktop.collect.no_such_module:Nope"),
            AddOn("fixed", "tests.unit.test_collectors:_made_fixed"),
        )
    )
    for _ in range(2):
        snap = bare_snapshot()
        add_ons.collect(snap)
        assert len(snap.errors) == 1
        assert snap.errors[0].startswith(
            "missing collector unavailable: No module named 'sparktop.collect.no_such_module'"
        )
        assert [r.collector for r in snap.services] == ["fixed"]


def _made_fixed() -> Fixed:
    return Fixed("fixed", "x")


def test_guarded_makes_once_reports_and_falls_back() -> None:
    made: list[int] = []

    def make() -> list[int]:
        made.append(1)
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    guard: Guarded[list[int]] = Guarded("NVML", make, what="NVML collector")
    errors: list[str] = []
    for _ in range(3):
        assert guard.call(len, errors, lambda reason: reason) == (
            "NVML collector unavailable: libnvidia-ml.so.1: cannot open shared object file"
        )
    assert made == [1] and errors == []  # made once; "unavailable" is the fallback's to show, not an error

    given: Guarded[list[int]] = Guarded("Docker", part=[1, 2])
    assert given.call(len, errors, lambda reason: -1) == 2
    assert given.call(lambda part: part[7], errors, lambda reason: -1) == -1
    assert errors == ["Docker: list index out of range"]


# --- a real, slow server: the tick never waits for it -----------------------------------------------------


@pytest.fixture
def slow_server() -> Iterator[tuple[str, threading.Event]]:
    """An HTTP server on loopback whose answers take 5 s (until `release` is set)."""
    release = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            release.wait(5.0)
            body = json.dumps({"models": [{"name": "llama3.1:8b"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", release
    finally:
        release.set()
        server.shutdown()
        server.server_close()


class ModelsCollector:
    """The shape a model-server collector takes: HTTP in a Poller thread, `collect` reads the cache."""

    name = "models"

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        import urllib.request

        self.url = url
        self.poller: Poller[list[str]] = Poller(
            lambda: [m["name"] for m in json.load(urllib.request.urlopen(url, timeout=timeout))["models"]],
            period=0.05,
        )

    def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
        models, error = self.poller.latest()
        if models is None:
            return [ServiceReport(collector=self.name, endpoint=self.url, error=error or "no answer yet")]
        return [ServiceReport(collector=self.name, endpoint=f"{self.url} {' '.join(models)}", error=error)]

    def close(self) -> None:
        self.poller.close()


def test_a_slow_server_never_stalls_the_tick(slow_server: tuple[str, threading.Event]) -> None:
    url, release = slow_server
    collector = ModelsCollector(url)
    add_ons = AddOns([collector])
    try:
        started = time.perf_counter()
        for _ in range(5):
            snap = bare_snapshot()
            add_ons.collect(snap)
        spent = time.perf_counter() - started
        assert spent < wall_limit(0.1, defect=5.0)  # the server takes 5 s per answer
        (report,) = snap.services
        assert report.error == "no answer yet"
        release.set()
        assert collector.poller.wait_first(5.0)
        snap = bare_snapshot()
        add_ons.collect(snap)
        assert snap.services[0].endpoint == f"{url} llama3.1:8b" and snap.services[0].error is None
    finally:
        add_ons.close()


def test_poller_reports_a_failure_in_one_line_and_backs_off() -> None:
    calls: list[float] = []

    def fetch() -> int:
        calls.append(time.monotonic())
        raise TimeoutError("timed out\nafter 0.5 s")

    poller: Poller[int] = Poller(fetch, period=0.02, max_backoff=0.08)
    try:
        assert poller.wait_first(2.0)
        assert poller.latest() == (None, "timed out after 0.5 s")
        time.sleep(0.4)
    finally:
        poller.close()
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert gaps and gaps[0] >= 0.035 and max(gaps) < 1.0  # doubled after a failure, capped at 0.08 s
    count = len(calls)
    time.sleep(0.1)
    assert len(calls) == count  # closed: no more fetches


# --- sources run their collectors ------------------------------------------------------------------------


def test_live_source_runs_collectors_after_the_core_readings(tmp_path: Path) -> None:
    proc = ProcTree(tmp_path / "proc")
    cg = CgroupTree(tmp_path / "cgroup", 2)
    container = cid("ollama")
    proc.add(10, "ollama", rss_pages=100, cgroup=v2_cgroup(f"/system.slice/docker-{container}.scope"))
    seen: list[list[str]] = []

    class SeesContainers(Fixed):
        def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
            seen.append([c.id for c in snapshot.containers])
            return super().collect(snapshot)

    sees, bad = SeesContainers("ports", "127.0.0.1:11434"), Raising("vllm")
    engine = NoDocker(DockerStatus(available=True))  # an engine that names none of the containers
    source = LiveSource(proc.root, cg.root, nvml=NoGpu(), docker=engine, collectors=[sees, bad])
    snap = source.sample()
    assert seen == [[container]]
    assert [r.endpoint for r in snap.services] == ["127.0.0.1:11434"]
    assert snap.errors == ["vllm: connection refused (second line)"]
    assert [c.id for c in snap.containers] == [container]  # the core readings are all there
    source.close()
    assert (sees.closed, bad.closed) == (1, 1)


def test_demo_source_simulates_a_collector_deterministically() -> None:
    class SimulatedOllama:
        name = "ollama"

        def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
            ollama = next(c for c in snapshot.containers if c.name == "ollama")
            return [ServiceReport(collector=self.name, endpoint=f"{ollama.short_id}:11434")]

        def close(self) -> None:
            pass

    def run() -> list[str]:
        source = DemoSource("default", seed=4, collectors=[SimulatedOllama()])
        return [s.model_dump_json() for s in (source.sample(), source.sample())]

    first = run()
    assert first == run()
    snap = Snapshot.model_validate_json(first[0])
    (report,) = [r for r in snap.services if r.collector == "ollama"]
    assert report.endpoint.endswith(":11434")
    # the add-on's reports come after the demo's own simulated model servers, which are as before
    plain = DemoSource("default", seed=4).sample().services
    assert plain and snap.services == [*plain, report]
