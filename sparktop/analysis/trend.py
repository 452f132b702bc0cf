"""Creep detection: which consumer grows steadily, and when the pool crosses the lines if it keeps on.

A training run whose memory creeps (a KV cache filling, a leak) is the slow way to freeze a Spark. The ETAs
are for the WHOLE POOL: `used now + rate × t = line`, because the pool is what freezes, not the consumer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sparktop.analysis.history import History
from sparktop.format import fmt_duration, fmt_gb, fmt_rate

MIN_POINTS = 5  # fewer points in the window than this: no rate at all

# The creep rule (all must hold over the last `window_s`; see detect_creep's tests for the cases):
# - coverage: the key's points span >= 60 % of the window, and there are >= MIN_POINTS of them, so a process
#   that appeared a minute ago (still loading) is not judged yet;
# - rate: the least-squares slope is above `min_rate_bytes_per_min`;
# - fit: R² >= 0.6, so zero-mean jitter (R² near 0) and a sawtooth around a level do not count;
# - growth in each third: the slope of each third of the span is >= 25 % of the overall slope, so a one-off
#   step (a model loading: flat, jump, flat) does not count: a step lies in one third, the others are flat;
# - not a step: one level before and one after some instant must not fit better than the line (a noisy step
#   near a third's edge can pass the test above by chance; this one does not care where the step is);
# - no return to base: the largest drop of the lightly smoothed series is < 50 % of the fitted rise over the
#   span, and the latest value is still above the fitted start by >= 50 % of that rise, so memory that is
#   allocated and then released (a sawtooth, also one that drops at the very last tick) does not count.
# A ramp longer than the window (a tooth of a sawtooth with a period over 5 min) is growth while it lasts.
MIN_COVERAGE = 0.6
MIN_R2 = 0.6
MIN_THIRD_SHARE = 0.25
MAX_DRAWDOWN_SHARE = 0.5


@dataclass(frozen=True)
class CreepAlert:
    key: str
    label: str
    rate_bytes_per_s: float
    current_bytes: int
    eta_safe_s: float | None  # 0: the pool is already over the line; None: cannot say (no rate, no line)
    eta_aggressive_s: float | None
    eta_pool_s: float | None
    # The lines and the pool's used bytes the ETAs were computed against (for the message).
    safe_bytes: int | None = None
    max_bytes: int | None = None
    pool_used_bytes: int | None = None

    @property
    def rate_bytes_per_min(self) -> float:
        return self.rate_bytes_per_s * 60

    def message(self, units: str = "GiB") -> str:
        """`train.py +1.3 GB/min — crosses safe 80 GB in ~3 min, aggressive 100 GB in ~14 min, the pool in
        ~31 min`; a line already passed reads `already over safe 80 GB`."""
        over: list[str] = []
        ahead: list[str] = []
        for name, line, eta in (
            ("safe", self.safe_bytes, self.eta_safe_s),
            ("aggressive", self.max_bytes, self.eta_aggressive_s),
        ):
            if eta is None:
                continue
            what = f"{name} {fmt_gb(line)}" if line else name
            if eta <= 0:
                over.append(what)
            else:
                ahead.append(f"{what} in ~{fmt_duration(eta)}")
        if self.eta_pool_s is not None:
            if self.eta_pool_s <= 0:
                over.append("the pool is full")
            else:
                ahead.append(f"the pool in ~{fmt_duration(self.eta_pool_s)}")
        parts: list[str] = []
        if over:
            parts.append("already over " + " and ".join(over))
        if ahead:
            parts.append("crosses " + ", ".join(ahead))
        head = f"{self.label} {fmt_rate(self.rate_bytes_per_min, units)}"
        return f"{head} — {', '.join(parts)}" if parts else head


@dataclass(frozen=True)
class _Fit:
    slope: float  # bytes per second
    start: float  # the fitted value at the first point
    r2: float
    sse: float  # sum of squared residuals
    span_s: float
    n: int


def _least_squares(ts: list[float], vs: list[int]) -> _Fit | None:
    n = len(ts)
    if n < 2:
        return None
    t0 = ts[0]
    mt = sum(t - t0 for t in ts) / n
    mv = sum(vs) / n
    stt = svv = stv = 0.0
    for t, v in zip(ts, vs, strict=True):
        dt = t - t0 - mt
        dv = v - mv
        stt += dt * dt
        svv += dv * dv
        stv += dt * dv
    if stt <= 0:
        return None
    slope = stv / stt
    r2 = (stv * stv) / (stt * svv) if svv > 0 else 0.0
    sse = max(0.0, svv - stv * stv / stt)
    return _Fit(slope=slope, start=mv - slope * mt, r2=r2, sse=sse, span_s=ts[-1] - ts[0], n=n)


def _slope(ts: list[float], vs: list[int]) -> float | None:
    fit = _least_squares(ts, vs)
    return fit.slope if fit else None


def rate_per_min(history: History, key: str, window_s: float = 300) -> float | None:
    """`key`'s least-squares growth in bytes per minute over the last `window_s`; None with too few points."""
    ts, vs = history.window(key, window_s)
    if len(ts) < MIN_POINTS:
        return None
    slope = _slope(ts, vs)
    return None if slope is None else slope * 60


def _grows_in_each_third(ts: list[float], vs: list[int], slope: float) -> bool:
    t0, span = ts[0], ts[-1] - ts[0]
    thirds: list[tuple[list[float], list[int]]] = [([], []), ([], []), ([], [])]
    for t, v in zip(ts, vs, strict=True):
        i = min(2, int(3 * (t - t0) / span))
        thirds[i][0].append(t)
        thirds[i][1].append(v)
    for third_ts, third_vs in thirds:
        if len(third_ts) < 2:
            return False  # a gap: growth there cannot be shown
        third_slope = _slope(third_ts, third_vs)
        if third_slope is None or third_slope < MIN_THIRD_SHARE * slope:
            return False
    return True


def _best_step_sse(vs: list[int]) -> float:
    """The smallest sum of squared residuals of a one-step model (a level before index k, another after)."""
    n = len(vs)
    mean = sum(vs) / n
    xs = [v - mean for v in vs]  # centred, so the sums of squares keep their precision
    total = sum(xs)
    total_sq = sum(x * x for x in xs)
    best = math.inf
    left = left_sq = 0.0
    for k in range(1, n):
        x = xs[k - 1]
        left += x
        left_sq += x * x
        right, right_sq = total - left, total_sq - left_sq
        sse = left_sq - left * left / k + right_sq - right * right / (n - k)
        best = min(best, sse)
    return best


def _max_drawdown(vs: list[int]) -> float:
    """The largest fall from an earlier peak, on a moving average of ~1/20 of the points (so jitter of a
    few samples is not mistaken for a release)."""
    k = max(1, len(vs) // 20)
    peak = -math.inf
    worst = 0.0
    acc = sum(vs[:k])
    for i in range(k, len(vs) + 1):
        smooth = acc / k
        peak = max(peak, smooth)
        worst = max(worst, peak - smooth)
        if i < len(vs):
            acc += vs[i] - vs[i - k]
    return worst


def _is_creep(ts: list[float], vs: list[int], window_s: float, min_rate_bytes_per_s: float) -> _Fit | None:
    """The fit when the points show creep by the rule at the top of this module, else None."""
    if len(ts) < MIN_POINTS or ts[-1] - ts[0] < MIN_COVERAGE * window_s:
        return None
    fit = _least_squares(ts, vs)
    if fit is None or fit.slope <= min_rate_bytes_per_s or fit.r2 < MIN_R2:
        return None
    if not _grows_in_each_third(ts, vs, fit.slope):
        return None
    if _best_step_sse(vs) <= fit.sse:
        return None
    rise = fit.slope * fit.span_s
    if _max_drawdown(vs) >= MAX_DRAWDOWN_SHARE * rise:
        return None
    if vs[-1] - fit.start < MAX_DRAWDOWN_SHARE * rise:
        return None
    return fit


def sustained_slope(
    ts: list[float], vs: list[int], window_s: float, min_rate_bytes_per_s: float
) -> float | None:
    """The growth (bytes per second) of a series that grows steadily by the creep rule above, else None.
    The freeze forecast (analysis/forecast.py) uses it on the pool's `used`."""
    fit = _is_creep(ts, vs, window_s, min_rate_bytes_per_s)
    return fit.slope if fit else None


def eta_s(used_now: int, rate_bytes_per_s: float, line: int) -> float | None:
    """Seconds until `used_now + rate × t` reaches `line`: 0 when already there, None when never."""
    if line <= 0:
        return None
    if used_now >= line:
        return 0.0
    if rate_bytes_per_s <= 0:
        return None
    return (line - used_now) / rate_bytes_per_s


def detect_creep(
    history: History,
    safe_bytes: int,
    max_bytes: int,
    pool_bytes: int,
    window_s: float = 300,
    min_rate_bytes_per_min: float = 50e6,
) -> list[CreepAlert]:
    """Every key present now that creeps (see the rule above), fastest first, with the pool's ETAs."""
    used_now = history.pool_used_now
    if used_now is None:
        return []
    min_rate = min_rate_bytes_per_min / 60
    alerts: list[CreepAlert] = []
    for key in history.present_keys():
        ts, vs = history.window(key, window_s)
        fit = _is_creep(ts, vs, window_s, min_rate)
        if fit is None:
            continue
        alerts.append(
            CreepAlert(
                key=key,
                label=history.label(key),
                rate_bytes_per_s=fit.slope,
                current_bytes=vs[-1],
                eta_safe_s=eta_s(used_now, fit.slope, safe_bytes),
                eta_aggressive_s=eta_s(used_now, fit.slope, max_bytes),
                eta_pool_s=eta_s(used_now, fit.slope, pool_bytes),
                safe_bytes=safe_bytes,
                max_bytes=max_bytes,
                pool_used_bytes=used_now,
            )
        )
    alerts.sort(key=lambda a: a.rate_bytes_per_s, reverse=True)
    return alerts
