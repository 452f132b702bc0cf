"""Toasts as plain text, for every app of sparktop: they quote names, paths, config values and error messages
that others control, and a process named `[/b]x` would end an app as markup. Both apps derive from
`PlainToastApp`, whose `notify` hands Textual plain text and `markup=False`."""

from __future__ import annotations

from textual.app import App
from textual.content import Content
from textual.markup import MarkupError
from textual.notifications import SeverityLevel

from sparktop.core.safe_text import visible, visible_lines


def markup_words(markup: str) -> str:
    """The text a markup string shows, without its tags; one that is not well-formed markup (a bracket in
    a name or a path) as it is written."""
    try:
        return Content.from_markup(markup).plain
    except MarkupError:
        return markup


def plain_toast(message: str, title: str, markup: bool) -> tuple[str, str]:
    """A toast's message and title as plain text with control characters made visible. `markup=True` is
    what Widget.notify() defaults to and how Textual writes its own ("Press [b]q[/b] to quit"): such a
    message keeps its words and loses its tags."""
    if markup:
        message = markup_words(message)
    return visible_lines(message), visible(title)


class PlainToastApp(App[None]):
    """An app whose every toast is plain text, whoever asks for it (Widget.notify defaults to markup)."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        message, title = plain_toast(message, title, markup)
        self.toast_shown(message, title, severity)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def toast_shown(self, message: str, title: str, severity: SeverityLevel) -> None:
        """A toast is going up, in plain text (an app that keeps a log of them overrides this)."""
