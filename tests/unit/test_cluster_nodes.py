"""`sparktop --nodes`: nodes read straight from real exporters over HTTP — up, stale, down, older schema."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rich.text import Text

from sparktop.cluster.exporters import ExporterNodes, ExporterSource, NodeProblem
from sparktop.collect.demo import DemoSource
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.model import GB
from sparktop.ui.cluster import card_text
from sparktop.ui.themes import load_themes
from tests.fixtures.exporters import free_port, old_schema_exporter


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
    (view,) = ExporterNodes([_address(server)], 60 * GB, 70 * GB).fetch()
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
    (view,) = ExporterNodes([_address(server)], 80 * GB, 100 * GB).fetch()
    assert view.status == "stale" and "120 s old" in (view.reason or "")
    assert view.used is not None
    palette = next(iter(load_themes()[0].values())).palette
    text = card_text(view, 40, "GiB", palette).plain
    assert "STALE" in text and "GiB" in text


def test_down_and_old_schema_nodes_have_no_numbers() -> None:
    closed = f"127.0.0.1:{free_port()}"
    with old_schema_exporter() as old:
        down, incompatible = ExporterNodes([closed, old], 80 * GB, 100 * GB).fetch()
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
    nodes = ExporterNodes([_address(server)], 80 * GB, 100 * GB)
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
    assert source.sample().model_dump() == state.snapshot.model_dump()


def test_hostile_names_stay_plain_text_on_the_card(node: tuple[SamplingLoop, ExporterServer, Clock]) -> None:
    loop, server, _ = node
    loop.step()
    state = loop.latest
    assert state is not None and state.snapshot.accounting is not None
    state.snapshot.accounting.consumers[0].label = "[bold red]boom[/] \x1b[2J"
    state.snapshot.hostname = "[link=x]host[/link]"
    state._json = None
    (view,) = ExporterNodes([_address(server)], 80 * GB, 100 * GB).fetch()
    palette = next(iter(load_themes()[0].values())).palette
    text = card_text(view, 60, "GiB", palette)
    assert "[bold red]boom[/] ^[[2J" in text.plain and "[link=x]host[/link]" in text.plain
    assert "\x1b" not in text.plain


def _creeping_state() -> SamplingLoop:
    loop = SamplingLoop(DemoSource("default", seed=0), 1.0, 80 * GB, 100 * GB)
    for _ in range(400):  # the training run's creep is detected after a few minutes of simulated time
        loop.step()
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
    assert via_prometheus.used == direct.used and via_prometheus.consumers == direct.consumers
