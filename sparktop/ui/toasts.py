"""Toasts as plain text, for every app of sparktop: they quote names, paths, config values and error messages
that others control, and a process named `[/b]x` would end an app as markup. Each app's `notify` passes its
message through `plain_toast` and hands Textual `markup=False`."""

from __future__ import annotations

from textual.content import Content
from textual.markup import MarkupError

from sparktop.text import visible, visible_lines


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
