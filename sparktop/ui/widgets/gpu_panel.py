"""GPU panel: utilisation, SM clock, temperature and power with sparklines, per GPU.

A metric the device reports as unsupported is hidden (it can never be known here); one that failed this tick
reads "n/a". No NVML at all is one line saying why."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from sparktop.analysis.series import GpuSeries
from sparktop.analysis.throttle import throttle_line, throttle_parts
from sparktop.core.format import fmt_bytes, sparkline
from sparktop.core.snapshot import GpuReport, GpuState
from sparktop.ui.widgets.redraw import TextPanel


@dataclass(frozen=True)
class Metric:
    field: str
    label: str
    unit: str
    digits: int
    low: float
    high: float | None  # None: scale to the largest value seen


# Each field is one of the session's GPU series (analysis/series.py).
METRICS = (
    Metric("utilization_pct", "util", "%", 0, 0.0, 100.0),
    Metric("sm_clock_mhz", "SM clock", "MHz", 0, 0.0, None),
    Metric("temperature_c", "temp", "°C", 0, 20.0, 100.0),
    Metric("power_w", "power", "W", 1, 0.0, None),
)


def never_known(gpu: GpuState, field: str) -> bool:
    """True when the collector found the metric permanently unavailable here (not supported on the device,
    not in this driver or library, no permission); a passing "driver error: ..." reads n/a instead."""
    reason = gpu.unsupported.get(field)
    return reason is not None and getattr(gpu, field, None) is None and not reason.startswith("driver error")


class GpuPanel(TextPanel):
    DEFAULT_CSS = """
    GpuPanel { height: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._report: GpuReport | None = None
        self._series = GpuSeries()
        self.units = "GiB"
        self.spark_color = "cyan"
        self.now: float | None = None  # the snapshot's time: how long a throttle has lasted

    def show(
        self, report: GpuReport, series: GpuSeries, units: str, spark_color: str, now: float | None = None
    ) -> None:
        """Draw `report`, the sparklines from `series` (the session's, which saw every sample)."""
        self._report = report
        self.now = now
        self._series = series
        self.units = units
        self.spark_color = spark_color
        self._redraw()

    def _build(self, width: int) -> Text:
        report = self._report
        if report is None:
            return Text("GPU: waiting for the first sample…", style="dim")
        if not report.available:
            reason = report.reason or "no NVIDIA GPU or no NVML library"
            return Text.assemble(("No NVIDIA GPU / NVML: ", "bold"), (reason, ""),
                                 (" — memory comes from /proc only.", "dim"))  # fmt: skip
        if not report.gpus:
            return Text("NVML found no GPU.", style="dim")
        blocks = [self._gpu_block(gpu, width) for gpu in report.gpus]
        return Text("\n").join(blocks)

    def _gpu_block(self, gpu: GpuState, width: int) -> Text:
        facts = [gpu.name]
        if gpu.unified_memory:
            facts.append(f"unified memory{f' ({gpu.addressing_mode})' if gpu.addressing_mode else ''}")
        if gpu.sm_count:
            facts.append(f"{gpu.sm_count} SMs")
        if gpu.pstate is not None:
            facts.append(f"P{gpu.pstate}")
        # Narrow: whole facts are dropped from the end (`(A…` for `(ATS)` read as a cut word); only the
        # GPU's name itself may be cut, as a last resort.
        head = f"GPU {gpu.index} "
        while len(facts) > 1 and len(head) + len(" · ".join(facts)) > width:
            facts.pop()
        title = Text.assemble((head, "bold"), " · ".join(facts))
        title.truncate(width, overflow="ellipsis")
        lines = [title]
        ident = gpu.uuid or str(gpu.index)
        label_w = 9
        value_w = 9
        spark_w = max(0, width - label_w - value_w - 2)
        for metric in METRICS:
            if never_known(gpu, metric.field):
                continue
            value = getattr(gpu, metric.field)
            shown, style = (
                ("n/a", "dim") if value is None else (f"{value:.{metric.digits}f} {metric.unit}", "")
            )
            series = self._series.get(ident, metric.field)
            spark = sparkline(series, spark_w, metric.low, metric.high) if spark_w >= 4 else ""
            line = Text(metric.label.ljust(label_w), style="bold")
            line.append(shown.rjust(value_w), style=style)
            if spark:
                line.append("  ")
                line.append(spark, style=self.spark_color)
            lines.append(line)
        throttle = throttle_parts(gpu, self.now)
        if throttle:
            clock, reasons, lasted = throttle
            one = throttle_line(gpu, self.now) or ""
            room = width - label_w
            parts = [one] if len(one) <= room else narrow_throttle(clock, reasons, lasted, room)
            for i, part in enumerate(parts):
                slow = Text(("slowed" if i == 0 else "").ljust(label_w), style="bold")
                slow.append(part, style="bold yellow")
                slow.truncate(width, overflow="ellipsis")
                lines.append(slow)
        procs = [p for p in gpu.processes if p.used_bytes]
        total = sum(p.used_bytes or 0 for p in procs)
        mem = Text("memory".ljust(label_w), style="bold")
        count = f"{len(procs)} proc{'s' if len(procs) != 1 else ''}"
        if gpu.memory_total and not gpu.unified_memory:
            mem.append(
                f"{fmt_bytes(gpu.memory_used, self.units)} of {fmt_bytes(gpu.memory_total, self.units)}"
            )
        else:
            mem.append(f"{fmt_bytes(total, self.units).rjust(value_w)}  {count}")
            if gpu.unified_memory and mem.cell_len + 22 <= width:
                mem.append(" · from the host pool", style="dim")
        mem.truncate(width, overflow="ellipsis")
        lines.append(mem)
        no_sm = gpu.unsupported.get("sm_pct")
        if no_sm and gpu.processes:  # why the tables have no `sm %` column
            why = Text("sm %".ljust(label_w), style="bold")
            why.append(f"per process: {no_sm}", style="dim")
            why.truncate(width, overflow="ellipsis")
            lines.append(why)
        return Text("\n").join(lines)


def narrow_throttle(clock: str, reasons: str, lasted: str, room: int) -> list[str]:
    """The throttle line for a narrow panel, in two lines at most (the panel must not grow into the pressure
    panel at 80×24): the clock, with for how long where it fits, then as many whole reasons as fit and how
    many more there are. A clock, a duration or a reason is never cut (it was: `SM 2.32 GHz of 2.42 for 7…`);
    what does not fit is left out whole."""
    first = f"{clock} {lasted}".rstrip()
    lines = [first if len(first) <= room else clock]
    names = reasons.split(", ")
    for shown in range(len(names), 0, -1):
        left = len(names) - shown
        line = ", ".join(names[:shown]) + (f" +{left} more" if left else "")
        if len(line) <= room or shown == 1:
            lines.append(line)
            break
    return lines
