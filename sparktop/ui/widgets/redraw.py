"""Repaint a text panel only when what it shows changed, and lay it out again only when its height did: a
layout pass and a repaint of the whole dashboard every tick were most of the app's idle cost."""

from __future__ import annotations

from typing import Self

from rich.segment import Segment
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual, visualize
from textual.widget import Widget


def off_screen(widget: Widget) -> bool:
    """Mounted but not drawn (its tab is not the one showing): showing it lays the screen out anyway, so new
    data needs no layout pass now, and one on every tick would be the whole dashboard's."""
    return widget.is_mounted and not widget.is_on_screen


class LineDiffWidget(Widget):
    """A text panel drawn through the Line API, one list of strips per line of its `render()` text: new data
    (`refresh_changed()`) converts and repaints only the lines whose text changed, where Textual would
    convert the whole text again on any change (most of a panel's cost per tick)."""

    # The strips carry no per-cell offsets, which Textual's text selection needs: these panels are read, not
    # copied from (a terminal's own shift+drag still selects).
    ALLOW_SELECT = False

    _dl_key: tuple[int, Style] | None = None  # (width, visual style) the strips were made for
    _dl_texts: list[Text]
    _dl_strips: list[list[Strip]]
    _dl_flat: list[Strip]

    def refresh(
        self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False
    ) -> Self:
        if not regions:  # a whole repaint (theme, CSS, reactive, resize): make every line again
            self._dl_key = None
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def refresh_changed(self) -> None:
        """New data: repaint the lines whose text changed; lay out again if the height changed."""
        if off_screen(self):
            # Made afresh when it is shown. Once per stretch off screen, not per tick: the repaint drops the
            # lines Textual keeps, which it would otherwise show again, stale, when the tab comes back.
            if self._dl_key is not None:
                self._dl_key = None
                super().refresh()
            return
        if not self.is_mounted or not self.size.width or self._dl_key is None:
            self.refresh(layout=True)
            return
        height = len(self._dl_flat)
        rows = self._dl_sync()
        if rows is None:  # lines came or went, or one wraps differently
            super().refresh(layout=len(self._dl_flat) != height)
            return
        width = self.size.width
        for y in rows:
            super().refresh(Region(0, y, width, 1))

    def render_line(self, y: int) -> Strip:
        # No selection starts here (ALLOW_SELECT), but one dragged across from another widget takes this one
        # in too: Textual's own path draws it, with the offsets our strips lack.
        if self.text_selection is not None:
            return super().render_line(y)
        if self._dl_key != (self.size.width, self.visual_style):
            self._dl_sync()
        if y < len(self._dl_flat):
            return self._dl_flat[y]
        return Strip.blank(self.size.width, self.visual_style.rich_style)

    def _dl_lines(self) -> list[Text]:
        """What the widget shows, line by line (a subclass that builds lines hands them over as they are)."""
        rendered = self.render()
        text = rendered if isinstance(rendered, Text) else Text(str(rendered))
        return list(text.split("\n", allow_blank=True))

    def _dl_strips_of(self, line: Text, width: int) -> list[Strip]:
        return line_strips(self, line, width)

    def _dl_sync(self) -> list[int] | None:
        """Bring the strips up to date with `render()`: the rows that changed, or None when all did."""
        width = self.size.width
        key = (width, self.visual_style)
        lines = self._dl_lines()
        if key != self._dl_key or len(lines) != len(self._dl_texts):
            self._dl_key, self._dl_texts = key, lines
            self._dl_strips = [self._dl_strips_of(line, width) for line in lines]
            self._dl_flat = [strip for strips in self._dl_strips for strip in strips]
            return None
        rows: list[int] = []
        y = 0
        moved = False
        for i, line in enumerate(lines):
            if line != self._dl_texts[i]:
                strips = self._dl_strips_of(line, width)
                moved = moved or len(strips) != len(self._dl_strips[i])
                self._dl_texts[i], self._dl_strips[i] = line, strips
                rows.extend(range(y, y + len(strips)))
            y += len(self._dl_strips[i])
        if rows:
            self._dl_flat = [strip for strips in self._dl_strips for strip in strips]
        return None if moved else rows


class TextPanel(LineDiffWidget):
    """A panel whose text is built once per width and layout flags (`_layout_key()`) by `_build(width)`,
    and used for both measuring and drawing; `_redraw()` after new data."""

    _drawn: tuple[tuple, Text] | None = None

    def _layout_key(self) -> tuple:
        return ()

    def _build(self, width: int) -> Text:
        raise NotImplementedError

    def render(self) -> Text:
        return self.text_at(self.size.width or 40)

    def text_at(self, width: int) -> Text:
        """What the panel draws laid out `width` cells wide (`render()` is at the width it has now)."""
        return self._text(max(20, width))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        # Built for the width asked, not the last size (Widget caches heights by width alone).
        return len(self.text_at(width).wrap(self.app.console, width)) if width else 0

    def _text(self, width: int) -> Text:
        key = (width, *self._layout_key())
        if self._drawn is None or self._drawn[0] != key:
            self._drawn = (key, self._build(width))
        return self._drawn[1].copy()

    def _redraw(self) -> None:
        """New data: repaint if the text changed, lay out if its height did."""
        self._drawn = None
        self.refresh_changed()


def line_strips(widget: Widget, line: Text, width: int) -> list[Strip]:
    """One line of text as the strips Textual would draw for it in `widget`, made straight from the text's
    segments when it fits on one line (~8× faster than Textual's Visual conversion, which is most of what a
    panel costs per tick); a line that must wrap, or holds tabs, takes Textual's own path."""
    style = widget.visual_style
    if line.cell_len > width or "\t" in line.plain or widget.styles.content_align != ("left", "top"):
        return Visual.to_strips(widget, visualize(widget, line), width, None, style)
    base = style.rich_style
    if line.style:
        # Text.render leaves a line without spans unstyled: its own base style (a dim scale line) goes on
        # here, under the widget's, as Textual's path does.
        base = base + widget.app.console.get_style(line.style)
    segments = Segment.apply_style(line.render(widget.app.console, end=""), base)
    return [Strip(Segment.simplify(segments), line.cell_len)]
