"""The add-on collector seam (a minimal version until the architecture work lands its own): something beyond
the core readings (a model server's API, say) that reports once per tick into `Snapshot.services`.

A collector has a `name`, `collect(snapshot) -> list[ServiceReport]` and `close()`. `collect` reads this
tick's snapshot; it may raise (the registry turns that into one line in `Snapshot.errors`); it throttles
itself and never stalls a tick (network I/O runs in its own thread; `collect` returns cached readings).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from sparktop.model import ServiceReport, Snapshot


@runtime_checkable
class Collector(Protocol):
    name: str

    def collect(self, snapshot: Snapshot) -> list[ServiceReport]: ...

    def close(self) -> None: ...


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
