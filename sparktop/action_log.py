"""Every stop or signal the user confirmed, appended to a log under the XDG state dir."""

from __future__ import annotations

import time
from pathlib import Path

from sparktop.settings.files import state_dir


def default_log_path() -> Path:
    return state_dir() / "actions.log"


class ActionLog:
    """Tab-separated lines: local time (ISO 8601), action, target, result. Append-only; never rewritten."""

    def __init__(self, path: Path | None = None, clock=time.time) -> None:
        self.path = path or default_log_path()
        self._clock = clock

    def append(self, action: str, target: str, result: str) -> str | None:
        """Write one line; returns None, or one readable line saying why it could not be written (the
        action itself already happened, so a log failure must not hide it)."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self._clock()))
        fields = [stamp, action, target, result]
        line = "\t".join(" ".join(f.split()) for f in fields) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line)
        except OSError as exc:
            return f"could not write the action log {self.path}: {exc.strerror or exc}"
        return None
