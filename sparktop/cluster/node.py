"""What the cluster view shows of one node, whichever source it came from.

A node that is down, stale or speaks another schema says so in `status` and `reason`; its numbers are None
(down, incompatible) or the last ones seen (stale), never zeros standing in for "unknown".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from sparktop.core.snapshot import Snapshot

NodeStatus = Literal["up", "stale", "down", "incompatible"]

# The most nodes a cluster view reads, keeps and draws. A Spark cluster is a few boxes; a Prometheus that
# knows thousands of instances must not cost thousands of cards each refresh: the rest are counted.
MAX_NODES = 48


@dataclass(frozen=True)
class ConsumerLine:
    label: str
    kind: str
    cpu_bytes: int
    gpu_bytes: int

    @property
    def total(self) -> int:
        return self.cpu_bytes + self.gpu_bytes


@dataclass(frozen=True)
class GpuLine:
    name: str
    utilization_pct: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    sm_clock_mhz: float | None = None


@dataclass(frozen=True)
class CreepLine:
    label: str
    rate_bytes_per_s: float
    eta_safe_s: float | None
    eta_aggressive_s: float | None


@dataclass
class NodeView:
    name: str  # how the source addresses it: the Prometheus `instance`, or host:port given to --nodes
    status: NodeStatus
    reason: str | None = None
    host: str | None = None  # the hostname the node reports
    total: int | None = None
    used: int | None = None
    available: int | None = None
    safe_bytes: int | None = None
    max_bytes: int | None = None
    pressure: str | None = None  # "ok" | "warn" | "critical"
    unattributed: int | None = None
    consumers: list[ConsumerLine] = field(default_factory=list)
    gpus: list[GpuLine] = field(default_factory=list)
    creep: list[CreepLine] = field(default_factory=list)
    age_s: float | None = None  # how old the node's own latest sample is
    # The node's memory as a snapshot (for the detail view and the What-if baseline); None when unknown.
    snapshot: Snapshot | None = None

    @property
    def has_numbers(self) -> bool:
        return self.status in ("up", "stale") and self.total is not None and self.used is not None


class ClusterError(Exception):
    """The whole source failed (Prometheus unreachable, or no sparktop metrics in it): one line to show."""


class ClusterSource(Protocol):
    """Where a cluster view reads its nodes. `fetch()`: at most MAX_NODES views, or ClusterError when the
    source fails as a whole; `left_out`: how many more nodes it knows of, not shown (last fetch)."""

    description: str
    left_out: int

    def fetch(self) -> list[NodeView]: ...
