"""The two kinds of modal screen sparktop opens, written once: a page to read (help, messages) and a small
dialog with a title, an input and a one-line message (go to a time, save or load a plan)."""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


class ReadingScreen(ModalScreen[None]):
    """A bordered scroll area in the middle of the screen (a subclass sets its width and height). Esc or q
    closes it; the arrows, j/k, PageUp/PageDown and Space scroll it without a mouse (over SSH the lower part
    is otherwise out of reach)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
        Binding("down,j", "scroll('down')", "Down", show=False),
        Binding("up,k", "scroll('up')", "Up", show=False),
        Binding("pagedown,space", "scroll('page_down')", "Page down", show=False),
        Binding("pageup", "scroll('page_up')", "Page up", show=False),
    ]

    DEFAULT_CSS = """
    ReadingScreen { align: center middle; }
    ReadingScreen > VerticalScroll { border: thick $primary; background: $surface; padding: 0 1; }
    """

    def action_scroll(self, how: str) -> None:
        scroll = self.query_one(VerticalScroll)
        getattr(scroll, f"scroll_{how}")(animate=False)

    def action_close(self) -> None:
        self.dismiss(None)


class DialogScreen(ModalScreen[ResultT | None], Generic[ResultT]):
    """A bordered `#dialog` in the middle (a subclass sets its width) with a bold `#title` and a `#message`
    line for what went wrong; Esc cancels (the result is None)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    DialogScreen { align: center middle; }
    DialogScreen > #dialog {
        max-width: 100%; height: auto; border: thick $primary; background: $surface; padding: 0 1;
    }
    DialogScreen #title { text-style: bold; }
    DialogScreen #message { height: auto; color: $error; }
    """

    def action_cancel(self) -> None:
        self.dismiss(None)
