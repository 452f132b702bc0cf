"""`sparktop --cluster`: every node side by side, read-only.

Each card: the node's pool bar against its safe and aggressive lines, GPU, pressure level, top consumers and
creep alerts. A node that is down, stale or speaks another schema says so on its card, with no numbers (or,
stale, with its last numbers dimmed) — never zeros. Enter (or a click) opens a node's detail; `w` opens the
What-if planner on that node's live baseline. Nothing here acts on any node.

Data flow: every `interval` seconds a daemon thread calls `cluster.fetch()` (HTTP to Prometheus or to the
exporters) and posts the node views to the app. Nothing waits for it: not the screen, not `q` (a thread pool's
threads would be joined at exit, and a server that answers one byte a second would hold the exit), and a
fetch that has not answered within the stale rule is given up on, the nodes shown stale. At most MAX_NODES
cards are drawn (the source chooses which); the status line counts the rest.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import HorizontalScroll, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from sparktop.analysis.lines import SPARK_POOL, LineChoice, Lines
from sparktop.cluster.deadline import OneCall, Overdue
from sparktop.cluster.node import MAX_NODES, ClusterError, ClusterSource, NodeView
from sparktop.cluster.report import creep_reaches
from sparktop.core.format import fmt_bytes, fmt_est, fmt_gb, fmt_rate, fmt_size, unit_size
from sparktop.core.safe_text import error_line
from sparktop.core.safe_text import visible as plain
from sparktop.exporter.state import stale_after_s
from sparktop.settings.config import Config
from sparktop.ui.exit_signals import end_on_signals
from sparktop.ui.styles_cache_leak import release_retained_styles
from sparktop.ui.themes import DEFAULT_THEME, Palette, derive_palette, load_themes
from sparktop.ui.toasts import PlainToastApp
from sparktop.ui.whatif import WhatIfContext, WhatIfPane
from sparktop.ui.widgets.budget_bar import BudgetBar, bar_state
from sparktop.ui.widgets.footer import Footer

STATUS_STYLE = {
    "up": "bold green",
    "stale": "bold yellow",
    "down": "bold red",
    "incompatible": "bold magenta",
}


def node_choice(node: NodeView | None, config: Config) -> LineChoice:
    """A node's own lines where its exporter says them, else the viewer's choice (placed on its pool)."""
    choice = LineChoice.of(config)
    if node is None:
        return choice
    return LineChoice(node.safe_bytes or choice.safe, node.max_bytes or choice.aggressive)


def node_lines(node: NodeView, config: Config) -> Lines:
    return node_choice(node, config).at(float(node.total or SPARK_POOL))


def pool_bar(node: NodeView, width: int, palette: Palette) -> Text:
    """The pool as one row of cells, used filled, with the safe and aggressive lines marked `┃`."""
    assert node.total is not None and node.used is not None
    safe, aggressive = node.safe_bytes, node.max_bytes
    scale = max(node.total, safe or 0, aggressive or 0, 1)
    used_cols = min(width, round(width * node.used / scale))
    state = bar_state(node.used, safe or scale, aggressive or scale)
    color = {"under-safe": palette.ok, "between": palette.warn}.get(str(state), palette.critical)
    cells = [("█", color) if i < used_cols else ("░", "dim") for i in range(width)]
    for line in (safe, aggressive):
        if line:
            col = min(width - 1, round(width * line / scale))
            cells[col] = ("┃", f"bold {palette.line}")
    text = Text()
    for char, style in cells:
        text.append(char, style)
    return text


def card_text(node: NodeView, width: int, units: str, palette: Palette) -> Text:
    """A node card's content. External text (host names, consumer labels, reasons) goes in as plain Text."""
    width = max(20, width)
    out = Text(no_wrap=False, overflow="fold")
    out.append(plain(node.host or node.name), "bold")
    out.append(f"  {node.status.upper()}", STATUS_STYLE.get(node.status, "bold"))
    out.append("\n")
    if node.host and node.host != node.name:
        out.append(plain(node.name) + "\n", "dim")
    if node.reason:
        out.append(plain(node.reason) + "\n", "yellow" if node.status == "stale" else "red")
    if not node.has_numbers:
        out.append("no data: its numbers are unknown, not zero", "dim")
        return out
    assert node.total is not None and node.used is not None
    body = Text()
    body.append_text(pool_bar(node, width, palette))
    body.append("\n")
    body.append(f"{node.used / unit_size(units):.1f} / {fmt_size(node.total, units)} used")
    if node.available is not None:
        body.append(f", {node.available / unit_size(units):.1f} free", "dim")
    body.append("\n")
    for name, line in (("safe", node.safe_bytes), ("aggressive", node.max_bytes)):
        if line:
            left = line - node.used
            room = f"{fmt_est(left)} left" if left > 0 else "over it"  # in the line's unit
            body.append(f"{name} {fmt_gb(line)}: {room}\n", "dim" if left > 0 else f"bold {palette.warn}")
    level = node.pressure or "?"
    body.append("pressure ")
    body.append(level.upper(), f"bold {palette.level(level)}")
    body.append("\n")
    for gpu in node.gpus:
        parts = []
        if gpu.utilization_pct is not None:
            parts.append(f"{gpu.utilization_pct:.0f} %")
        if gpu.temperature_c is not None:
            parts.append(f"{gpu.temperature_c:.0f} °C")
        if gpu.power_w is not None:
            parts.append(f"{gpu.power_w:.0f} W")
        if gpu.sm_clock_mhz is not None:
            parts.append(f"{gpu.sm_clock_mhz / 1000:.2f} GHz")
        body.append("GPU ", "bold")
        body.append(" · ".join(parts) if parts else "no readings")
        body.append("\n")
    if node.consumers:
        body.append("top consumers\n", "bold")
        for consumer in node.consumers:
            size = fmt_bytes(consumer.total, units)
            label = plain(consumer.label)[: max(4, width - len(size) - 3)]
            body.append(f" {label}")
            body.append(" " * max(1, width - len(label) - len(size) - 1) + size + "\n")
    for alert in node.creep:
        body.append("▲ ", f"bold {palette.warn}")
        body.append(plain(alert.label))
        when = creep_reaches(alert)
        body.append(f" {fmt_rate(alert.rate_bytes_per_s * 60, units)}", f"bold {palette.warn}")
        body.append(f" {when}\n" if when else "\n")
    if node.status == "stale":
        body.stylize("dim")
    out.append_text(body)
    out.rstrip()
    return out


class NodeCard(Static, can_focus=True):
    DEFAULT_CSS = """
    NodeCard { width: 1fr; min-width: 34; height: auto; border: round $panel-lighten-2; padding: 0 1; }
    NodeCard:focus { border: round $accent; }
    NodeCard.-down { border: round $error; }
    NodeCard.-stale { border: round $warning; }
    """

    class Chosen(Message):
        def __init__(self, card: NodeCard) -> None:
            super().__init__()
            self.card = card

    def __init__(self, node: NodeView, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.node = node

    def show(self, node: NodeView, units: str, palette: Palette) -> None:
        self.node = node
        self.set_class(node.status in ("down", "incompatible"), "-down")
        self.set_class(node.status == "stale", "-stale")
        width = (self.content_size.width or 34) if self.is_mounted else 34
        self.update(card_text(node, width, units, palette))

    def on_resize(self) -> None:
        # The bar fills the card's width, known only after layout.
        app = self.app
        if isinstance(app, ClusterApp):
            self.show(self.node, app.config.units, app.palette)

    def on_click(self) -> None:
        self.focus()
        self.post_message(self.Chosen(self))

    # Enter is the app's binding (`open`): a key handler here as well opened the detail twice, and the
    # first Esc closed only the one on top.


def detail_text(node: NodeView, units: str, palette: Palette) -> Text:
    out = Text()
    if node.reason:
        out.append(plain(node.reason) + "\n", "yellow")
    if not node.has_numbers:
        out.append("no data: its numbers are unknown, not zero\n", "dim")
        return out
    for gpu in node.gpus:
        out.append(f"GPU {plain(gpu.name)}: ", "bold")
        out.append(
            ", ".join(
                p
                for p in (
                    f"util {gpu.utilization_pct:.0f} %" if gpu.utilization_pct is not None else "",
                    f"{gpu.temperature_c:.0f} °C" if gpu.temperature_c is not None else "",
                    f"{gpu.power_w:.0f} W" if gpu.power_w is not None else "",
                )
                if p
            )
            + "\n"
        )
    level = node.pressure or "?"
    out.append("pressure ")
    out.append(level.upper() + "\n", f"bold {palette.level(level)}")
    snap = node.snapshot
    consumers = snap.accounting.consumers if snap is not None and snap.accounting else []
    out.append(f"\n{'consumer':40} {'CPU side':>11} {'GPU side':>11} {'total':>11}\n", "bold")
    for c in sorted(consumers, key=lambda c: c.total, reverse=True):
        out.append(f"{plain(c.label)[:40]:40}")
        out.append(
            f" {fmt_bytes(c.cpu_bytes, units):>11} {fmt_bytes(c.gpu_bytes, units):>11} "
            f"{fmt_bytes(c.total, units):>11}\n"
        )
    if snap is not None and snap.accounting is not None:
        out.append(f"{'unattributed (kernel, driver, cache)':40} {'':>23} ")
        out.append(f"{fmt_bytes(snap.accounting.unattributed, units):>11}\n")
    for alert in node.creep:
        out.append("\n▲ creep: ", f"bold {palette.warn}")
        out.append(f"{plain(alert.label)} {fmt_rate(alert.rate_bytes_per_s * 60, units)}")
    return out


class NodeDetailScreen(Screen[None]):
    """One node, read-only: its bar (the dashboard's), GPU, pressure and every consumer."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("w", "app.whatif", "What-if on this node"),
    ]
    DEFAULT_CSS = """
    NodeDetailScreen #detail-head { height: 1; background: $panel; padding: 0 1; }
    NodeDetailScreen #detail-bar { margin: 0 1; }
    NodeDetailScreen #detail-body { padding: 0 1; }
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.node_name = name

    def compose(self) -> ComposeResult:
        yield Static("", id="detail-head", markup=False)
        yield BudgetBar(id="detail-bar")
        with VerticalScroll():
            yield Static("", id="detail-body", markup=False)
        yield Footer()

    def show(self, node: NodeView, config: Config, palette: Palette) -> None:
        head = Text.assemble((plain(node.host or node.name), "bold"), f" ({plain(node.name)}) · ")
        head.append(node.status.upper(), STATUS_STYLE.get(node.status, "bold"))
        head.append(" · read-only (cluster view)", "dim")
        self.query_one("#detail-head", Static).update(head)
        bar = self.query_one(BudgetBar)
        snap = node.snapshot
        bar.display = node.has_numbers and snap is not None and snap.accounting is not None
        if bar.display and snap is not None and snap.accounting is not None:
            lines = node_lines(node, config)
            total, safe, aggressive = snap.memory.total, lines.safe_bytes, lines.max_bytes
            bar.show(snap.accounting, total, safe, aggressive, config.units, palette)
        self.query_one("#detail-body", Static).update(detail_text(node, config.units, palette))


class NodeWhatIfScreen(Screen[None]):
    """The What-if planner against one node's live baseline."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]
    DEFAULT_CSS = """
    NodeWhatIfScreen #whatif-node { height: 1; background: $panel; padding: 0 1; }
    """

    def __init__(self, name: str, context: Callable[[], WhatIfContext]) -> None:
        super().__init__()
        self.node_name = name
        self.whatif_context = context

    def compose(self) -> ComposeResult:
        yield Static(
            f"What-if on {plain(self.node_name)} (its live baseline)", id="whatif-node", markup=False
        )
        yield WhatIfPane(context=self.whatif_context, id="node-whatif")
        yield Footer()


class NodeRow(HorizontalScroll, can_focus=False):
    """The cards side by side; the cards take the focus, not the row."""


class ClusterApp(PlainToastApp):
    TITLE = "sparktop cluster"
    CSS = """
    #cluster-status { height: 1; background: $panel; padding: 0 1; }
    #nodes { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("right,l", "app.focus_next", "Next node", show=False),
        Binding("left,h", "app.focus_previous", "Previous node", show=False),
        Binding("enter", "open", "Detail"),
        Binding("w", "whatif", "What-if"),
        Binding("r", "refresh", "Refresh"),
    ]

    class Fetched(Message):
        """A fetch came back (posted from its thread): the nodes, or the whole source's error."""

        def __init__(self, nodes: list[NodeView] | None, error: str | None, left_out: int) -> None:
            super().__init__()
            self.nodes, self.error, self.left_out = nodes, error, left_out

    def __init__(
        self, cluster: ClusterSource, config: Config | None = None, interval: float = 2.0, *,
        auto_refresh: bool = True, exit_on_signals: Iterable[int] = (), give_up_s: float | None = None,
    ) -> None:  # fmt: skip
        """`exit_on_signals` (the CLI passes SIGTERM, SIGHUP, SIGINT): these end the app as `q` does, the
        terminal restored, with 128 + the signal number as its return code. `give_up_s`: how long a fetch
        is waited for before the nodes are shown stale (default: the stale rule for this interval)."""
        super().__init__()
        self._exit_signals = tuple(exit_on_signals)
        self.cluster = cluster
        self.config = config or Config()
        self.interval = interval
        self.auto_sample = auto_refresh
        self.nodes: dict[str, NodeView] = {}
        self.error: str | None = None
        self.left_out = 0  # nodes the source knows of beyond those shown
        self._polling = False
        self._fetch: OneCall[tuple[list[NodeView], int]] = OneCall("sparktop cluster fetch")
        self.give_up_s = give_up_s if give_up_s is not None else stale_after_s(interval)
        self._spark_themes, self._theme_errors = load_themes()
        for spark in self._spark_themes.values():
            self.register_theme(spark.theme)
        wanted = self.config.theme if self.config.theme in self.available_themes else DEFAULT_THEME
        self.theme = wanted if wanted in self.available_themes else "textual-dark"

    @property
    def palette(self) -> Palette:
        spark = self._spark_themes.get(self.theme)
        return spark.palette if spark else derive_palette(self.current_theme)

    def compose(self) -> ComposeResult:
        yield Static("", id="cluster-status", markup=False)
        yield NodeRow(id="nodes")
        yield Footer()

    def on_load(self) -> None:
        end_on_signals(self, self._exit_signals)  # before the driver takes the terminal over

    def on_mount(self) -> None:
        for message in self._theme_errors:
            self.notify(message, severity="warning", markup=False)
        self._show_status()
        if self.auto_sample:
            self.set_interval(self.interval, self._tick)
            self._tick()

    def on_unmount(self) -> None:
        release_retained_styles()  # what Textual's cache keeps of this app's widgets goes with it

    # -- fetching -------------------------------------------------------------------------------------------

    def _tick(self) -> None:
        if not self._polling:
            self._polling = True
            threading.Thread(target=self._poll, name="sparktop cluster poll", daemon=True).start()

    def _read_source(self) -> tuple[list[NodeView], int]:
        return self.cluster.fetch(), getattr(self.cluster, "left_out", 0)

    def _poll(self) -> None:
        """On a daemon thread: one fetch, given up after the stale rule (it goes on in the background and
        the next poll waits on it again, never a second one beside it)."""
        nodes: list[NodeView] | None = None
        error: str | None = None
        left_out = 0
        try:
            nodes, left_out = self._fetch(self._read_source, self.give_up_s)
        except Overdue as exc:
            error = f"{self.cluster.description}: {exc}"
        except ClusterError as exc:
            error = str(exc)
        except Exception as exc:  # a source must not take the view down
            error = error_line(exc)
        with contextlib.suppress(RuntimeError):  # the app has ended: nobody to tell
            self.post_message(self.Fetched(nodes, error, left_out))

    def on_cluster_app_fetched(self, message: Fetched) -> None:
        self.receive(message.nodes, message.error, message.left_out)

    async def refresh_once(self) -> None:
        """Fetch now, on the event loop (tests, with auto_refresh=False)."""
        try:
            self.receive(self.cluster.fetch(), None, getattr(self.cluster, "left_out", 0))
        except ClusterError as exc:
            self.receive(None, str(exc))

    def receive(self, nodes: list[NodeView] | None, error: str | None, left_out: int = 0) -> None:
        release_retained_styles()  # once a fetch: closed node screens' lines (see styles_cache_leak)
        self._polling = False
        self.error = error
        if nodes is not None:
            # Whatever a source hands over, the cards drawn are bounded.
            self.left_out = left_out + max(0, len(nodes) - MAX_NODES)
            self._show_nodes(nodes[:MAX_NODES])
        else:
            # The source failed as a whole: what we knew is no longer current.
            for name, node in list(self.nodes.items()):
                if node.status == "up":
                    node.status = "stale"
                    node.reason = "no fresh data (see the line above)"
                self.nodes[name] = node
            self._show_nodes(list(self.nodes.values()))
        self._show_status()

    def _show_nodes(self, nodes: list[NodeView]) -> None:
        container = self.query_one("#nodes", NodeRow)
        cards = {card.node.name: card for card in container.query(NodeCard)}
        self.nodes = {node.name: node for node in nodes}
        gone = [card for name, card in cards.items() if name not in self.nodes]
        if gone:
            container.remove_children(gone)  # at once: one by one, each removal lays the row out again
        new: list[NodeCard] = []
        for node in nodes:
            card = cards.get(node.name)
            if card is None:
                card = NodeCard(node)
                new.append(card)
            card.show(node, self.config.units, self.palette)
        if new:
            container.mount_all(new)
        if not isinstance(self.focused, NodeCard) and self.screen is self.screen_stack[0]:
            first = next(iter(container.query(NodeCard)), None)
            if first is not None:
                first.focus()
        if isinstance(self.screen, NodeDetailScreen):
            shown = self.nodes.get(self.screen.node_name)
            if shown is not None:
                self.screen.show(shown, self.config, self.palette)
        elif isinstance(self.screen, NodeWhatIfScreen):
            shown = self.nodes.get(self.screen.node_name)
            if shown is not None and shown.snapshot is not None:
                self.screen.query_one(WhatIfPane).refresh_baseline(shown.snapshot)

    def _show_status(self) -> None:
        text = Text.assemble(("sparktop cluster", "bold"), f" · {self.cluster.description}", " · ")
        counts = {s: sum(1 for n in self.nodes.values() if n.status == s) for s in STATUS_STYLE}
        text.append(f"{len(self.nodes)} nodes")
        if self.left_out:
            text.append(f" shown of {len(self.nodes) + self.left_out} (those that need a look first)", "bold")
        for status, count in counts.items():
            if count and status != "up":
                text.append(f" · {count} {status}", STATUS_STYLE[status])
        text.append(" · read-only", "dim")
        if self.error:
            text.append("  ")
            text.append(plain(self.error), "bold red")
        self.query_one("#cluster-status", Static).update(text)

    # -- actions --------------------------------------------------------------------------------------------

    def _focused_node(self) -> NodeView | None:
        focused = self.focused
        if isinstance(focused, NodeCard):
            return self.nodes.get(focused.node.name, focused.node)
        return None

    def on_node_card_chosen(self, event: NodeCard.Chosen) -> None:
        self._open(event.card.node.name)

    def action_open(self) -> None:
        node = self._focused_node()
        if node is not None:
            self._open(node.name)

    def _open(self, name: str) -> None:
        screen = NodeDetailScreen(name)
        self.push_screen(screen)
        node = self.nodes.get(name)
        if node is not None:
            self.call_after_refresh(screen.show, node, self.config, self.palette)

    def action_whatif(self) -> None:
        name = self.screen.node_name if isinstance(self.screen, NodeDetailScreen) else None
        node = self.nodes.get(name) if name else self._focused_node()
        if node is None:
            return
        if node.snapshot is None or not node.has_numbers:
            self.notify(
                f"{plain(node.name)}: no live baseline ({node.status})", severity="warning", markup=False
            )
            return
        self.push_screen(NodeWhatIfScreen(node.name, lambda: self._whatif_context(node.name)))

    def _whatif_context(self, name: str) -> WhatIfContext:
        node = self.nodes.get(name)
        cfg = self.config
        snapshot = node.snapshot if node is not None and node.has_numbers else None
        return WhatIfContext(snapshot, node_choice(node, cfg), cfg.units, self.palette)

    def action_refresh(self) -> None:
        self._tick()
