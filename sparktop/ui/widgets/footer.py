"""Textual's Footer, without the leak that every focus change feeds.

Textual's Footer rebuilds its keys whenever the focused widget's bindings change (every tab switch focuses a
table), and each FooterKey `data_bind`s the Footer's `compact` reactive. The watchers of removed keys are
dropped only when `compact` changes, which it never does here, so every removed key stayed referenced with its
styles and render caches: ~0.45 MB a tab switch. After each rebuild `mutate_reactive` runs the reactive's
watcher check once, which drops the watchers of closed widgets (and sets the live keys' `compact` to the value
they already have).
"""

from __future__ import annotations

from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    async def recompose(self) -> None:
        await super().recompose()
        self.mutate_reactive(TextualFooter.compact)
