"""A line chart in terminal cells: series drawn in braille dots, inside a box frame with ticks, as rows of
(text, colour) runs.

The figure is a `width` x `height` grid: a title on the first row (optional); a box frame with the y axis's
ticks on its left (`120┤`) and the x axis's on its bottom edge (`┬`), their labels under it, and an x label on
the last row (optional); inside the frame, horizontal and vertical marker lines (`─`, `│`, joined to the frame
with `├ ┤ ┬ ┴`), series drawn as lines of braille dots (each cell two dots across and four down, U+2800), text
labels on the marker lines, and a legend at the top left. Later layers cover earlier ones in that order, and
among the series the one drawn last takes a cell they share. Pure Python (no Textual, no plotext): the
dashboard's 79x23 chart makes its rows in ~1 ms, and a whole draw costs ~3.5 ms where plotext's took 25-30
(bench/bench_chart.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from rich.cells import cell_len

Colour = str | None  # a colour as the caller's renderer names it; None: the frame's (the default text colour)
Run = tuple[str, Colour]

LEGEND_MARK = "⢕⢕"
_BRAILLE = 0x2800
# The bit of each dot of a braille cell, by the dot's column (0, 1) and its row from the top (0-3).
_DOT_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))


@dataclass(frozen=True)
class _Series:
    xs: Sequence[float]
    ys: Sequence[float | None]
    colour: Colour


@dataclass(frozen=True)
class _Label:
    text: str
    y: float
    colour: Colour
    at: Literal["left", "right"]


class BraillePlot:
    """One figure: set it up, add lines and labels, then `rows()`. `x_ticks` and `y_ticks` are (value, label)
    pairs; the y labels' width sets where the frame starts."""

    def __init__(
        self,
        width: int,
        height: int,
        x_range: tuple[float, float],
        y_range: tuple[float, float],
        *,
        x_ticks: Sequence[tuple[float, str]] = (),
        y_ticks: Sequence[tuple[float, str]] = (),
        title: str = "",
        x_label: str = "",
    ) -> None:
        self.width, self.height = max(0, width), max(0, height)
        self.x_range, self.y_range = x_range, y_range
        self.x_ticks, self.y_ticks = list(x_ticks), list(y_ticks)
        self.title, self.x_label = title, x_label
        self.frame_left = max((len(_slots(label)) for _value, label in self.y_ticks), default=0)
        self.frame_top = 1 if title else 0
        # Under the frame: the x ticks' labels, then the x label.
        self.frame_bottom = self.height - 2 - (1 if x_label else 0)
        self.rows_in_plot = max(0, self.frame_bottom - self.frame_top - 1)
        self.cols_in_plot = max(0, self.width - self.frame_left - 2)
        self._hlines: list[tuple[float, Colour]] = []
        self._vlines: list[tuple[float, Colour]] = []
        self._series: list[_Series] = []
        self._labels: list[_Label] = []
        self._legend: list[tuple[str, Colour]] = []
        self._wide_rows: set[int] = set()  # rows given text with wide or zero-width characters

    # -- where a value goes -------------------------------------------------------------------------------

    def _dot_x(self, x: float) -> int:
        low, high = self.x_range
        dots = 2 * self.cols_in_plot - 1
        return round((x - low) / (high - low) * dots) if high > low else dots

    def _dot_y(self, y: float) -> int:
        """Dots up from the bottom of the plot."""
        low, high = self.y_range
        return round((y - low) / (high - low) * (4 * self.rows_in_plot - 1)) if high > low else 0

    def column_of(self, x: float) -> int:
        """The plot column (0 = the first inside the frame) that `x` falls in."""
        return self._dot_x(x) // 2

    def row_of(self, y: float) -> int:
        """The plot row (0 = the first inside the frame, at the top) that `y` falls in."""
        return self.rows_in_plot - 1 - self._dot_y(y) // 4

    # -- what to draw -------------------------------------------------------------------------------------

    def hline(self, y: float, colour: Colour) -> None:
        self._hlines.append((y, colour))

    def vline(self, x: float, colour: Colour) -> None:
        self._vlines.append((x, colour))

    def label(self, text: str, y: float, colour: Colour, at: Literal["left", "right"] = "left") -> None:
        """`text` on the row of `y`, from the plot's left edge or ending at its right edge (over the
        lines)."""
        self._labels.append(_Label(text, y, colour, at))

    def plot(
        self, xs: Sequence[float], ys: Sequence[float | None], colour: Colour, label: str | None = None
    ) -> None:
        """A line through the points, broken where a y is None (a gap is not bridged); `label` goes in the
        legend if any point is drawn."""
        self._series.append(_Series(xs, ys, colour))
        if label is not None and any(y is not None for y in ys):
            self.legend(label, colour)

    def legend(self, label: str, colour: Colour) -> None:
        """An entry in the legend, under those before it."""
        self._legend.append((label, colour))

    # -- the figure ---------------------------------------------------------------------------------------

    def rows(self) -> list[list[Run]]:
        """The figure, one list of runs per row, each row exactly `width` cells."""
        width, height = self.width, self.height
        chars = [[" "] * width for _ in range(height)]
        colours: list[list[Colour]] = [[None] * width for _ in range(height)]
        self._wide_rows.clear()
        if self.rows_in_plot >= 1 and self.cols_in_plot >= 2:
            self._draw(chars, colours)
        for y in self._wide_rows:
            _mend(chars[y])
        return [_runs(chars[y], colours[y]) for y in range(height)]

    def _put(self, chars: list[list[str]], y: int, x: int, cells: list[str]) -> None:
        """Text (as `_slots` makes it) into row `y` from column `x`."""
        chars[y][x : x + len(cells)] = cells
        if not "".join(cells).isascii():
            self._wide_rows.add(y)

    def _put_centred(self, chars: list[list[str]], y: int, text: str, left: int, right: int) -> None:
        """`text` centred over columns left..right of row `y`, cut with … where the row is narrower."""
        cells = _slots(text)
        if len(cells) > self.width:
            cells = [*_fit(cells, self.width - 1), "…"] if self.width else []
        self._put(
            chars, y, max(0, min(left + (right - left + 1 - len(cells)) // 2, self.width - len(cells))), cells
        )

    def _draw(self, chars: list[list[str]], colours: list[list[Colour]]) -> None:
        left, right = self.frame_left, self.width - 1
        top, bottom = self.frame_top, self.frame_bottom
        first_row, first_col = top + 1, left + 1  # the plot's first cell in the grid
        rows, cols = self.rows_in_plot, self.cols_in_plot

        if self.title:
            self._put_centred(chars, 0, self.title, left, right)
        chars[top][left:] = ["┌"] + ["─"] * cols + ["┐"]
        chars[bottom][left:] = ["└"] + ["─"] * cols + ["┘"]
        for y in range(first_row, bottom):
            chars[y][left] = chars[y][right] = "│"
        for value, text in self.y_ticks:
            row = self.row_of(value)
            if 0 <= row < rows:
                chars[first_row + row][left] = "┤"
                cells = _slots(text)
                self._put(chars, first_row + row, left - len(cells), cells)
        for value, text in self.x_ticks:
            col = self.column_of(value)
            if 0 <= col < cols:
                chars[bottom][first_col + col] = "┬"
                cells = _fit(_slots(text), self.width)
                start = max(0, min(first_col + col - len(cells) // 2, self.width - len(cells)))
                self._put(chars, bottom + 1, start, cells)
        if self.x_label:
            self._put_centred(chars, bottom + 2, self.x_label, left, right)

        for value, colour in self._hlines:
            row = self.row_of(value)
            if 0 <= row < rows:
                y = first_row + row
                chars[y][first_col:right] = ["─"] * cols
                colours[y][first_col:right] = [colour] * cols
                chars[y][left], chars[y][right] = "├", "┤"
        for value, colour in self._vlines:
            col = self.column_of(value)
            if 0 <= col < cols:
                x = first_col + col
                for y in range(first_row, bottom):
                    chars[y][x] = "┼" if chars[y][x] == "─" else "│"
                    colours[y][x] = colour
                chars[top][x] = "┬"
                chars[bottom][x] = "┼" if chars[bottom][x] == "┬" else "┴"

        for row, col, mask, colour in self._dots():
            chars[first_row + row][first_col + col] = chr(_BRAILLE + mask)
            colours[first_row + row][first_col + col] = colour

        for label in self._labels:
            row = self.row_of(label.y)
            if not 0 <= row < rows:
                continue
            cells = _fit(_slots(label.text), cols)
            start = first_col if label.at == "left" else right - len(cells)
            self._put(chars, first_row + row, start, cells)
            colours[first_row + row][start : start + len(cells)] = [label.colour] * len(cells)

        if self._legend:
            names = [_slots(text) for text, _colour in self._legend[:rows]]
            inner = max(len(name) for name in names)
            for row, (name, (_text, colour)) in enumerate(zip(names, self._legend, strict=False)):
                cells = _fit([" ", *LEGEND_MARK, " ", *name, *[" "] * (inner - len(name)), " "], cols)
                cell_colours: list[Colour] = [None, *[colour] * len(LEGEND_MARK)] + [None] * len(cells)
                self._put(chars, first_row + row, first_col, cells)
                colours[first_row + row][first_col : first_col + len(cells)] = cell_colours[: len(cells)]

    def _dots(self) -> list[tuple[int, int, int, Colour]]:
        """Every plot cell a series drew in: (row, column, the braille dots' bits, the series' colour). The
        series drawn last takes a cell it shares with others (its own dots only)."""
        rows, cols = self.rows_in_plot, self.cols_in_plot
        dots_x, dots_y = 2 * cols, 4 * rows
        masks = [0] * (rows * cols)
        owners = [-1] * (rows * cols)
        # A dot's cell and bit, by its x and its y up from the bottom (the chart's hot loop: no calls in it).
        cell_of_x = [x >> 1 for x in range(dots_x)]
        cell_of_y = [(rows - 1 - y // 4) * cols for y in range(dots_y)]
        bit_of = [[_DOT_BITS[x & 1][3 - (y & 3)] for y in range(dots_y)] for x in range(2)]
        (x_low, x_high), (y_low, y_high) = self.x_range, self.y_range
        x_scale = (dots_x - 1) / (x_high - x_low) if x_high > x_low else 0.0
        y_scale = (dots_y - 1) / (y_high - y_low) if y_high > y_low else 0.0

        def put(x: int, y: int, owner: int) -> None:
            if 0 <= x < dots_x and 0 <= y < dots_y:
                cell = cell_of_y[y] + cell_of_x[x]
                if owners[cell] == owner:
                    masks[cell] |= bit_of[x & 1][y]
                else:
                    owners[cell], masks[cell] = owner, bit_of[x & 1][y]

        dots_of_xs: dict[int, list[int]] = {}  # the series mostly share one list of x values: placed once
        for owner, series in enumerate(self._series):
            xs = dots_of_xs.get(id(series.xs))
            if xs is None:
                xs = [round((x - x_low) * x_scale) if x_scale else dots_x - 1 for x in series.xs]
                dots_of_xs[id(series.xs)] = xs
            last_x = last_y = -1
            for x, y_value in zip(xs, series.ys, strict=True):
                if y_value is None:
                    last_x = last_y = -1
                    continue
                y = round((y_value - y_low) * y_scale)
                steps = max(abs(x - last_x), abs(y - last_y)) if last_x >= 0 else 1
                if steps <= 1:
                    # The next dot (most points, two to a cell): set here, without a call.
                    if 0 <= x < dots_x and 0 <= y < dots_y:
                        cell = cell_of_y[y] + cell_of_x[x]
                        if owners[cell] == owner:
                            masks[cell] |= bit_of[x & 1][y]
                        else:
                            owners[cell], masks[cell] = owner, bit_of[x & 1][y]
                else:  # every dot on the way from the last point: a steep step stays one unbroken line
                    dx, dy = (x - last_x) / steps, (y - last_y) / steps
                    for i in range(1, steps + 1):
                        put(last_x + round(dx * i), last_y + round(dy * i), owner)
                last_x, last_y = x, y
        return [
            (cell // cols, cell % cols, masks[cell], self._series[owner].colour)
            for cell, owner in enumerate(owners)
            if owner >= 0
        ]


def _slots(text: str) -> list[str]:
    """`text` as one string per terminal cell: a wide character's second cell is "", a zero-width one rides
    on the cell before it (so a row of slots is as many cells wide as it has slots)."""
    if text.isascii():
        return list(text)
    slots: list[str] = []
    for ch in text:
        width = cell_len(ch)
        if width == 0:
            if slots:
                slots[-1] += ch
            continue
        slots.append(ch)
        if width == 2:
            slots.append("")
    return slots


def _fit(cells: list[str], width: int) -> list[str]:
    """The first `width` of `cells`; a wide character cut in half becomes a space."""
    out = cells[: max(0, width)]
    if out and len(cells) > len(out) and cells[len(out)] == "":
        out[-1] = " "
    return out


def _mend(row: list[str]) -> None:
    """A row where text with wide characters went: where a later layer covered half of one, a space for the
    half left, so the row stays as wide as the figure."""
    for x, cell in enumerate(row):
        if cell == "":
            if x == 0 or cell_len(row[x - 1]) != 2:
                row[x] = " "
        elif cell_len(cell) == 2 and (x + 1 == len(row) or row[x + 1] != ""):
            row[x] = " "


def _runs(chars: list[str], colours: list[Colour]) -> list[Run]:
    """One row's cells as runs of one colour each."""
    edges = [0, *[x for x in range(1, len(colours)) if colours[x] != colours[x - 1]], len(colours)]
    return [("".join(chars[start:end]), colours[start]) for start, end in pairwise(edges)]
