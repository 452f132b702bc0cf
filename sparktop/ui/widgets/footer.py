"""Textual's Footer, without the leak that every focus change feeds.

Textual's Footer rebuilds its keys whenever the focused widget's bindings change (every tab switch focuses a
table), and each FooterKey `data_bind`s the Footer's `compact` reactive. The watchers of removed keys are
dropped only when `compact` changes, which it never does here, so every removed key stayed referenced with its
styles and render caches: ~0.45 MB a tab switch. After each rebuild `mutate_reactive` runs the reactive's
watcher check once, which drops the watchers of closed widgets (and sets the live keys' `compact` to the value
they already have).

It also rebuilds only when the keys it would show changed: a tab switch fired the bindings signal about
twelve times, each a full rebuild of every key (~40 ms of a switch). And while one rebuild is queued, the
signal queues no other (the start fired it up to five times before the first frame).
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer as TextualFooter


def shown_keys(screen: Screen) -> tuple:
    """What the footer draws from a screen's bindings: equal tuples, equal footers."""
    return tuple(
        (binding.key, binding.description, binding.action, binding.group, enabled, tooltip)
        for _node, binding, enabled, tooltip in screen.active_bindings.values()
        if binding.show
    )


class Footer(TextualFooter):
    _composed_keys: tuple | None = None
    _recompose_queued = False  # a rebuild is on its way: it reads the bindings as they are when it runs

    def bindings_changed(self, screen: Screen) -> None:
        if screen is self.screen and (
            self._recompose_queued
            or (self._composed_keys is not None and shown_keys(screen) == self._composed_keys)
        ):
            return
        super().bindings_changed(screen)
        # Textual queues one rebuild per signal: at start-up the signal comes several times before the first
        # frame, and each rebuilt every key. One queued rebuild shows the last bindings all the same.
        self._recompose_queued = self.is_attached and screen is self.screen and screen.app.app_focus

    async def recompose(self) -> None:
        self._recompose_queued = False
        self._composed_keys = shown_keys(self.screen) if self.is_attached else None
        await super().recompose()
        self.mutate_reactive(TextualFooter.compact)
