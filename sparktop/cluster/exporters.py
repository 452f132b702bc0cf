"""Nodes read straight from their exporters' `/snapshot.json` (`sparktop --nodes host:port,...`).

Each node is analysed here as the exporter analyses it (`SamplingLoop`: accounting, pressure, creep), from
the snapshots it serves, so two Sparks need no Prometheus. `ExporterSource` is also a `SnapshotSource` in its
own right: the dashboard can run on one exporter (the browser view's sessions do, sharing one collector).
"""

from __future__ import annotations

from pydantic import ValidationError

from sparktop.cluster.http import FetchError, base_url, fetch
from sparktop.cluster.model import ConsumerLine, CreepLine, GpuLine, NodeStatus, NodeView
from sparktop.collect.control import ContainerController
from sparktop.exporter.state import NodeState, SamplingLoop, stale_after_s
from sparktop.model import SNAPSHOT_VERSION, Snapshot

TOP_CONSUMERS = 5


class NodeProblem(Exception):
    def __init__(self, status: NodeStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class ExporterSource:
    """`sample()` = the exporter's latest snapshot. Raises NodeProblem (down, stale, incompatible).

    `name` follows the exporter's own source ("live", "demo", "replay") once it has answered. `local_actions`:
    the exporter runs on this machine (`sparktop web --allow-actions`), so a live node's containers and
    processes can be acted on from here."""

    def __init__(self, address: str, timeout: float = 3.0, local_actions: bool = False) -> None:
        self.name = "exporter"
        self.local_actions = local_actions
        self.address = address
        self.url = base_url(address)
        self.timeout = timeout
        self.age_s: float | None = None
        self.interval_s: float | None = None
        self.last_timestamp: float | None = None

    def controller(self) -> ContainerController | None:
        """Docker on this machine, only for a live exporter here with actions allowed (`sparktop web
        --allow-actions`); any other node's containers are out of reach (collect/controllers.py)."""
        if self.local_actions and self.name == "live":
            from sparktop.collect.docker import DockerController

            return DockerController()
        return None

    def sample(self) -> Snapshot:
        try:
            reply = fetch(f"{self.url}/snapshot.json", self.timeout)
        except FetchError as exc:
            raise NodeProblem("down", f"{self.address}: {exc}") from exc
        if reply.status == 503:
            raise NodeProblem("stale", f"{self.address}: no snapshot yet")
        if reply.status != 200:
            raise NodeProblem("down", f"{self.address}: HTTP {reply.status} (is it `sparktop serve`?)")
        try:
            data = reply.json()
        except FetchError as exc:
            raise NodeProblem("incompatible", f"{self.address}: {exc}") from exc
        version = data.get("version") if isinstance(data, dict) else None
        if version != SNAPSHOT_VERSION:
            raise NodeProblem(
                "incompatible",
                f"{self.address} speaks snapshot schema {version!r}; this sparktop reads {SNAPSHOT_VERSION}",
            )
        try:
            snapshot = Snapshot.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise NodeProblem(
                "incompatible", f"{self.address}: snapshot field {where}: {first['msg']}"
            ) from exc
        self.age_s = _float(reply.headers.get("X-Sparktop-Age-Seconds"))
        self.interval_s = _float(reply.headers.get("X-Sparktop-Interval"))
        self.last_timestamp = snapshot.timestamp
        self.name = snapshot.source
        return snapshot

    def close(self) -> None:
        pass


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


class ExporterNodes:
    """`fetch()`: one NodeView per address, in the order given. Never raises: a node says what is wrong."""

    def __init__(self, addresses: list[str], safe_bytes: int, max_bytes: int) -> None:
        if not addresses:
            raise ValueError("--nodes needs at least one host:port")
        self.description = f"{len(addresses)} exporters"
        self._nodes = [_Node(address, safe_bytes, max_bytes) for address in addresses]

    def fetch(self) -> list[NodeView]:
        return [node.poll() for node in self._nodes]


class _Node:
    def __init__(self, address: str, safe_bytes: int, max_bytes: int) -> None:
        self.address = address
        self.source = ExporterSource(address)
        # The node's own analysis (history, pressure, creep), fed from its snapshots instead of a machine.
        self.loop = SamplingLoop(self.source, 1.0, safe_bytes, max_bytes)

    def poll(self) -> NodeView:
        try:
            snapshot = self.source.sample()
        except NodeProblem as problem:
            return NodeView(name=self.address, status=problem.status, reason=problem.reason)
        latest = self.loop.latest
        # The same snapshot served twice is not a new tick: history and creep must not count it again.
        if latest is None or snapshot.timestamp != latest.snapshot.timestamp:
            latest = self.loop.ingest(snapshot)
        view = view_of_state(self.address, latest)
        age, interval = self.source.age_s, self.source.interval_s
        view.age_s = age
        if age is not None and age > stale_after_s(interval):
            view.status = "stale"
            view.reason = f"{self.address}: its latest sample is {age:.0f} s old"
        return view


def view_of_state(name: str, state: NodeState) -> NodeView:
    snap = state.snapshot
    mem = snap.memory
    acct = snap.accounting
    consumers = sorted(acct.consumers, key=lambda c: c.total, reverse=True) if acct else []
    return NodeView(
        name=name,
        status="up",
        host=snap.hostname or None,
        total=mem.total,
        used=mem.used,
        available=mem.available,
        safe_bytes=state.safe_bytes,
        max_bytes=state.max_bytes,
        pressure=str(state.assessment.level),
        unattributed=acct.unattributed if acct else None,
        consumers=[
            ConsumerLine(c.label, c.kind, c.cpu_bytes, c.gpu_bytes) for c in consumers[:TOP_CONSUMERS]
        ],
        gpus=[
            GpuLine(g.name, g.utilization_pct, g.temperature_c, g.power_w, g.sm_clock_mhz)
            for g in snap.gpu.gpus
        ],
        creep=[CreepLine(a.label, a.rate_bytes_per_s, a.eta_safe_s, a.eta_aggressive_s) for a in state.creep],
        snapshot=snap,
    )
