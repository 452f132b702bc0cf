"""Go to a time in a replay (`j`): a position as the header writes it (`1:30`, `1:02:03`), or before the end
(`-5:00`). A bad time gets one line and the dialog stays open; returns the seconds (negative: before the
end), or None when cancelled."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from sparktop.sources.replay import parse_clock
from sparktop.ui.screens.modal import DialogScreen


class GotoTimeScreen(DialogScreen[float]):
    DEFAULT_CSS = """
    GotoTimeScreen > #dialog { width: 60; }
    """

    def __init__(self, position: str, length: str) -> None:
        """`position` and `length`: where the playback is and how long the recording is, as the header
        says them."""
        super().__init__()
        self.position, self.length = position, length

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(f"Go to (now {self.position} of {self.length})", id="title", markup=False)
            yield Input(placeholder="1:30, 1:02:03, or -5:00 for 5 min before the end", id="time")
            yield Static("Enter goes there, Esc cancels", id="message", markup=False)

    def on_mount(self) -> None:
        self.query_one("#time", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            seconds = parse_clock(event.value)
        except ValueError as exc:
            self.query_one("#message", Static).update(str(exc))
            return
        self.dismiss(seconds)
