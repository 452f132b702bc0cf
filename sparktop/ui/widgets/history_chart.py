"""The pool's used memory and its largest consumers over time, against the safe / aggressive / pool lines."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from itertools import pairwise

from rich.cells import cell_len
from rich.style import Style
from rich.text import Span, Text
from textual.color import Color
from textual.strip import Strip

from sparktop.analysis.history import History
from sparktop.core.format import fmt_gb, fmt_size, unit_size
from sparktop.ui.themes import derive_palette
from sparktop.ui.widgets.braille_plot import BraillePlot, Colour, Run
from sparktop.ui.widgets.redraw import LineDiffWidget

_LABEL_WIDTH = 22
_NICE_STEPS = (0.25, 0.5, 1, 2, 5, 10, 15, 20, 25, 30, 50, 60, 100, 120, 180, 240, 360, 500, 1000)
_HOURS_FROM_MIN = 120  # a span longer than this is drawn in hours
# A chart this short draws no title and no "minutes ago" (the ticks name the unit: `-5m`): with them, a 60x18
# terminal left one plot row and a lone "0" tick.
_SHORT_ROWS = 9


@dataclass(frozen=True)
class _Args:
    history: History
    safe_bytes: int
    max_bytes: int
    pool_bytes: int
    units: str
    top_n: int
    span_s: float | None
    colors: dict[str, str] | None


def _downsample(
    times: list[float], columns: dict[str, list[int | None]], start: float, end: float, bins: int
) -> tuple[list[float], dict[str, list[int | None]]]:
    """At most `bins` points, one per equal slice of [start, end]: the slice's last time and each series'
    peak in it (a spike must not vanish because the widget is narrow)."""
    if len(times) <= bins or end <= start:
        return times, columns
    # Where each slice's points begin (the times are sorted): slice k holds the times from its start,
    # start + k x its width, found by bisection rather than a pass over every point.
    width = (end - start) / bins
    edges = [0]
    for k in range(1, bins):
        edge = bisect_left(times, start + k * width, edges[-1])
        if edge > edges[-1]:
            edges.append(edge)
    if edges[-1] < len(times):
        edges.append(len(times))
    out_t = [times[i - 1] for i in edges[1:]]
    out: dict[str, list[int | None]] = {}
    for name, values in columns.items():
        if None not in values:
            out[name] = [max(values[first:after]) for first, after in pairwise(edges)]  # type: ignore[type-var]
            continue
        peaks: list[int | None] = []
        for first, after in pairwise(edges):
            known = [v for v in values[first:after] if v is not None]
            peaks.append(max(known) if known else None)
        out[name] = peaks
    return out_t, out


def _nice_step(span: float, max_ticks: int) -> float:
    """The smallest step from `_NICE_STEPS` that puts at most `max_ticks` ticks on `span`."""
    for step in _NICE_STEPS:
        if span / step <= max_ticks:
            return step
    return span / max_ticks


def _ticks(low: float, high: float, max_ticks: int) -> list[float]:
    """Multiples of a nice step in [low, high], always including 0 when it is in range."""
    step = _nice_step(high - low, max(1, max_ticks))
    first = -(-low // step) * step
    out = []
    value = first
    while value <= high + 1e-9:
        out.append(round(value, 6))
        value += step
    return out


def _x_label(x: float, unit: str = "") -> str:
    return "now" if x == 0 else f"{x:g}{unit}"


class HistoryChart(LineDiffWidget):
    """Call `redraw(history, safe_bytes, max_bytes, pool_bytes, units)` after each tick. Drawn in braille
    cells (BraillePlot), line by line (LineDiffWidget): a new draw repaints only the rows that changed."""

    DEFAULT_CSS = """
    HistoryChart {
        width: 1fr;
        height: 1fr;
        min-height: 8;
    }
    """

    # The whole history is drawn on the shortest of these axes that holds it (beyond the last, on one as
    # long as the history): the first minutes come in from the right of a 1-, 2-, 5-, then 10-minute axis
    # (as in btop) instead of four dots at the edge of a ten-minute one, and one column stands for a second
    # or more, so a redraw every few seconds is all the chart needs.
    SPAN_STEPS_S = (60.0, 120.0, 300.0, 600.0)
    MIN_SPAN_S = SPAN_STEPS_S[0]

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._args: _Args | None = None
        self._drawn: tuple[object, ...] | None = None  # what the last draw drew, from _drawing()
        self._lines: list[Text] | None = None  # the figure of _drawn, made when its lines are first asked for
        self._figure_shown = False  # the lines on screen are a figure (not the blank before any data)

    def shown_span(self, times: list[float]) -> float:
        """Seconds the x axis spans when the whole history is drawn."""
        have = times[-1] - times[0] if times else 0.0
        return next((step for step in self.SPAN_STEPS_S if step >= have), have)

    def seconds_per_column(self, times: list[float]) -> float:
        return self.shown_span(times) / max(1, self.size.width - 8)

    def on_mount(self) -> None:
        # The signal, not a watch of App.theme: the watch comes before the app has worked out the new theme's
        # variables, and a draw then kept the old theme's colours (`used` light grey on a light theme).
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def on_resize(self) -> None:
        # Which consumers get a legend row follows the height (they must stay above the lines' labels). A
        # paint at the new size, which often comes before this event, has drawn it already (render_line).
        if self._args is not None and self._drawing(self._args) != self._drawn:
            self._draw(self._args)

    def render(self) -> Text:
        return Text("\n").join(self._dl_lines())

    def render_line(self, y: int) -> Strip:
        # Laid out since the data came, or anew since the last draw (the first data filled the panels above,
        # a resize): the figure is set up for this size before its lines are made, so they are made once.
        if self._args is not None and (self._drawn is None or self._drawn[-1] != self.size):
            self._set_up(self._args)
        return super().render_line(y)

    def _dl_lines(self) -> list[Text]:
        # Before any data there is nothing to plot: blank.
        if self._args is None:
            return []
        self._figure_shown = True
        if self._lines is None:
            self._lines = self._build(self._args)
        return list(self._lines)  # a copy: LineDiffWidget keeps and updates the list it is given

    def _theme_changed(self, _theme: object = None) -> None:
        if self._args is not None:
            self._draw(self._args)

    def redraw(
        self,
        history: History,
        safe_bytes: int,
        max_bytes: int,
        pool_bytes: int,
        units: str = "GiB",
        top_n: int = 4,
        *,
        span_s: float | None = None,
        colors: dict[str, str] | None = None,
    ) -> None:
        """Draw the last `span_s` seconds (all of the history when None). `colors` maps consumer keys to
        colours (e.g. the budget bar's, so a consumer looks the same everywhere); the others take the
        theme's segment palette in turn."""
        self._args = _Args(history, safe_bytes, max_bytes, pool_bytes, units, top_n, span_s, colors)
        if not self.size.area:
            return  # not laid out yet: on_resize draws it at the size it gets
        if self._drawing(self._args) != self._drawn:  # e.g. a tab switch right after on_resize drew it all
            self._draw(self._args)

    def _drawing(self, a: _Args) -> tuple[object, ...]:
        """What a draw of `a` depends on besides the theme (whose change always draws): equal means the
        same picture. The chart is the costliest view to draw; this spares the dashboard's start two
        draws at no size and one repeat."""
        history = a.history
        labels = tuple(history.label(key) for key in history.top_keys(a.top_n))
        return (a, len(history), history.latest_time, labels, self.size)

    def _draw(self, a: _Args) -> None:
        self._set_up(a)
        if self._figure_shown:
            self.refresh_changed()  # repaint the rows whose text changed
        else:
            # The first figure: made at the next paint, at the size the layout gives the chart then (the
            # first data also fills the panels above it), not once now and again after the layout.
            self.refresh()

    def _set_up(self, a: _Args) -> None:
        """Make the figure of `a` at the current size when its lines are next asked for."""
        self._drawn = self._drawing(a)
        self._lines = None

    def _build(self, a: _Args) -> list[Text]:
        """The figure of `a` at the current size, as the lines to show: the chart's one costly step."""
        figure, colours = self._figure(a)
        surface = colours["surface"]
        styles: dict[Colour, Style] = {None: Style(color=colours["foreground"], bgcolor=surface)}
        return [_line(runs, styles, surface) for runs in figure.rows()]

    def _colour(self, variable: str, fallback: str) -> str:
        """A theme variable as a colour without transparency (a muted one mixed into the chart's surface)."""
        try:
            variables = self.app.theme_variables
        except Exception:  # not mounted
            return fallback
        try:
            colour = Color.parse(variables[variable])
            if colour.a < 1:
                colour = Color.parse(variables["surface"]) + colour
        except Exception:  # missing or not a colour
            return fallback
        return colour.hex

    def _figure(self, a: _Args) -> tuple[BraillePlot, dict[str, str]]:
        """The chart of `a` at the current size, and the colours it uses by name."""
        colours = {
            "surface": self._colour("surface", "black"),
            "foreground": self._colour("foreground", "white"),
            "safe": self._colour("warning", "yellow"),
            "aggressive": self._colour("error", "red"),
            "pool": self._colour("foreground-muted", "bright_black"),
            "slowed": self._colour("warning", "yellow"),
        }
        width = self.size.width
        unit = unit_size(a.units)
        history = a.history
        times = history.times()
        skip = 0
        if a.span_s is not None and times:
            skip = bisect_left(times, times[-1] - a.span_s)
        times = times[skip:]
        # Lines above the pool cannot be reached (the bar says so): they would only squash the data.
        lines = [
            (name, nbytes)
            for name, nbytes in (("safe", a.safe_bytes), ("aggressive", a.max_bytes))
            if nbytes > 0 and (a.pool_bytes <= 0 or nbytes < a.pool_bytes)
        ]
        top = max([a.pool_bytes, 1] + [nbytes for _name, nbytes in lines])
        short = self._short()
        if not times:
            figure = self._axes(
                -(a.span_s or self.MIN_SPAN_S) / 60,
                top / unit * 1.05,
                "m" if short else "",
                title="" if short else f"memory ({a.units}) — collecting…",
                x_label="" if short else "minutes ago",
            )
            return figure, colours

        keys = history.top_keys(a.top_n)
        columns: dict[str, list[int | None]] = {"": list(history.used()[skip:])}
        for key in keys:
            columns[key] = history.series(key)[skip:]
        now = times[-1]
        span_s = a.span_s if a.span_s is not None else self.shown_span(times)
        start = now - span_s
        bins = max(16, 2 * max(1, width - 10))  # braille: two dots per column
        times, columns = _downsample(times, columns, start, now, bins)
        span_min = span_s / 60
        per = 60.0 if span_min <= _HOURS_FROM_MIN else 3600.0
        xs = [(t - now) / per for t in times]
        left = -span_min * 60 / per
        top = max([top] + [v for v in columns[""] if v is not None])
        # Where a lasting GPU throttle began (power cap, heat): a slower GPU explains a slower workload. The
        # title names the mark (a label in the plot would cover a line).
        marks = [(began - now) / per for began in history.throttle_starts() if began >= start]
        title = ""
        if not short:
            title = f"memory ({a.units}) · pool {fmt_size(a.pool_bytes, a.units)}"
            if marks and len(title) + len(" · │ GPU slowed") + 4 <= width:
                title += " · │ GPU slowed"
        figure = self._axes(
            left,
            top / unit * 1.05,
            ("m" if per == 60 else "h") if short else "",
            title=title,
            x_label="" if short else ("minutes ago" if per == 60 else "hours ago"),
        )

        for name, line in lines:
            figure.hline(line / unit, colours[name])
        if a.pool_bytes > 0:
            figure.hline(a.pool_bytes / unit, colours["pool"])
        for x in marks:
            figure.vline(x, colours["slowed"])

        # `used` heads the legend. The legend (top left) gets the rows above the highest line's label: the
        # consumers beyond that are drawn unlabelled (their colours are the bar's).
        highest = max((n for _name, n in lines), default=0)
        legend_rows = figure.row_of(highest / unit) if highest > 0 else figure.rows_in_plot
        figure.legend("used", colours["foreground"])
        theme = self.app.current_theme if self.is_mounted else None
        segments = derive_palette(theme).segments if theme else ("cyan", "magenta", "green", "yellow")
        for i, key in enumerate(keys):
            colour = _hex(a.colors[key] if a.colors and key in a.colors else segments[i % len(segments)])
            label = _cut(history.label(key), _LABEL_WIDTH)
            figure.plot(xs, _in_units(columns[key], unit), colour, label if i + 1 < legend_rows else None)
        # `used` last, on top: where a consumer's line shares a cell with it (one consumer holding most of
        # the pool), the last line drawn takes the cell, and `used` is the line that must not vanish.
        figure.plot(xs, _in_units(columns[""], unit), colours["foreground"])

        for name, line in lines:
            # The whole label, its number alone, or none: a cut `aggressive 1` would misread.
            room = width - 12  # the y axis's ticks and the frame
            label = next((t for t in (f" {name} {fmt_gb(line)} ", f" {fmt_gb(line)} ") if len(t) <= room), "")
            if label:
                figure.label(label, line / unit, colours[name], at="left")
        if a.pool_bytes > 0:
            # Named at the right end (the legend is at the left): the top line is the pool, not the frame;
            # unless the latest data is up there, where the name would cover it (the title names the pool).
            recent = [v for v in columns[""][-max(1, len(xs) // 8) :] if v is not None]
            # Not on a narrow chart either: it covered the legend's `used` (`⢕⢕ use pool`).
            narrow = width - 12 < 24
            if (not recent or max(recent) < 0.95 * a.pool_bytes) and not narrow:
                figure.label(" pool ", a.pool_bytes / unit, colours["pool"], at="right")
        return figure, colours

    def _short(self) -> bool:
        return self.size.height < _SHORT_ROWS

    def _axes(self, left: float, top: float, x_unit: str, *, title: str, x_label: str) -> BraillePlot:
        """A figure of the widget's size over [left, 0] x [0, top]; `x_unit` ("m", "h") on each x tick where
        no x label says it."""
        width, height = self.size
        x_ticks = _ticks(left, 0, max(2, width // 12))
        y_ticks = _ticks(0, top, max(2, height // 4))
        return BraillePlot(
            width,
            height,
            (left, 0),
            (0, top),
            x_ticks=[(x, _x_label(x, x_unit)) for x in x_ticks],
            y_ticks=[(y, f"{y:g}") for y in y_ticks],
            title=title,
            x_label=x_label,
        )


def _cut(label: str, cells: int) -> str:
    """`label` in at most `cells` terminal cells, … where it is cut (a CJK character takes two)."""
    if cell_len(label) <= cells:
        return label
    kept = 0
    for i, ch in enumerate(label):
        kept += cell_len(ch)
        if kept > cells - 1:
            return label[:i] + "…"
    return label


def _in_units(values: list[int | None], unit: int) -> list[float | None]:
    return [None if v is None else v / unit for v in values]


def _hex(colour: str) -> Colour:
    try:
        return Color.parse(colour).hex
    except Exception:  # not a colour: the frame's, rather than a draw that fails
        return None


def _line(runs: list[Run], styles: dict[Colour, Style], surface: str) -> Text:
    """One row of the figure as Text, each run in its colour on the chart's surface (`styles` by colour, made
    as they are first needed)."""
    spans = []
    start = 0
    for text, colour in runs:
        style = styles.get(colour)
        if style is None:
            style = styles[colour] = Style(color=colour, bgcolor=surface)
        spans.append(Span(start, start + len(text), style))
        start += len(text)
    return Text("".join(text for text, _colour in runs), spans=spans, end="")
