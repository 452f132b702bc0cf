"""BraillePlot (the history chart's figure, drawn without plotext) and the chart's downsampling, on small
figures whose every cell can be checked."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparktop.ui.widgets.braille_plot import LEGEND_MARK, BraillePlot
from sparktop.ui.widgets.history_chart import _downsample

BRAILLE = range(0x2800, 0x2900)


def text(plot: BraillePlot) -> list[str]:
    return ["".join(run for run, _colour in row) for row in plot.rows()]


def colour_at(plot: BraillePlot, row: int, col: int) -> str | None:
    x = 0
    for run, colour in plot.rows()[row]:
        if x <= col < x + len(run):
            return colour
        x += len(run)
    raise IndexError(col)


def dots(ch: str) -> set[tuple[int, int]]:
    """The dots of a braille character as (column, row from the top)."""
    bits = ord(ch) - 0x2800
    layout = {0x01: (0, 0), 0x02: (0, 1), 0x04: (0, 2), 0x40: (0, 3)}
    layout |= {0x08: (1, 0), 0x10: (1, 1), 0x20: (1, 2), 0x80: (1, 3)}
    return {where for bit, where in layout.items() if bits & bit}


def test_frame_ticks_title_and_x_label_are_laid_out_as_the_chart_always_was() -> None:
    plot = BraillePlot(
        20, 9, (-10, 0), (0, 100),
        x_ticks=[(-10, "-10"), (-5, "-5"), (0, "now")], y_ticks=[(0, "0"), (50, "50"), (100, "100")],
        title="memory", x_label="minutes ago",
    )  # fmt: skip
    rows = text(plot)
    assert len(rows) == 9 and all(len(row) == 20 for row in rows)
    assert rows[0].strip() == "memory"
    assert rows[1] == "   ┌" + "─" * 15 + "┐"  # the y labels' width sets the frame's column
    assert rows[2].startswith("100┤") and rows[-4].startswith("  0┤")  # top and bottom plot rows
    assert rows[-3].startswith("   └┬") and rows[-3].endswith("┬┘")  # first and last x ticks at the ends
    assert rows[-2].split() == ["-10", "-5", "now"]
    assert rows[-1].strip() == "minutes ago"
    assert (plot.rows_in_plot, plot.cols_in_plot) == (4, 15)


def test_without_title_and_x_label_the_plot_takes_their_rows() -> None:
    ticks = {"x_ticks": [(-1, "-1m"), (0, "now")], "y_ticks": [(0, "0"), (10, "10")]}
    plot = BraillePlot(20, 6, (-1, 0), (0, 10), **ticks)
    rows = text(plot)
    assert rows[0].startswith("  ┌") and rows[-2].startswith("  └") and rows[-1].split() == ["-1m", "now"]
    assert plot.rows_in_plot == 3


def test_a_line_is_braille_dots_in_its_colour_two_across_and_four_down_each_cell() -> None:
    plot = BraillePlot(6, 4, (0, 3), (0, 3))  # 4 columns x 1 row of plot: 8 x 4 dots
    assert (plot.cols_in_plot, plot.rows_in_plot) == (4, 1)
    plot.plot([0, 1, 2, 3], [0, 1, 2, 3], "#ff0000")
    row = text(plot)[1]
    cells = row[1:5]
    assert all(ord(ch) in BRAILLE for ch in cells)
    # x: 0..3 over dots 0..7 (7/3 a unit), y: 0..3 over dots 0..3 from the bottom: a staircase, every dot
    # on the way drawn (the line is unbroken), climbing from the bottom-left to the top-right.
    drawn = {(2 * i + c, 3 - r) for i, ch in enumerate(cells) for c, r in dots(ch)}
    assert (0, 0) in drawn and (7, 3) in drawn
    assert all(any((x, y) in drawn for y in range(4)) for x in range(8))
    assert {colour_at(plot, 1, col) for col in range(1, 5)} == {"#ff0000"}


def test_a_gap_is_not_bridged_and_a_lone_point_is_a_dot() -> None:
    plot = BraillePlot(12, 4, (0, 9), (0, 1))  # 10 columns, 20 dots across
    plot.plot(list(range(10)), [0, 0, 0, None, None, None, None, 0, None, 0], "#00ff00")
    cells = text(plot)[1][1:11]
    drawn = [i for i, ch in enumerate(cells) if ch != " "]
    assert ord(cells[0]) in BRAILLE
    assert not any(ch != " " for ch in cells[3:7])  # no line through the None run
    assert drawn[-1] == 9 and 7 in drawn  # the lone point at x=7 and the one at x=9


def test_the_series_drawn_last_takes_a_shared_cell_with_its_own_dots() -> None:
    plot = BraillePlot(6, 4, (0, 3), (0, 3))
    plot.plot([0, 3], [3, 3], "#0000ff")  # along the top
    plot.plot([0, 3], [0, 0], "#ff00ff")  # along the bottom, in the same cells
    cells = text(plot)[1][1:5]
    assert all(dots(ch) == {(0, 3), (1, 3)} for ch in cells)  # the bottom dots alone
    assert {colour_at(plot, 1, col) for col in range(1, 5)} == {"#ff00ff"}


def test_marker_lines_join_the_frame_and_lie_under_the_data_and_labels() -> None:
    plot = BraillePlot(14, 8, (-10, 0), (0, 100), y_ticks=[(0, "0"), (100, "100")])
    plot.hline(50, "orange")
    plot.vline(-5, "yellow")
    rows = text(plot)
    line_row = next(i for i, row in enumerate(rows[1:-2], 1) if "─" in row[4:-1])  # inside the frame
    assert rows[line_row][3] == "├" and rows[line_row][-1] == "┤"
    col = rows[line_row].index("┼")  # where the two lines cross
    assert rows[0][col] == "┬" and rows[-2][col] == "┴" and colour_at(plot, line_row, col) == "yellow"
    plot.plot([-10, 0], [50, 50], "red")  # the data covers the line ...
    plot.label(" safe ", 50, "orange")  # ... and the label covers the data
    covered = text(plot)[line_row]
    assert covered[4:10] == " safe " and ord(covered[10]) in BRAILLE
    plot.label(" pool ", 50, "gray", at="right")
    assert text(plot)[line_row][-7:] == " pool ┤"


def test_the_legend_sits_top_left_over_everything_its_marks_in_their_colours() -> None:
    plot = BraillePlot(30, 8, (0, 1), (0, 1))
    plot.hline(1, "gray")
    plot.plot([0, 1], [1, 1], "white", "used")
    plot.plot([0, 1], [None, None], "red", "gone")  # nothing drawn: no entry
    plot.legend("a much longer name", "blue")
    rows = text(plot)
    assert rows[1][1:].startswith(f" {LEGEND_MARK} used               ") and rows[1][-1] == "┤"
    assert rows[2][1:].startswith(f" {LEGEND_MARK} a much longer name ")
    assert "gone" not in "".join(rows)
    assert colour_at(plot, 1, 2) == "white" and colour_at(plot, 2, 3) == "blue"
    assert colour_at(plot, 2, 6) is None  # the label in the frame's colour


def test_a_figure_too_small_for_a_plot_is_blank_and_keeps_its_size() -> None:
    for width, height in ((3, 3), (10, 2), (0, 0)):
        plot = BraillePlot(width, height, (0, 1), (0, 1), y_ticks=[(0, "0")], title="t", x_label="x")
        plot.plot([0, 1], [0, 1], "red", "used")
        assert text(plot) == [" " * width] * height


def test_rows_and_columns_of_values_match_where_the_dots_go() -> None:
    plot = BraillePlot(22, 10, (-10, 0), (0, 128))
    for value in (0, 40, 80, 100, 121.7):
        row = plot.row_of(value)
        plot_here = BraillePlot(22, 10, (-10, 0), (0, 128))
        plot_here.plot([-10, 0], [value, value], "red")
        assert any(ord(ch) in BRAILLE for ch in text(plot_here)[1 + row]), value
    assert plot.column_of(-10) == 0 and plot.column_of(0) == plot.cols_in_plot - 1


def naive_downsample(times, columns, start, end, bins):
    """The rule, plainly: a point in the slice of the last slice start at or before it; a slice's last time
    and its peak."""
    if len(times) <= bins:
        return times, columns
    width = (end - start) / bins
    slices: dict[int, list[int]] = {}
    for i, t in enumerate(times):
        slices.setdefault(max(k for k in range(bins) if k == 0 or start + k * width <= t), []).append(i)
    out_t = [times[idx[-1]] for _b, idx in sorted(slices.items())]
    out = {}
    for name, values in columns.items():
        out[name] = []
        for _b, idx in sorted(slices.items()):
            known = [values[i] for i in idx if values[i] is not None]
            out[name].append(max(known) if known else None)
    return out_t, out


@given(
    st.lists(st.floats(0, 10_000, allow_nan=False), min_size=1, max_size=300, unique=True),
    st.floats(0, 5_000, allow_nan=False),
    st.integers(2, 40),
    st.data(),
)
def test_downsampling_keeps_each_slices_peak_and_last_time(
    stamps: list[float], before: float, bins: int, data
) -> None:
    """As the chart calls it: the span ends at the last point and starts at or before the first."""
    times = sorted(stamps)
    values = data.draw(st.lists(st.none() | st.integers(0, 10**12), min_size=len(times), max_size=len(times)))
    columns = {"used": [v or 0 for v in values], "consumer": values}
    start, end = times[0] - before, times[-1]
    if end <= start:
        return
    assert _downsample(times, columns, start, end, bins) == naive_downsample(times, columns, start, end, bins)


def cells_wide(row: list[tuple[str, object]]) -> int:
    from rich.cells import cell_len

    return sum(cell_len(run) for run, _colour in row)


def test_wide_and_combining_characters_keep_every_row_as_wide_as_the_figure() -> None:
    """A process may be named in CJK or carry an emoji or an accent made of two code points: counted by
    characters, the row came out a cell too wide, and a row wider than the widget wraps onto the next."""
    plot = BraillePlot(30, 8, (0, 1), (0, 1), title="mémoire 内存", y_ticks=[(0, "0"), (1, "1")])
    plot.plot([0, 1], [0.9, 0.9], "white", "训练任务-😀")
    plot.plot([0, 1], [0.5, 0.5], "red", "cafe\u0301")  # e + a combining acute: one cell
    plot.legend("一二三四五六七八九十一二三四五", "blue")  # 30 cells, cut in half a character
    plot.label("标签" * 20, 0.2, "green")
    for row in plot.rows():
        assert cells_wide(row) == 30, row
    rows = text(plot)
    assert "训练任务-😀" in rows[2] and "cafe\u0301" in rows[3] and "mémoire 内存" in rows[0]
    narrow = BraillePlot(12, 8, (0, 1), (0, 1), title="内存" * 10, x_label="分钟" * 10)
    narrow.plot([0, 1], [0.5, 0.5], "white", "内存内存内存内存")
    assert all(cells_wide(row) == 12 for row in narrow.rows())
