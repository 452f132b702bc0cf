"""The add-on collectors a live source runs every tick, and the one guard every optional part goes through.

`ADD_ONS` has one line per add-on collector: its name and where its class lives ("module:Class", made with no
arguments; or, for one marked `config=True`, a function called with the user's `Config`, which reads its own
settings from it). They are imported when a source first uses them, so an add-on costs nothing at start-up,
and one that cannot be imported or made is reported once (`Snapshot.errors`) while the others run.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from sparktop.collect.add_on import Collector, one_line
from sparktop.core.snapshot import ServiceReport, Snapshot

if TYPE_CHECKING:
    from sparktop.settings.config import Config

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class AddOn:
    name: str
    target: str  # "package.module:Class", called with no arguments
    config: bool = False  # the target is called with the user's Config instead (its own settings are in it)


# One line per add-on collector (see sparktop/collect/add_on.py for what a collector must do). Order matters:
# footprints records what the servers collector reported this tick (and slowdowns measured from it).
ADD_ONS: tuple[AddOn, ...] = (
    AddOn("servers", "sparktop.collect.servers.collector:from_config", config=True),
    AddOn("slowdowns", "sparktop.footprints.slowdown_recorder:SlowdownCollector"),
    AddOn("footprints", "sparktop.footprints.store:FootprintCollector"),
    AddOn("guard", "sparktop.collect.guard_state:GuardStateCollector"),
)

# One line per simulated collector the demo source runs (deterministic: it reads only the snapshot).
DEMO_ADD_ONS: tuple[AddOn, ...] = (
    AddOn("slowdowns", "sparktop.footprints.slowdown_recorder:demo_collector"),
)


class Guarded(Generic[T]):
    """An optional part of a source (NVML, the Docker discovery, an add-on collector), made on first use.

    Making it may fail (a missing library, a driver that blows up on load): that is remembered as one line,
    `error`, and not retried. Using it may fail: `call` turns the exception into one line in the tick's
    errors and returns the fallback. `close()` closes whatever was made, given or not, once."""

    def __init__(
        self, label: str, make: Callable[[], T] | None = None, part: T | None = None, what: str | None = None
    ) -> None:
        """`label` starts each failure line ("NVML: ..."); `what` names the part when it cannot be made
        ("NVML collector unavailable: ...", default: the label)."""
        self.label = label
        self.what = what or label
        self._make = make
        self.part = part
        self.error: str | None = (
            None if (part is not None or make is not None) else f"{self.what}: not set up"
        )

    def get(self) -> T | None:
        if self.part is None and self.error is None and self._make is not None:
            try:
                self.part = self._make()
            except Exception as exc:  # ImportError, or a library that fails while loading
                self.error = f"{self.what} unavailable: {one_line(exc)}"
        return self.part

    def call(self, use: Callable[[T], R], errors: list[str], fallback: Callable[[str], R]) -> R:
        """`use(part)`, or `fallback(reason)` when the part is missing or `use` raised (then the reason is
        also appended to `errors`)."""
        part = self.get()
        if part is None:
            return fallback(self.error or f"{self.what} unavailable")
        try:
            return use(part)
        except Exception as exc:  # a part must never take a tick down
            reason = f"{self.label}: {one_line(exc)}"
            errors.append(reason)
            return fallback(reason)

    def close(self) -> None:
        part, self.part = self.part, None
        self.error = "closed"
        close = getattr(part, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()


def _importer(add_on: AddOn, config: Config | None) -> Callable[[], Collector]:
    def make() -> Collector:
        module, _, attr = add_on.target.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        if not add_on.config:
            return factory()
        if config is None:  # a source opened without the user's settings: the defaults
            from sparktop.settings.config import Config

            return factory(Config())
        return factory(config)

    return make


def _checked(reports: Iterable[object]) -> list[ServiceReport]:
    out = list(reports)
    for report in out:
        if not isinstance(report, ServiceReport):
            raise TypeError(f"collect() returned a {type(report).__name__}, not a ServiceReport")
    return out  # type: ignore[return-value]


def _unavailable(snapshot: Snapshot) -> Callable[[str], list[ServiceReport]]:
    """A collector that could not be made says so every tick (not only once: the line would scroll away)."""

    def fallback(reason: str) -> list[ServiceReport]:
        if reason not in snapshot.errors:
            snapshot.errors.append(reason)
        return []

    return fallback


class AddOns:
    """Runs a set of add-on collectors once per tick: each one's reports go into `Snapshot.services`, each
    failure is one line in `Snapshot.errors`, and no collector can stop the others."""

    def __init__(
        self,
        collectors: Iterable[Collector] | None = None,
        add_ons: Sequence[AddOn] = ADD_ONS,
        config: Config | None = None,
    ) -> None:
        """`collectors`: made collectors to run (tests, the demo); None: the registry's `add_ons`, made with
        the user's `config` where they ask for it (None: the defaults)."""
        if collectors is not None:
            self._parts = [Guarded(c.name, part=c) for c in collectors]
        else:
            self._parts = [
                Guarded(a.name, make=_importer(a, config), what=f"{a.name} collector") for a in add_ons
            ]

    def __len__(self) -> int:
        return len(self._parts)

    def collect(self, snapshot: Snapshot) -> None:
        """Append every collector's reports to `snapshot.services` and its problems to `snapshot.errors`."""
        for guarded in self._parts:
            reports = guarded.call(
                lambda c: _checked(c.collect(snapshot)), snapshot.errors, _unavailable(snapshot)
            )
            snapshot.services.extend(reports)

    def settle(self, timeout: float) -> bool:
        """Give the collectors that read in the background up to `timeout` seconds in all for their first
        readings (see base.Collector); True when one of them then has something to report."""
        deadline = time.monotonic() + timeout
        found = False
        for guarded in self._parts:
            settle = getattr(guarded.part, "settle", None)
            if callable(settle):
                with contextlib.suppress(Exception):  # waiting is a courtesy: never a failure
                    found = bool(settle(max(0.0, deadline - time.monotonic()))) or found
        return found

    def close(self) -> None:
        for guarded in self._parts:
            guarded.close()
