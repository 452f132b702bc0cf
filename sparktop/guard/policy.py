"""Which listed thing the guard stops, and why that one: the first rule of the `[guard]` table's `stop`
list, in the user's order, that matches something (guard/matching.py); of that rule's matches, the one
driving the pool down — the one that grew most over the guard's window (`window_s`) — not merely the
biggest, so a big process sitting still (or another user's look-alike) is not taken for the grower. Only
where none of them grew more than GROWTH_NOISE_BYTES is the biggest taken. Never anything unlisted."""

from __future__ import annotations

from collections import deque

from pydantic import BaseModel, Field

from sparktop.core.format import fmt_bytes
from sparktop.core.snapshot import ContainerInfo, ProcessInfo, Snapshot
from sparktop.guard.matching import Match, RuleReport, match_rules
from sparktop.settings.guard import StopRule

# Growth under this is a page cache's or an allocator's jitter, not what drives the pool down.
GROWTH_NOISE_BYTES = 16 * 1024**2
OTHERS_SHOWN = 3


class Target(BaseModel):
    """What the guard chose: containers (one, or a compose project's) or one host process, and why."""

    rule: str
    label: str
    key: str = ""
    containers: list[ContainerInfo] = Field(default_factory=list)
    process: ProcessInfo | None = None
    bytes: int = 0
    why: str = ""  # why this one of the rule's matches: its growth, against the others'


class GrowthWatch:
    """The size of every thing a rule matches, tick by tick over the last `window_s`: its growth is what it
    gained from its lowest point in the window to now. Keys no rule matches any more are forgotten, so the
    memory follows the number of matches."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._points: dict[str, deque[tuple[float, int]]] = {}

    def update(self, t: float, sizes: dict[str, int]) -> None:
        for key in [k for k in self._points if k not in sizes]:
            del self._points[key]
        for key, size in sizes.items():
            points = self._points.setdefault(key, deque())
            if points and t <= points[-1][0]:
                points.clear()  # the same tick again, or a clock step back: start afresh
            points.append((t, size))
            while points and points[0][0] < t - self.window_s:
                points.popleft()

    def growth(self, key: str) -> tuple[int, float] | None:
        """(bytes gained since the lowest point in the window, seconds watched); None: never seen."""
        points = self._points.get(key)
        if not points:
            return None
        lowest = min(size for _, size in points)
        return points[-1][1] - lowest, points[-1][0] - points[0][0]


def growth_text(growth: tuple[int, float] | None) -> str:
    """`+1.2 GiB in 30 s`, `no growth in 30 s`; "" when never seen."""
    if growth is None:
        return ""
    grown, span = growth
    return f"{'+' + fmt_bytes(grown) if grown > 0 else 'no growth'} in {span:.0f} s"


def _growth_text(match: Match, growth: tuple[int, float] | None) -> str:
    if growth is None:
        return f"{match.label} {fmt_bytes(match.bytes)}"
    return f"{match.label} {growth_text(growth)}, now {fmt_bytes(match.bytes)}"


def choose(matches: list[Match], watch: GrowthWatch | None) -> tuple[Match, str]:
    """The match that grew most over the window (then the biggest), and one line saying why it."""

    def grown(m: Match) -> int:
        g = watch.growth(m.key) if watch is not None else None
        return g[0] if g is not None else 0

    def growth_of(m: Match) -> tuple[int, float] | None:
        return watch.growth(m.key) if watch is not None else None

    def pid_order(m: Match) -> int:
        return -m.process.pid if m.process is not None else 0

    by_growth = sorted(matches, key=lambda m: (grown(m), m.bytes, pid_order(m)), reverse=True)
    chosen = by_growth[0]
    if len(matches) == 1:
        why = f"the rule's only match: {_growth_text(chosen, growth_of(chosen))}"
    elif grown(chosen) >= GROWTH_NOISE_BYTES:
        why = f"grew most: {_growth_text(chosen, growth_of(chosen))}"
    else:
        chosen = max(matches, key=lambda m: (m.bytes, pid_order(m)))
        window = f" in {watch.window_s:g} s" if watch is not None else ""
        why = f"none grew more than {fmt_bytes(GROWTH_NOISE_BYTES)}{window}, so the biggest: "
        why += _growth_text(chosen, growth_of(chosen))
    if chosen.user is not None:
        why += f", user {chosen.user}"
    others = [m for m in by_growth if m is not chosen]
    if others:
        shown = "; ".join(
            _growth_text(m, growth_of(m)) + (f", user {m.user}" if m.user is not None else "")
            for m in others[:OTHERS_SHOWN]
        )
        more = f"; {len(others) - OTHERS_SHOWN} more" if len(others) > OTHERS_SHOWN else ""
        why += f" (of {len(matches)} matches; others: {shown}{more})"
    return chosen, why


def find_target(
    rules: list[StopRule],
    snapshot: Snapshot,
    skip: set[str] | None = None,
    watch: GrowthWatch | None = None,
    reports: list[RuleReport] | None = None,
) -> Target | None:
    """The first rule, in the user's order, that matches something present in `snapshot` (and not in
    `skip`, keys of things already stopped or that would not stop); of its matches the one `choose` picks.
    Never anything unlisted. `reports`: `match_rules(rules, snapshot)` where already made this tick."""
    skip = skip or set()
    for report in reports if reports is not None else match_rules(rules, snapshot):
        candidates = [m for m in report.matches if m.key not in skip]
        if not candidates:
            continue
        chosen, why = choose(candidates, watch)
        return Target(
            rule=report.rule.describe(),
            label=chosen.label,
            key=chosen.key,
            containers=chosen.containers,
            process=chosen.process,
            bytes=chosen.bytes,
            why=why,
        )
    return None


def watch_matches(watch: GrowthWatch, reports: list[RuleReport], t: float) -> None:
    """Feed the watch this tick's size of everything the rules match."""
    watch.update(t, {m.key: m.bytes for report in reports for m in report.matches})
