"""The cluster view on two real exporters (in-process HTTP servers over demo sources): cards side by side,
keyboard navigation, a node's read-only detail, and the What-if planner on the chosen node's baseline."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
import pytest_asyncio
from textual.pilot import Pilot
from textual.widget import Widget

from sparktop.analysis.lines import LineChoice
from sparktop.cluster.exporters import ExporterNodes, ExporterSource
from sparktop.cluster.node import CreepLine, NodeView
from sparktop.cluster.report import nodes_text
from sparktop.collect.docker import DockerController
from sparktop.core.snapshot import GB
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.sources.demo import DemoSource
from sparktop.ui.app import SparktopApp
from sparktop.ui.cluster import ClusterApp, NodeCard, NodeDetailScreen, NodeWhatIfScreen, card_text
from sparktop.ui.themes import DEFAULT_THEME, load_themes
from sparktop.ui.whatif import WhatIfPane
from sparktop.ui.widgets.budget_bar import BudgetBar
from sparktop.ui.widgets.status_line import StatusLine
from tests.fixtures.exporters import closed_port

# The checks that drive the cluster view with keys share one (`cluster`) in the module's event loop.
in_module_loop = pytest.mark.asyncio(loop_scope="module")


Nodes = list[tuple[SamplingLoop, ExporterServer]]


@contextmanager
def exporters() -> Iterator[Nodes]:
    """Two exporters on this machine's loopback, each over a demo of its own, sampled once."""
    nodes = []
    for scenario, seed in (("default", 1), ("training", 2)):
        loop = SamplingLoop(DemoSource(scenario, seed=seed), 1.0, 80 * GB, 100 * GB)
        loop.step()
        server = ExporterServer(loop, "127.0.0.1", 0)
        server.start()
        nodes.append((loop, server))
    try:
        yield nodes
    finally:
        for _, server in nodes:
            server.shutdown()


@pytest.fixture
def two_nodes() -> Iterator[Nodes]:
    with exporters() as nodes:
        yield nodes


def _address(server: ExporterServer) -> str:
    host, port = server.address
    return f"{host}:{port}"


@dataclass
class Cluster:
    app: ClusterApp
    pilot: Pilot
    nodes: Nodes
    addresses: list[str]
    focused_first: Widget | None  # what had the focus once the first data came


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_cluster() -> AsyncIterator[Cluster]:
    """One cluster view on two exporters for the module's checks that drive it with keys (each starts it
    on its cards: `cluster` below)."""
    with exporters() as nodes:
        addresses = [_address(server) for _, server in nodes]
        app = ClusterApp(ExporterNodes(addresses, LineChoice(80 * GB, 100 * GB)), auto_refresh=False)
        async with app.run_test(size=(120, 36)) as pilot:
            await app.refresh_once()
            await pilot.pause()
            yield Cluster(app, pilot, nodes, addresses, app.focused)


@pytest_asyncio.fixture(loop_scope="module")
async def cluster(shared_cluster: Cluster) -> Cluster:
    """The shared cluster view back on its cards, the first one focused."""
    app = shared_cluster.app
    while len(app.screen_stack) > 1:
        app.pop_screen()
    app.query(NodeCard).first().focus()
    await shared_cluster.pilot.pause()
    return shared_cluster


@in_module_loop
async def test_cards_detail_and_whatif_on_the_chosen_node(cluster: Cluster) -> None:
    app, pilot, two_nodes, addresses = cluster.app, cluster.pilot, cluster.nodes, cluster.addresses
    cards = list(app.query(NodeCard))
    assert [c.node.name for c in cards] == addresses
    assert cluster.focused_first is cards[0]  # the first card has the focus from the start
    assert app.focused is cards[0]
    await pilot.press("right")
    assert app.focused is cards[1]

    await pilot.press("enter")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, NodeDetailScreen) and screen.node_name == addresses[1]
    second = two_nodes[1][0].latest
    assert second is not None
    head = str(screen.query_one("#detail-head").render())
    assert addresses[1] in head and "read-only" in head
    assert screen.query_one(BudgetBar).display
    assert "ssd-tetris-train-1" in str(screen.query_one("#detail-body").render())

    await pilot.press("w")
    await pilot.pause()
    assert isinstance(app.screen, NodeWhatIfScreen)
    pane = app.screen.query_one(WhatIfPane)
    baseline = pane.baseline()
    assert baseline.source == "live"
    assert baseline.used.mid == second.snapshot.memory.used  # the second node's, not the first's
    first = two_nodes[0][0].latest
    assert first is not None and first.snapshot.memory.used != second.snapshot.memory.used

    for _ in range(3):  # the What-if pane's own Esc (its find box) may take the first one
        if app.screen is app.screen_stack[0]:
            break
        await pilot.press("escape")
        await pilot.pause()
    assert app.screen is app.screen_stack[0]


async def test_whatif_refuses_a_down_node() -> None:
    app = ClusterApp(ExporterNodes(["127.0.0.1:1"], LineChoice(80 * GB, 100 * GB)), auto_refresh=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.refresh_once()
        await pilot.pause()
        await pilot.press("w")
        await pilot.pause()
        assert not isinstance(app.screen, NodeWhatIfScreen)
        assert any("no live baseline" in str(n.message) for n in app._notifications)


def test_exporter_source_acts_only_when_allowed_and_live(
    two_nodes: list[tuple[SamplingLoop, ExporterServer]],
) -> None:
    address = _address(two_nodes[0][1])
    plain = ExporterSource(address)
    plain.sample()
    assert plain.controller() is None  # a read-only session
    allowed = ExporterSource(address, local_actions=True)
    allowed.sample()
    assert allowed.name == "demo" and allowed.controller() is None  # the demo's engine is in another process
    allowed.name = "live"  # what a live exporter's snapshots say
    assert isinstance(allowed.controller(), DockerController)


@in_module_loop
async def test_the_first_esc_closes_the_node_detail(cluster: Cluster) -> None:
    """Issue 23 item 5: Enter opened the detail twice (the card's key handler and the app's binding), so
    the first Esc closed only the copy on top."""
    app, pilot = cluster.app, cluster.pilot
    for _ in range(2):  # and again: the way back leaves nothing behind
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeDetailScreen) and len(app.screen_stack) == 2
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.screen_stack[0] and len(app.screen_stack) == 1
    await pilot.click(NodeCard)
    await pilot.pause()
    assert len(app.screen_stack) == 2
    await pilot.press("w")  # the What-if over the detail: each Esc goes back one screen
    await pilot.pause()
    assert isinstance(app.screen, NodeWhatIfScreen)
    await pilot.press("escape")
    await pilot.pause()
    assert isinstance(app.screen, NodeDetailScreen)
    await pilot.press("escape")
    await pilot.pause()
    assert len(app.screen_stack) == 1


async def test_the_dashboard_on_a_down_exporter_says_why_in_words() -> None:
    """Issue 23 item 5: the header read `stale: NodeProblem: …` — a class name is no message for a user."""
    address = f"127.0.0.1:{closed_port()}"
    app = SparktopApp(ExporterSource(address), auto_refresh=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.refresh_once()
        await pilot.pause()
        header = str(app.query_one(StatusLine).render())
        assert f"{address}: connection refused" in header
        assert "NodeProblem" not in header


@pytest.mark.parametrize(
    ("eta_safe_s", "eta_aggressive_s", "said"),
    [
        (2400.0, 7200.0, "safe in ~40 min"),  # the nearest line still ahead
        (-5.0, 7200.0, "aggressive in ~2 h 00 min"),  # past safe: the next one
        (-5.0, None, "over safe"),
        (-5.0, 0.0, "over aggressive"),
        (None, 7200.0, "aggressive in ~2 h 00 min"),
        (None, None, ""),  # no estimate: nothing said
    ],
)
def test_the_card_and_the_report_say_the_same_of_a_creep(
    eta_safe_s: float | None, eta_aggressive_s: float | None, said: str
) -> None:
    creep = CreepLine("train (42)", 1024 * 1024, eta_safe_s, eta_aggressive_s)
    node = NodeView(
        "spark-a:9877", "up", host="spark-a", total=120 * GB, used=60 * GB, pressure="ok", creep=[creep]
    )
    palette = load_themes()[0][DEFAULT_THEME].palette
    card = card_text(node, 60, "GiB", palette).plain.splitlines()
    assert card[-1] == f"▲ train (42) +60 MiB/min {said}".rstrip()
    report = nodes_text([node], "exporters").splitlines()
    assert report[-1] == f"  creep  train (42) +60 MiB/min {said}".rstrip()


def test_the_room_to_a_line_is_in_the_lines_unit() -> None:
    """ "safe 80 GB: 18.6 GiB left" mixed two units in one phrase (issue 32, Rough): the room to a line is
    in decimal GB, as the line is, on the card and in the report."""
    node = NodeView(
        "spark-a:9877", "up", host="spark-a", total=120 * GB, used=60 * GB, pressure="ok",
        safe_bytes=80 * GB, max_bytes=100 * GB,
    )  # fmt: skip
    palette = load_themes()[0][DEFAULT_THEME].palette
    card = card_text(node, 60, "GiB", palette).plain
    report = nodes_text([node], "exporters")
    for text in (card, report):
        assert "safe 80 GB: 20.0 GB left" in text and "aggressive 100 GB: 40.0 GB left" in text, text
