"""LineDiffWidget: new data repaints only the lines whose text changed, and the screen shows the new text."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region, Size
from textual.strip import Strip

from sparktop.ui.widgets.redraw import LineDiffWidget


class Lines(LineDiffWidget):
    DEFAULT_CSS = "Lines { height: auto; padding: 0 1; }"

    def __init__(self) -> None:
        super().__init__()
        self.lines = ["alpha", "beta", "gamma"]
        self.made: list[str] = []  # the lines turned into strips, in order

    def render(self) -> Text:
        return Text("\n".join(self.lines))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines)

    def _dl_strips_of(self, line: Text, width: int) -> list[Strip]:
        self.made.append(line.plain)
        return super()._dl_strips_of(line, width)


class LinesApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Lines()


def shown(widget: Lines) -> list[str]:
    """What the widget paints, through Textual's own line cache (as the compositor asks for it)."""
    strips = widget.render_lines(Region(0, 0, widget.outer_size.width, widget.outer_size.height))
    return [strip.text.strip() for strip in strips]


async def test_only_the_changed_line_is_made_again() -> None:
    app = LinesApp()
    async with app.run_test(size=(30, 8)) as pilot:
        widget = app.query_one(Lines)
        await pilot.pause()
        assert shown(widget) == ["alpha", "beta", "gamma"]
        widget.made.clear()
        widget.lines[1] = "BETA"
        widget.refresh_changed()
        await pilot.pause()
        assert widget.made == ["BETA"]
        assert shown(widget) == ["alpha", "BETA", "gamma"]
        widget.made.clear()
        widget.refresh_changed()  # nothing changed: nothing made
        await pilot.pause()
        assert widget.made == []


async def test_a_new_line_lays_out_again_and_a_full_refresh_remakes_all() -> None:
    app = LinesApp()
    async with app.run_test(size=(30, 8)) as pilot:
        widget = app.query_one(Lines)
        await pilot.pause()
        widget.lines.append("delta")
        widget.refresh_changed()
        await pilot.pause()
        assert widget.outer_size.height == 4
        assert shown(widget) == ["alpha", "beta", "gamma", "delta"]
        widget.made.clear()
        widget.refresh()  # theme, CSS, resize: every line again
        await pilot.pause()
        shown(widget)
        assert widget.made == ["alpha", "beta", "gamma", "delta"]


async def test_a_line_keeps_its_own_base_style_as_textuals_path_draws_it() -> None:
    """A line with a base style and no spans (the budget bar's dim scale) lost its style on the fast path."""
    from textual.visual import Visual, visualize

    from sparktop.ui.widgets.redraw import line_strips

    app = LinesApp()
    async with app.run_test(size=(30, 8)) as pilot:
        widget = app.query_one(Lines)
        await pilot.pause()
        for line in (Text("└0     pool┘", style="dim"), Text.assemble(("a", "bold"), " b", style="italic")):
            fast = line_strips(widget, line, 28)
            slow = Visual.to_strips(widget, visualize(widget, line), 28, None, widget.visual_style)
            fast_cells = [(seg.text, seg.style) for seg in fast[0] if seg.text]
            slow_cells = [(seg.text, seg.style) for seg in slow[0].crop(0, line.cell_len) if seg.text]
            assert [(t, s.dim, s.italic, s.bold) for t, s in fast_cells] == [
                (t, s.dim, s.italic, s.bold) for t, s in slow_cells
            ]
        dim = line_strips(widget, Text("scale", style="dim"), 28)[0]
        assert all(seg.style.dim for seg in dim if seg.text.strip())
