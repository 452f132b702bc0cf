"""A real Prometheus scrapes two `sparktop serve --demo` nodes (different seeds) and an exporter speaking an
older schema; the cluster view is built from that Prometheus. One Prometheus per module (scrape every 0.5 s).

The exporters sample once an hour, so every scrape sees the same snapshot and Prometheus's values can be
compared exactly with each exporter's /snapshot.json.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sparktop.cluster.model import ClusterError
from sparktop.cluster.prometheus import PrometheusCluster
from sparktop.model import Snapshot
from sparktop.ui.cluster import ClusterApp, NodeCard
from tests.fixtures.exporters import (
    Exporter,
    PrometheusServer,
    free_port,
    get,
    launch_exporter,
    old_schema_exporter,
    wait_ready,
)


@dataclass
class Lab:
    prometheus: PrometheusServer
    nodes: list[Exporter]
    old: str


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    # Started together: each takes a second or two to import on a busy machine.
    nodes = [
        launch_exporter("--demo", "default", "--seed", "1", "--interval", "3600"),
        launch_exporter("--demo", "training", "--seed", "2", "--interval", "3600"),
    ]
    try:
        for node in nodes:
            wait_ready(node)
        with old_schema_exporter() as old:
            workdir = tmp_path_factory.mktemp("prometheus")
            prometheus = PrometheusServer(workdir, [n.address for n in nodes] + [old])
            try:
                prometheus.wait_for("sparktop_pool_used_bytes", 3)  # the old node serves one too
                prometheus.wait_for("sparktop_build_info", 3)
                yield Lab(prometheus, nodes, old)
            finally:
                prometheus.stop()
    finally:
        for node in nodes:
            node.stop()


def _snapshot(node: Exporter) -> Snapshot:
    status, _, body = get(f"{node.url}/snapshot.json")
    assert status == 200
    return Snapshot.model_validate(json.loads(body))


def test_prometheus_values_match_the_snapshots(lab: Lab) -> None:
    used = {
        r["metric"]["instance"]: float(r["value"][1])
        for r in lab.prometheus.query("sparktop_pool_used_bytes")
    }
    gpu = {
        r["metric"]["instance"]: float(r["value"][1])
        for r in lab.prometheus.query('sum by (instance) (sparktop_consumer_gpu_bytes{kind="container"})')
    }
    snapshots = {node.address: _snapshot(node) for node in lab.nodes}
    for address, snap in snapshots.items():
        assert used[address] == snap.memory.used
        containers_gpu = sum(c.gpu_bytes for c in (snap.accounting.consumers if snap.accounting else [])
                             if c.kind == "container")  # fmt: skip
        assert gpu[address] == containers_gpu
    a, b = snapshots.values()
    assert a.memory.used != b.memory.used  # two different nodes, not one twice


def test_cluster_from_prometheus_shows_both_nodes_and_the_old_one(lab: Lab) -> None:
    views = {v.name: v for v in PrometheusCluster(lab.prometheus.url).fetch()}
    assert set(views) == {lab.nodes[0].address, lab.nodes[1].address, lab.old}
    for node in lab.nodes:
        view = views[node.address]
        snap = _snapshot(node)
        assert view.status == "up", view.reason
        assert (view.used, view.total) == (snap.memory.used, snap.memory.total)
        assert view.host == snap.hostname
        assert view.consumers and view.consumers[0].total == max(c.total for c in snap.accounting.consumers)
        assert view.snapshot is not None and view.snapshot.memory.used == snap.memory.used
    old = views[lab.old]
    assert old.status == "incompatible" and "schema '0'" in (old.reason or "")
    assert old.used is None  # not a number from the old node's series


async def test_cluster_view_marks_a_killed_node_down(lab: Lab) -> None:
    cluster = PrometheusCluster(lab.prometheus.url)
    app = ClusterApp(cluster, auto_refresh=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.refresh_once()
        await pilot.pause()
        cards = {card.node.name: card for card in app.query(NodeCard)}
        assert {cards[n.address].node.status for n in lab.nodes} == {"up"}
        text = str(cards[lab.nodes[1].address].render())
        assert "UP" in text and "pressure" in text

        victim = lab.nodes[1]
        victim.stop()
        lab.prometheus.wait_for(f'up{{instance="{victim.address}"}} == 0', 1)
        await app.refresh_once()
        await pilot.pause()
        cards = {card.node.name: card for card in app.query(NodeCard)}
        down = cards[victim.address]
        assert down.node.status == "down"
        assert down.node.used is None and down.node.consumers == []
        shown = str(down.render())
        assert "DOWN" in shown and "unknown, not zero" in shown and "GiB" not in shown
        assert cards[lab.nodes[0].address].node.status == "up"


def test_unreachable_prometheus_is_one_line() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ClusterError) as error:
        PrometheusCluster(url).fetch()
    message = str(error.value)
    assert "cannot reach Prometheus" in message and url in message and "\n" not in message


def test_prometheus_without_sparktop_metrics(tmp_path: Path) -> None:
    # A Prometheus that scrapes only itself.
    empty = PrometheusServer(tmp_path, [])
    try:
        with pytest.raises(ClusterError) as error:
            PrometheusCluster(empty.url).fetch()
        assert "no sparktop metrics" in str(error.value)
    finally:
        empty.stop()


async def test_cluster_view_keeps_running_when_prometheus_fails() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    app = ClusterApp(PrometheusCluster(url), auto_refresh=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.refresh_once()
        await pilot.pause()
        status = str(app.query_one("#cluster-status").render())
        assert "cannot reach Prometheus" in status
        assert app.is_running
