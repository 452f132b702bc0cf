"""The budget bar's segments as a small table (tall terminals): colour, name, CPU, GPU, total, trend."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table
from rich.text import Text
from textual.widget import Widget

from sparktop.core.format import NO_VALUE, fmt_cell, fmt_rate_cell
from sparktop.ui.widgets.budget_bar import Segment


class ConsumerSummary(Widget):
    DEFAULT_CSS = """
    ConsumerSummary { height: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._rows: list[tuple[Segment, float | None]] = []
        self.units = "GiB"
        self.warn_color = "yellow"

    def show(
        self, segments: list[Segment], rate: Callable[[str], float | None], units: str, warn_color: str
    ) -> None:
        rows = [(seg, rate(seg.key) if seg.key != "free" else None) for seg in segments]
        # One line per row: the height (and so the layout) changes only with the row count.
        relayout = len(rows) != len(self._rows)
        self._rows = rows
        self.units = units
        self.warn_color = warn_color
        if relayout:
            self.clear_cached_dimensions()
        self.refresh(layout=relayout)

    def render(self) -> Table | Text:
        if not self._rows:
            return Text("")
        table = Table(box=None, expand=True, padding=(0, 1), show_edge=False, header_style="bold")
        table.add_column("consumer", ratio=1, min_width=22, no_wrap=True, overflow="ellipsis")
        for name in ("CPU", "GPU", "total", "trend/min"):
            table.add_column(name, justify="right", no_wrap=True)
        units = self.units
        # Each cell in its own unit, as btop writes them (a unit per column wrote `0.00` for small rows).
        for seg, rate in self._rows:
            cpu = seg.nbytes - seg.gpu_bytes
            growing = rate is not None and rate >= 100 * 1024**2
            trend = Text(
                fmt_rate_cell(rate, units) if rate is not None else "·",
                style=f"bold {self.warn_color}" if growing else "dim",
            )
            table.add_row(
                Text.assemble(("■ ", seg.color), seg.label),
                fmt_cell(cpu, units),
                fmt_cell(seg.gpu_bytes, units) if seg.gpu_bytes else NO_VALUE,
                fmt_cell(seg.nbytes, units),
                trend,
            )
        return table
