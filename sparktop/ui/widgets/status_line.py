"""The top line: host, source, last update, interval, and the states a user must not miss (paused, stale).

What went wrong (stale data and its reason, problems, the guard, Docker) is a notice: on a terminal too
narrow for the whole line, the notices move to lines of their own under it and wrap at words, so a reason is
never cut mid-sentence; the host and clock part is the one that gets an ellipsis."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from sparktop.core.format import fmt_duration
from sparktop.core.snapshot import Snapshot

MAX_LINES = 5  # the head and up to four lines of notices: on a 60×18 terminal the dashboard keeps the rest


class StatusLine(Widget):
    DEFAULT_CSS = """
    StatusLine { height: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._head = Text("sparktop", style="bold")
        self._notices: list[Text] = []
        self._drawn: tuple[int, list[Text]] | None = None  # (width, lines) of what is shown now

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
        data_age_s: float | None = None,
    ) -> None:
        """`modes`: "demo", "replay", "read-only": each a badge, so simulated or recorded data and disabled
        actions are never taken for the live machine. `source_problems`: what the source found wrong so far
        (bad lines of a recording): the last one stays visible, not only on the tick whose snapshot had it.
        `machine`: what kind of machine it is (unified memory, discrete GPU, no GPU). Paused, `snapshot` is
        the one the frozen views show and `data_age_s` how far the data has moved on since: the clock then
        says when the numbers on screen are from, not the time of a sample nobody sees."""
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
        clock = None if snapshot is None else time.strftime("%H:%M:%S", time.localtime(snapshot.timestamp))
        if clock is not None and not paused:
            text.append(f" · {clock}")
        text.append(f" · every {interval:g} s", style="dim")
        if paused:
            text.append("  ")
            frozen = f"data from {clock}, {fmt_duration(data_age_s or 0.0)} ago" if clock is not None else ""
            text.append(f" ⏸ PAUSED — {frozen} " if frozen else " ⏸ PAUSED ", style="bold reverse")
        if filter_text:
            text.append(f"  filter: {filter_text!r}", style="bold")
        if hidden_rows:
            text.append(f"  {hidden_rows} empty rows hidden (a: all)", style="dim")
        notices: list[Text] = []
        if stale:
            notices.append(Text(f" stale: {stale} ", style="bold reverse"))
        guard = next((r for r in snapshot.services if r.collector == "guard"), None) if snapshot else None
        if guard is not None and (guard.summary or guard.error):  # a `sparktop guard` runs on this machine
            notices.append(
                Text(
                    guard.summary or guard.error or "",
                    style="bold" if "▲" in (guard.summary or "") else "dim",
                )
            )
        if snapshot is not None and snapshot.errors:
            n = len(snapshot.errors)
            notices.append(
                Text(f"⚠ {n} problem{'s' if n != 1 else ''}: {snapshot.errors[0]}", style="italic")
            )
        elif source_problems:
            n = len(source_problems)
            notices.append(
                Text(
                    f"⚠ {n} problem{'s' if n != 1 else ''} in the source: {source_problems[-1]}",
                    style="italic",
                )
            )
        elif snapshot is not None and snapshot.notes:
            notices.append(Text(f"note: {snapshot.notes[0]}", style="dim italic"))
        if snapshot is not None and not snapshot.docker.available and snapshot.docker.reason:
            notices.append(Text(f"docker: {snapshot.docker.reason}", style="dim italic"))
        if text == self._head and notices == self._notices:
            return  # the clock moves once a second; at shorter intervals often nothing does
        width = self.size.width
        lines_before = len(self._lines(width)) if width else 0
        self._head, self._notices, self._drawn = text, notices, None
        self.refresh(layout=not width or len(self._lines(width)) != lines_before)

    def _lines(self, width: int) -> list[Text]:
        """The lines at this width, made once per change (show measures them, layout and render use them)."""
        if self._drawn is None or self._drawn[0] != width:
            self._drawn = (width, self._make_lines(width))
        return self._drawn[1]

    def _make_lines(self, width: int) -> list[Text]:
        """One line when everything fits; else the head cut with "…" and each notice whole, wrapped at
        words, on lines of its own."""
        one = Text("  ").join([self._head, *self._notices])
        if one.cell_len <= width:
            return [one]
        lines = [_cut_at_a_part(self._head, width)]
        for notice in self._notices:
            lines.extend(notice.wrap(self.app.console, width))
        if len(lines) > MAX_LINES:
            lines = lines[:MAX_LINES]
            lines[-1].append(" …")
            lines[-1].truncate(width, overflow="ellipsis")
        return lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width)) if width else 1

    def render(self) -> Text:
        text = Text("\n").join(self._lines(self.size.width or 80))  # join copies: the cache stays as made
        text.no_wrap = True  # already laid out in lines at this width
        return text


def _cut_at_a_part(head: Text, width: int) -> Text:
    """`head` as it is when it fits; else cut after its last whole part (" · every 1 s" goes whole) with
    " …": "· e…" read as a broken word. A head whose first part is too long is cut with "…"."""
    if head.cell_len <= width:
        return head.copy()
    plain = head.plain
    ends = [m.start() for m in re.finditer(r" · |  ", plain)]
    fitting = [end for end in ends if cell_len(plain[:end]) + 2 <= width]
    if fitting:
        out = head[: fitting[-1]]
        out.append(" …", style="dim")
        return out
    out = head.copy()
    out.truncate(width, overflow="ellipsis")
    return out
