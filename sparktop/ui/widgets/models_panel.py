"""The Models panel: every model a server holds, with its memory (CPU side / GPU side, or what vLLM
reserved), context, KV-cache use, requests, tokens/s and time until it unloads; one line per server that
could not be read. Model names come from the servers: plain Text, never markup."""

from __future__ import annotations

from rich.text import Text

from sparktop.analysis.served import ModelRow
from sparktop.core.format import NO_VALUE, fmt_cell, fmt_duration
from sparktop.ui.widgets.redraw import TextPanel

# header, width, right-aligned
_COLUMNS: tuple[tuple[str, int, bool], ...] = (
    ("server", 16, False),
    ("model", 0, False),  # takes the rest
    ("CPU", 8, True),
    ("GPU", 8, True),
    ("reserved", 9, True),
    ("context", 8, True),
    ("KV", 5, True),
    ("run/wait", 9, True),
    ("tok/s", 7, True),
    ("unloads", 9, True),
)
_KEPT = 4  # server, model, CPU, GPU: the others go whole, rightmost first, where the width is short
_MIN_MODEL = 12


def _cells(row: ModelRow, units: str) -> list[str]:
    def size(n: int | None) -> str:
        return fmt_cell(n, units)

    def known(value: object) -> str:
        return NO_VALUE if value is None else str(value)

    queue = NO_VALUE
    if row.running is not None or row.waiting is not None:
        queue = f"{known(row.running)}/{known(row.waiting)}"
    return [
        row.server,
        row.model,
        size(row.cpu_bytes),
        size(row.gpu_bytes),
        size(row.reserved_bytes),
        f"{row.context:,}" if row.context else NO_VALUE,
        f"{row.kv_usage * 100:.0f} %" if row.kv_usage is not None else NO_VALUE,
        queue,
        f"{row.tokens_per_s:.1f}" if row.tokens_per_s is not None else NO_VALUE,
        fmt_duration(row.unload_in_s) if row.unload_in_s is not None else NO_VALUE,
    ]


class ModelsPanel(TextPanel):
    DEFAULT_CSS = """
    ModelsPanel { height: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._data: tuple[list[ModelRow], list[str], list[str], str, str, bool] | None = None
        self._slowdowns: list[str] = []

    def show(
        self,
        rows: list[ModelRow],
        problems: list[str],
        sources: list[str],
        units: str,
        warn: str,
        slowdowns: list[str] | None = None,
        asking: bool = False,
    ) -> None:
        """`slowdowns`: one line per slowdown measured now (analysis/slowdown.py's `slowdown_lines`);
        `asking`: a model server has not been probed yet (no row is not yet "none found")."""
        data = (list(rows), list(problems), list(sources), units, warn, asking)
        if data != self._data or (slowdowns or []) != self._slowdowns:
            self._slowdowns = list(slowdowns or [])
            self._data = data
            self._redraw()

    def _build(self, width: int) -> Text:
        if self._data is None:
            return Text("Models: waiting for the first sample…", style="dim")
        rows, problems, sources, units, warn, asking = self._data
        # A narrow terminal drops whole columns, rightmost first ("run/w…" and a row of "…" read as broken).
        shown = len(_COLUMNS)
        while shown > _KEPT and sum(w + 1 for _, w, _ in _COLUMNS[:shown] if w) + _MIN_MODEL + 1 > width:
            shown -= 1
        columns = _COLUMNS[:shown]
        fixed = sum(w + 1 for _, w, _ in columns if w)
        model_w = max(_MIN_MODEL, width - fixed - 1)
        widths = [w or model_w for _, w, _ in columns]
        lines: list[Text] = []
        header = Text(style="bold")
        for (name, _, right), w in zip(columns, widths, strict=True):
            header.append((name.rjust(w) if right else name.ljust(w)) + " ")
        lines.append(header)
        if not rows and asking:
            lines.append(Text("… (asking the model servers)", style="dim"))
        elif not rows:
            lines.append(
                Text(
                    "No model server found (Ollama :11434 or OLLAMA_HOST, vLLM :8000, SGLang :30000, "
                    "llama.cpp :8080 and the ports containers publish are tried).",
                    style="dim",
                )
            )
        for row in rows:
            line = Text()
            for (_, _, right), w, cell in zip(columns, widths, _cells(row, units)[:shown], strict=True):
                cell = cell if len(cell) <= w else cell[: w - 1] + "…"
                line.append((cell.rjust(w) if right else cell.ljust(w)) + " ")
            lines.append(line)
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        lines.extend(Text(f"• {problem}", style=warn) for problem in problems)
        # ▼, not ⏷ (U+23F7): no common monospace font has that one, and Chromium drew a missing-glyph box.
        lines.extend(Text(f"▼ {line}", style=warn) for line in self._slowdowns)
        if sources:
            lines.append(Text(""))
            lines.append(Text("What each server reported (names differ between versions):", style="bold"))
            lines.extend(Text(f"  {source}", style="dim") for source in sources)
        return Text("\n").join(lines)
