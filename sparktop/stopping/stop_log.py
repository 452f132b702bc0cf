"""Every stop or signal the user confirmed, appended to a log under the XDG state dir.

The log holds the command lines of the processes the admin stopped, and sparktop often runs as root: it is
created 0600 in a 0700 directory, opened without following a symlink (another user could otherwise point
root's writes at any file), and refused if it belongs to someone else (sparktop/core/private_files.py, the one
way sparktop creates its files).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sparktop.core.private_files import UnsafeFileError, open_private
from sparktop.core.safe_text import visible
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
        # One line per action, and nothing in it that steers the terminal of whoever reads it with cat.
        line = "\t".join(visible(" ".join(f.split())) for f in fields) + "\n"
        try:
            fd = open_private(self.path, "append")
        except UnsafeFileError as exc:
            return f"could not write the action log {self.path}: {exc.why}"
        except OSError as exc:
            return f"could not write the action log {self.path}: {exc.strerror or exc}"
        try:
            os.write(fd, line.encode("utf-8"))
        except OSError as exc:
            return f"could not write the action log {self.path}: {exc.strerror or exc}"
        finally:
            os.close(fd)
        return None
