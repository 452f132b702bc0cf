"""Memory pressure: MemAvailable and PSI, with the level (ok / warn / critical) and the reasons for it."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive

from sparktop.analysis.headroom import EngineHeadroom
from sparktop.analysis.series import PoolSeries
from sparktop.core.format import fmt_bytes, fmt_size, sparkline
from sparktop.core.snapshot import HostMemory
from sparktop.ui.themes import Palette
from sparktop.ui.widgets.redraw import TextPanel

_LEVEL_WORDS = {"ok": "● OK", "warn": "▲ WARNING", "critical": "■ CRITICAL"}


class PressurePanel(TextPanel):
    DEFAULT_CSS = """
    PressurePanel { height: auto; }
    """

    compact: reactive[bool] = reactive(False, layout=True)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._series = PoolSeries()
        self._data: tuple[HostMemory, str, list[str], str, Palette, EngineHeadroom | None] | None = None

    def show(
        self,
        memory: HostMemory,
        series: PoolSeries,
        level: str,
        reasons: list[str],
        units: str,
        palette: Palette,
        engine: EngineHeadroom | None = None,
    ) -> None:
        """Draw `memory` at `level`, the sparklines from `series` (the session's, which saw every sample);
        `engine`: on a unified-memory GPU, what CUDA would call free (shown under MemAvailable)."""
        self._series = series
        self._data = (memory, str(level), list(reasons), units, palette, engine)
        self.set_class(str(level) == "critical", "-critical")
        self.set_class(str(level) == "warn", "-warn")
        self._redraw()

    def _layout_key(self) -> tuple:
        return (self.compact,)

    def _build(self, width: int) -> Text:
        if self._data is None:
            return Text("Memory pressure: waiting for the first sample…", style="dim")
        memory, level, reasons, units, palette, engine = self._data
        color = palette.level(level)
        head = Text.assemble(
            ("Pressure ", "bold"), (f" {_LEVEL_WORDS.get(level, level)} ", f"bold reverse {color}")
        )
        lines = [head]
        label_w, value_w = 10, 17
        spark_w = max(0, width - label_w - value_w - 2)
        pct = memory.available / memory.total * 100 if memory.total else 0.0
        avail = Text("available".ljust(label_w), style="bold")
        avail.append(f"{fmt_size(memory.available, units)} {pct:3.0f} %".rjust(value_w))
        if spark_w >= 4:
            avail.append("  ")
            spark = sparkline(list(self._series.available_pct), spark_w, 0.0, 100.0)
            avail.append(spark, style=palette.spark)
        lines.append(avail)
        if engine is not None and not self.compact:
            # cudaMemGetInfo on GB10 counts page cache as used: what vLLM's start-up check compares against
            # (analysis/headroom.py); dropping caches would add up to `droppable`.
            cuda = Text("CUDA free".ljust(label_w), style="bold")
            cuda.append(fmt_size(engine.cuda_free, units).rjust(value_w))
            lines.append(cuda)
            if engine.droppable:
                drop = Text("droppable".ljust(label_w), style="dim")
                drop.append(f"+{fmt_size(engine.droppable, units)}".rjust(value_w), style="dim")
                if spark_w >= 12:
                    drop.append("  page cache", style="dim")
                lines.append(drop)
        pressure = memory.pressure
        if pressure is not None and (pressure.some or pressure.full):
            # The three numbers are the kernel's averages over 10 s, 60 s and 300 s: say so above them.
            header = Text("PSI avg".ljust(label_w), style="dim")
            header.append(f"{'10 s':>5} {'60 s':>5} {'300 s':>5}".rjust(value_w), style="dim")
            lines.append(header)
        for name in ("some", "full"):
            line = getattr(pressure, name) if pressure else None
            row = Text(f"PSI {name}".ljust(label_w), style="bold")
            if line is None:
                row.append("n/a".rjust(value_w), style="dim")
            else:
                row.append(f"{line.avg10:5.1f} {line.avg60:5.1f} {line.avg300:5.1f}".rjust(value_w))
                if name == "some" and spark_w >= 4:
                    row.append("  ")
                    spark = sparkline(list(self._series.psi_some), spark_w, 0.0, 100.0)
                    row.append(spark, style=palette.spark)
            lines.append(row)
        if memory.swap_total:
            swap = Text("swap".ljust(label_w), style="bold")
            swap.append(f"{fmt_bytes(memory.swap_total - memory.swap_free, units)} of "
                        f"{fmt_bytes(memory.swap_total, units)} used")  # fmt: skip
            lines.append(swap)
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        if self.compact:
            # Small terminal: the first reason on one line; the level above says the rest.
            for reason in reasons[:1]:
                line = Text(f"• {reason}", style=color)
                line.truncate(width, overflow="ellipsis")
                lines.append(line)
        else:
            # Reasons wrap: they are the sentences that say what to worry about.
            lines.extend(Text(f"• {reason}", style=color) for reason in reasons)
        return Text("\n").join(lines)
