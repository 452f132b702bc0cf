"""The one interface every snapshot source implements: live, demo and replay."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from sparktop.model import Snapshot


class SourceExhausted(Exception):
    """A finite source (a replay file) has no more snapshots."""


@runtime_checkable
class SnapshotSource(Protocol):
    """`sample()` returns the machine's state now; it never raises for a bad reading, it records it in
    `Snapshot.errors`. `close()` releases handles (NVML, Docker client).

    Optional, looked up by name where used: `controller()` (a ContainerController for this source's
    containers, see collect/controllers.py), `discovery` and `defer_discovery()` (live only)."""

    name: str

    def sample(self) -> Snapshot: ...

    def close(self) -> None: ...
