"""The add-on collectors a live source runs every tick: one line each in `ADD_ONS` ("module:Class", made with
no arguments, imported on first use). One that cannot be made or fails is one line in `Snapshot.errors`;
the others run as usual."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterable
from dataclasses import dataclass

from sparktop.collect.base import Collector, one_line
from sparktop.model import ServiceReport, Snapshot


@dataclass(frozen=True)
class AddOn:
    name: str
    target: str  # "package.module:Class"


# One line per add-on collector. Order matters: footprints records what the servers collector reported.
ADD_ONS: tuple[AddOn, ...] = (
    AddOn("servers", "sparktop.collect.servers.collector:ServersCollector"),
    AddOn("footprints", "sparktop.footprints:FootprintCollector"),
)


class AddOns:
    """Runs the add-on collectors once per tick; no collector can stop the others."""

    def __init__(self, collectors: Iterable[Collector] | None = None, add_ons: Iterable[AddOn] = ADD_ONS):
        self._made: list[Collector] = list(collectors) if collectors is not None else []
        self._pending = [] if collectors is not None else list(add_ons)
        self._errors: list[str] = []

    def _make(self) -> None:
        for add_on in self._pending:
            module, _, attr = add_on.target.partition(":")
            try:
                self._made.append(getattr(importlib.import_module(module), attr)())
            except Exception as exc:
                self._errors.append(f"{add_on.name} collector unavailable: {one_line(exc)}")
        self._pending = []

    def collect(self, snapshot: Snapshot) -> None:
        self._make()
        snapshot.errors.extend(e for e in self._errors if e not in snapshot.errors)
        for collector in self._made:
            try:
                reports = list(collector.collect(snapshot))
                if not all(isinstance(r, ServiceReport) for r in reports):
                    raise TypeError("collect() returned something that is not a ServiceReport")
            except Exception as exc:  # an add-on must never take a tick down
                snapshot.errors.append(f"{collector.name}: {one_line(exc)}")
                continue
            snapshot.services.extend(reports)

    def close(self) -> None:
        for collector in self._made:
            with contextlib.suppress(Exception):
                collector.close()
        self._made, self._pending = [], []
