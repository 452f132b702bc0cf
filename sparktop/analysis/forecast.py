"""When will the pool run out? A forecast from the MemAvailable trend and memory pressure (PSI).

On a Spark, running out of the pool often wedges the whole machine (no OOM kill, a power cycle), so the
warning has to come while there is still time to act. The forecast answers three questions each tick:

- **how fast is the pool filling?** The slope of `used` (= MemTotal − MemAvailable) over the last
  `window_s`, counted only when the growth is sustained by the same rule as the creep alerts
  (`trend.sustained_slope`: a good straight-line fit, growth in each third of the window, not better
  explained by one step, no fall back to base). A model loading (flat, jump, flat) and jitter never warn.
- **how long until it is exhausted?** `(MemAvailable − reserve) / slope`. The reserve is what must stay free
  for the machine to keep answering (default 5 % of the pool: earlyoom's SIGKILL level).
- **is it stalling already?** PSI `full` avg10 (every runnable task stalled on memory at once) at or above
  `stall_full_avg10` is exhaustion now, whatever the slope; `some` avg10 is shown as context.

`warned_horizon` is the smallest configured horizon (e.g. 10 min, 2 min) the time to exhaustion is inside:
the guard and the dashboard warn when it changes to a nearer horizon. The consumer driving the growth is the
one whose own total grows fastest over the same window (named with a warning only).

**One rate for every view.** When consumers creep (`growers`: the creep alerts on show, held ones
included), the pool fills at the sum of their rates, and that is the forecast's rate: the banner and the
creep lines under it then say the same thing (`trend.at_pool_rate` gives each creep line the ETAs of this
rate), and a grower that stops leaves the rate within a few ticks, as its alert goes. A fit of the pool
itself lagged (it still said +6 GiB/min 24 s after a 3 GiB/min grower stopped) and broke whenever others
allocated and freed beside the grower (the banner blinked for as long as the growth went on). The pool's
own slope is used only when no consumer creeps (growth spread over many, or nobody's).

A warning follows the real state, not each tick's verdict (`previous`: the last tick's forecast). The strict
rule raises it. Once raised, other programs on the machine (a test suite allocating and freeing 1.5 GiB, a
browser) break the strict rule's fit for a few ticks while the grower goes on: the guard said `clear: no
exhaustion in sight` 26 s after each warning, again and again, with 10.8 GiB left at 2.5 GiB/min. So a
warning is held while the pool still fills: its least-squares slope over the window is at least
MIN_RATE_BYTES_PER_S and the growth goes on (`trend.still_rising`: the pool keeps pace, or the consumer
growing fastest does). It clears when the growth stops, or when the time to exhaustion recedes past
HORIZON_SLACK × the horizon warned about (an ETA that wavers about a horizon does not warn and clear in turn).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparktop.analysis.history import UNATTRIBUTED, History
from sparktop.analysis.trend import (
    CreepAlert,
    rate_per_min,
    rising_slope,
    slope_per_s,
    still_rising,
    sustained_slope,
)
from sparktop.core.format import fmt_bytes, fmt_duration, fmt_rate
from sparktop.core.snapshot import HostMemory

DEFAULT_HORIZONS_S = (600.0, 120.0)
DEFAULT_WINDOW_S = 120.0
DEFAULT_RESERVE_SHARE = 0.05  # earlyoom's SIGKILL level
STALL_FULL_AVG10 = 10.0  # the pressure rule's own CRITICAL level for PSI full (sparktop/analysis/pressure.py)
MIN_RATE_BYTES_PER_S = 5e6  # 300 MB/min: slower than this the pool is not "running out" on any horizon
MIN_KEY_RATE_BYTES_PER_S = 50e6 / 60  # a consumer adds to the fill rate from the creep rule's 50 MB/min
HORIZON_SLACK = 1.25  # a warned horizon is kept until the ETA is this far past it
# A stall is over when PSI full avg10 falls under this share of the stall level, not at the level: a value
# that hovers about 10 % warned and cleared in turn. avg10 decays by half in ~7 s once the stall ends.
STALL_CLEAR_SHARE = 0.5


@dataclass(frozen=True)
class Forecast:
    available_bytes: int
    reserve_bytes: int
    rate_bytes_per_s: float | None  # sustained growth of `used`; None when there is none
    eta_s: float | None  # seconds until MemAvailable reaches the reserve; 0 = now; None = not on this trend
    stalling: bool  # PSI full avg10 at or above the stall level
    psi_some_avg10: float | None
    psi_full_avg10: float | None
    psi_full_avg60: float | None
    driver: str | None  # the label of the consumer growing fastest, when one grows
    driver_rate_bytes_per_s: float | None
    warned_horizon: float | None  # the nearest horizon the ETA is inside (None: none)

    @property
    def warning(self) -> bool:
        return self.warned_horizon is not None

    def message(self) -> str:
        """One line for a banner, a journal entry or a hook."""
        if self.stalling:
            head = f"memory stalling now: PSI full avg10 {self.psi_full_avg10:.0f} %"
        elif self.eta_s is not None and self.eta_s <= 0:
            head = f"pool exhausted: MemAvailable {fmt_bytes(self.available_bytes)} at the reserve"
        elif self.eta_s is not None and self.rate_bytes_per_s:
            head = f"pool exhausted in ~{fmt_duration(self.eta_s)} at {fmt_rate(self.rate_bytes_per_s * 60)}"
        else:
            return f"no exhaustion in sight: MemAvailable {fmt_bytes(self.available_bytes)}"
        if self.driver:
            head += f", driven by {self.driver}"
            if self.driver_rate_bytes_per_s:
                head += f" ({fmt_rate(self.driver_rate_bytes_per_s * 60)})"
        return f"{head}; MemAvailable {fmt_bytes(self.available_bytes)}"


def _pool_window(history: History, window_s: float) -> tuple[list[float], list[int]]:
    times, used = history.times(), history.used()
    if not times:
        return [], []
    start = next((i for i, t in enumerate(times) if t >= times[-1] - window_s), len(times))
    return times[start:], used[start:]


def _driver(history: History, window_s: float) -> tuple[str | None, float | None]:
    best_key, best_rate = None, 0.0
    for key in history.present_keys():
        if key == UNATTRIBUTED:
            continue
        per_min = rate_per_min(history, key, window_s)
        if per_min is not None and per_min > best_rate:
            best_key, best_rate = key, per_min
    if best_key is None:
        return None, None
    return history.label(best_key), best_rate / 60


def _still_filling(history: History, ts: list[float], vs: list[int], window_s: float) -> float | None:
    """The pool's least-squares slope while it still fills (see the module docstring), else None."""
    slope = slope_per_s(ts, vs)
    if slope is None or slope < MIN_RATE_BYTES_PER_S:
        return None
    if still_rising(ts, vs, slope):
        return slope
    # The consumer that rose most over the window: one subtraction per key, as this runs every tick held.
    best: tuple[list[float], list[int]] | None = None
    best_rise = 0
    for key in history.present_keys():
        kts, kvs = history.window(key, window_s)
        if len(kts) >= 2 and kvs[-1] - kvs[0] > best_rise:
            best, best_rise = (kts, kvs), kvs[-1] - kvs[0]
    if best is not None:
        rate = slope_per_s(*best)
        if rate is not None and rate > 0 and still_rising(*best, rate):
            return slope  # the pool wavers (others allocate and free), its grower goes on
    return None


def _fill_rate(
    history: History, window_s: float, growers: Sequence[CreepAlert]
) -> tuple[float, tuple[str, float] | None]:
    """How fast the pool fills from what keeps growing, and the fastest grower (label, rate): each creep
    alert at the rate its line says, and each other consumer still climbing steadily over the window
    (`trend.rising_slope`: a two-minute-old grower the five-minute creep rule has not judged yet, growth
    nobody owns). A grower that stopped, a step that ended and memory allocated and freed add nothing."""
    total = 0.0
    fastest: tuple[str, float] | None = None
    alerted = {a.key for a in growers}
    rates = [(a.label, a.rate_bytes_per_s) for a in growers]
    for key in history.present_keys():
        if key in alerted:
            continue
        rate = rising_slope(*history.window(key, window_s), MIN_KEY_RATE_BYTES_PER_S)
        if rate is not None:
            rates.append((history.label(key), rate))
    for label, rate in rates:
        total += rate
        if fastest is None or rate > fastest[1]:
            fastest = (label, rate)
    return total, fastest


def forecast(
    history: History,
    memory: HostMemory,
    horizons_s: tuple[float, ...] = DEFAULT_HORIZONS_S,
    window_s: float = DEFAULT_WINDOW_S,
    reserve_bytes: int | None = None,
    stall_full_avg10: float = STALL_FULL_AVG10,
    previous: Forecast | None = None,
    growers: Sequence[CreepAlert] = (),
) -> Forecast:
    """The forecast for the latest tick in `history` (see the module docstring); `memory` is that tick's,
    `previous` the last tick's forecast (a warning is held while the growth behind it goes on), `growers`
    the creep alerts on show this tick (their summed rate is the pool's)."""
    reserve = int(memory.total * DEFAULT_RESERVE_SHARE) if reserve_bytes is None else max(0, reserve_bytes)
    ts, vs = _pool_window(history, window_s)
    growing = [a for a in growers if a.rate_bytes_per_s > 0]
    pool_slope = sustained_slope(ts, vs, window_s, MIN_RATE_BYTES_PER_S) if len(ts) >= 2 else None
    warned_before = previous.warned_horizon if previous is not None and previous.rate_bytes_per_s else None
    slope: float | None = None
    fastest: tuple[str, float] | None = None
    if pool_slope is not None or growing or warned_before is not None:
        fill, fastest = _fill_rate(history, window_s, growing)
        slope = fill or pool_slope
        if slope is None and warned_before is not None and len(ts) >= 2:
            slope = _still_filling(history, ts, vs, window_s)
    headroom = memory.available - reserve
    if headroom <= 0:
        eta: float | None = 0.0
    elif slope is not None and slope > 0:
        eta = headroom / slope
    else:
        eta = None
    psi = memory.pressure
    some = psi.some.avg10 if psi is not None and psi.some is not None else None
    full10 = psi.full.avg10 if psi is not None and psi.full is not None else None
    full60 = psi.full.avg60 if psi is not None and psi.full is not None else None
    was_stalling = previous is not None and previous.stalling
    level = stall_full_avg10 * (STALL_CLEAR_SHARE if was_stalling else 1.0)
    stalling = full10 is not None and full10 >= level
    if stalling:
        eta = 0.0
    inside = [h for h in horizons_s if eta is not None and eta <= h]
    if warned_before is not None and eta is not None and eta <= warned_before * HORIZON_SLACK:
        inside.append(warned_before)  # not receded far enough to call it over
    # Who drives it is said only with a warning: finding out costs a fit per consumer, every tick.
    driver: str | None
    driver_rate: float | None
    if fastest is not None and (inside or stalling):  # the fastest grower, at the rate its creep line says
        driver, driver_rate = fastest
    else:
        driver, driver_rate = _driver(history, window_s) if (inside or stalling) else (None, None)
    return Forecast(
        available_bytes=memory.available,
        reserve_bytes=reserve,
        rate_bytes_per_s=slope,
        eta_s=eta,
        stalling=stalling,
        psi_some_avg10=some,
        psi_full_avg10=full10,
        psi_full_avg60=full60,
        driver=driver,
        driver_rate_bytes_per_s=driver_rate,
        warned_horizon=min(inside) if inside else None,
    )
