"""Growth per minute of every process, for the processes table's trend column: the history
(analysis/history.py) keeps only the biggest consumers, this a coarse series for every process row."""

from __future__ import annotations

from collections import deque

from sparktop.analysis.trend import current_slope
from sparktop.core.snapshot import ProcessInfo, Snapshot, process_key


def process_gpu(p: ProcessInfo, gpu_by_pid: dict[int, int]) -> int | None:
    """A process's GPU memory: its own reading, else what NVML listed for its PID."""
    return p.gpu_bytes if p.gpu_bytes is not None else gpu_by_pid.get(p.pid)


def process_total(p: ProcessInfo, gpu_by_pid: dict[int, int]) -> int:
    """A process's footprint as its table row shows it: its CPU side (PSS while current, else the fresh RSS)
    plus its GPU memory."""
    return p.cpu_bytes + (process_gpu(p, gpu_by_pid) or 0)


class RowTrends:
    """Growth per minute of every process row, including those the history does not keep (processes
    inside containers, small host processes): a point every `step_s`, the slope over the last `window_s` of
    a series still going that way (`trend.current_slope`: a step followed by a flat is no growth). Keys that
    leave are forgotten, so memory follows the process count."""

    def __init__(self, window_s: float = 300.0, step_s: float = 5.0, min_span_s: float = 60.0) -> None:
        self.step_s = step_s
        self.min_span_s = min_span_s
        self._points: dict[str, deque[tuple[float, int]]] = {}
        self._maxlen = max(2, int(window_s / step_s) + 1)
        self._rates: dict[str, float | None] = {}  # per key, until its next point (one every `step_s`)

    def add(self, t: float, totals: dict[str, int]) -> None:
        for key in [k for k in self._points if k not in totals]:
            del self._points[key]
            self._rates.pop(key, None)
        for key, value in totals.items():
            points = self._points.get(key)
            if points is None:
                self._points[key] = deque([(t, value)], maxlen=self._maxlen)
                self._rates.pop(key, None)
            elif t - points[-1][0] >= self.step_s:
                points.append((t, value))
                self._rates.pop(key, None)

    def add_snapshot(self, snapshot: Snapshot) -> None:
        gpu_by_pid = snapshot.gpu.gpu_bytes_by_pid()
        totals = {process_key(p): process_total(p, gpu_by_pid) for p in snapshot.processes}
        self.add(snapshot.timestamp, totals)

    def rate_per_min(self, key: str) -> float | None:
        if key in self._rates:
            return self._rates[key]
        rate = self._rate_per_min(key)
        if key in self._points:
            self._rates[key] = rate
        return rate

    def _rate_per_min(self, key: str) -> float | None:
        points = self._points.get(key)
        if not points or len(points) < 5 or points[-1][0] - points[0][0] < self.min_span_s:
            return None
        slope = current_slope([t for t, _ in points], [v for _, v in points])
        return None if slope is None else slope * 60
