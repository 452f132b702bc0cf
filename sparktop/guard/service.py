"""The guard's tick: forecast, warn, record, and — only where the policy says so — stop what is listed.

`Guard.on_snapshot` runs after the session has taken the snapshot in (a `SessionRunner` callback), so the
forecast sees the same history the dashboard would. What it does each tick:

1. the black box records the snapshot (sparktop/guard/blackbox.py);
2. the forecast (analysis/forecast.py) is compared with the last one: a nearer horizon, or a stall that
   started, is a new warning; going back to no warning is said once too;
3. with an armed policy (a trigger AND a stop list): when MemAvailable is under the floor, or PSI full has
   stayed at or above its level for the configured seconds, the first listed rule that matches something
   is acted on, on the match policy.py chooses (the one that grew most over `window_s`): containers
   through the engine, a host process by SIGTERM through a pidfd and, if it is still there
   `stop_timeout_s` later, SIGKILL through the same pidfd. `--dry-run` only says what it would stop. After
   an action nothing else is stopped until the cooldown has passed, the target has gone (so a second thing
   is never stopped before the first has freed its memory), and a grace period after that has let the
   release show in the readings; then only while the trigger holds afresh — the floor crossed on a reading
   after the grace, PSI held for its seconds counted from there (its avg10 falls slowly after a release) —
   as earlyoom and systemd-oomd re-check after a kill. A target that would not stop (a signal refused, a
   SIGKILL outlived, the engine's error) holds nothing off: it is never chosen again, and the next match is
   acted on at once while the trigger holds. A container recreated under the stopped one's name is a
   target like any other: the same waits apply to it. When the trigger holds and no rule matches anything,
   that is said loudly on every sink (kind `unmatched`), again every UNMATCHED_REPEAT_S while it lasts;
4. a small state file (guard.json in the state directory) says what the guard sees and did last, for the
   dashboard.
Every action goes to the action log with the readings that triggered it and why that target.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sparktop.analysis.forecast import Forecast, forecast
from sparktop.analysis.throttle import ThrottleWatch
from sparktop.collect.control import ContainerController, ControlError
from sparktop.collect.process_signals import KILL_WAIT_S, Ending, terminate_process
from sparktop.core.format import fmt_bytes
from sparktop.core.private_files import open_private_file
from sparktop.core.safe_text import error_line
from sparktop.core.snapshot import Snapshot
from sparktop.guard.alerts import Alert, Alerts
from sparktop.guard.blackbox import BlackBox
from sparktop.guard.matching import RuleReport, match_rules, unmatchable
from sparktop.guard.policy import GrowthWatch, Target, find_target, watch_matches
from sparktop.session.session import Session
from sparktop.settings.guard import GuardSettings
from sparktop.stopping.stop_log import ActionLog

STATE_FILE = "guard.json"
# After a stopped target has gone: the time its release takes to show in the readings. PSI's avg10 is a
# 10-second average, so its readings then are of the time after the release (systemd-oomd waits 15 s).
RELEASE_GRACE_S = 10.0
CONTAINER_GONE_WAIT_S = 60.0  # the most a stopped container may take to leave the readings
UNMATCHED_REPEAT_S = 60.0  # "the trigger holds and no rule matches" is said again this often while it lasts


@dataclass
class _Stopping:
    """One stop on its worker thread: how it ended, once it has."""

    target: Target
    worker: threading.Thread | None = None
    gone_at: float | None = None  # when the target was seen to exit (a host process's pidfd)
    failed: str | None = None  # why it would not stop


class Guard:
    def __init__(
        self,
        settings: GuardSettings,
        session: Session,
        alerts: Alerts,
        *,
        controller: ContainerController | None = None,
        action_log: ActionLog | None = None,
        blackbox: BlackBox | None = None,
        state_path: Path | None = None,
        dry_run: bool = False,
        clock: Callable[[], float] = time.time,
        terminator: Callable[..., Ending] = terminate_process,
    ) -> None:
        self.settings = settings
        self.session = session
        self.alerts = alerts
        self.controller = controller
        self.action_log = action_log
        self.blackbox = blackbox
        self.state_path = state_path
        self.dry_run = dry_run
        self.clock = clock
        self.terminator = terminator
        self.last_forecast: Forecast | None = None
        self.last_action: Alert | None = None
        self.actions: list[Alert] = []
        self._warned: float | None = None  # the horizon last warned about (0: stalling / exhausted)
        self._psi_since: float | None = None
        self._acted_at: float | None = None
        self._released_at: float | None = None  # when the target of the last action was first seen gone
        self.acted_on: Target | None = None
        self._stopping: _Stopping | None = None
        self.growth = GrowthWatch(settings.window_s)
        # keys of what would not stop (or, in a dry run, what the guard would have stopped): never again
        self._passed_over: set[str] = set()
        self._unmatched_said: float | None = None
        self.unmatched: str | None = None  # the rules that cannot match now, with why (last tick)
        self._blackbox_problem: str | None = None
        self._workers: list[threading.Thread] = []
        self._throttles = ThrottleWatch()
        self._restore_last_stop()

    def _restore_last_stop(self) -> None:
        """A guard restarted (by systemd, say) within the cooldown of its last stop waits it out as if it had
        run on: the stop is in the state file it wrote, and its target may be back already (recreated)."""
        state = _read_state(self.state_path) if self.state_path is not None else None
        last = state.get("last_action") if state else None
        if not isinstance(last, dict) or last.get("kind") != "action":
            return
        when, message = last.get("time"), last.get("message")
        if not isinstance(when, int | float) or not isinstance(message, str) or not when <= self.clock():
            return
        self.last_action = Alert("action", message, float(when))
        # its target cannot be told any more: counted as released when it was stopped
        self._acted_at = self._released_at = float(when)

    # -- the tick ------------------------------------------------------------------------------------------

    def on_snapshot(self, snapshot: Snapshot) -> list[Alert]:
        now = self.clock()
        sent: list[Alert] = []
        self._record(snapshot, sent, now)
        fc = forecast(
            self.session.history,
            snapshot.memory,
            horizons_s=self.settings.horizons_s,
            window_s=self.settings.window_s,
            reserve_bytes=self.settings.reserve_bytes,
            previous=self.last_forecast,  # a warning is held while the growth behind it goes on
            growers=self.session.creep,  # the dashboard's rate: what creeps, together
        )
        self.last_forecast = fc
        self._warn(fc, snapshot, sent, now)
        self._warn_throttle(snapshot, sent, now)
        if self.settings.armed:
            reports = match_rules(self.settings.stop, snapshot)
            watch_matches(self.growth, reports, snapshot.timestamp)
            self.unmatched = unmatchable(reports)
            present = {m.key for r in reports for m in r.matches}
            self._passed_over &= present  # a key gone for good never comes back
            self._enforce(snapshot, fc, sent, now, reports)
        for alert in sent:
            self.alerts.send(alert)
        self._write_state(now)
        return sent

    def _readings(self, snapshot: Snapshot, fc: Forecast) -> dict[str, float | int | str | None]:
        return {
            "mem_available_bytes": snapshot.memory.available,
            "mem_total_bytes": snapshot.memory.total,
            "psi_some_avg10": fc.psi_some_avg10,
            "psi_full_avg10": fc.psi_full_avg10,
            "eta_s": None if fc.eta_s is None else round(fc.eta_s, 1),
            "driver": fc.driver,
        }

    def _record(self, snapshot: Snapshot, sent: list[Alert], now: float) -> None:
        if self.blackbox is None:
            return
        self.blackbox.write(snapshot)
        problem = self.blackbox.problem
        if problem and problem != self._blackbox_problem:
            sent.append(Alert("problem", problem, now))
        self._blackbox_problem = problem

    def _warn(self, fc: Forecast, snapshot: Snapshot, sent: list[Alert], now: float) -> None:
        level = 0.0 if (fc.stalling or fc.eta_s == 0.0) else fc.warned_horizon
        if level is not None and (self._warned is None or level < self._warned):
            sent.append(Alert("warning", fc.message(), now, self._readings(snapshot, fc)))
        elif level is None and self._warned is not None:
            sent.append(Alert("clear", fc.message(), now, self._readings(snapshot, fc)))
        # The nearest horizon warned about since the last clear: an ETA that wavers about the 2 min horizon
        # (the slope moves as others allocate and free) is not a new warning each time it comes back under.
        self._warned = (
            None if level is None else min(level, self._warned if self._warned is not None else level)
        )

    def _warn_throttle(self, snapshot: Snapshot, sent: list[Alert], now: float) -> None:
        """A GPU held below its top clock under load for LASTING_S (power cap, heat): a warning, then a clear
        when it ends. Not a trigger: the guard never stops anything for it."""
        slowed, over = self._throttles.update(snapshot.gpu.gpus, snapshot.timestamp)
        readings: dict[str, float | int | str | None] = {}
        for gpu in snapshot.gpu.gpus:
            readings[f"gpu{gpu.index}_sm_clock_mhz"] = gpu.sm_clock_mhz
            readings[f"gpu{gpu.index}_clocks_event_reasons"] = gpu.clocks_event_reasons
        sent.extend(Alert("warning", message, now, readings) for message in slowed)
        sent.extend(Alert("clear", message, now, readings) for message in over)

    # -- the policy ----------------------------------------------------------------------------------------

    def _trigger(self, snapshot: Snapshot, fc: Forecast, now: float) -> str | None:
        floor = self.settings.floor_bytes
        if floor is not None and snapshot.memory.available < floor:
            # The floor as configured (floor_gb = 10 is "10 GB"), and its size in MemAvailable's unit.
            configured = f"{self.settings.floor_gb:g} GB ({fmt_bytes(floor)})"
            return f"MemAvailable {fmt_bytes(snapshot.memory.available)} < floor {configured}"
        level = self.settings.psi_full_level
        if level is not None and fc.psi_full_avg10 is not None and fc.psi_full_avg10 >= level:
            if self._psi_since is None:
                self._psi_since = now
            held = now - self._psi_since
            if held >= self.settings.psi_full_seconds:
                return f"PSI full avg10 {fc.psi_full_avg10:.0f} % ≥ {level:g} % for {held:.0f} s"
        else:
            self._psi_since = None
        return None

    def _holding_off(self, snapshot: Snapshot, now: float) -> bool:
        """True while the last action's effect cannot be judged yet: while it is being stopped (SIGTERM, its
        grace, SIGKILL), within the cooldown, while its target is still there (its memory not free yet; at
        most the time a stop can take), and for the grace after it went. A target that would not stop holds
        nothing off: nothing was freed."""
        if self._acted_at is None:
            return False
        stopping = self._stopping
        if stopping is not None and stopping.worker is not None and stopping.worker.is_alive():
            return True
        if stopping is not None and stopping.failed is not None:
            self._passed_over.add(stopping.target.key)
            self._acted_at = self._released_at = self._stopping = None
            return False
        since = now - self._acted_at
        if self._released_at is None and self.acted_on is not None:
            if stopping is not None and stopping.gone_at is not None:
                self._released_at = stopping.gone_at
            else:
                # A dry run's target stays: it counts as gone after the longest a real stop may take (the
                # grace after SIGTERM, then SIGKILL). A container the engine has stopped leaves the readings
                # within a discovery refresh or two; one still shown after CONTAINER_GONE_WAIT_S holds
                # nothing off any longer. Either is not chosen again.
                wait = self.settings.stop_timeout_s + KILL_WAIT_S if self.dry_run else CONTAINER_GONE_WAIT_S
                if _still_present(self.acted_on, snapshot):
                    if since < wait:
                        return True
                    self._passed_over.add(self.acted_on.key)
                self._released_at = now
        released = self._released_at if self._released_at is not None else self._acted_at
        return since < self.settings.cooldown_s or now - released < RELEASE_GRACE_S

    def _enforce(
        self, snapshot: Snapshot, fc: Forecast, sent: list[Alert], now: float, reports: list[RuleReport]
    ) -> None:
        if self._holding_off(snapshot, now):
            self._psi_since = None  # the trigger must hold afresh after the grace: PSI's seconds start then
            return
        why = self._trigger(snapshot, fc, now)
        if why is None:
            self._unmatched_said = None
            return
        target = find_target(
            self.settings.stop, snapshot, skip=self._passed_over, watch=self.growth, reports=reports
        )
        if target is None:
            self._say_unmatched(snapshot, fc, why, reports, sent, now)
            return
        self._unmatched_said = None
        readings = self._readings(snapshot, fc) | {
            "target": target.label,
            "rule": target.rule,
            "chosen_because": target.why,
        }
        self._acted_at, self._released_at, self.acted_on = now, None, target
        self._stopping = _Stopping(target)
        if self.dry_run:
            alert = Alert(
                "dry-run", f"would stop {target.label} ({target.rule}): {why}; {target.why}", now, readings
            )
            self._log("guard dry-run stop", target, f"not stopped (dry run): {why}; chosen: {target.why}")
        else:
            alert = Alert(
                "action", f"stopping {target.label} ({target.rule}): {why}; {target.why}", now, readings
            )
            worker = threading.Thread(
                target=self._stop,
                args=(self._stopping, why, snapshot.source),
                daemon=True,
                name="sparktop-guard-stop",
            )
            self._stopping.worker = worker
            worker.start()
            self._workers.append(worker)
        self.last_action = alert
        self.actions.append(alert)
        sent.append(alert)

    def _say_unmatched(
        self,
        snapshot: Snapshot,
        fc: Forecast,
        why: str,
        reports: list[RuleReport],
        sent: list[Alert],
        now: float,
    ) -> None:
        """The trigger holds and no rule matches anything the guard may still stop: loudly, on every sink,
        once and again every UNMATCHED_REPEAT_S while it lasts — a policy that silently protects nothing is
        worse than none."""
        if self._unmatched_said is not None and now - self._unmatched_said < UNMATCHED_REPEAT_S:
            return
        self._unmatched_said = now
        lines = [f"{r.rule.describe()}: {r.why_not}" for r in reports if not r.matches]
        if self._passed_over:
            lines.append(f"{len(self._passed_over)} match(es) passed over: they would not stop")
        message = f"{why}, and no stop rule matches anything to stop: {'; '.join(lines)}"
        readings = self._readings(snapshot, fc) | {
            "rules": ", ".join(r.describe() for r in self.settings.stop)
        }
        sent.append(Alert("unmatched", message, now, readings))

    def _stop(self, stopping: _Stopping, why: str, source: str = "live") -> None:
        target = stopping.target
        chosen = f"{why}; chosen: {target.why}" if target.why else why
        try:
            if target.process is not None:
                if source != "live" or target.process.start_ticks is None:
                    # A demo's or a recording's PID names no process here, and one without its start tick
                    # cannot be confirmed: a signal would reach whatever holds that PID on this machine.
                    raise ControlError(f"a {source} process, not one confirmed on this machine: nothing sent")
                ending = self.terminator(
                    target.process.pid, target.process.start_ticks, self.settings.stop_timeout_s
                )
                action = "guard SIGKILL" if ending.killed else "guard SIGTERM"
                result = f"{ending.how}: {chosen}"
                if ending.gone:
                    stopping.gone_at = self.clock()
                else:
                    stopping.failed = ending.how
                    self.alerts.send(
                        Alert("problem", f"could not stop {target.label}: {ending.how}", self.clock())
                    )
            else:
                if self.controller is None:
                    raise ControlError("no container engine to stop it with")
                for container in target.containers:
                    self.controller.stop(container.id, timeout=self.settings.stop_timeout_s)
                result = f"stopped: {chosen}"
                action = "guard stop"
        except ControlError as exc:
            if target.process is not None and "already gone" in str(exc):
                stopping.gone_at = self.clock()
                action, result = "guard SIGTERM", f"gone before the signal: {chosen}"
            else:
                stopping.failed = str(exc)
                action, result = "guard stop", f"failed: {exc}: {chosen}"
                self.alerts.send(Alert("problem", f"could not stop {target.label}: {exc}", self.clock()))
        except Exception as exc:  # an engine that answers nonsense must not kill the guard
            stopping.failed = error_line(exc)
            action, result = "guard stop", f"failed: {error_line(exc)}: {chosen}"
            self.alerts.send(Alert("problem", f"could not stop {target.label}: {exc}", self.clock()))
        self._log(action, target, result)

    def _log(self, action: str, target: Target, result: str) -> None:
        if self.action_log is None:
            return
        problem = self.action_log.append(action, f"{target.label} [{target.rule}]", result)
        if problem:
            self.alerts.send(Alert("problem", problem, self.clock()))

    def wait_for_actions(self, timeout: float = 30.0) -> None:
        for worker in self._workers:
            worker.join(timeout)

    # -- what the dashboard reads --------------------------------------------------------------------------

    def state(self, now: float) -> dict[str, object]:
        fc = self.last_forecast
        last = self.last_action
        return {
            "pid": os.getpid(),
            "updated": now,
            "dry_run": self.dry_run,
            "policy": self.settings.describe_policy(),
            "armed": self.settings.armed,
            "cannot_match": self.unmatched,
            "warning": bool(fc and (fc.warning or fc.stalling)),
            "forecast": fc.message() if fc else None,
            "last_action": None
            if last is None
            else {"kind": last.kind, "message": last.message, "time": last.time},
            "blackbox": None
            if self.blackbox is None
            else str(self.blackbox.current or self.blackbox.directory),
            "blackbox_problem": self._blackbox_problem,
        }

    def _write_state(self, now: float) -> None:
        if self.state_path is None:
            return
        tmp = self.state_path.with_name(f".{self.state_path.name}.{os.getpid()}")
        try:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()  # one left by a crash: the new one is made with O_EXCL
            with open_private_file(tmp, "new") as fh:
                json.dump(self.state(now), fh)
            os.replace(tmp, self.state_path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()

    def close(self) -> None:
        self.wait_for_actions(timeout=self.settings.stop_timeout_s + 5)
        if self.blackbox is not None:
            self.blackbox.close()
        self.alerts.flush()


STATE_MAX_BYTES = 64 * 1024  # the guard writes a few hundred bytes


def _read_state(path: Path) -> dict[str, object] | None:
    """The state file a previous guard wrote; None: none, a link, not a regular file, too big, not JSON."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, STATE_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > STATE_MAX_BYTES:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _still_present(target: Target, snapshot: Snapshot) -> bool:
    if target.process is not None:
        return any(
            p.pid == target.process.pid and p.start_ticks == target.process.start_ticks
            for p in snapshot.processes
        )
    ids = {c.id for c in target.containers}
    return any(c.id in ids for c in snapshot.containers)
