"""A bounded time series of the pool and its consumers, for the history chart and creep detection.

Only numbers are kept, never snapshots: one `array('d')` of times, one `array('q')` of pool `used`, and per
consumer key (its total = CPU side + GPU side) a span: an `array('q')` from the key's first stored point to
its last present one, and the index on the time axis where it starts. Before and after its span a key is
absent; a tick it missed inside its span holds `_ABSENT`. So a key that went away stops growing at once, and
a short-lived process costs its own few points, not the whole axis. Accounting's `unattributed` is kept
under the key "unattributed" as well, so a leak nobody owns (driver, kernel) still shows; `top_keys` leaves
it out.

Memory stays bounded three ways:

- age: points older than `max_age_s` are dropped, and so is a key that has been absent for the whole window;
- resolution: raw points for the last 15 min, 10 s buckets up to 1 h, 60 s buckets beyond. A bucket keeps the
  peak of each series (near-exhaustion moments must survive downsampling) and the time of its last point, so
  6 h at 1 s is ~900 + 270 + 300 ≈ 1,470 points: with 50 steady consumers about 0.6 MB (see `nbytes`);
- counts: at most `max_points` points (oldest dropped first: only reached when sampling much faster than 1 Hz)
  and `max_keys` keys (the keys absent the longest are forgotten first, so process churn cannot grow it;
  under churn the size is the steady keys' series plus a few points per short-lived key).
"""

from __future__ import annotations

import math
import sys
from array import array
from bisect import bisect_left

from sparktop.analysis.throttle import lasting_throttle
from sparktop.core.snapshot import Snapshot

UNATTRIBUTED = "unattributed"

_ABSENT = -1  # sizes are never negative

# (age beyond which a point is merged, bucket width in seconds), coarsest first.
_TIERS: tuple[tuple[float, float], ...] = ((3600.0, 60.0), (900.0, 10.0))
_MAX_THROTTLE_MARKS = 64  # lasting GPU throttles remembered for the chart
_COMPACT_EVERY = 60  # points added between compactions (once a minute at 1 Hz)


class _Span:
    """One key's totals: `values[i]` belongs to point `start + i` of the time axis. The first and the last
    values are present ones (trimming and compaction keep it so); `_ABSENT` only for ticks missed between."""

    __slots__ = ("start", "values")

    def __init__(self, start: int, values: array) -> None:
        self.start = start
        self.values = values

    @property
    def end(self) -> int:
        """The index after the span's last point."""
        return self.start + len(self.values)

    def padded(self, length: int) -> array:
        """The span as long as a time axis of `length` points, `_ABSENT` before and after it."""
        return _absent(self.start) + self.values + _absent(length - self.end)

    def drop_front(self, cut: int) -> None:
        """The first `cut` points of the axis are gone: what is left starts at its first present value (left
        empty, the key was last seen before the oldest point, and `_trim` forgets it)."""
        self.start -= cut
        if self.start >= 0:
            return
        values = self.values
        del values[: -self.start]
        first = next((i for i, v in enumerate(values) if v != _ABSENT), len(values))
        del values[:first]
        self.start = first


def _absent(count: int) -> array:
    return array("q", [_ABSENT]) * count


class History:
    """Pool `used` and per-consumer totals over the last `max_age_s` seconds. See the module docstring."""

    def __init__(self, max_age_s: float = 6 * 3600, max_points: int = 4096, max_keys: int = 256) -> None:
        if max_age_s <= 0:
            raise ValueError(f"max_age_s must be greater than 0 (got {max_age_s})")
        if max_points < 2:
            raise ValueError(f"max_points must be at least 2 (got {max_points})")
        self.max_age_s = float(max_age_s)
        self.max_points = int(max_points)
        self.max_keys = max(1, int(max_keys))
        self._times = array("d")
        self._used = array("q")
        self._series: dict[str, _Span] = {}
        self._labels: dict[str, str] = {}
        self._last_seen: dict[str, float] = {}
        self._latest: dict[str, int] = {}  # key -> total at the latest tick (keys present there only)
        self._since_compact = 0
        self._throttle_starts: list[float] = []

    # --- writing -----------------------------------------------------------------------------------------

    def add(self, snapshot: Snapshot) -> None:
        """Record one tick. A snapshot older than the latest one (a clock step back) restarts the history."""
        t = float(snapshot.timestamp)
        if self._times and t <= self._times[-1]:
            if t == self._times[-1]:
                return  # the same tick twice
            self.clear()
        n = len(self._times)
        totals: dict[str, int] = {}
        accounting = snapshot.accounting
        if accounting is not None:
            for consumer in accounting.consumers:
                totals[consumer.key] = totals.get(consumer.key, 0) + max(0, consumer.total)
                self._labels[consumer.key] = consumer.label
            totals[UNATTRIBUTED] = max(0, accounting.unattributed)
            self._labels.setdefault(UNATTRIBUTED, UNATTRIBUTED)

        self._times.append(t)
        self._used.append(max(0, snapshot.memory.used))
        # Only the keys present now are touched: an absent key's span simply stops.
        for key, total in totals.items():
            span = self._series.get(key)
            if span is None:
                self._series[key] = _Span(n, array("q", [total]))
            else:
                values = span.values
                missed = n - span.start - len(values)  # ticks since it was last here (not `end`: hot path)
                if missed:
                    values.extend(_absent(missed))
                values.append(total)
            self._last_seen[key] = t
        self._latest = totals
        self._mark_throttles(snapshot, t)

        self._since_compact += 1
        if self._since_compact >= _COMPACT_EVERY or len(self._times) > self.max_points:
            self._compact()
        self._trim(t)
        if len(self._series) > self.max_keys:
            self._evict_keys()

    def _mark_throttles(self, snapshot: Snapshot, t: float) -> None:
        """Keep when each lasting GPU throttle began (the chart marks it); short ones would only clutter."""
        for gpu in snapshot.gpu.gpus:
            since = gpu.throttle_since
            if since is not None and since not in self._throttle_starts and lasting_throttle(gpu, t):
                self._throttle_starts.append(since)
                del self._throttle_starts[:-_MAX_THROTTLE_MARKS]
        while self._throttle_starts and self._throttle_starts[0] < t - self.max_age_s:
            del self._throttle_starts[0]

    def throttle_starts(self) -> list[float]:
        """When each lasting GPU throttle in the window began (Unix time), oldest first."""
        return list(self._throttle_starts)

    def clear(self) -> None:
        self._throttle_starts.clear()
        self._times = array("d")
        self._used = array("q")
        self._series.clear()
        self._labels.clear()
        self._last_seen.clear()
        self._latest = {}
        self._since_compact = 0

    def _trim(self, now: float) -> None:
        """Drop points older than the window (or past `max_points`) and keys absent from all that is left."""
        cut = bisect_left(self._times, now - self.max_age_s)
        cut = max(cut, len(self._times) - self.max_points)
        if cut <= 0:
            return
        del self._times[:cut]
        del self._used[:cut]
        for span in self._series.values():
            span.drop_front(cut)
        oldest = self._times[0]
        for key in [k for k, seen in self._last_seen.items() if seen < oldest]:
            self._forget(key)

    def _evict_keys(self) -> None:
        """Over `max_keys`: forget the keys absent the longest (keys present now go last), down to 7/8 of
        `max_keys` so that a stream of new keys sorts once every few ticks, not every tick."""
        keep = self.max_keys - self.max_keys // 8
        by_age = sorted(self._series, key=lambda k: (k in self._latest, self._last_seen.get(k, -math.inf)))
        for key in by_age[: len(self._series) - keep]:
            self._forget(key)

    def _forget(self, key: str) -> None:
        self._series.pop(key, None)
        self._labels.pop(key, None)
        self._last_seen.pop(key, None)
        self._latest.pop(key, None)

    def _compact(self) -> None:
        """Merge old points into buckets (see `_TIERS`): a run of consecutive points that fall in the same
        bucket becomes one point at the run's last time, holding each series' peak. Idempotent on buckets
        made before, since a bucket's time lies inside its own bucket."""
        self._since_compact = 0
        times = self._times
        if not times:
            return
        now = times[-1]
        # Only points older than the finest tier's age are touched.
        end = bisect_left(times, now - _TIERS[-1][0])
        if end < 2:
            return

        def bucket(t: float) -> tuple[float, int]:
            age = now - t
            for min_age, width in _TIERS:
                if age > min_age:
                    return width, math.floor(t / width)
            return 0.0, 0  # not reached: end excludes younger points

        # The plan: (False, a, b) copies a stretch of points that stay as they are, (True, a, b) folds a run.
        plan: list[tuple[bool, int, int]] = []
        start = 0
        current: tuple[float, int] | None = bucket(times[0])
        for i in range(1, end + 1):
            b = bucket(times[i]) if i < end else None
            if b == current:
                continue
            merge = i - start > 1
            if not merge and plan and not plan[-1][0]:
                plan[-1] = (False, plan[-1][1], i)  # extend the stretch being copied
            else:
                plan.append((merge, start, i))
            start, current = i, b
        if not any(merge for merge, _, _ in plan):
            return  # nothing to merge

        def merged(values: array, peak: bool) -> array:
            out = array(values.typecode)
            for merge, a, b in plan:
                if not merge:
                    out.extend(values[a:b])
                else:
                    out.append(max(values[a:b]) if peak else values[b - 1])
            out.extend(values[end:])
            return out

        # For each compacted point, the last of the points it replaces: point i lands at
        # bisect_left(lasts, i).
        lasts = merged(array("q", range(len(times))), peak=False)
        self._times = merged(times, peak=False)
        self._used = merged(self._used, peak=True)
        for span in self._series.values():
            first = bisect_left(lasts, span.start)
            if span.start < end:  # it reaches into the merged points
                # _ABSENT is below every real size, so the peak of a bucket is absent only if absent
                # throughout: the points holding the span's first and last values are its new ends.
                last = bisect_left(lasts, span.end - 1)
                span.values = merged(span.padded(len(times)), peak=True)[first : last + 1]
            span.start = first

    # --- reading -----------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._times)

    @property
    def latest_time(self) -> float | None:
        return self._times[-1] if self._times else None

    @property
    def pool_used_now(self) -> int | None:
        """The pool's `used` at the latest tick."""
        return self._used[-1] if self._used else None

    def times(self) -> list[float]:
        return self._times.tolist()

    def used(self) -> list[int]:
        return self._used.tolist()

    def known_keys(self) -> list[str]:
        """Every key with stored points (present now or earlier in the window)."""
        return list(self._series)

    def series(self, key: str) -> list[int | None]:
        """`key`'s totals aligned with `times()`; None where the key was absent (or was never seen)."""
        span = self._series.get(key)
        if span is None:
            return [None] * len(self._times)
        inside = [None if v == _ABSENT else v for v in span.values]
        return [None] * span.start + inside + [None] * (len(self._times) - span.end)

    def window(self, key: str, window_s: float) -> tuple[list[float], list[int]]:
        """The points of `key` in the last `window_s` seconds, absent ticks left out: (times, values)."""
        span = self._series.get(key)
        if span is None or not self._times:
            return [], []
        start = max(bisect_left(self._times, self._times[-1] - window_s), span.start)
        # Slices and tolist run in C; the Python-level filter only when the key missed ticks in its span.
        ts = self._times[start : span.end].tolist()
        vs = span.values[start - span.start :].tolist()
        if _ABSENT not in vs:
            return ts, vs
        keep = [i for i, v in enumerate(vs) if v != _ABSENT]
        return [ts[i] for i in keep], [vs[i] for i in keep]

    def latest(self, key: str) -> int | None:
        """`key`'s total at the latest tick; None when absent there."""
        return self._latest.get(key)

    def present_keys(self) -> list[str]:
        """The keys present at the latest tick, "unattributed" included."""
        return list(self._latest)

    def top_keys(self, n: int) -> list[str]:
        """The `n` largest consumers at the latest tick, largest first, without "unattributed"."""
        ranked = sorted(
            ((total, key) for key, total in self._latest.items() if key != UNATTRIBUTED),
            key=lambda item: (-item[0], item[1]),
        )
        return [key for _, key in ranked[: max(0, n)]]

    def label(self, key: str) -> str:
        return self._labels.get(key, key)

    def nbytes(self) -> int:
        """Bytes held by the stored numbers and their containers (labels and dict overhead included)."""
        size = sys.getsizeof(self._times) + sys.getsizeof(self._used) + sys.getsizeof(self._series)
        size += sys.getsizeof(self._labels) + sys.getsizeof(self._last_seen) + sys.getsizeof(self._latest)
        for key, span in self._series.items():
            size += sys.getsizeof(span) + sys.getsizeof(span.values) + sys.getsizeof(key)
        size += sum(sys.getsizeof(label) for label in self._labels.values())
        return size
