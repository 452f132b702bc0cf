"""The messages screen (M): every message since sparktop started, each with its time: alerts raised and
cleared (creep, the exhaustion banner, memory pressure, GPU throttles), problems in the data, actions taken,
and every warning and error shown as a toast (the config, theme, catalog and plan files, failed actions), so
none is lost when its toast fades or its alert clears."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from sparktop.ui.screens.modal import ReadingScreen


class MessagesScreen(ReadingScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("M", "close", "Close", show=False)]

    DEFAULT_CSS = """
    MessagesScreen > VerticalScroll { width: 90%; max-width: 120; height: 80%; }
    """

    def __init__(self, messages: Sequence[tuple[str, str, str]]) -> None:
        """`messages`: (time, title, text), oldest first; the texts are shown as plain text."""
        super().__init__()
        self.messages = list(messages)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = f"Messages ({len(self.messages)}) · Esc closes"
            if not self.messages:
                yield Static("No alerts, warnings or errors since sparktop started.", markup=False)
                return
            # One widget for them all: a Static each took 2.7 s to open with the 1,000 the logs may hold.
            lines = [
                Text.assemble((f"{when} ", "dim"), (f"{title}: " if title else "", "bold"), text)
                for when, title, text in self.messages
            ]
            yield Static(Text("\n\n").join(lines), classes="messages", markup=False)
