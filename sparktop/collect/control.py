"""Acting on consumers: stopping containers. One interface for the real engine and the demo (a source says
which controller can act on its containers with its `controller()`, see sources/snapshot_source.py), why a
source has none, and which containers no stop sparktop sends can reach."""

from __future__ import annotations

from typing import Protocol

from sparktop.core.snapshot import ContainerInfo, DockerStatus

REPLAY_REASON = "replay: nothing to stop"


class ControlError(Exception):
    """A stop or kill that did not happen, with one readable line saying why (str(exc))."""


class StopTimeout(ControlError):
    """The container did not exit within the stop timeout; the caller may offer a kill."""


class ContainerController(Protocol):
    def stop(self, container_id: str, timeout: float = 10.0) -> None:
        """Ask the container to stop (SIGTERM, then the engine's SIGKILL after `timeout`).
        Raises StopTimeout if it is still running afterwards, ControlError for anything else."""
        ...

    def kill(self, container_id: str) -> None:
        """SIGKILL the container now. Raises ControlError."""
        ...


class Named(Protocol):
    name: str


def no_controller_reason(source: Named) -> str:
    """One line saying why a source's `controller()` is None."""
    if source.name == "replay":
        return REPLAY_REASON
    return f"{source.name}: this source has no containers to stop"


def foreign_engine(container: ContainerInfo, docker: DockerStatus) -> str | None:
    """On the live machine: the engine a container belongs to when it is not the Docker engine sparktop is
    connected to ("podman", "another Docker engine"), or None. Such a container is seen through its cgroup
    only, and no stop sparktop sends can reach it."""
    if container.runtime != "docker":
        return container.runtime
    if docker.available and container.name is None:
        # The engine answered and does not list it: a second (rootless, private) Docker engine's.
        return "another Docker engine"
    return None


def foreign_engine_reason(container: ContainerInfo, engine: str) -> str:
    whose = engine if engine.startswith("another") else f"a {engine} engine"
    return (
        f"{container.label} belongs to {whose}, which sparktop is not connected to: "
        "it can show it, not stop it"
    )
