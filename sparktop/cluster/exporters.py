"""Nodes read straight from their exporters' `/snapshot.json` (`sparktop --nodes host:port,...`).

Each node is analysed here as the exporter analyses it (`SamplingLoop`: accounting, pressure, creep), from
the snapshots it serves, so two Sparks need no Prometheus. `ExporterSource` is also a `SnapshotSource` in its
own right: the dashboard can run on one exporter (the browser view's sessions do, sharing one collector).

Every read has a deadline and runs on a daemon thread (cluster/deadline.py): a node that answers slowly (or
one byte at a time) is that node's problem only. It keeps its last numbers while they are younger than the
stale rule (README: no new sample for 3 intervals, at least 10 s), then shows them as stale; the other nodes
and the screen never wait for it, and neither does the exit.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from sparktop.analysis.lines import LineChoice
from sparktop.cluster.deadline import OneCall, Overdue
from sparktop.cluster.fetch import TIMEOUT_S, FetchError, Reply, base_url, fetch
from sparktop.cluster.node import MAX_NODES, ConsumerLine, CreepLine, GpuLine, NodeStatus, NodeView
from sparktop.collect.control import ContainerController
from sparktop.core.snapshot import SNAPSHOT_VERSION, Snapshot
from sparktop.exporter.state import NodeState, SamplingLoop, stale_after_s
from sparktop.sources.snapshot_source import SnapshotSource, SourceUnavailable

TOP_CONSUMERS = 5
ANALYSIS_S = 1.0  # on top of the fetch's deadline: a node's snapshot analysed (accounting, creep)


class NodeProblem(SourceUnavailable):
    """`no_answer`: the exporter did not answer within the deadline (it may still: its last numbers stand
    until they are stale); otherwise it answered no, or something this sparktop cannot read."""

    def __init__(self, status: NodeStatus, reason: str, no_answer: bool = False) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.no_answer = no_answer


class ExporterSource(SnapshotSource):
    """`sample()` = the exporter's latest snapshot. Raises NodeProblem (down, stale, incompatible).

    `name` follows the exporter's own source ("live", "demo", "replay") once it has answered. `local_actions`:
    the exporter runs on this machine (`sparktop web --allow-actions`), so a live node's containers and
    processes can be acted on from here. `token`: the exporter's (`sparktop web`'s private feed)."""

    def __init__(
        self, address: str, timeout: float = TIMEOUT_S, local_actions: bool = False, token: str | None = None
    ) -> None:
        self.name = "exporter"
        self.token = token
        self.local_actions = local_actions
        self.address = address
        self.url = base_url(address)
        self.timeout = timeout
        self.age_s: float | None = None
        self.interval_s: float | None = None
        self.safe_bytes: int | None = None  # the node's own lines, when its exporter says them
        self.max_bytes: int | None = None
        self.last_timestamp: float | None = None
        self._fetch: OneCall[Reply] = OneCall(f"sparktop fetch {address}")

    def sample(self) -> Snapshot:
        url = f"{self.url}/snapshot.json"
        try:
            # The whole answer within the deadline, whatever the server's pace; a fetch still running when
            # the next sample is asked for is waited on again, never doubled.
            reply = self._fetch(lambda: fetch(url, self.timeout, self.token), self.timeout)
        except Overdue as exc:
            raise NodeProblem("down", f"{self.address}: {exc}", no_answer=True) from exc
        except FetchError as exc:
            if exc.timed_out:  # the transport's own whole-answer deadline: the same as an overdue fetch
                raise NodeProblem("down", f"{self.address}: {Overdue(self.timeout)}", no_answer=True) from exc
            raise NodeProblem("down", f"{self.address}: {exc}") from exc
        if reply.status == 503:
            raise NodeProblem("stale", f"{self.address}: no snapshot yet")
        if reply.status != 200:
            raise NodeProblem("down", f"{self.address}: HTTP {reply.status} (is it `sparktop serve`?)")
        try:
            data = finite_json(reply.body)
        except ValueError as exc:
            raise NodeProblem("incompatible", f"{self.address}: not JSON ({exc})") from exc
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
        self.safe_bytes = _int(reply.headers.get("X-Sparktop-Safe-Bytes"))
        self.max_bytes = _int(reply.headers.get("X-Sparktop-Aggressive-Bytes"))
        self.last_timestamp = snapshot.timestamp
        self.name = snapshot.source
        return snapshot

    def controller(self) -> ContainerController | None:
        """Docker on this machine, for a live exporter on this machine whose sessions may act; else None."""
        if not (self.local_actions and self.name == "live"):
            return None
        from sparktop.collect.docker import DockerController

        return DockerController()

    def close(self) -> None:
        pass


def finite_json(body: bytes) -> Any:
    """JSON whose NaN, Infinity and overflowing numbers (`1e999`) read as null: not a number any field can
    hold, so an optional value is missing and a required one fails validation, naming the field, for that
    node alone."""
    return json.loads(body, parse_constant=lambda _: None, parse_float=_finite_float)


def _finite_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _int(text: str | None) -> int | None:
    """A size in bytes from a header: positive, finite, within 64 bits; else None (the viewer's default)."""
    value = _float(text)
    return int(value) if value is not None and 0 < value < 2**63 else None


def _float(text: str | None) -> float | None:
    """A finite number ≥ 0 from a header, else None: `inf` or `nan` must not pass for an age or interval."""
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value >= 0 else None


class ExporterNodes:
    """`fetch()`: one NodeView per address, in the order given. Never raises: a node says what is wrong.

    The nodes are read in parallel, each on its own daemon thread; `fetch()` returns within the fetch
    deadline (`timeout`) plus the analysis, whatever the nodes do. `lines`: the viewer's choice, for a
    node whose exporter does not say its own (placed on that node's pool, analysis/lines.py)."""

    def __init__(
        self,
        addresses: list[str],
        lines: LineChoice | None = None,
        timeout: float = TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not addresses:
            raise ValueError("--nodes needs at least one host:port")
        if len(addresses) > MAX_NODES:
            raise ValueError(
                f"--nodes lists {len(addresses)} exporters; the cluster view reads at most {MAX_NODES} "
                "(with --prometheus it shows the ones that need a look first)"
            )
        self.description = f"{len(addresses)} exporters"
        self.left_out = 0  # every node given is read
        self.timeout = timeout
        self._nodes = [_Node(address, lines or LineChoice(), timeout, clock) for address in addresses]

    def fetch(self) -> list[NodeView]:
        for node in self._nodes:
            node.start()
        until = time.monotonic() + self.timeout + ANALYSIS_S
        return [node.view(until) for node in self._nodes]


class _Node:
    def __init__(self, address: str, lines: LineChoice, timeout: float, clock: Callable[[], float]) -> None:
        self.address = address
        self.source = ExporterSource(address, timeout)
        # The node's own analysis (history, pressure, creep), fed from its snapshots instead of a machine.
        self.loop = SamplingLoop(self.source, 1.0, lines.safe, lines.aggressive)
        self.default_lines = lines
        self.clock = clock
        self.last_good: NodeView | None = None  # the last view with fresh numbers, and when it was made
        self.last_good_at = 0.0
        self._read: OneCall[NodeView] = OneCall(f"sparktop node {address}")

    def start(self) -> None:
        self._read.start(self.poll)

    def view(self, until: float) -> NodeView:
        try:
            return self._read.wait(until)
        except Overdue as exc:
            return self.overdue(str(exc))

    def poll(self) -> NodeView:
        try:
            snapshot = self.source.sample()
        except NodeProblem as problem:
            if problem.no_answer:
                return self.overdue(problem.reason.removeprefix(f"{self.address}: "))
            return NodeView(name=self.address, status=problem.status, reason=problem.reason)
        try:
            view = self._analyse(snapshot)
        except Exception as exc:  # values its analysis cannot take: this node's problem, not the view's
            detail = " ".join(str(exc).split())[:160]
            return NodeView(
                self.address, "incompatible", f"{self.address}: cannot read its snapshot ({detail})"
            )
        self.last_good, self.last_good_at = view, self.clock()
        return view

    def _analyse(self, snapshot: Snapshot) -> NodeView:
        # The node is judged against its own lines (its config), the viewer's when it does not say.
        self.loop.session.line_choice = LineChoice(
            self.source.safe_bytes or self.default_lines.safe,
            self.source.max_bytes or self.default_lines.aggressive,
        )
        latest = self.loop.latest
        # The same snapshot served twice is not a new tick: history and creep must not count it again.
        if latest is None or snapshot.timestamp != latest.snapshot.timestamp:
            latest = self.loop.publish(snapshot)
        view = view_of_state(self.address, latest)
        age, interval = self.source.age_s, self.source.interval_s
        view.age_s = age
        if age is not None and age > stale_after_s(interval):
            view.status = "stale"
            view.reason = f"{self.address}: its latest sample is {age:.0f} s old"
        return view

    def overdue(self, why: str) -> NodeView:
        """No answer in time: the last numbers, aged by the wait, stale once the README's rule says so."""
        last = self.last_good
        if last is None:
            return NodeView(self.address, "down", f"{self.address}: {why}")
        age = (last.age_s or 0.0) + max(0.0, self.clock() - self.last_good_at)
        stale = last.status == "stale" or age > stale_after_s(self.source.interval_s)
        return replace(
            last,
            status="stale" if stale else last.status,
            age_s=age,
            reason=f"{self.address}: {why}; its numbers are {age:.0f} s old",
        )


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
