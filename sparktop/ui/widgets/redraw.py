"""Repaint a text panel only when what it shows changed, and lay it out again only when its height did: a
layout pass and a repaint of the whole dashboard every tick were most of the app's idle cost."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


def refresh_if_changed(widget: Widget, before: Text | None, after: Text, width: int) -> None:
    """`before` and `after`: the widget's text at `width` before and after new data (None: not drawn)."""
    if before is None:
        widget.refresh(layout=True)
        return
    if before == after:  # same characters, same styles
        return
    console = widget.app.console
    same_height = len(before.wrap(console, width)) == len(after.wrap(console, width))
    widget.refresh(layout=not same_height)
