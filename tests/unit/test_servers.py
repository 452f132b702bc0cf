"""Model servers read over real HTTP (pytest-httpserver) serving the exact fields and metric text of the real
servers (tests/data/servers/, each file named by the version it follows)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from werkzeug import Response

from sparktop.collect.servers import llamacpp, ollama, sglang, vllm
from sparktop.collect.servers.collector import ServersCollector
from sparktop.collect.servers.discovery import Endpoint, default_endpoints, identify, normalise
from sparktop.collect.servers.probe import ServerError
from sparktop.core.snapshot import ContainerInfo, ProcessInfo
from tests.fixtures.http_servers import wait_until
from tests.fixtures.load import wall_limit
from tests.fixtures.snapshots import snapshot as shared_snapshot

DATA = Path(__file__).resolve().parents[1] / "data" / "servers"
GIB = 1024**3


def text(name: str) -> str:
    return (DATA / name).read_text()


def data(name: str) -> object:
    return json.loads(text(name))


def snapshot(containers: list[ContainerInfo] | None = None, processes: list[ProcessInfo] | None = None):
    return shared_snapshot(
        total=120 * GIB,
        available=80 * GIB,
        free=60 * GIB,
        containers=containers or [],
        processes=processes or [],
    )


def base(httpserver) -> str:
    return httpserver.url_for("/").rstrip("/")


# --- each protocol against a real HTTP server -------------------------------------------------------------


def test_ollama_ps_splits_each_model_into_cpu_and_gpu_sides(httpserver):
    httpserver.expect_request("/api/ps").respond_with_json(data("ollama-0.12-ps.json"))
    httpserver.expect_request("/api/version").respond_with_json({"version": "0.12.6"})
    reading = ollama.read(base(httpserver), timeout=1.0)
    assert reading.version == "0.12.6"
    big, coder = reading.models
    assert (big.name, big.gpu_bytes, big.cpu_bytes) == ("llama3.1:70b", 46781250000, 0)
    assert (coder.gpu_bytes, coder.cpu_bytes) == (5004146176, 1000000000)  # size - size_vram
    assert big.context_length == 8192 and coder.context_length == 32768
    assert big.parameter_size == "70.6B" and big.quantization == "Q4_K_M"
    # Nanosecond Go timestamps with either Z or an offset
    assert big.expires_at == pytest.approx(1795431871.83753)
    assert coder.expires_at == pytest.approx(1795427950.112233)
    assert "context_length" in reading.fields and "size_vram" in reading.fields


def test_ollama_old_schema_without_context_length_or_version(httpserver):
    httpserver.expect_request("/api/ps").respond_with_json(data("ollama-0.1-ps.json"))
    httpserver.expect_request("/api/version").respond_with_data("404 page not found", status=404)
    reading = ollama.read(base(httpserver), timeout=1.0)
    (model,) = reading.models
    assert model.name == "mistral:latest" and model.context_length is None
    assert reading.version is None and "context_length" not in reading.fields


def test_vllm_metrics_give_reservation_config_kv_use_and_queues(httpserver):
    httpserver.expect_request("/metrics").respond_with_data(text("vllm-0.11-metrics.txt"))
    httpserver.expect_request("/version").respond_with_json({"version": "0.11.0"})
    httpserver.expect_request("/v1/models").respond_with_json(
        {"object": "list", "data": [{"id": "Qwen/Qwen3-32B", "object": "model", "max_model_len": 32768}]}
    )
    reading = vllm.read(base(httpserver), timeout=1.0)
    (model,) = reading.models
    assert reading.version == "0.11.0"
    assert model.name == "Qwen/Qwen3-32B"
    assert (model.requests_running, model.requests_waiting) == (3, 2)
    assert model.kv_cache_usage == pytest.approx(0.4125)
    assert model.kv_cache_tokens == 10240 * 16
    assert model.gpu_memory_utilization == 0.5
    assert model.generation_tokens_total == 48210 and model.context_length == 32768
    assert "vllm:kv_cache_usage_perc" in reading.fields and "vllm:cache_config_info" in reading.fields


def test_vllm_old_names_are_read_and_said(httpserver):
    httpserver.expect_request("/metrics").respond_with_data(text("vllm-0.6-metrics.txt"))
    reading = vllm.read(base(httpserver), timeout=1.0, want_version=False)
    (model,) = reading.models
    assert model.kv_cache_usage == pytest.approx(0.07)
    assert model.gpu_memory_utilization == 0.9
    assert "vllm:gpu_cache_usage_perc" in reading.fields
    assert "vllm:kv_cache_usage_perc" not in reading.fields


def test_llamacpp_metrics_props_and_slots(httpserver):
    httpserver.expect_request("/props").respond_with_json(data("llamacpp-props.json"))
    httpserver.expect_request("/metrics").respond_with_data(text("llamacpp-b6000-metrics.txt"))
    httpserver.expect_request("/slots").respond_with_json(data("llamacpp-slots.json"))
    reading = llamacpp.read(base(httpserver), timeout=1.0)
    (model,) = reading.models
    assert model.name == "gemma-3-27b-it-Q4_K_M.gguf"
    assert reading.version == "b6000-1f0a3b2c"
    assert model.context_length == 16384  # two slots of 8192
    assert (model.requests_running, model.requests_waiting) == (1, 0)
    assert model.generation_tokens_total == 3469 and model.kv_cache_usage is None
    assert reading.note is None


def test_llamacpp_old_build_kv_ratio_and_metrics_off(httpserver):
    httpserver.expect_request("/props").respond_with_json(data("llamacpp-props.json"))
    httpserver.expect_request("/metrics").respond_with_data(text("llamacpp-b3000-metrics.txt"))
    httpserver.expect_request("/slots").respond_with_json(data("llamacpp-slots.json"))
    assert llamacpp.read(base(httpserver), timeout=1.0).models[0].kv_cache_usage == 0.25

    httpserver.clear()
    httpserver.expect_request("/props").respond_with_json(data("llamacpp-props.json"))
    httpserver.expect_request("/metrics").respond_with_json(
        {"error": {"code": 501, "message": "This server does not support metrics endpoint."}}, status=501
    )
    reading = llamacpp.read(base(httpserver), timeout=1.0)
    assert reading.models[0].name == "gemma-3-27b-it-Q4_K_M.gguf"
    assert "--metrics" in (reading.note or "")


def test_sglang_metrics(httpserver):
    httpserver.expect_request("/metrics").respond_with_data(text("sglang-0.4-metrics.txt"))
    httpserver.expect_request("/get_server_info").respond_with_json({"version": "0.4.6"})
    reading = sglang.read(base(httpserver), timeout=1.0)
    (model,) = reading.models
    assert model.name == "meta-llama/Llama-3.1-8B-Instruct" and reading.version == "0.4.6"
    assert model.kv_cache_usage == 0.28
    assert (model.requests_running, model.requests_waiting) == (162, 2826)


@pytest.mark.parametrize(
    ("fixture", "server"),
    [
        ("vllm-0.11-metrics.txt", "vllm"),
        ("sglang-0.4-metrics.txt", "sglang"),
        ("llamacpp-b6000-metrics.txt", "llama.cpp"),
    ],
)
def test_identify_by_metric_prefix(httpserver, fixture, server):
    httpserver.expect_request("/metrics").respond_with_data(text(fixture))
    assert identify(base(httpserver), 1.0) == server


def test_identify_ollama_and_refuse_other_services(httpserver):
    httpserver.expect_request("/api/ps").respond_with_json({"models": []})
    assert identify(base(httpserver), 1.0) == "ollama"
    httpserver.clear()
    httpserver.expect_request("/").respond_with_data("<html>postgres admin</html>")
    with pytest.raises(ServerError, match="no model server"):
        identify(base(httpserver), 1.0)


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        ("\x00\x01garbage{{", 200, "not Prometheus text|no vllm: metrics"),
        ("internal error", 500, "HTTP 500"),
        ("# HELP x y\nx 1\n", 200, "no vllm: metrics"),
    ],
)
def test_vllm_bad_answers_raise_one_line(httpserver, body, status, expected):
    httpserver.expect_request("/metrics").respond_with_data(body, status=status)
    with pytest.raises(ServerError, match=expected) as info:
        vllm.read(base(httpserver), timeout=1.0, want_version=False)
    assert "\n" not in str(info.value)


def test_ollama_garbage_json_is_one_line(httpserver):
    httpserver.expect_request("/api/ps").respond_with_data("{not json", content_type="application/json")
    with pytest.raises(ServerError, match="not JSON"):
        ollama.read(base(httpserver), timeout=1.0)
    httpserver.clear()
    httpserver.expect_request("/api/ps").respond_with_json({"error": "unauthorized"})
    with pytest.raises(ServerError, match='no "models"'):
        ollama.read(base(httpserver), timeout=1.0)


def test_model_names_with_control_characters_are_made_visible(httpserver):
    httpserver.expect_request("/api/ps").respond_with_json(
        {"models": [{"name": "evil\x1b[31m\u202e:7b", "size": 10, "size_vram": 10}]}
    )
    httpserver.expect_request("/api/version").respond_with_json({"version": "1\x07"})
    reading = ollama.read(base(httpserver), timeout=1.0)
    assert reading.models[0].name == "evil^[[31m<U+202E>:7b"
    assert reading.version == "1^G"


# --- discovery --------------------------------------------------------------------------------------------


def test_default_endpoints_honour_ollama_host():
    bases = [e.base for e in default_endpoints({})]
    assert bases == [
        "http://127.0.0.1:11434",
        "http://127.0.0.1:8000",
        "http://127.0.0.1:30000",
        "http://127.0.0.1:8080",
    ]
    moved = default_endpoints({"OLLAMA_HOST": "0.0.0.0:11500"})
    assert moved[0].base == "http://127.0.0.1:11500" and moved[0].server == "ollama"
    assert normalise("http://spark.local", 11434) == "http://spark.local:11434"
    assert normalise(":9000") == "http://127.0.0.1:9000"


# --- the collector: background probes, never a stalled tick ----------------------------------------------


def test_collector_finds_a_server_on_a_published_container_port(httpserver):
    httpserver.expect_request("/metrics").respond_with_data(text("vllm-0.11-metrics.txt"))
    port = httpserver.port
    container = ContainerInfo(id="c" * 64, name="vllm-qwen", ports=[port])
    collector = ServersCollector(defaults=False, interval=0.1)
    try:
        snap = snapshot([container])
        reports = wait_until(lambda: [r for r in collector.collect(snap) if r.models])
        (report,) = reports
        assert report.server == "vllm" and report.owner == f"container:{'c' * 64}"
        # 0.5 × the pool, on a unified-memory machine (no NVML device memory)
        assert report.models[0].reserved_bytes == int(0.5 * 120 * GIB)
    finally:
        collector.close()


def test_configured_server_on_a_published_port_is_owned_by_that_container(httpserver):
    # Listed in the config with its kind (say, to skip identification), served from a container: the
    # container owns its memory (the budget bar and the tables split it per model) while it runs.
    httpserver.expect_request("/metrics").respond_with_data(text("vllm-0.11-metrics.txt"))
    url = f"http://127.0.0.1:{httpserver.port}"
    container = ContainerInfo(id="c" * 64, name="vllm-qwen", ports=[httpserver.port])
    collector = ServersCollector(endpoints=[{"url": url, "server": "vllm"}], defaults=False, interval=0.1)
    try:
        (report,) = wait_until(lambda: [r for r in collector.collect(snapshot([container])) if r.models])
        assert (report.endpoint, report.server) == (url, "vllm")
        assert report.owner == f"container:{'c' * 64}"
        (report,) = collector.collect(snapshot([]))  # the container left: still probed, owned by nobody
        assert report.endpoint == url and report.owner is None
    finally:
        collector.close()


def test_collector_configured_server_down_gives_one_line_and_backs_off():
    collector = ServersCollector(endpoints=["127.0.0.1:1"], defaults=False, interval=0.1, max_backoff=10)
    try:
        reports = wait_until(lambda: [r for r in collector.collect(snapshot()) if r.error])
        (report,) = reports
        assert "127.0.0.1:1" in report.error and "connection refused" in report.error
        assert "\n" not in report.error
        first_probes = collector.probes
        time.sleep(0.5)
        # interval 0.1 s, doubled after each failure: a handful of retries in 0.5 s, not one per 0.1 s
        assert collector.probes - first_probes <= 3
    finally:
        collector.close()


def test_collector_slow_server_never_stalls_the_tick(httpserver):
    release = threading.Event()

    def slow(_request):
        release.wait(5.0)  # a server that takes 5 s to answer
        return Response(text("vllm-0.11-metrics.txt"))

    httpserver.expect_request("/metrics").respond_with_handler(slow)
    collector = ServersCollector(
        endpoints=[{"url": base(httpserver), "server": "vllm"}], defaults=False, interval=0.1, timeout=0.5
    )
    try:
        snap = snapshot()
        started = time.perf_counter()
        for _ in range(20):
            collector.collect(snap)
        per_tick = (time.perf_counter() - started) / 20
        # the tick copies readings; it never waits on the network (its 0.5 s deadline)
        assert per_tick < wall_limit(0.005, defect=0.5)
        reports = wait_until(lambda: [r for r in collector.collect(snap) if r.error])
        assert "no complete answer within 0.5 s" in reports[0].error
    finally:
        release.set()
        collector.close()


def test_collector_tokens_per_second_from_counters(httpserver):
    count = {"n": 0}

    def metrics(_request):
        count["n"] += 1
        body = text("vllm-0.11-metrics.txt").replace("} 48210.0", f"}} {48210 + 100 * count['n']}.0")
        return Response(body)

    httpserver.expect_request("/metrics").respond_with_handler(metrics)
    collector = ServersCollector(
        endpoints=[{"url": base(httpserver), "server": "vllm"}], defaults=False, interval=0.1
    )
    try:
        reports = wait_until(
            lambda: [r for r in collector.collect(snapshot()) if r.models and r.models[0].tokens_per_s]
        )
        rate = reports[0].models[0].tokens_per_s
        assert 100 < rate < 100 / 0.1 * 1.5  # 100 tokens per probe, probes ~0.1 s apart
    finally:
        collector.close()


def test_collector_host_ollama_is_owned_by_its_process(httpserver):
    httpserver.expect_request("/api/ps").respond_with_json(data("ollama-0.12-ps.json"))
    proc = ProcessInfo(pid=4242, name="ollama", cmdline="/usr/local/bin/ollama serve", start_time=1000.0)
    collector = ServersCollector(env={"OLLAMA_HOST": base(httpserver)}, interval=0.1)
    try:
        snap = snapshot(processes=[proc])
        reports = wait_until(
            lambda: [r for r in collector.collect(snap) if r.server == "ollama" and r.models]
        )
        assert reports[0].owner == "process:4242:1000"
    finally:
        collector.close()


def test_published_ports_from_the_engine_list_entry():
    from sparktop.collect.docker import published_ports

    # `GET /containers/json` Ports: one entry per binding (IPv4 and IPv6), unpublished ones lack PublicPort
    attrs = {
        "Ports": [
            {"IP": "0.0.0.0", "PrivatePort": 8000, "PublicPort": 8000, "Type": "tcp"},
            {"IP": "::", "PrivatePort": 8000, "PublicPort": 8000, "Type": "tcp"},
            {"PrivatePort": 9000, "Type": "tcp"},
            {"IP": "0.0.0.0", "PrivatePort": 5353, "PublicPort": 5353, "Type": "udp"},
        ]
    }
    assert published_ports(attrs) == [8000]
    assert published_ports({"Ports": None}) == [] and published_ports({}) == []


def test_a_default_port_is_read_as_whatever_server_answers_there(httpserver):
    """vLLM's default port 8000 held by an SGLang: identified by its metrics, not assumed from the port."""
    httpserver.expect_request("/metrics").respond_with_data(text("sglang-0.4-metrics.txt"))
    collector = ServersCollector(defaults=[Endpoint(base(httpserver), None, "default")], interval=0.1)
    try:
        reports = wait_until(lambda: [r for r in collector.collect(snapshot()) if r.models])
        assert reports[0].server == "sglang"
    finally:
        collector.close()


def test_a_default_port_with_something_else_stays_silent(httpserver):
    httpserver.expect_request("/").respond_with_data("<html>a web app</html>")
    collector = ServersCollector(defaults=[Endpoint(base(httpserver), None, "default")], interval=0.05)
    try:
        snap = snapshot()
        wait_until(lambda: collector.collect(snap) == [] and collector.probes >= 2)
        assert collector.collect(snap) == []  # not a model server: no row, no error line
    finally:
        collector.close()
