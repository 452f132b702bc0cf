"""Acting on consumers: stopping containers. One interface for the real engine and the demo."""

from __future__ import annotations

from typing import Protocol


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
