"""A discrete GPU's own memory as a bar of its own, next to the host pool's: who holds it (the same colours
as in the pool bar), what NVML counts as used that no listed process explains, and what is free. Hidden on a
unified-memory machine (a DGX Spark), where GPU memory is part of the pool bar."""

from __future__ import annotations

from rich.text import Text

from sparktop.core.format import fmt_bytes, fmt_size
from sparktop.core.snapshot import GpuMemoryAccount
from sparktop.ui.themes import Palette
from sparktop.ui.widgets.budget_bar import Segment, _columns, _ink, _segment_text, _wrap
from sparktop.ui.widgets.redraw import LineDiffWidget


class GpuMemoryBar(LineDiffWidget):
    """Call `show(accounts, colors, units, palette)` each tick; `colors`: the pool bar's colour by key."""

    DEFAULT_CSS = """
    GpuMemoryBar { height: auto; margin: 0 1; display: none; }
    GpuMemoryBar.-show { display: block; }
    """

    legend_lines = 2  # 1 on a short terminal (the app sets it with the layout)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._data: tuple[list[GpuMemoryAccount], dict[str, str], str, Palette] | None = None
        self.segments: dict[int, list[Segment]] = {}  # GPU index -> its segments, for tests and colours
        self._drawn: tuple[int, list[Text]] | None = None  # (width, lines) of the data now shown

    def show(
        self, accounts: list[GpuMemoryAccount], colors: dict[str, str], units: str, palette: Palette
    ) -> None:
        was_shown = bool(self._data and self._data[0])
        self.set_class(bool(accounts), "-show")
        self._data = (accounts, colors, units, palette)
        self.segments = {a.index: _segments(a, colors, palette) for a in accounts}
        self._drawn = None
        if not accounts and not was_shown:
            return  # hidden and staying so (a Spark, no GPU): nothing to draw, nothing to lay out
        # Only the lines that changed are repainted, none while its tab is hidden, and the screen is laid out
        # again only when the bar's height changes (a GPU, a legend line): LineDiffWidget's way.
        self.refresh_changed()

    def render(self) -> Text:
        return Text("\n").join(self._lines_at(self.size.width))

    def _dl_lines(self) -> list[Text]:
        return self._lines_at(self.size.width)

    def _lines_at(self, width: int) -> list[Text]:
        """The lines for this width, made once per tick (show measures them, render draws them)."""
        if self._drawn is None or self._drawn[0] != width:
            self._drawn = (width, self._lines(width))
        return [line.copy() for line in self._drawn[1]]

    def _lines(self, width: int) -> list[Text]:
        if self._data is None or not self._data[0]:
            return []
        accounts, _colors, units, _palette = self._data
        width = max(20, width or 80)
        lines: list[Text] = []
        for account in accounts:
            segments = self.segments[account.index]
            pct = account.used / account.total * 100 if account.total else 0.0
            title = Text.assemble(
                (f"GPU {account.index} memory ", "bold"),
                (f"{fmt_size(account.used, units)} used of {fmt_size(account.total, units)}", "bold"),
                f" ({pct:.0f} %)",
            )
            note = f"  {account.name}: its own memory, apart from the pool"
            if title.cell_len + len(note) <= width:
                title.append(note, style="dim")
            lines.append(title)
            lines.append(_bar(segments, account.total, width))
            lines.extend(_legend(segments, units, width, self.legend_lines))
        for line in lines:  # one screen line each, whatever the width: cut with "…", never wrapped
            line.truncate(width, overflow="ellipsis")
        return lines


def _segments(account: GpuMemoryAccount, colors: dict[str, str], palette: Palette) -> list[Segment]:
    out = []
    for i, share in enumerate(account.shares):
        fallback = palette.segments[i % len(palette.segments)]
        if share.kind == "gpu-unexplained":
            fallback = palette.gpu_unexplained
        color = colors.get(share.key) or fallback
        out.append(Segment(share.key, share.label, share.nbytes, color, share.nbytes))
    if account.other:
        out.append(Segment("gpu-other", "other (driver, unlisted)", account.other, palette.unattributed))
    out.append(Segment("gpu-free", "free", account.free, palette.free))
    return out


def _legend(segments: list[Segment], units: str, width: int, limit: int) -> list[Text]:
    """Every segment with its size in at most `limit` lines. When they do not fit, the smallest holders fold
    into one "+N more" item, then "other" loses its explanation; the largest holder is always named."""
    holders = [seg for seg in segments if seg.key not in ("gpu-other", "gpu-free")]
    fixed = [seg for seg in segments if seg.key in ("gpu-other", "gpu-free")]

    def item(seg: Segment, short: bool = False) -> Text:
        label = seg.label.split(" (")[0] if short else seg.label
        return Text.assemble(("■ ", seg.color), (label, "bold"), f" {fmt_bytes(seg.nbytes, units)}")

    items: list[Text] = []
    for short in (False, True):
        for shown in range(len(holders), 0 if holders else -1, -1):
            items = [item(seg) for seg in holders[:shown]]
            folded = holders[shown:]
            if folded:
                hidden = sum(seg.nbytes for seg in folded)
                items.append(Text(f"+{len(folded)} more {fmt_bytes(hidden, units)}", style="dim"))
            # Short of room, free (the headroom) before other.
            items += [item(seg, short) for seg in (reversed(fixed) if short else fixed)]
            lines = _wrap(items, width)
            if len(lines) <= limit:
                return lines
    # Still too long: one line of whole items, by priority (the largest holder, free, the rest folded,
    # other), in their usual order: cut by the render, "■ free 5…" lost a figure at 60 columns.
    by_key = {seg.key: seg for seg in fixed}
    largest = item(holders[0]) if holders else None
    more = None
    if len(holders) > 1:
        rest = holders[1:]
        more = Text(f"+{len(rest)} more {fmt_bytes(sum(seg.nbytes for seg in rest), units)}", style="dim")
    free = item(by_key["gpu-free"], True) if "gpu-free" in by_key else None
    other = item(by_key["gpu-other"], True) if "gpu-other" in by_key else None
    chosen: list[Text] = []
    for candidate in (largest, free, more, other):
        if candidate is not None and (not chosen or Text("  ").join([*chosen, candidate]).cell_len <= width):
            chosen.append(candidate)
    kept = {id(c) for c in chosen}
    return [Text("  ").join([c for c in (largest, more, free, other) if c is not None and id(c) in kept])]


def _bar(segments: list[Segment], total: int, width: int) -> Text:
    text = Text()
    for seg, cols in zip(segments, _columns(segments, total, width), strict=True):
        if cols:
            text.append(_segment_text(seg.label, 0, cols, {}), style=f"{_ink(seg.color)} on {seg.color}")
    return text
