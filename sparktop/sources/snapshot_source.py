"""The one base every snapshot source subclasses: live, demo, replay, another machine's exporter, and the
wrappers that forward to one."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sparktop.collect.control import ContainerController
from sparktop.core.safe_text import error_line
from sparktop.core.snapshot import Snapshot


class SourceExhausted(Exception):
    """A finite source (a replay file) has no more snapshots."""


class SourceUnavailable(Exception):
    """The source cannot give a snapshot now (another machine's exporter down, slow or speaking another
    schema) and may later. str() is one line for the user, naming the source: shown as it is, without the
    class name."""


class Progress(Protocol):
    """Where a finite source's playback stands (a recording's `ReplayProgress`)."""

    def describe(self) -> str: ...


class SnapshotSource(ABC):
    """Every snapshot source: live, demo, replay, another machine's exporter, and the wrappers around them.

    `sample()` returns the machine's state now; it never raises for a bad reading, it records it in
    `Snapshot.errors`. Every other member has a default here, so callers use them without asking whether a
    source has them: `name` (the class name unless a source says "live", "demo", "replay"), `finished` (a
    recording handed out its last snapshot), `recorded_interval` and `progress()` (a recording's own pace and
    position), `warnings` (problems found in the source itself, shown in the status line), `safe_bytes` /
    `max_bytes` (lines another machine's exporter states), `discovery` and `defer_slow_parts()` (live only),
    `settle(timeout)` (see `settled_sample`), `controller()` (a ContainerController for this source's
    containers, see collect/control.py), `refresh_names()` (after a stop) and `close()` (releases handles:
    NVML, Docker client)."""

    name: str
    recorded_interval: float | None = None
    warnings: Sequence[str] = ()
    safe_bytes: int | None = None
    max_bytes: int | None = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if not hasattr(cls, "name"):
            cls.name = cls.__name__

    @abstractmethod
    def sample(self) -> Snapshot: ...

    @property
    def finished(self) -> bool:
        """True once a finite source has handed out its last snapshot; a live source never finishes."""
        return False

    @property
    def discovery(self) -> object | None:
        """The container discovery in use (live only): a stop asks it to re-list names."""
        return None

    def progress(self, snapshot: Snapshot | None = None) -> Progress | None:
        """Where a recording's playback stands (`snapshot`: the one on screen); None for a live source."""
        return None

    def defer_slow_parts(self) -> None:
        """Let the next sample skip what is slow to start: container discovery and the add-on collectors
        (live only; nothing to skip elsewhere)."""
        return None

    def settle(self, timeout: float) -> bool:
        """Wait at most `timeout` s for background readings; True when a sample now would carry more."""
        return False

    def controller(self) -> ContainerController | None:
        """What can stop this source's containers; None where nothing can (a replay)."""
        return None

    def refresh_names(self) -> None:
        """After a stop: the next sample re-lists the containers (the discovery's names are cached), so the
        status column does not wait out the discovery interval."""
        invalidate = getattr(self.discovery, "invalidate", None)  # a test's discovery may cache nothing
        if callable(invalidate):
            invalidate()

    def close(self) -> None:
        """Release handles (NVML, Docker client); nothing to release by default."""
        return None


@dataclass(frozen=True)
class Sampled:
    """One `sample()` as every sampling loop reads it: the snapshot, or the one line saying why there is none
    (`ended`: a finite source has no more, `error` is what it said about its end)."""

    snapshot: Snapshot | None
    error: str | None = None
    ended: bool = False


def take_sample(source: SnapshotSource) -> Sampled:
    """`source.sample()`, never raising: a source that cannot answer now (`SourceUnavailable`) is quoted as it
    is, any other failure as "Type: message" (a source must not take its reader down)."""
    try:
        return Sampled(source.sample())
    except SourceExhausted as exc:
        return Sampled(None, str(exc), ended=True)
    except SourceUnavailable as exc:
        return Sampled(None, str(exc))
    except Exception as exc:
        return Sampled(None, error_line(exc))


SETTLE_S = 1.5  # the most a one-shot reading waits for model servers to answer (a probe times out after 1 s)


def settled_sample(source: SnapshotSource, timeout: float = SETTLE_S) -> Snapshot:
    """One sample for a one-shot reader (`--once`, `plan`'s live baseline). Model servers are read in the
    background: the first sample finds them (and the ports containers publish), `settle` waits at most
    `timeout` for their first answers, and only if one came is a second sample (a whole live reading)
    taken."""
    sample = source.sample()
    if source.settle(timeout):
        sample = source.sample()
    return sample
