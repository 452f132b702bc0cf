"""How close the pool is to the cliff, judged the way the Linux OOM-prevention daemons judge it.

An OOM on a Spark often freezes the whole box instead of killing a process, so sparktop warns at the points
where the well-known daemons would act (reference/gb10-telemetry.md, "OOM-prevention anchors"):

- nohang warns at MemAvailable < 20 % or PSI `some` avg10 > 10          -> WARN
- earlyoom sends SIGTERM at MemAvailable < 10 % (SIGKILL at 5 %)          -> CRITICAL below 10 %
- systemd-oomd kills a cgroup at PSI `full` avg10 >= 60 % for 30 s        -> CRITICAL at once at 60 %
- systemd-oomd's swap rule: swap >= 90 % used                              -> WARN

and one rule of our own: PSI `full` avg10 >= 10 % held for 10 s is CRITICAL (any shorter: WARN). `full` means
every runnable task was stalled on memory at once; on a machine without a working OOM kill, waiting for
oomd's 60 % / 30 s (which assumes the kernel recovers on its own meanwhile) has been waiting too long: the
reported freezes came with MemAvailable still above 10 %. avg10 is already a 10 s average, so 10 s sustained
means roughly 20 s of real stalling, long enough to ignore a single burst of reclaim.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from sparktop.core.format import fmt_available_pct
from sparktop.core.snapshot import HostMemory

EARLYOOM_KILL_PCT = 5.0
OOMD_FULL_AVG10 = 60.0
OOMD_SWAP_USED_PCT = 90.0


class PressureLevel(StrEnum):
    OK = "ok"
    WARN = "warn"
    CRITICAL = "critical"


@dataclass
class PressureAssessment:
    level: PressureLevel
    reasons: list[str]  # one readable sentence each, the most serious first
    available_pct: float
    some_avg10: float | None
    full_avg10: float | None
    full_sustained_s: float = 0.0  # how long `full` avg10 has been at or above the tracker's level
    psi_available: bool = field(default=True)


class PressureTracker:
    """Feed it `HostMemory` every tick; it remembers how long `full` pressure has lasted."""

    def __init__(
        self,
        warn_available_pct: float = 20.0,
        critical_available_pct: float = 10.0,
        warn_some_avg10: float = 10.0,
        critical_full_avg10: float = 10.0,
        sustained_s: float = 10.0,
    ) -> None:
        self.warn_available_pct = warn_available_pct
        self.critical_available_pct = critical_available_pct
        self.warn_some_avg10 = warn_some_avg10
        self.critical_full_avg10 = critical_full_avg10
        self.sustained_s = sustained_s
        self._full_since: float | None = None
        self._last_now: float | None = None

    def update(self, memory: HostMemory, now: float) -> PressureAssessment:
        if self._last_now is not None and now < self._last_now:
            self._full_since = None  # the clock went back (a replay restarted): start over
        self._last_now = now

        critical: list[str] = []
        warn: list[str] = []
        notes: list[str] = []

        available_pct = 100.0
        if memory.total <= 0:
            notes.append("MemTotal unreadable: MemAvailable not judged")
        else:
            available_pct = 100.0 * max(0, memory.available) / memory.total
            text = f"MemAvailable {fmt_available_pct(available_pct)}"
            if available_pct < self.critical_available_pct:
                kill = ""
                if available_pct < EARLYOOM_KILL_PCT:
                    kill = f", at < {EARLYOOM_KILL_PCT:g} % with SIGKILL"
                critical.append(
                    f"{text} (< {self.critical_available_pct:g} %: earlyoom would start killing{kill})"
                )
            elif available_pct < self.warn_available_pct:
                warn.append(f"{text} (< {self.warn_available_pct:g} %: nohang would warn)")

        pressure = memory.pressure
        some = pressure.some.avg10 if pressure and pressure.some else None
        full = pressure.full.avg10 if pressure and pressure.full else None
        psi_available = some is not None or full is not None
        if not psi_available:
            notes.append("PSI unavailable (no /proc/pressure/memory): judged on MemAvailable alone")
        elif full is None:
            notes.append("PSI has no 'full' line on this kernel: judged on 'some' and MemAvailable")

        if some is not None and some > self.warn_some_avg10:
            warn.append(f"PSI some avg10 {some:.1f} % (> {self.warn_some_avg10:g} %: nohang would warn)")

        sustained = 0.0
        if full is not None and full >= self.critical_full_avg10:
            if self._full_since is None:
                self._full_since = now
            sustained = now - self._full_since
            if full >= OOMD_FULL_AVG10:
                critical.append(
                    f"PSI full avg10 {full:.1f} % (>= {OOMD_FULL_AVG10:g} %: systemd-oomd kills after 30 s)"
                )
            elif sustained >= self.sustained_s:
                critical.append(
                    f"PSI full avg10 {full:.1f} % for {sustained:.0f} s (>= {self.critical_full_avg10:g} % "
                    f"for {self.sustained_s:g} s: every task stalls on memory)"
                )
            else:
                warn.append(
                    f"PSI full avg10 {full:.1f} % (>= {self.critical_full_avg10:g} %: critical if it lasts "
                    f"{self.sustained_s:g} s)"
                )
        else:
            self._full_since = None

        if memory.swap_total > 0:
            swap_used_pct = 100.0 * (memory.swap_total - memory.swap_free) / memory.swap_total
            if swap_used_pct >= OOMD_SWAP_USED_PCT:
                warn.append(
                    f"swap {swap_used_pct:.0f} % used "
                    f"(>= {OOMD_SWAP_USED_PCT:g} %: systemd-oomd's swap limit)"
                )

        if critical:
            level = PressureLevel.CRITICAL
        elif warn:
            level = PressureLevel.WARN
        else:
            level = PressureLevel.OK
        return PressureAssessment(
            level=level,
            reasons=critical + warn + notes,
            available_pct=available_pct,
            some_avg10=some,
            full_avg10=full,
            full_sustained_s=sustained,
            psi_available=psi_available,
        )
