"""An add-on collector that tells the dashboard what a `sparktop guard` on this machine sees and did last.

The guard writes a small JSON state file (`guard.json` in sparktop's state directory) every tick; this
collector reads it on a background `Poller` (never in the tick) and reports one `ServiceReport` with a
one-line `summary`: armed or not, the forecast when it warns, and its last action. No file: no report (no
guard runs here). A file not updated for `STALE_S`: the guard has stopped, and the report says since when.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from sparktop.collect.add_on import Poller
from sparktop.core.snapshot import ServiceReport, Snapshot

STATE_FILE = "guard.json"
PERIOD_S = 2.0
STALE_S = 15.0
MAX_BYTES = 64 * 1024  # the guard writes a few hundred bytes; anything bigger is not its file


def default_state_path() -> Path:
    from sparktop.settings.files import state_dir

    return state_dir() / STATE_FILE


def _read(path: Path) -> dict[str, Any] | None:
    from sparktop.settings.files import read_bytes

    if not path.exists():
        return None
    # The bounded reader of every user file: a FIFO or device planted here must not hang the poller.
    raw = read_bytes(path, MAX_BYTES)
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a guard state file")
    return data


def summarize(state: dict[str, Any], now: float) -> str:
    """`guard armed · ▲ pool exhausted in ~6 min … · last: stopping ollama … (12:01)`."""
    parts = [
        "guard "
        + ("armed" if state.get("armed") else "watching")
        + (" (dry run)" if state.get("dry_run") else "")
    ]
    if state.get("armed") and state.get("cannot_match"):
        parts.append(f"cannot match now: {state['cannot_match']}")
    if state.get("warning") and state.get("forecast"):
        parts.append(f"▲ {state['forecast']}")
    last = state.get("last_action")
    if isinstance(last, dict) and last.get("message"):
        when = time.strftime("%H:%M", time.localtime(float(last.get("time") or now)))
        parts.append(f"last: {last['message']} ({when})")
    if state.get("blackbox_problem"):
        parts.append(str(state["blackbox_problem"]))
    return " · ".join(parts)


class GuardStateCollector:
    name = "guard"

    def __init__(self, path: Path | None = None, clock=time.time) -> None:
        self.path = path or default_state_path()
        self.clock = clock
        self._poller: Poller[dict[str, Any] | None] = Poller(
            lambda: _read(self.path), PERIOD_S, name="sparktop-guard-state"
        )

    def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
        state, error = self._poller.latest()
        if error is not None:
            return [
                ServiceReport(collector=self.name, endpoint=str(self.path), error=f"guard state: {error}")
            ]
        if state is None:
            return []
        now = self.clock()
        updated = float(state.get("updated") or 0)
        if now - updated > STALE_S:
            stopped = time.strftime("%H:%M", time.localtime(updated)) if updated else "?"
            return [
                ServiceReport(
                    collector=self.name, endpoint=str(self.path), summary=f"guard not running since {stopped}"
                )
            ]
        return [ServiceReport(collector=self.name, endpoint=str(self.path), summary=summarize(state, now))]

    def wait_first(self, timeout: float) -> bool:
        """Block until the state file has been read once (tests, one-shot commands)."""
        return self._poller.wait_first(timeout)

    def close(self) -> None:
        self._poller.close()
