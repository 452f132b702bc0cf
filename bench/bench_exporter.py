"""What one Prometheus scrape of `sparktop serve` costs, beside peers, as a table.

    python bench/bench_exporter.py                     # 300 scrapes per row
    python bench/bench_exporter.py --scrapes 1000 --scenario everything

Rows (median and 95th percentile of wall time per scrape, the body size and the number of series):
- sparktop, rendered: `generate_latest` over the exporter's registry, in process. The sampler has already
  published the state (demo source, the scenario's consumers, creep after 400 ticks), so this is the cost a
  scrape adds: rendering, never collecting.
- sparktop, HTTP: `GET /metrics` from `sparktop serve` on a loopback port (the server is this process's
  ExporterServer; the client is urllib, whose own cost is in the figure).
- prometheus_client default registry: the library's own process, platform and GC collectors, in process.
- collect-on-scrape (node_exporter's way): a prometheus_client collector that reads /proc/meminfo and
  /proc/pressure/memory at scrape time, as node_exporter's meminfo and pressure collectors do.
- node_exporter, HTTP: Debian's `prometheus-node-exporter` with its default collectors on a loopback port,
  when it is installed (`apt-get install prometheus-node-exporter`); its row says so when it is not.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from sparktop.core.snapshot import GB
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.sources.demo import DemoSource


class MeminfoOnScrape:
    """node_exporter's meminfo + pressure collectors in miniature: the files are read on every scrape."""

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            value = float(parts[0]) * (1024 if len(parts) > 1 else 1)
            family = GaugeMetricFamily(f"node_memory_{key.replace('(', '_').replace(')', '')}_bytes", key)
            family.add_metric([], value)
            yield family
        with contextlib.suppress(OSError):
            for line in Path("/proc/pressure/memory").read_text().splitlines():
                kind, *fields = line.split()
                total = dict(f.split("=") for f in fields)["total"]
                family = GaugeMetricFamily(f"node_pressure_memory_{kind}_seconds", "PSI stall time")
                family.add_metric([], float(total) / 1e6)
                yield family


def _time(fn: Callable[[], bytes], scrapes: int) -> tuple[float, float, int, int]:
    fn()  # warm
    costs, body = [], b""
    for _ in range(scrapes):
        started = time.perf_counter()
        body = fn()
        costs.append(time.perf_counter() - started)
    costs.sort()
    series = sum(len(f.samples) for f in text_string_to_metric_families(body.decode()))
    return statistics.median(costs) * 1e3, costs[int(len(costs) * 0.95) - 1] * 1e3, len(body), series


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return reply.read()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _node_exporter(scrapes: int) -> tuple[float, float, int, int] | str:
    binary = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if binary is None:
        return "not installed (apt-get install prometheus-node-exporter)"
    port = _free_port()
    process = subprocess.Popen(
        [binary, f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        for _ in range(100):
            with contextlib.suppress(OSError):
                _get(url)
                break
            time.sleep(0.05)
        return _time(lambda: _get(url), scrapes)
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scrapes", type=int, default=300)
    parser.add_argument("--scenario", default="default")
    opts = parser.parse_args()

    loop = SamplingLoop(DemoSource(opts.scenario), 1.0, 80 * GB, 100 * GB)
    for _ in range(400):
        loop.step()
    server = ExporterServer(loop, "127.0.0.1", 0)
    server.start()
    onscrape = CollectorRegistry(auto_describe=False)
    onscrape.register(MeminfoOnScrape())  # type: ignore[arg-type]
    rows: list[tuple[str, tuple[float, float, int, int] | str]] = [
        (
            f"sparktop, rendered ({opts.scenario} demo)",
            _time(lambda: generate_latest(server.app.registry), opts.scrapes),
        ),
        ("sparktop, HTTP GET /metrics", _time(lambda: _get(f"{server.url}/metrics"), opts.scrapes)),
        ("prometheus_client default registry", _time(lambda: generate_latest(REGISTRY), opts.scrapes)),
        ("collect-on-scrape: meminfo + PSI", _time(lambda: generate_latest(onscrape), opts.scrapes)),
        ("node_exporter, HTTP GET /metrics", _node_exporter(opts.scrapes)),
    ]
    server.shutdown()

    print(f"one scrape, {opts.scrapes} scrapes per row (wall time)\n")
    print(f"| {'':40} | median ms | p95 ms | body bytes | series |")
    print(f"| {'-' * 40} | --------- | ------ | ---------- | ------ |")
    for name, result in rows:
        if isinstance(result, str):
            print(f"| {name:40} | {result} |")
            continue
        median, p95, size, series = result
        print(f"| {name:40} | {median:9.2f} | {p95:6.2f} | {size:10,} | {series:6,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
