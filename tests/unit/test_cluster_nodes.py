"""`sparktop --nodes`: nodes read straight from real exporters over HTTP — up, stale, down, older schema."""

from __future__ import annotations

import functools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, TypeVar

import pytest
from rich.text import Text

from sparktop.analysis.lines import LineChoice
from sparktop.cluster.exporters import ExporterNodes, ExporterSource, NodeProblem
from sparktop.cluster.node import MAX_NODES
from sparktop.core.snapshot import GB
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.sources.demo import DemoSource
from sparktop.ui.cluster import card_text
from sparktop.ui.themes import load_themes
from tests.fixtures.exporters import (
    AnswerServer,
    answering,
    closed_port,
    exporter_answer,
    old_schema_exporter,
)
from tests.fixtures.load import wall_limit

T = TypeVar("T")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def node() -> Iterator[tuple[SamplingLoop, ExporterServer, Clock]]:
    clock = Clock()
    loop = SamplingLoop(DemoSource("training", seed=3), 1.0, 80 * GB, 100 * GB, clock=clock)
    server = ExporterServer(loop, "127.0.0.1", 0)
    server.start()
    try:
        yield loop, server, clock
    finally:
        server.shutdown()


def _address(server: ExporterServer) -> str:
    host, port = server.address
    return f"{host}:{port}"


def test_up_node_matches_its_exporter(node: tuple[SamplingLoop, ExporterServer, Clock]) -> None:
    loop, server, _ = node
    loop.step()
    # The viewer's own lines differ: the node is judged against the lines its exporter says.
    (view,) = ExporterNodes([_address(server)], LineChoice(60 * GB, 70 * GB)).fetch()
    assert (view.safe_bytes, view.max_bytes) == (80 * GB, 100 * GB)
    state = loop.latest
    assert state is not None
    assert view.status == "up" and view.reason is None
    assert (view.used, view.total) == (state.snapshot.memory.used, state.snapshot.memory.total)
    assert view.host == "spark-demo" and view.pressure == "ok"
    assert view.consumers[0].label == "ssd-tetris-train-1"


def test_stale_node_keeps_its_numbers_marked_stale(node: tuple[SamplingLoop, ExporterServer, Clock]) -> None:
    loop, server, clock = node
    loop.step()
    clock.now += 120  # the exporter's sampler has not published for two minutes
    (view,) = ExporterNodes([_address(server)], LineChoice(80 * GB, 100 * GB)).fetch()
    assert view.status == "stale" and "120 s old" in (view.reason or "")
    assert view.used is not None
    palette = next(iter(load_themes()[0].values())).palette
    text = card_text(view, 40, "GiB", palette).plain
    assert "STALE" in text and "GiB" in text


def test_down_and_old_schema_nodes_have_no_numbers() -> None:
    closed = f"127.0.0.1:{closed_port()}"
    with old_schema_exporter() as old:
        down, incompatible = ExporterNodes([closed, old], LineChoice(80 * GB, 100 * GB)).fetch()
    assert down.status == "down" and "connection refused" in (down.reason or "")
    assert incompatible.status == "incompatible"
    assert "schema 0" in (incompatible.reason or "") and "reads 1" in (incompatible.reason or "")
    palette = next(iter(load_themes()[0].values())).palette
    for view in (down, incompatible):
        assert view.used is None and view.total is None and not view.consumers
        shown = card_text(view, 40, "GiB", palette)
        assert isinstance(shown, Text)
        assert "GiB" not in shown.plain and " 0 " not in shown.plain and "not zero" in shown.plain


def test_the_same_snapshot_twice_is_one_tick(node: tuple[SamplingLoop, ExporterServer, Clock]) -> None:
    loop, server, _ = node
    loop.step()
    nodes = ExporterNodes([_address(server)], LineChoice(80 * GB, 100 * GB))
    nodes.fetch()
    nodes.fetch()
    assert len(nodes._nodes[0].loop.history) == 1
    loop.step()
    nodes.fetch()
    assert len(nodes._nodes[0].loop.history) == 2


def test_exporter_source_is_a_snapshot_source(node: tuple[SamplingLoop, ExporterServer, Clock]) -> None:
    loop, server, _ = node
    source = ExporterSource(_address(server))
    with pytest.raises(NodeProblem) as problem:
        source.sample()  # nothing published yet
    assert problem.value.status == "stale"
    loop.step()
    state = loop.latest
    assert state is not None
    # The exporter's snapshot, less the command lines it leaves out by default (issue #27 item 9).
    no_argv = {"processes": {"__all__": {"cmdline"}}}
    sampled = source.sample()
    assert sampled.model_dump(exclude=no_argv) == state.snapshot.model_dump(exclude=no_argv)
    assert all(p.cmdline == "" for p in sampled.processes)


def test_hostile_names_stay_plain_text_on_the_card(node: tuple[SamplingLoop, ExporterServer, Clock]) -> None:
    loop, server, _ = node
    loop.step()
    state = loop.latest
    assert state is not None and state.snapshot.accounting is not None
    state.snapshot.accounting.consumers[0].label = "[bold red]boom[/] \x1b[2J"
    state.snapshot.hostname = "[link=x]host[/link]"
    state._json.clear()  # rendered again, with the names above
    (view,) = ExporterNodes([_address(server)], LineChoice(80 * GB, 100 * GB)).fetch()
    palette = next(iter(load_themes()[0].values())).palette
    text = card_text(view, 60, "GiB", palette)
    assert "[bold red]boom[/] ^[[2J" in text.plain and "[link=x]host[/link]" in text.plain
    assert "\x1b" not in text.plain


@functools.cache  # once per worker: the tests read its state, never step it
def _creeping_state() -> SamplingLoop:
    loop = SamplingLoop(DemoSource("default", seed=0), 1.0, 80 * GB, 100 * GB)
    for _ in range(400):  # until the training run's creep is detected (tick 14 of the demo's)
        loop.step()
        if loop.latest is not None and loop.latest.creep and loop.latest.creep[0].eta_safe_s is not None:
            break
    assert loop.latest is not None and loop.latest.creep
    return loop


def test_creep_alerts_reach_the_card_from_either_source() -> None:
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from sparktop.cluster.exporters import view_of_state
    from sparktop.cluster.prometheus import _node_view

    loop = _creeping_state()
    state = loop.latest
    assert state is not None
    alert = state.creep[0]
    direct = view_of_state("node-a:9877", state)
    # The same state through the exporter's metrics, read as Prometheus would hand them back.
    series: dict[str, list[tuple[dict[str, str], float]]] = {}
    text = generate_latest(ExporterServer(loop, "127.0.0.1", 0).app.registry).decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    via_prometheus = _node_view("node-a:9877", series)
    palette = next(iter(load_themes()[0].values())).palette
    for view in (direct, via_prometheus):
        assert view.status == "up"
        (creep,) = [c for c in view.creep if c.label == alert.label]
        assert creep.rate_bytes_per_s == pytest.approx(alert.rate_bytes_per_s)
        assert creep.eta_safe_s == pytest.approx(alert.eta_safe_s)
        shown = card_text(view, 60, "GiB", palette).plain
        assert f"▲ {alert.label} +" in shown and "/min" in shown
    assert via_prometheus.used == direct.used
    # Prometheus names a process by its name alone (no pid in a label: it would churn series).
    unnumbered = [replace(c, label=re.sub(r" \(\d+\)$", "", c.label)) for c in direct.consumers]
    assert via_prometheus.consumers == unnumbered


def within(seconds: float, call: Callable[[], T]) -> T:
    """`call()`'s result, failing the test (instead of hanging it) when it takes longer than `seconds`."""
    result: list[T] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"no result within {seconds} s"
    return result[0]


def _with_values(body: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    data = json.loads(body)
    change(data)
    return json.dumps(data).encode()  # Python writes NaN and Infinity as JavaScript does


def test_a_bad_value_is_that_nodes_problem_only(node: tuple[SamplingLoop, ExporterServer, Clock]) -> None:
    """Issue 27 item 8: one exporter's `X-Sparktop-Safe-Bytes: inf` gave "0 nodes" (OverflowError in the
    whole fetch); NaN and Infinity in a snapshot are that value's problem, or that node's."""
    loop, server, _ = node
    loop.step()
    status, headers, body = exporter_answer(f"http://{_address(server)}")

    def no_temperature(data: dict[str, Any]) -> None:
        data["gpu"]["gpus"][0]["temperature_c"] = float("nan")

    def infinite_pool(data: dict[str, Any]) -> None:
        data["memory"]["total"] = float("inf")

    bad_headers = {**headers, "X-Sparktop-Safe-Bytes": "inf", "X-Sparktop-Aggressive-Bytes": "nan",
                   "X-Sparktop-Age-Seconds": "inf", "X-Sparktop-Interval": "-inf"}  # fmt: skip
    servers = [
        AnswerServer((status, bad_headers, body)),
        AnswerServer((status, headers, _with_values(body, no_temperature))),
        AnswerServer((status, headers, _with_values(body, infinite_pool))),
    ]
    with answering(servers[0]) as lines, answering(servers[1]) as nan, answering(servers[2]) as inf:
        addresses = [_address(server), lines.address, nan.address, inf.address]
        views = ExporterNodes(addresses, LineChoice(60 * GB, 70 * GB)).fetch()
    good, odd_lines, odd_gpu, broken = views
    assert good.status == "up" and good.used is not None
    # Lines it cannot state are the viewer's; an age it cannot state is unknown, not "inf s old".
    assert odd_lines.status == "up", odd_lines.reason
    assert (odd_lines.safe_bytes, odd_lines.max_bytes) == (60 * GB, 70 * GB)
    assert odd_lines.age_s is None and odd_lines.used == good.used
    assert odd_gpu.status == "up" and odd_gpu.gpus[0].temperature_c is None
    assert odd_gpu.gpus[0].power_w == good.gpus[0].power_w
    assert broken.status == "incompatible" and "memory.total" in (broken.reason or "")
    assert broken.used is None
    palette = next(iter(load_themes()[0].values())).palette
    for view in views:
        assert "nan" not in card_text(view, 60, "GiB", palette).plain.lower()


def test_a_dripping_exporter_goes_stale_by_the_rule_and_holds_no_one_else(
    node: tuple[SamplingLoop, ExporterServer, Clock],
) -> None:
    """Issue 27 item 8: an exporter answering a byte at a time stayed UP with frozen data for 41 s, and
    every other node waited for it. README: stale after no new sample for 3 intervals, at least 10 s."""
    loop, server, _ = node
    loop.step()
    clock = Clock()
    with answering(AnswerServer(exporter_answer(f"http://{_address(server)}"))) as drip:
        nodes = ExporterNodes(
            [_address(server), drip.address], LineChoice(80 * GB, 100 * GB), timeout=0.5, clock=clock
        )
        first = within(5, nodes.fetch)
        assert [v.status for v in first] == ["up", "up"]

        drip.drip = True
        started = time.monotonic()
        good, slow = within(5, nodes.fetch)
        # the deadline and the analysis, no more (the drip's answer: far beyond within()'s 5 s)
        assert time.monotonic() - started < wall_limit(0.5 + 1.0 + 0.5, defect=5.0)
        assert good.status == "up" and good.reason is None
        # Younger than the rule: its last numbers, saying why they are not new.
        assert slow.status == "up" and "no answer in" in (slow.reason or "")
        assert slow.used == first[1].used

        clock.now += 15  # the rule's 10 s have passed without an answer
        good, slow = within(5, nodes.fetch)
        assert good.status == "up"
        assert slow.status == "stale" and "no answer in" in (slow.reason or "")
        assert slow.age_s is not None and slow.age_s >= 15 and slow.used == first[1].used
        # At most one read in flight for the wedged node, however many refreshes: not one more thread each
        # time (the transport's deadline ends each read, so there may be none between two).
        assert sum(t.name == f"sparktop fetch {drip.address}" for t in threading.enumerate()) <= 1


def test_a_dripping_exporter_gives_the_dashboard_one_line_in_time(
    node: tuple[SamplingLoop, ExporterServer, Clock],
) -> None:
    loop, server, _ = node
    loop.step()
    with answering(AnswerServer(exporter_answer(f"http://{_address(server)}"))) as drip:
        drip.drip = True
        source = ExporterSource(drip.address, timeout=0.5)
        problem = within(3, lambda: _raised(source.sample))
        assert isinstance(problem, NodeProblem) and problem.no_answer
        assert re.fullmatch(rf"{drip.address}: no answer in 0\.\d s", str(problem))


def _raised(call: Callable[[], object]) -> BaseException | None:
    try:
        call()
    except Exception as exc:
        return exc
    return None


def test_the_view_reads_a_bounded_number_of_exporters() -> None:
    addresses = [f"127.0.0.1:{9000 + i}" for i in range(MAX_NODES + 1)]
    with pytest.raises(ValueError, match=f"at most {MAX_NODES}"):
        ExporterNodes(addresses, LineChoice(80 * GB, 100 * GB))


# What an exporter from before the series were renamed served (sparktop 0.x before issue 25.3): a `host`
# label everywhere, GPU names on every GPU series, sparktop_gpu_multiprocessors, the creep ETA's old name.
PRE_RENAME_METRICS = """\
sparktop_pool_total_bytes{host="spark-old"} 1.3e+11
sparktop_pool_used_bytes{host="spark-old"} 9e+10
sparktop_pool_available_bytes{host="spark-old"} 4e+10
sparktop_line_bytes{host="spark-old",line="safe"} 8e+10
sparktop_line_bytes{host="spark-old",line="aggressive"} 1e+11
sparktop_gpu_utilization_ratio{gpu="0",host="spark-old",name="NVIDIA GB10",uuid="GPU-1"} 0.5
sparktop_gpu_multiprocessors{gpu="0",host="spark-old",name="NVIDIA GB10",uuid="GPU-1"} 48
sparktop_creep_rate_bytes_per_second{consumer="train (42)",host="spark-old"} 1e+06
sparktop_creep_seconds_to_line{consumer="train (42)",host="spark-old",line="safe"} 600
sparktop_creep_seconds_to_line{consumer="train (42)",host="spark-old",line="aggressive"} 900
"""


def _series_of(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    from prometheus_client.parser import text_string_to_metric_families

    series: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return series


def test_prometheus_reads_exporters_from_before_the_rename_too() -> None:
    """Nodes are upgraded one at a time: the cluster view reads both namings alike."""
    from prometheus_client import generate_latest

    from sparktop.cluster.prometheus import _node_view

    old = _node_view("old:9877", _series_of(PRE_RENAME_METRICS))
    assert old.status == "up" and old.host == "spark-old" and old.used == 9e10
    assert [g.name for g in old.gpus] == ["NVIDIA GB10"] and old.gpus[0].utilization_pct == 50
    assert old.snapshot is not None and old.snapshot.gpu.gpus[0].sm_count == 48
    ((label, rate, safe, aggressive),) = [(c.label, c.rate_bytes_per_s, c.eta_safe_s, c.eta_aggressive_s)
                                          for c in old.creep]  # fmt: skip
    assert (label, rate, safe, aggressive) == ("train (42)", 1e6, 600, 900)

    loop = _creeping_state()
    assert loop.latest is not None
    new = _node_view(
        "new:9877", _series_of(generate_latest(ExporterServer(loop, "127.0.0.1", 0).app.registry).decode())
    )
    gpu = loop.latest.snapshot.gpu.gpus[0]
    assert new.host == loop.latest.snapshot.hostname
    assert [g.name for g in new.gpus] == [gpu.name]
    assert new.snapshot is not None and new.snapshot.gpu.gpus[0].sm_count == gpu.sm_count
    assert new.creep and all(c.eta_safe_s is not None for c in new.creep)
