"""What the last minutes of a recording say: who grew, which line was crossed, how hard memory pressed.

After a freeze and a power cycle the black box is replayed to learn what happened; at its end this is the
summary the viewer shows ("last 5 min before the recording stopped: ..."). Pure: it reads a History.
"""

from __future__ import annotations

from sparktop.analysis.history import UNATTRIBUTED, History
from sparktop.core.format import fmt_bytes, fmt_duration

TOP = 3
MIN_GROWTH = 32 * 1024**2  # below this a consumer did not "grow" in any way that matters here


def summarize_last_minutes(
    history: History,
    safe_bytes: int,
    max_bytes: int,
    minutes: float = 5.0,
    psi_full_peak: float | None = None,
) -> str | None:
    """One line about the last `minutes` of `history`; None with fewer than two points."""
    times, used = history.times(), history.used()
    if len(times) < 2:
        return None
    end = times[-1]
    start_i = next(i for i, t in enumerate(times) if t >= end - minutes * 60)
    peak = max(used[start_i:])
    parts = [f"pool {fmt_bytes(used[start_i])} → {fmt_bytes(used[-1])} (peak {fmt_bytes(peak)})"]
    growth = []
    for key in history.known_keys():
        window = history.series(key)[start_i:]
        series = [v for v in window if v is not None]
        if not series:
            continue
        # A consumer that appeared within the window grew from nothing: all it holds is new (a training run
        # that arrived holding 19 GiB is the story, not the 90 MiB it added after its first reading).
        arrived = window[0] is None
        delta = series[-1] - (0 if arrived else series[0])
        if (arrived or len(series) >= 2) and delta >= MIN_GROWTH:
            label = history.label(key) if key != UNATTRIBUTED else "unattributed"
            growth.append((delta, f"{label} (new)" if arrived else label))
    growth.sort(reverse=True)
    if growth:
        parts.append("grew: " + ", ".join(f"{label} +{fmt_bytes(delta)}" for delta, label in growth[:TOP]))
    crossed = [
        name
        for name, line in (("safe", safe_bytes), ("aggressive", max_bytes))
        if used[start_i] < line <= peak
    ]
    if crossed:
        parts.append("crossed the " + " and ".join(crossed) + " line" + ("s" if len(crossed) > 1 else ""))
    if psi_full_peak is not None and psi_full_peak >= 1.0:  # under 1 % nothing stalled worth saying
        parts.append(f"PSI full peaked at {psi_full_peak:.0f} %")
    return f"last {fmt_duration(end - times[start_i])} before the recording stopped: " + "; ".join(parts)
