"""The pool's used memory and its largest consumers over time, against the safe / aggressive / pool lines."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from rich.text import Text
from textual.app import RenderResult
from textual.color import Color
from textual.strip import Strip
from textual_plotext import PlotextPlot

from sparktop.analysis.history import History
from sparktop.core.format import fmt_gb, fmt_size, unit_size
from sparktop.ui.themes import derive_palette
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
    out_t: list[float] = []
    out: dict[str, list[int | None]] = {name: [] for name in columns}
    current = -1
    scale = bins / (end - start)
    for i, t in enumerate(times):
        b = min(bins - 1, int((t - start) * scale))
        if b != current:
            current = b
            out_t.append(t)
            for name, values in columns.items():
                out[name].append(values[i])
            continue
        out_t[-1] = t
        for name, values in columns.items():
            v = values[i]
            last = out[name][-1]
            if v is not None and (last is None or v > last):
                out[name][-1] = v
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


class HistoryChart(LineDiffWidget, PlotextPlot):
    """Call `redraw(history, safe_bytes, max_bytes, pool_bytes, units)` after each tick. Drawn line by line
    (LineDiffWidget): a new draw repaints only the chart rows that changed, without Textual's costly
    conversion of plotext's whole text."""

    DEFAULT_CSS = """
    HistoryChart {
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
        self._figure_shown = False  # the lines on screen are a figure (not the blank before any data)

    def shown_span(self, times: list[float]) -> float:
        """Seconds the x axis spans when the whole history is drawn."""
        have = times[-1] - times[0] if times else 0.0
        return next((step for step in self.SPAN_STEPS_S if step >= have), have)

    def seconds_per_column(self, times: list[float]) -> float:
        return self.shown_span(times) / max(1, self.size.width - 8)

    def on_mount(self) -> None:
        # PlotextPlot's own on_mount (called too) re-themes the background; the line colours are ours.
        self.watch(self.app, "theme", self._theme_changed, init=False)

    def on_resize(self) -> None:
        # Which consumers get a legend row follows the height (they must stay above the lines' labels). A
        # paint at the new size, which often comes before this event, has drawn it already (render_line).
        if self._args is not None and self._drawing(self._args) != self._drawn:
            self._draw(self._args)

    def render(self) -> RenderResult:
        # Before any data there is nothing to plot: an empty figure would cost a plotext build all the same.
        if self._args is None:
            return Text("")
        self._figure_shown = True
        return super().render()

    def render_line(self, y: int) -> Strip:
        # Laid out since the data came, or anew since the last draw (the first data filled the panels above,
        # a resize): the figure is set up for this size before its lines are made, so they are made once.
        if self._args is not None and (self._drawn is None or self._drawn[-1] != self.size):
            self._set_up(self._args)
        return super().render_line(y)

    def _theme_changed(self) -> None:
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
        same picture. plotext is the costliest view to draw; this spares the dashboard's start two
        draws at no size and one repeat."""
        history = a.history
        labels = tuple(history.label(key) for key in history.top_keys(a.top_n))
        return (a, len(history), history.latest_time, labels, self.size)

    def _var(self, variable: str, fallback: str) -> tuple[int, int, int] | str:
        """A theme variable as plotext wants a colour: an RGB tuple."""
        try:
            value = self.app.theme_variables.get(variable)
        except Exception:  # not mounted yet
            return fallback
        return _rgb(value) if value else fallback

    def _draw(self, a: _Args) -> None:
        self._set_up(a)
        if self._figure_shown:
            self.refresh_changed()  # repaint the rows whose text changed
        else:
            # The first figure: made at the next paint, at the size the layout gives the chart then (the
            # first data also fills the panels above it), not once now and again after the layout.
            self.refresh()

    def _set_up(self, a: _Args) -> None:
        """Give plotext the figure of `a` at the current size (cheap; the costly build is `render`)."""
        self._drawn = self._drawing(a)
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        unit = unit_size(a.units)
        surface = self._var("surface", "default")
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
            if not short:
                plt.title(f"memory ({a.units}) — collecting…")
                plt.xlabel("minutes ago")
            self._axes(-(a.span_s or self.MIN_SPAN_S) / 60, top / unit * 1.05, "m" if short else "")
            self.refresh_changed()
            return

        keys = history.top_keys(a.top_n)
        columns: dict[str, list[int | None]] = {"": list(history.used()[skip:])}
        for key in keys:
            columns[key] = history.series(key)[skip:]
        now = times[-1]
        span_s = a.span_s if a.span_s is not None else self.shown_span(times)
        start = now - span_s
        bins = max(16, 2 * max(1, self.size.width - 10))  # braille: two dots per column
        times, columns = _downsample(times, columns, start, now, bins)
        span_min = span_s / 60
        per = 60.0 if span_min <= _HOURS_FROM_MIN else 3600.0
        if not short:
            plt.xlabel("minutes ago" if per == 60 else "hours ago")
        xs = [(t - now) / per for t in times]
        left = -span_min * 60 / per
        top = max([top] + [v for v in columns[""] if v is not None])
        if not short:
            plt.title(f"memory ({a.units}) · pool {fmt_size(a.pool_bytes, a.units)}")
        self._axes(left, top / unit * 1.05, ("m" if per == 60 else "h") if short else "")

        line_colors = {"safe": self._var("warning", "orange"), "aggressive": self._var("error", "red")}
        for name, line in lines:
            color = line_colors[name]
            plt.hline(line / unit, color=color)
            # The whole label, its number alone, or none: the frame cut `aggressive 100 GB` to `aggressive 1`.
            room = self.size.width - 12  # the y axis's ticks and the frame
            label = next((t for t in (f" {name} {fmt_gb(line)} ", f" {fmt_gb(line)} ") if len(t) <= room), "")
            if label:
                plt.text(label, x=left, y=line / unit, color=color, background=surface, alignment="left")
        if a.pool_bytes > 0:
            muted = self._var("foreground-muted", "gray")
            plt.hline(a.pool_bytes / unit, color=muted)
            # Named at the right end (the legend is at the left): the top line is the pool, not the frame;
            # unless the latest data is up there, where the name would cover it (the title names the pool).
            recent = [v for v in columns[""][-max(1, len(xs) // 8) :] if v is not None]
            # Not on a narrow chart either: it covered the legend's `used` (`⢕⢕ use pool`).
            narrow = self.size.width - 12 < 24
            if (not recent or max(recent) < 0.95 * a.pool_bytes) and not narrow:
                plt.text(
                    " pool ", x=0, y=a.pool_bytes / unit, color=muted, background=surface, alignment="right"
                )

        # Where a lasting GPU throttle began (power cap, heat): a slower GPU explains a slower workload. The
        # title names the mark (a label in the plot would cover a line).
        slowed_color = self._var("warning", "orange")
        marks = [(began - now) / per for began in history.throttle_starts() if began >= start]
        for x in marks:
            plt.vline(x, color=slowed_color)
        if marks and not short:
            title = f"memory ({a.units}) · pool {fmt_size(a.pool_bytes, a.units)} · │ GPU slowed"
            if len(title) + 4 <= self.size.width:  # plotext drops a title wider than the plot
                plt.title(title)

        # `used` first, so it heads the legend. The legend (top left) gets the rows above the highest line's
        # label: the consumers beyond that are drawn unlabelled (their colours are the bar's).
        legend_rows = self._rows_above(max((n for _name, n in lines), default=0) / unit, top / unit * 1.05)
        foreground = self._var("foreground", "white")
        self._plot_gappy(xs, columns[""], unit, foreground, "used")
        theme = self.app.current_theme if self.is_mounted else None
        segments = derive_palette(theme).segments if theme else ("cyan", "magenta", "green", "yellow")
        for i, key in enumerate(keys):
            color = _rgb(a.colors[key]) if a.colors and key in a.colors else _rgb(segments[i % len(segments)])
            label = history.label(key)
            if len(label) > _LABEL_WIDTH:
                label = label[: _LABEL_WIDTH - 1] + "…"
            self._plot_gappy(xs, columns[key], unit, color, label if i + 1 < legend_rows else None)
        # `used` again, on top: where a consumer's line shares a cell with it (one consumer holding most of
        # the pool), the last line drawn takes the cell, and `used` is the line that must not vanish.
        if keys:
            self._plot_gappy(xs, columns[""], unit, foreground, None)

    def _rows_above(self, y: float, y_top: float) -> int:
        """Plot rows above the row that height `y` is drawn on (all of them when `y` is 0): title, frame, tick
        labels and the x label take five of the widget's rows."""
        rows = max(1, self.size.height - (3 if self._short() else 5))
        return rows if y <= 0 or y_top <= 0 else round((rows - 1) * (1 - y / y_top))

    def _short(self) -> bool:
        return self.size.height < _SHORT_ROWS

    def _axes(self, left: float, top: float, x_unit: str = "") -> None:
        """The axes' ranges and ticks; `x_unit` ("m", "h") on each x tick where no x label says it."""
        plt = self.plt
        plt.xlim(left, 0)
        plt.ylim(0, top)
        xticks = _ticks(left, 0, max(2, self.size.width // 12))
        plt.xticks(xticks, [_x_label(x, x_unit) for x in xticks])
        yticks = _ticks(0, top, max(2, self.size.height // 4))
        plt.yticks(yticks, [f"{y:g}" for y in yticks])

    def _plot_gappy(
        self,
        xs: list[float],
        values: list[int | None],
        unit: int,
        color: tuple[int, int, int] | str,
        label: str | None,
    ) -> None:
        """One line per unbroken run, so a consumer that was gone is not bridged; the label once."""
        run_x: list[float] = []
        run_y: list[float] = []
        labelled = label is None

        def flush() -> None:
            nonlocal labelled
            if run_x:
                self.plt.plot(run_x, run_y, color=color, marker="braille", label=None if labelled else label)
                labelled = True

        for x, v in zip(xs, values, strict=True):
            if v is None:
                flush()
                run_x, run_y = [], []
            else:
                run_x.append(x)
                run_y.append(v / unit)
        flush()


def _rgb(color: str) -> tuple[int, int, int] | str:
    try:
        return Color.parse(color).rgb
    except Exception:  # a plotext colour name such as "gray"
        return color
