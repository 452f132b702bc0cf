"""Creep detection: which consumer grows steadily, and when the pool crosses the lines if it keeps on.

A training run whose memory creeps (a KV cache filling, a leak) is the slow way to freeze a Spark. The ETAs
are for the WHOLE POOL: `used now + rate × t = line`, because the pool is what freezes, not the consumer.
"""

from __future__ import annotations

import itertools
import math
import operator
from bisect import bisect_left
from dataclasses import dataclass, replace

from sparktop.analysis.history import History
from sparktop.core.format import fmt_duration, fmt_gb, fmt_rate

MIN_POINTS = 5  # fewer points in the window than this: no rate at all

# Growth continues; a step stops. A series that rose (a model loading, a one-off allocation, a grower that
# stopped) and is flat since has no growth now, however well a line fits the window that holds the rise. So
# every rule below ends with the same question, `still_rising`: has the series kept pace since? A point
# "makes progress" when it stands above the last point that did by at least half of what the claimed rate
# adds over the time between them. The series is still rising while the time since its last progress is no
# longer than the longest pause it may take without having stopped:
# - STOP_TICKS ticks (one late or low reading is not a stop);
# - NOISE_SPANS × its noise / the rate: the time the rate needs to rise clear of the noise (the noise is the
#   median size of the tick-to-tick changes the rate does not explain, so one step does not inflate it);
# - PAUSE_SHARE × the median of its last three pauses between progress points: a staircase (KV-cache blocks
#   every 20 s) pauses as long as it always has; a single step has no such rhythm.
# A step thus stops being "growth" a few ticks after it ends, a stopped grower likewise, and the alert, the
# trend column and the guard's held forecast follow within seconds (minutes: a noisy or stepwise series).
STOP_TICKS = 3
NOISE_SPANS = 4.0
PAUSE_SHARE = 1.5
# An alert already on show asks the same question with 1.5 times the noise and rhythm allowances
# (hysteresis): a noisy steady climb (the demo's training run at 1.2 GiB/min, ±50 MiB a tick) otherwise
# failed the strict test every few ticks, after a high reading it had to climb clear of, and its alert
# blinked. The STOP_TICKS floor is not scaled: a fast clean grower that stops still clears within a few ticks.
HOLD_SLACK = 1.5
DIFF_MEDIAN_PER_SIGMA = 0.6745 * math.sqrt(2)  # median |a - b| of two independent normals of SD 1

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
#   allocated and then released (a sawtooth, also one that drops at the very last tick) does not count;
# - still rising (above): growth that stopped a minute ago is not creep now.
# A ramp longer than the window (a tooth of a sawtooth with a period over 5 min) is growth while it lasts.
MIN_COVERAGE = 0.6
MIN_R2 = 0.6
MIN_THIRD_SHARE = 0.25
MAX_DRAWDOWN_SHARE = 0.5

# Fast growth cannot wait minutes for the rule above (2 GB at 100 MB/s is over in 20 s): over the last
# FAST_WINDOW_S, a clean rise (R² >= FAST_MIN_R2, growing in each third, still rising) of at least
# FAST_MIN_RISE at FAST_MIN_RATE or more alerts at once, when at that rate the pool would reach the aggressive
# line (or fill) within FAST_HORIZON_S: a model loading into plenty of room is not an alarm, nor is the rising
# edge of a sawtooth (a key that released as much before, within the window). The rise must cover
# FAST_MIN_COVERAGE of the window: a step takes a second or a few (a process that appears and allocates 2 GiB
# at once, a file written to /dev/shm), and a key seen for 6 s that rose all along is a step being taken,
# not growth yet. A rise that keeps on across the whole window (~10 s) is growth while it lasts: nothing can
# tell it from a runaway before it stops, and it clears a few ticks after it does.
FAST_WINDOW_S = 12.0
FAST_MIN_COVERAGE = 0.8
FAST_MIN_POINTS = 5
FAST_MIN_RATE = 1e9 / 60  # bytes per second: 1 GB/min
FAST_MIN_RISE = 256 * 1024**2
FAST_MIN_R2 = 0.9
FAST_HORIZON_S = 15 * 60.0
# A consumer that started with others (first seen within BURST_GAP_S of another newcomer) is not judged by
# the fast rule in its first START_GRACE_S: processes and containers starting together (a compose stack, a
# test harness, four hogs) each fault their memory in over seconds, slower as they compete (a quarter minute
# on a busy machine), and those rises are steps being taken, not runaways: four hogs and two containers
# starting together alerted "+6.9 GiB/min" for a one-off 2 GiB. One that still climbs past the grace is
# judged then. A process starting alone is judged at once (2 GB at 100 MB/s is over in 20 s), and so is a
# consumer that was there when the history began (its start is not known).
BURST_GAP_S = 5.0
START_GRACE_S = 30.0


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
        ~31 min`, soonest first; a line already passed reads `already over safe 80 GB`. A line above the pool
        (a small machine) is left out: the pool fills first."""
        over: list[str] = []
        ahead: list[tuple[float, str]] = []
        pool_eta = self.eta_pool_s
        for name, line, eta in (
            ("safe", self.safe_bytes, self.eta_safe_s),
            ("aggressive", self.max_bytes, self.eta_aggressive_s),
        ):
            if eta is None or (pool_eta is not None and eta > pool_eta):
                continue  # never reached before the pool is full
            what = f"{name} {fmt_gb(line)}" if line else name
            if eta <= 0:
                over.append(what)
            else:
                ahead.append((eta, f"{what} in ~{fmt_duration(eta)}"))
        if pool_eta is not None:
            if pool_eta <= 0:
                over.append("the pool is full")
            else:
                ahead.append((pool_eta, f"the pool in ~{fmt_duration(pool_eta)}"))
        ahead.sort(key=lambda item: item[0])
        parts: list[str] = []
        if over:
            parts.append("already over " + " and ".join(over))
        if ahead:
            parts.append("crosses " + ", ".join(words for _eta, words in ahead))
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
    """The straight line through the points and how well it fits. Times and values are centred on their
    means first, so plain sums keep their precision (the terms are deviations and residuals, and float
    rounding stays far below what R² and the step test compare); the sums run as C-level passes (map,
    operator.mul): statistics.linear_regression's fsum generators were most of every creep check's cost."""
    n = len(ts)
    if n < 2:
        return None
    t0 = ts[0]
    rel = [t - t0 for t in ts]  # times from the first: exact for close times
    rel_mean = math.fsum(rel) / n
    v_mean = sum(vs) / n
    tc = [t - rel_mean for t in rel]
    vc = [v - v_mean for v in vs]
    stt = sum(map(operator.mul, tc, tc))
    if stt <= 0:  # every point at the same time
        return None
    slope = sum(map(operator.mul, tc, vc)) / stt
    start = v_mean - slope * rel_mean  # the fitted value at the first point
    svv = sum(map(operator.mul, vc, vc))
    residuals = [v - slope * t for t, v in zip(tc, vc, strict=True)]
    sse = sum(map(operator.mul, residuals, residuals))
    r2 = max(0.0, 1.0 - sse / svv) if svv > 0 else 0.0
    return _Fit(slope=slope, start=start, r2=r2, sse=sse, span_s=ts[-1] - t0, n=n)


def slope_per_s(ts: list[float], vs: list[int]) -> float | None:
    """The least-squares slope of values over times (per second); None for fewer than two distinct times."""
    fit = _least_squares(ts, vs)
    return fit.slope if fit else None


def _noise(ts: list[float], vs: list[int], rate: float) -> float:
    """The series' noise about a climb at `rate` (bytes): the median tick-to-tick change that the rate does
    not explain, scaled to a standard deviation. A median, so that one step does not count as noise."""
    changes = sorted(
        abs(vs[i] - vs[i - 1] - rate * (ts[i] - ts[i - 1])) for i in range(max(1, len(vs) - 60), len(vs))
    )
    return changes[len(changes) // 2] / DIFF_MEDIAN_PER_SIGMA if changes else 0.0


def _progress(ts: list[float], vs: list[int], rate: float) -> tuple[int, list[float]]:
    """The index of the last point that made progress at `rate` (0: none did), and the pauses between
    progress points (the wait for the first one left out: it is no rhythm of the climb)."""
    last = 0
    pauses: list[float] = []
    for i in range(1, len(ts)):
        gained = vs[i] - vs[last]
        if gained > 0 and gained >= rate * (ts[i] - ts[last]) / 2:
            if last:
                pauses.append(ts[i] - ts[last])
            last = i
    return last, pauses


def still_rising(ts: list[float], vs: list[int], rate: float, slack: float = 1.0) -> bool:
    """True while a series that climbs at `rate` (bytes per second, > 0) keeps pace: see "Growth continues"
    at the top of this module. `slack` scales the noise and rhythm allowances (HOLD_SLACK for a shown
    alert)."""
    if rate <= 0 or len(ts) < 2:
        return False
    last, pauses = _progress(ts, vs, rate)
    if last == 0:
        return False  # never rose above its first point
    tick = (ts[-1] - ts[0]) / (len(ts) - 1)
    recent = sorted(pauses[-3:])
    allowed = max(
        STOP_TICKS * tick,
        slack * NOISE_SPANS * _noise(ts, vs, rate) / rate,
        slack * PAUSE_SHARE * recent[len(recent) // 2] if recent else 0.0,  # of two, the longer
    )
    return ts[-1] - ts[last] <= allowed


def current_slope(ts: list[float], vs: list[int]) -> float | None:
    """The least-squares slope (per second) of a series that is still going that way (`still_rising`, up or
    down); for one that stopped, the slope since it last kept pace (~0 for a step followed by a flat: the
    step is not a rate). None for fewer than two distinct times."""
    slope = slope_per_s(ts, vs)
    if not slope:
        return slope
    signed = vs if slope > 0 else [-v for v in vs]
    if still_rising(ts, signed, abs(slope)):
        return slope
    last, _pauses = _progress(ts, signed, abs(slope))
    since = slope_per_s(ts[last:], vs[last:])  # where the series has been since it stopped
    return since if since is not None else 0.0


def rate_per_min(history: History, key: str, window_s: float = 300) -> float | None:
    """`key`'s growth in bytes per minute over the last `window_s` (`current_slope`: a step followed by a flat
    is no growth); None with too few points."""
    ts, vs = history.window(key, window_s)
    if len(ts) < MIN_POINTS:
        return None
    slope = current_slope(ts, vs)
    return None if slope is None else slope * 60


def _grows_in_each_third(ts: list[float], vs: list[int], slope: float) -> bool:
    t0, span = ts[0], ts[-1] - ts[0]

    def third(t: float) -> int:
        return min(2, int(3 * (t - t0) / span))

    # The times are sorted and `third` never falls as they rise: the thirds are slices, found by bisection
    # (a Python loop over every point was most of this check).
    a = bisect_left(ts, 1, key=third)
    b = bisect_left(ts, 2, key=third)
    thirds = ((ts[:a], vs[:a]), (ts[a:b], vs[a:b]), (ts[b:], vs[b:]))
    for third_ts, third_vs in thirds:
        if len(third_ts) < 2:
            return False  # a gap: growth there cannot be shown
        third_slope = slope_per_s(third_ts, third_vs)
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


def _max_drawdown(vs: list[int], smooth: bool = True) -> float:
    """The largest fall from an earlier peak, on a moving average of ~1/20 of the points (so jitter of a
    few samples is not mistaken for a release), or on the points themselves."""
    k = max(1, len(vs) // 20) if smooth else 1
    if len(vs) < k:
        return 0.0
    # Sums of each k consecutive points from running totals (integers: exact), their running peak, and the
    # largest fall below it: C-level passes, not a Python loop over every point.
    totals = [0, *itertools.accumulate(vs)]
    means = [(b - a) / k for a, b in zip(totals, totals[k:], strict=False)]  # len(vs) - k + 1 of them
    peaks = itertools.accumulate(means, max)
    return max(0.0, max(map(operator.sub, peaks, means)))


def _slope_cannot_reach(ts: list[float], vs: list[int], slope: float) -> bool:
    """True when no least-squares line through these points can climb as fast as `slope`: its slope is at
    most sqrt(Svv / Stt) (Cauchy-Schwarz), and Svv is at most n·(spread / 2)² (Popoviciu). Most series on a
    machine are flat, and this skips their fit (min, max and one pass over the times instead of five)."""
    n = len(ts)
    spread = max(vs) - min(vs)
    if spread == 0:
        return True
    # Times from the first, as the fit takes them (exact for close times), and a margin for rounding: the
    # bound is reached exactly by two clusters of points, and a shortcut must never be wrong.
    t0 = ts[0]
    rel = [t - t0 for t in ts]
    total = sum(rel)
    stt = sum(map(operator.mul, rel, rel)) - total * total / n  # C-level passes: this runs for every key
    # Square roots, not squares: the slope of two points a hair apart squares to inf, and inf would say
    # "cannot reach" for the very slope the fit gives. A negative Stt (rounding) claims nothing.
    return math.sqrt(n) * (spread / 2) * (1 + 1e-6) < slope * math.sqrt(max(stt, 0.0))


def _is_creep(ts: list[float], vs: list[int], window_s: float, min_rate_bytes_per_s: float) -> _Fit | None:
    """The fit when the points show creep by the rule at the top of this module, else None."""
    if len(ts) < MIN_POINTS or ts[-1] - ts[0] < MIN_COVERAGE * window_s:
        return None
    if _slope_cannot_reach(ts, vs, min_rate_bytes_per_s):
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
    if not still_rising(ts, vs, fit.slope):
        return None
    return fit


def rising_slope(ts: list[float], vs: list[int], min_rate_bytes_per_s: float) -> float | None:
    """The least-squares slope (per second) of a series that still climbs at it, at least as fast as
    `min_rate_bytes_per_s`, and has not given back half of its rise within the window (memory allocated and
    freed: a test suite, a batch job); else None. Laxer than the creep rule (no fit, thirds or step test):
    the freeze forecast sums it over the consumers to say how fast the pool fills now."""
    if len(ts) < MIN_POINTS or _slope_cannot_reach(ts, vs, min_rate_bytes_per_s):
        return None
    slope = slope_per_s(ts, vs)
    if slope is None or slope < min_rate_bytes_per_s:
        return None
    if _max_drawdown(vs) >= MAX_DRAWDOWN_SHARE * slope * (ts[-1] - ts[0]):
        return None
    return slope if still_rising(ts, vs, slope) else None


def _is_fast(ts: list[float], vs: list[int]) -> _Fit | None:
    """The fit when the last FAST_WINDOW_S show a fast, clean, still-going rise (see FAST_* above)."""
    if len(ts) < FAST_MIN_POINTS or ts[-1] - ts[0] < FAST_MIN_COVERAGE * FAST_WINDOW_S:
        return None
    if _slope_cannot_reach(ts, vs, FAST_MIN_RATE):
        return None
    fit = _least_squares(ts, vs)
    if fit is None or fit.slope < FAST_MIN_RATE or fit.r2 < FAST_MIN_R2:
        return None
    if fit.slope * fit.span_s < FAST_MIN_RISE or not _grows_in_each_third(ts, vs, fit.slope):
        return None
    if not still_rising(ts, vs, fit.slope):
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


def _soon(used_now: int, rate_bytes_per_s: float, max_bytes: int, pool_bytes: int) -> bool:
    """At this rate, the pool reaches the aggressive line (or fills) within FAST_HORIZON_S."""
    etas = [eta_s(used_now, rate_bytes_per_s, line) for line in (max_bytes, pool_bytes) if line > 0]
    return any(eta is not None and eta <= FAST_HORIZON_S for eta in etas)


def collecting_s(history: History, window_s: float = 300) -> float | None:
    """Seconds of data the steady-growth rule still lacks (it judges a key over MIN_COVERAGE of the window),
    or None once the history covers that much."""
    times = history.times()
    need = MIN_COVERAGE * window_s
    have = times[-1] - times[0] if times else 0.0
    return need - have if have < need else None


def _started_together(windows: dict[str, tuple[list[float], list[int]]], times: list[float]) -> set[str]:
    """The keys that appeared less than START_GRACE_S ago within BURST_GAP_S of another that did."""
    if not times:
        return set()
    now, began = times[-1], times[0]
    born = sorted(
        (ts[0], key)
        for key, (ts, _vs) in windows.items()
        if ts and began < ts[0] and now - ts[0] < START_GRACE_S
    )
    together: set[str] = set()
    for (t1, k1), (t2, k2) in itertools.pairwise(born):
        if t2 - t1 <= BURST_GAP_S:
            together.update((k1, k2))
    return together


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
    windows = {key: history.window(key, window_s) for key in history.present_keys()}
    starting = _started_together(windows, history.times())
    for key, (ts, vs) in windows.items():
        fit = _is_creep(ts, vs, window_s, min_rate)
        if fit is None:
            if key in starting:
                continue  # starting up with others (START_GRACE_S)
            cut = bisect_left(ts, ts[-1] - FAST_WINDOW_S) if ts else 0
            fit = _is_fast(ts[cut:], vs[cut:])
            if fit is None or not _soon(used_now, fit.slope, max_bytes, pool_bytes):
                continue
            # A key that released as much within the window is a sawtooth (a batch job): not a runaway.
            if _max_drawdown(vs, smooth=False) >= MAX_DRAWDOWN_SHARE * fit.slope * fit.span_s:
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


CREEP_HOLD_S = 30.0  # the longest an alert stays after the rule last raised it, while the climb goes on


class CreepHold:
    """Keeps a creep alert on show after the rule last raised it while its consumer keeps climbing at the
    alert's rate (`still_rising` over `window_s`), for at most CREEP_HOLD_S: a noisy fast climb (a training
    run at 1.3 GB/min near the 1 GB/min line) passed and failed the fast-growth test every few ticks, and an
    alert that blinks is read as noise. It goes at once when the climb stops (a step that ended, a grower
    that stopped), the consumer leaves, or it releases what it grew. A held alert keeps its rate and gets
    this tick's figures and ETAs."""

    def __init__(self, hold_s: float = CREEP_HOLD_S, window_s: float = 300.0) -> None:
        self.hold_s = hold_s
        self.window_s = window_s
        self._seen: dict[str, tuple[float, CreepAlert]] = {}  # key -> (when the rule last raised it, alert)

    def update(
        self, alerts: list[CreepAlert], history: History, now: float, pool_bytes: int
    ) -> list[CreepAlert]:
        """This tick's alerts plus those still held, fastest first."""
        for alert in alerts:
            self._seen[alert.key] = (now, alert)
        raised = {alert.key for alert in alerts}
        used_now = history.pool_used_now
        kept = list(alerts)
        for key, (when, alert) in list(self._seen.items()):
            if key in raised:
                continue
            current = history.latest(key)
            # Released: down by half of what it grows in the fast window (a sawtooth, a freed cache).
            release = MAX_DRAWDOWN_SHARE * alert.rate_bytes_per_s * FAST_WINDOW_S
            if (
                current is None
                or used_now is None
                or now - when > self.hold_s
                or current < alert.current_bytes - release
                or not still_rising(
                    *history.window(key, self.window_s), alert.rate_bytes_per_s, slack=HOLD_SLACK
                )
            ):
                del self._seen[key]
                continue
            kept.append(_refreshed(alert, current, used_now, pool_bytes))
        kept.sort(key=lambda a: a.rate_bytes_per_s, reverse=True)
        return kept


def _refreshed(alert: CreepAlert, current_bytes: int, used_now: int, pool_bytes: int) -> CreepAlert:
    """A held alert with this tick's size and the ETAs from this tick's pool."""
    rate = alert.rate_bytes_per_s
    return replace(
        alert,
        current_bytes=current_bytes,
        pool_used_bytes=used_now,
        eta_safe_s=eta_s(used_now, rate, alert.safe_bytes or 0),
        eta_aggressive_s=eta_s(used_now, rate, alert.max_bytes or 0),
        eta_pool_s=eta_s(used_now, rate, pool_bytes),
    )


def at_pool_rate(
    alert: CreepAlert, pool_rate_bytes_per_s: float, pool_bytes: int, reserve_bytes: int
) -> CreepAlert:
    """`alert` with the ETAs of the whole pool filling at `pool_rate_bytes_per_s` (every grower together:
    the exhaustion forecast's rate), the pool counted as exhausted at `reserve_bytes` from full as the
    forecast counts it: each creep line then says when the pool crosses a line as the banner does."""
    used = alert.pool_used_bytes
    if used is None or pool_rate_bytes_per_s <= 0:
        return alert
    return replace(
        alert,
        eta_safe_s=eta_s(used, pool_rate_bytes_per_s, alert.safe_bytes or 0),
        eta_aggressive_s=eta_s(used, pool_rate_bytes_per_s, alert.max_bytes or 0),
        eta_pool_s=eta_s(used, pool_rate_bytes_per_s, max(1, pool_bytes - reserve_bytes)),
    )
