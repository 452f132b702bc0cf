"""How sizes, rates and durations are written everywhere (TUI, CLI, alerts): one place, no Textual."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sparktop.core.snapshot import GB, GIB, MB, MIB

SPARK_CHARS = "▁▂▃▄▅▆▇█"


def unit_size(units: str) -> int:
    return GB if units == "GB" else GIB


def fmt_bytes(n: int | float | None, units: str = "GiB", precision: int = 1, unit: bool = True) -> str:
    """`12.3 GiB`; small values drop to MiB/MB so a 300 MB process does not read 0.3 GiB. None -> "—"."""
    if n is None:
        return NO_VALUE
    big = unit_size(units)
    small, small_name = (MB, "MB") if units == "GB" else (MIB, "MiB")
    if abs(n) < big and n != 0:
        text = f"{n / small:.0f}"
        return f"{text} {small_name}" if unit else text
    text = f"{n / big:.{precision}f}"
    return f"{text} {units}" if unit else text


def fmt_size(n: int | float, units: str = "GiB", precision: int = 1) -> str:
    """Always in the configured unit (for totals and the bar scale): `119.7 GiB`."""
    return f"{n / unit_size(units):.{precision}f} {units}"


def fmt_gb(n: int | float) -> str:
    """A threshold in decimal GB, as NVIDIA states them: `80 GB`; three significant figures, so a line
    scaled to a smaller pool reads `15.8 GB`, not `15.7978 GB`."""
    gb = n / GB
    whole_digits = len(str(int(abs(gb)))) if abs(gb) >= 1 else 1
    return f"{round(gb, max(0, 3 - whole_digits)):g} GB"


def fmt_rate(bytes_per_min: float | None, units: str = "GiB") -> str:
    """Signed growth per minute: `+1.3 GiB/min`, `-120 MiB/min`; None -> "—"."""
    if bytes_per_min is None:
        return NO_VALUE
    big = unit_size(units)
    small, small_name = (MB, "MB") if units == "GB" else (MIB, "MiB")
    if abs(bytes_per_min) >= big / 10:
        return f"{bytes_per_min / big:+.1f} {units}/min"
    if abs(bytes_per_min) < small / 2:
        return f"0 {small_name}/min"
    return f"{bytes_per_min / small:+.0f} {small_name}/min"


NO_VALUE = "—"  # a figure that does not exist (no GPU, not measured): one dash everywhere


def fmt_cell(n: int | float | None, units: str = "GiB") -> str:
    """A size in a table cell, each in its own unit as btop writes them: `37.4 GiB`, `613 MiB`, `12 KiB`,
    `0 B` (a column of `0.00 GiB` beside one big row hid every small figure). None -> "—"."""
    if n is None:
        return NO_VALUE
    step = 1000 if units == "GB" else 1024
    names = ("B", "kB", "MB", "GB") if units == "GB" else ("B", "KiB", "MiB", "GiB")
    size, index = abs(n), 0
    while size >= step and index < len(names) - 1:
        size, index = size / step, index + 1
    name = names[index]
    sign = "-" if n < 0 else ""
    text = f"{size:.1f}" if name in ("GiB", "GB") else f"{size:.0f}"
    return f"{sign}{text} {name}"


def fmt_rate_cell(bytes_per_min: float | None, units: str = "GiB") -> str:
    """A growth rate in a table cell, its unit per cell and `/min` in the column's header: `+1.3 GiB`,
    `-120 MiB`, `0 MiB` (flat). None -> "—"."""
    if bytes_per_min is None:
        return NO_VALUE
    return fmt_rate(bytes_per_min, units).removesuffix("/min")


def fmt_available_pct(pct: float) -> str:
    """MemAvailable as a share of the pool, `9.5 %`: one decimal, rounded down, so a share under a threshold
    (9.96 % under earlyoom's 10 %) never reads as the threshold itself. Every view that shows it uses this."""
    return f"{math.floor(max(0.0, pct) * 10 + 1e-6) / 10:.1f} %"  # 1e-6: float noise, not a share


def fmt_duration(seconds: float) -> str:
    """`45 s`, `14 min`, `2 h 05 min`."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 90:
        return f"{minutes:.0f} min"
    hours, rest = divmod(round(minutes), 60)
    return f"{hours} h {rest:02d} min"


def sparkline(values: Sequence[float | None], width: int, low: float = 0.0, high: float | None = None) -> str:
    """The last `width` values as block characters, scaled to [low, high]; gaps (None) as spaces."""
    if width <= 0:
        return ""
    tail = list(values)[-width:]
    known = [v for v in tail if v is not None]
    if not known:
        return " " * width
    top = high if high is not None else max(known)
    span = max(top - low, 1e-9)
    out = []
    for v in tail:
        if v is None:
            out.append(" ")
            continue
        frac = min(1.0, max(0.0, (v - low) / span))
        out.append(SPARK_CHARS[min(len(SPARK_CHARS) - 1, int(frac * (len(SPARK_CHARS) - 1) + 0.5))])
    return "".join(out).rjust(width)


def fmt_est(n: int | float) -> str:
    """An estimate in decimal GB, as precise as it deserves: `123 GB`, `45.6 GB`, `0.45 GB`, `30 MB`."""
    gb = n / GB
    if gb >= 100:
        return f"{gb:.0f} GB"
    if gb >= 10:
        return f"{gb:.1f} GB"
    if gb >= 0.1:
        return f"{gb:.2f} GB"
    return f"{n / MB:.0f} MB"
