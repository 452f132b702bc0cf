"""The top line: host, source, last update, interval, and the states a user must not miss (paused, stale)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from textual.widget import Widget

from sparktop.model import Snapshot


class StatusLine(Widget):
    DEFAULT_CSS = """
    StatusLine { height: 1; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text = Text("sparktop", style="bold")

    def show(
        self,
        snapshot: Snapshot | None,
        source: str,
        interval: float,
        paused: bool,
        stale: str | None,
        filter_text: str,
        modes: list[str] | None = None,
        hidden_rows: int = 0,
        source_problems: Sequence[str] = (),
        machine: str | None = None,
    ) -> None:
        """`modes`: "demo", "replay", "read-only": each a badge, so simulated or recorded data and disabled
        actions are never taken for the live machine. `source_problems`: what the source found wrong so far
        (bad lines of a recording): the last one stays visible, not only on the tick whose snapshot had it.
        `machine`: what kind of machine it is (unified memory, discrete GPU, no GPU)."""
        text = Text.assemble(("sparktop", "bold"))
        for mode in modes or ():
            text.append(" ")
            text.append(f" {mode.upper()} ", style="bold reverse")
        if snapshot is not None and snapshot.hostname:
            text.append(f" · {snapshot.hostname}")
        if machine:  # unified memory (a Spark), discrete GPU or no GPU: how to read the bars
            text.append(f" · {machine}")
        if source not in (modes or ()):
            text.append(f" · {source}", style="dim")
        if snapshot is not None:
            text.append(f" · {time.strftime('%H:%M:%S', time.localtime(snapshot.timestamp))}")
        text.append(f" · every {interval:g} s", style="dim")
        if paused:
            text.append("  ")
            text.append(" ⏸ PAUSED ", style="bold reverse")
        if filter_text:
            text.append(f"  filter: {filter_text!r}", style="bold")
        if hidden_rows:
            text.append(f"  {hidden_rows} empty rows hidden (a: all)", style="dim")
        if stale:
            text.append("  ")
            text.append(f" stale: {stale} ", style="bold reverse")
        guard = next((r for r in snapshot.services if r.collector == "guard"), None) if snapshot else None
        if guard is not None and (guard.summary or guard.error):  # a `sparktop guard` runs on this machine
            text.append(
                f"  {guard.summary or guard.error}", style="bold" if "▲" in (guard.summary or "") else "dim"
            )
        if snapshot is not None and snapshot.errors:
            n = len(snapshot.errors)
            text.append(f"  ⚠ {n} problem{'s' if n != 1 else ''}: {snapshot.errors[0]}", style="italic")
        elif source_problems:
            n = len(source_problems)
            text.append(f"  ⚠ {n} problem{'s' if n != 1 else ''} in the source: {source_problems[-1]}",
                        style="italic")  # fmt: skip
        if snapshot is not None and not snapshot.docker.available and snapshot.docker.reason:
            text.append(f"  docker: {snapshot.docker.reason}", style="dim italic")
        if text != self._text:  # the clock moves once a second; at shorter intervals often nothing does
            self._text = text
            self.refresh()

    def render(self) -> Text:
        text = self._text.copy()
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text
