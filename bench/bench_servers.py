"""What model-server discovery adds to a live tick: 4 servers (Ollama, vLLM, SGLang, llama.cpp) answering on
local HTTP servers that serve the fixtures in tests/data/servers/, plus a fifth that takes 5 s to answer.

Prints the live tick (`LiveSource.sample()`) without and with the model-server collector, interleaved, and
the collector's `collect()` alone. The budget: at most 2 ms more per tick with 4 servers discovered.
Usage: `python bench/bench_servers.py [--reps N]`.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparktop.collect.servers.collector import ServersCollector  # noqa: E402
from sparktop.sources.live import LiveSource  # noqa: E402

DATA = REPO / "tests" / "data" / "servers"
ROUTES = {
    "ollama": {"/api/ps": "ollama-0.12-ps.json", "/api/version": None},
    "vllm": {"/metrics": "vllm-0.11-metrics.txt"},
    "sglang": {"/metrics": "sglang-0.4-metrics.txt"},
    "llama.cpp": {
        "/props": "llamacpp-props.json",
        "/metrics": "llamacpp-b6000-metrics.txt",
        "/slots": "llamacpp-slots.json",
    },
}


def serve(routes: dict[str, str | None], delay: float = 0.0) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if delay:
                time.sleep(delay)
            name = routes.get(self.path.split("?")[0], "missing")
            if name == "missing":
                self.send_error(404)
                return
            body = (DATA / name).read_bytes() if name else b'{"version": "0.12.6"}'
            try:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the prober gave up on the slow server first: that is the point

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stats(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"{statistics.median(samples):8.2f} {p90:8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()

    servers = {kind: serve(routes) for kind, routes in ROUTES.items()}
    slow = serve(ROUTES["vllm"], delay=5.0)
    endpoints = [{"url": f"http://127.0.0.1:{s.server_address[1]}", "server": k} for k, s in servers.items()]
    endpoints.append({"url": f"http://127.0.0.1:{slow.server_address[1]}", "server": "vllm"})
    collector = ServersCollector(endpoints=endpoints, defaults=False, interval=1.0)

    with_seam = "collectors" in inspect.signature(LiveSource).parameters
    plain = LiveSource(collectors=[]) if with_seam else LiveSource()
    added = LiveSource(collectors=[collector]) if with_seam else LiveSource()

    def tick_with() -> None:
        snapshot = added.sample()
        if not with_seam:
            snapshot.services.extend(collector.collect(snapshot))

    # Wait until the 4 answering servers are read (the slow one keeps its probe thread busy meanwhile).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        reports = collector.collect(plain.sample())
        if sum(1 for r in reports if r.models) >= 4:
            break
        time.sleep(0.2)
    found = [r for r in collector.collect(plain.sample()) if r.models]
    plain.sample(), tick_with()  # warm

    without, with_, collect_only = [], [], []
    snap = plain.sample()
    for _ in range(args.reps):
        t0 = time.perf_counter()
        plain.sample()
        t1 = time.perf_counter()
        tick_with()
        t2 = time.perf_counter()
        collector.collect(snap)
        t3 = time.perf_counter()
        without.append((t1 - t0) * 1000)
        with_.append((t2 - t1) * 1000)
        collect_only.append((t3 - t2) * 1000)

    extra = statistics.median(with_) - statistics.median(without)
    print(f"model servers answering: {len(found)} ({', '.join(r.server or '?' for r in found)}), "
          f"plus one that takes 5 s; {args.reps} ticks each, interleaved")  # fmt: skip
    print(f"{'':44} {'median':>8} {'p90':>8}   ms")
    print(f"{'live tick, no model-server collector':44} {stats(without)}")
    print(f"{'live tick, 4 servers discovered (+1 slow)':44} {stats(with_)}")
    print(f"{'ServersCollector.collect() alone':44} {stats(collect_only)}")
    verdict = "within" if extra <= 2.0 else "OVER"
    print(f"difference of medians: {extra:+.3f} ms per tick ({verdict} the 2 ms budget)")
    collector.close()
    for server in [*servers.values(), slow]:
        server.shutdown()


if __name__ == "__main__":
    main()
