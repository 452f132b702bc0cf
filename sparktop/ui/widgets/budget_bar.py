"""The budget bar: the whole unified memory pool as one stacked bar, a segment per consumer, with the safe and
aggressive lines marked, the pool's state in words and a legend with every segment's size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import pairwise

from rich.text import Text
from textual.color import Color
from textual.geometry import Size
from textual.reactive import reactive

from sparktop.core.format import fmt_bytes, fmt_est, fmt_gb, fmt_size
from sparktop.core.snapshot import GB, Accounting, Consumer
from sparktop.ui.themes import Palette
from sparktop.ui.widgets.redraw import LineDiffWidget


def _ink(background: str) -> str:
    """Black or white, whichever reads on `background`."""
    return "#000000" if Color.parse(background).brightness > 0.55 else "#ffffff"


class BarState(StrEnum):
    UNDER_SAFE = "under-safe"
    BETWEEN = "between"
    OVER_AGGRESSIVE = "over-aggressive"


def bar_state(used: int, safe_bytes: int, max_bytes: int) -> BarState:
    if used >= max_bytes:
        return BarState.OVER_AGGRESSIVE
    if used >= safe_bytes:
        return BarState.BETWEEN
    return BarState.UNDER_SAFE


@dataclass(frozen=True)
class Segment:
    key: str
    label: str
    nbytes: int
    color: str
    gpu_bytes: int = 0


class ColorAssigner:
    """Gives each consumer a palette slot the first time it is seen and keeps it while it exists, so colours
    do not jump when sizes reorder."""

    def __init__(self) -> None:
        self._slots: dict[str, int] = {}

    def assign(self, keys: list[str], size: int) -> dict[str, int]:
        live = set(keys)
        self._slots = {k: v for k, v in self._slots.items() if k in live}
        used = set(self._slots.values())
        free = (i for i in range(10_000) if i not in used)
        for key in keys:
            if key not in self._slots:
                self._slots[key] = next(free)
        return {k: self._slots[k] % size for k in keys}


def build_segments(
    accounting: Accounting, total: int, palette: Palette, colors: ColorAssigner
) -> list[Segment]:
    """The bar's segments in drawing order: containers, named processes (largest first), the rest of the
    host, GPU memory nobody explains, unattributed, free."""
    named = [c for c in accounting.consumers if c.kind in ("container", "process") and not c.parent]
    named.sort(key=lambda c: (c.kind != "container", -c.total, c.key))
    # A served model sits right after the server it was split from (analysis/served.py).
    children: dict[str, list[Consumer]] = {}
    for c in accounting.consumers:
        if c.parent:
            children.setdefault(c.parent, []).append(c)
    ordered: list[Consumer] = []
    for c in named:
        ordered.append(c)
        ordered.extend(sorted(children.pop(c.key, []), key=lambda m: (-m.total, m.key)))
    named = ordered + [m for rest in children.values() for m in rest]
    slots = colors.assign([c.key for c in named], len(palette.segments))
    segments = [Segment(c.key, c.label, c.total, palette.segments[slots[c.key]], c.gpu_bytes) for c in named]
    fixed_colors = {"host-other": palette.host_other, "gpu-unexplained": palette.gpu_unexplained}
    for kind in ("host-other", "gpu-unexplained"):
        for c in accounting.consumers:
            if c.kind == kind:
                segments.append(Segment(c.key, c.label, c.total, fixed_colors[kind], c.gpu_bytes))
    if accounting.unattributed > 0:
        segments.append(
            Segment("unattributed", "unattributed", accounting.unattributed, palette.unattributed)
        )
    free = max(0, total - accounting.used)
    segments.append(Segment("free", "free", free, palette.free))
    return segments


def _columns(segments: list[Segment], total: int, width: int) -> list[int]:
    """Cells per segment: cumulative rounding, so every boundary is where its byte count says."""
    out, cum, prev = [], 0, 0
    for seg in segments:
        cum += seg.nbytes
        edge = min(width, round(cum / total * width)) if total else 0
        out.append(max(0, edge - prev))
        prev = max(prev, edge)
    if out:
        out[-1] += max(0, width - sum(out))
    return out


def _place(occupied: list[bool], start: int, text: str) -> bool:
    end = start + len(text)
    if start < 0 or end > len(occupied) or any(occupied[start:end]):
        return False
    for i in range(max(0, start - 1), min(len(occupied), end + 1)):
        occupied[i] = True
    return True


class BudgetBar(LineDiffWidget):
    """Call `show(accounting, total, safe_bytes, max_bytes, units, palette)` each tick."""

    DEFAULT_CSS = """
    BudgetBar { height: auto; }
    """

    bar_rows: reactive[int] = reactive(1)
    legend_lines: reactive[int] = reactive(2)
    detailed: reactive[bool] = reactive(False)
    show_scale: reactive[bool] = reactive(True)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._colors = ColorAssigner()
        self._data: tuple[Accounting, int, int, int, str, Palette] | None = None
        self.segments: list[Segment] = []
        self.state: BarState | None = None
        self._cache: tuple[tuple, list[Text]] | None = None  # Textual renders twice (measure, draw)
        self._fixed: tuple[tuple, Text, Text] | None = None  # (key, line marks, scale)
        self.planned_bytes = 0  # the What-if tab's planned segments, drawn on top of `used`

    def show(
        self,
        accounting: Accounting,
        total: int,
        safe_bytes: int,
        max_bytes: int,
        units: str,
        palette: Palette,
        planned: Sequence[Segment] = (),
    ) -> None:
        """`planned`: extra segments (the What-if tab's projected workloads), drawn after what is in use and
        taken out of the free segment; the title and state count them as used."""
        self._data = (accounting, total, safe_bytes, max_bytes, units, palette)
        self.segments = build_segments(accounting, total, palette, self._colors)
        self.planned_bytes = sum(seg.nbytes for seg in planned)
        if planned:
            free = self.segments.pop()  # build_segments always ends with "free"
            self.segments += [*planned, replace(free, nbytes=max(0, free.nbytes - self.planned_bytes))]
        self.state = bar_state(accounting.used + self.planned_bytes, safe_bytes, max_bytes)
        self._cache = None
        self.refresh_changed()

    def render(self) -> Text:
        return self.text_at(self.size.width or 80)

    def text_at(self, width: int) -> Text:
        """What the bar draws laid out `width` cells wide (`render()` is at the width it has now)."""
        return Text("\n").join(self._lines_at(width))

    def _dl_lines(self) -> list[Text]:
        return self._lines_at(self.size.width or 80)

    def _lines_at(self, width: int) -> list[Text]:
        return self._build(max(10, width))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        # Built for the width asked, not the last size (Widget caches heights by width alone).
        if not width:
            return 0
        return sum(len(line.wrap(self.app.console, width)) for line in self._build(max(10, width)))

    def _build(self, width: int) -> list[Text]:
        """The bar's lines at `width` (made once per data and layout; callers must not change them)."""
        if self._data is None:
            return [Text("Memory pool: waiting for the first sample…", style="dim")]
        accounting, total, safe_bytes, max_bytes, units, palette = self._data
        key = (width, self.bar_rows, self.legend_lines, self.detailed, self.show_scale)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        used = accounting.used + self.planned_bytes
        lines = [self._title(used, total, safe_bytes, max_bytes, units, palette, width)]
        # The line labels and the scale move only with the pool, the lines, the width: made once for those.
        fixed_key = (total, safe_bytes, max_bytes, units, palette, width)
        if self._fixed is None or self._fixed[0] != fixed_key:
            marks = self._marks(total, safe_bytes, max_bytes, palette, width)
            self._fixed = (fixed_key, marks, self._scale(total, units, width))
        lines.append(self._fixed[1])
        lines.append(self._bar(total, safe_bytes, max_bytes, palette, width, labels=True))
        if self.bar_rows > 1:
            plain = self._bar(total, safe_bytes, max_bytes, palette, width, labels=False)
            lines.extend(plain for _ in range(self.bar_rows - 1))
        if self.show_scale:
            lines.append(self._fixed[2])
        lines.extend(self._legend(units, width))
        self._cache = (key, lines)
        return lines

    # -- pieces ------------------------------------------------------------------------------------------

    def _title(self, used, total, safe_bytes, max_bytes, units, palette: Palette, width: int) -> Text:
        """The pool's use and its state in words, longest wording that fits."""
        state = bar_state(used, safe_bytes, max_bytes)
        pct = used / total * 100 if total else 0.0
        # The lines are in decimal GB: with GiB sizes, give `used` in GB too ("75.0 GiB, over 80 GB" puzzles).
        in_gb = f" ({used / GB:.1f} GB)" if units != "GB" else ""
        long_title = Text.assemble(
            ("Memory pool ", "bold"),
            (f"{fmt_size(used, units)}{in_gb} used of {fmt_size(total, units)}", "bold"),
            f" ({pct:.0f} %)",
        )
        short_title = Text.assemble(
            ("Pool ", "bold"),
            (f"{fmt_size(used, units)} / {fmt_size(total, units)}", "bold"),
            f" {pct:.0f} %",
        )
        safe, aggressive = fmt_gb(safe_bytes), fmt_gb(max_bytes)
        if state is BarState.UNDER_SAFE:
            style = f"bold {palette.ok}"
            # "74 GiB to go" on a 24 GiB machine would promise room that is not there.
            room = " (above the pool)"
            if safe_bytes < total:
                # In the line's own unit: "15.8 GB: 13.1 GiB to go" mixed two in one phrase.
                room = f": {fmt_est(safe_bytes - used)} to go"
            wordings = [f"● under safe {safe}{room}", f"● under safe {safe}", "● under safe"]
        elif state is BarState.BETWEEN:
            style = f"bold {palette.warn}"
            wordings = [
                f"▲ over safe {safe}, under aggressive {aggressive}",
                f"▲ over safe {safe}",
                "▲ over safe",
            ]
        else:
            style = f"bold reverse {palette.critical}"
            wordings = [
                f" ■ OVER AGGRESSIVE {aggressive} by {fmt_est(used - max_bytes)} ",
                f" ■ OVER AGGRESSIVE {aggressive} ",
                " ■ OVER AGGRESSIVE ",
            ]
        # Over the aggressive line, how far over matters more than the long title: "OVER AGGRESSIVE 100 GB
        # by 26.5 GB" with the short title before the long title with the state alone.
        if state is BarState.OVER_AGGRESSIVE:
            tries = [(title, words) for words in wordings for title in (long_title, short_title)]
        else:
            tries = [(title, words) for title in (long_title, short_title) for words in wordings]
        for title, words in tries:
            gap = width - title.cell_len - len(words)
            if gap >= 2:
                return Text.assemble(title, " " * gap, Text(words, style=style))
        words = wordings[-1]
        return Text.assemble(short_title[: max(0, width - len(words) - 1)], " ", Text(words, style=style))

    def _line_cols(
        self, total: int, safe_bytes: int, max_bytes: int, width: int
    ) -> list[tuple[int, int, str]]:
        out = []
        for nbytes, name in ((safe_bytes, "safe"), (max_bytes, "aggressive")):
            if 0 < nbytes < total:
                out.append((min(width - 1, int(nbytes / total * width)), nbytes, name))
        return out

    def _marks(self, total: int, safe_bytes: int, max_bytes: int, palette: Palette, width: int) -> Text:
        """The line labels above the bar: "safe 80 GB ▼" ending where the line is drawn."""
        occupied = [False] * width
        cells: list[tuple[int, str, str]] = []
        for col, nbytes, name in self._line_cols(total, safe_bytes, max_bytes, width):
            color = palette.warn if name == "safe" else palette.critical
            occupied[col] = True
            cells.append((col, "▼", f"bold {color}"))
            for label in (f"{name} {fmt_gb(nbytes)}", fmt_gb(nbytes), fmt_gb(nbytes).removesuffix(" GB")):
                if _place(occupied, col - 1 - len(label), label):
                    cells.append((col - 1 - len(label), label, color))
                    break
                if _place(occupied, col + 2, label):
                    cells.append((col + 2, label, color))
                    break
        for nbytes, name in ((safe_bytes, "safe"), (max_bytes, "aggressive")):
            if nbytes >= total:
                # At the right end, where it does not cover the other line's label or marker.
                for note in (f"{name} {fmt_gb(nbytes)} ≥ pool", f"{fmt_gb(nbytes)} ≥ pool"):
                    if _place(occupied, width - len(note), note):
                        cells.append((width - len(note), note, "dim"))
                        break
                break
        text = Text(" " * width)
        for start, label, style in cells:
            text = text[:start] + Text(label, style=style) + text[start + len(label) :]
        return text

    def _bar(
        self, total: int, safe_bytes: int, max_bytes: int, palette: Palette, width: int, labels: bool
    ) -> Text:
        """One row of the bar: a coloured run per segment, its name inside where it fits, the lines on top."""
        cells: list[str] = []
        chars: list[str] = []
        fg: list[str] = []
        marks = {col: name for col, _nbytes, name in self._line_cols(total, safe_bytes, max_bytes, width)}
        start = 0
        for seg, cols in zip(self.segments, _columns(self.segments, total, width), strict=True):
            cells.extend([seg.color] * cols)
            chars.extend(_segment_text(seg.label, start, cols, marks) if labels else " " * cols)
            fg.extend([_ink(seg.color)] * cols)
            start += cols
        # One span per run of same-styled cells, not per cell: ~10 spans instead of ~120 (spans are most of
        # the cost of turning the text into screen lines).
        text = Text()
        run: list[str] = []
        run_style = ""
        for col, bg in enumerate(cells):
            name = marks.get(col)
            if name is None:
                char, style = chars[col], f"{fg[col]} on {bg}"
            else:
                color = palette.warn if name == "safe" else palette.critical
                char, style = "┃", f"bold {color} on {bg}"
            if style != run_style and run:
                text.append("".join(run), style=run_style)
                run = []
            run.append(char)
            run_style = style
        if run:
            text.append("".join(run), style=run_style)
        return text

    def _scale(self, total: int, units: str, width: int) -> Text:
        right = f"pool {fmt_size(total, units)}┘"
        left = "└0"
        return Text(left + " " * max(1, width - len(left) - len(right)) + right, style="dim")

    def _legend(self, units: str, width: int) -> list[Text]:
        """Every segment with its size, the named consumers largest first, wrapped to at most
        `legend_lines` lines. When that is too few, the smallest consumers fold into one "+N more" item
        (the largest is always named); the host, unattributed and free entries always show. Consumers
        holding nothing are left out."""
        limit = max(1, self.legend_lines)
        fixed = [i for i, seg in enumerate(self.segments) if seg.key in _FIXED_KEYS]
        named = sorted(
            (i for i, seg in enumerate(self.segments) if seg.key not in _FIXED_KEYS and seg.nbytes > 0),
            key=lambda i: -self.segments[i].nbytes,
        )
        items = {i: self._legend_item(self.segments[i], units) for i in (*named, *fixed)}
        # Each item's width once: Text.cell_len measures again on every call, a character at a time for
        # text that is not ASCII, and the loop below asked up to once per named consumer for each item (a
        # process named in 10 kB of CJK made each bar 47 ms).
        widths = {i: item.cell_len for i, item in items.items()}
        for shown in range(len(named), min(1, len(named)) - 1, -1):  # down to the largest alone
            parts = [items[i] for i in named[:shown]]
            part_widths = [widths[i] for i in named[:shown]]
            folded = named[shown:]
            if folded:
                hidden = sum(self.segments[i].nbytes for i in folded)
                more = Text(f"+{len(folded)} more {fmt_bytes(hidden, units)}", style="dim")
                parts.append(more)
                part_widths.append(more.cell_len)
            parts += [items[i] for i in fixed]
            part_widths += [widths[i] for i in fixed]
            # Count the lines from the items' widths; only the wording that fits is wrapped into Text.
            if _line_count(part_widths, width) <= limit:
                return _wrap(parts, width)
        return _wrap(parts, width)[:limit]

    def _legend_item(self, seg: Segment, units: str) -> Text:
        size = fmt_bytes(seg.nbytes, units)
        if self.detailed and seg.gpu_bytes:
            size += f" (GPU {fmt_bytes(seg.gpu_bytes, units)})"
        return Text.assemble(("■ ", seg.color), (seg.label, "bold"), f" {size}")


# Segments that are not a consumer: always in the legend, after the consumers.
_FIXED_KEYS = frozenset({"host-other", "gpu-unexplained", "unattributed", "free"})


def _segment_text(label: str, start: int, cols: int, marks: dict[int, str]) -> str:
    """A segment's cells with its name in the widest stretch between the threshold lines drawn across it
    (a line never overwrites a letter), shortened with "…" to fit; blank where no wording fits."""
    cuts = [start - 1, *sorted(c for c in marks if start <= c < start + cols), start + cols]
    gaps = [(b - a - 1, a + 1) for a, b in pairwise(cuts)]  # (length, first cell)
    widest = max(room for room, _first in gaps)
    short = label.split(" (")[0]
    names = (label, short, short[: widest - 3] + "…") if widest >= 6 else ()
    out = [" "] * cols
    for name in names:
        # The earliest stretch it fits in: the name stays near its segment's start.
        first = next((first for room, first in gaps if len(name) + 2 <= room), None)
        if first is not None:
            for i, char in enumerate(f" {name}"):
                out[first - start + i] = char
            break
    return "".join(out)


def _line_count(widths: list[int], width: int) -> int:
    """How many lines `_wrap` makes of items this wide."""
    lines, current = 1, 0
    for w in widths:
        if current and current + 2 + w > width:
            lines += 1
            current = 0
        current += w + 2 if current else w
    return lines


def _wrap(items: list[Text], width: int) -> list[Text]:
    lines: list[Text] = []
    current = Text()
    for item in items:
        if current.cell_len and current.cell_len + 2 + item.cell_len > width:
            lines.append(current)
            current = Text()
        if current.cell_len:
            current.append("  ")
        current.append_text(item)
    lines.append(current)
    return lines
