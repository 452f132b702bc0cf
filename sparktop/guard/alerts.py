"""Where the guard's warnings and actions go: its own output, the system journal, a command, a webhook.

Every sink is best-effort and never blocks the guard's tick for long: the journal is a datagram to
/dev/log, the command and the webhook run on a thread of their own with a timeout. A sink that fails says
so once (one line on stderr) and the others keep going.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TextIO

from sparktop.core.http_client import MIB, HttpError, request
from sparktop.core.safe_text import visible

HOOK_TIMEOUT_S = 30.0
# Said on stderr too (not only the guard's output) and at the journal's error level: an armed policy that
# matches nothing to stop while its trigger holds protects nothing, and whoever set it must hear of it.
LOUD = frozenset({"unmatched"})
WEBHOOK_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Alert:
    kind: str  # "warning", "clear", "action", "dry-run", "problem", "unmatched" (LOUD)
    message: str
    time: float
    readings: dict[str, float | int | str | None] = field(default_factory=dict)

    def line(self, stamped: bool = False) -> str:
        """Its line; `stamped` starts it with the alert's local date and time (a terminal adds none, where
        the journal does)."""
        return stamp(visible(f"sparktop guard: {self.kind}: {self.message}"), self.time if stamped else None)


def stamp(line: str, when: float | None) -> str:
    """`line` after `2026-11-27 16:40:03 ` (local time) when `when` is given, else as it is."""
    if when is None:
        return line
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(when))} {line}"


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # closed, or not a real stream
        return False


class Alerts:
    """Fans one alert out to every configured sink. `errors` collects one line per failing sink."""

    def __init__(
        self,
        command: str | None = None,
        webhook: str | None = None,
        journal: bool = True,
        out: TextIO | None = None,
        journal_address: str = "/dev/log",
    ) -> None:
        self.command = shlex.split(command) if command else None
        self.webhook = webhook
        self.out = out if out is not None else sys.stdout
        self.errors: list[str] = []
        self._said: set[str] = set()
        self._threads: list[threading.Thread] = []
        self.journal = self._journal(journal_address) if journal else None

    def _journal(self, address: str) -> logging.Logger | None:
        if not os.path.exists(address):
            self._problem(f"no system journal at {address}: warnings go to this output only")
            return None
        try:
            handler = logging.handlers.SysLogHandler(address=address)
        except OSError as exc:
            self._problem(f"cannot reach the system journal at {address}: {exc.strerror or exc}")
            return None
        handler.ident = "sparktop-guard: "
        logger = logging.getLogger(f"sparktop.guard.journal.{id(self)}")
        logger.propagate = False
        logger.handlers[:] = [handler]
        logger.setLevel(logging.INFO)
        return logger

    def _problem(self, line: str) -> None:
        if line in self._said:
            return
        self._said.add(line)
        self.errors.append(line)
        when = time.time() if is_terminal(sys.stderr) else None
        print(stamp(visible(f"sparktop guard: {line}"), when), file=sys.stderr, flush=True)

    def send(self, alert: Alert) -> None:
        # Under systemd the journal times each line; in a terminal nothing would.
        print(alert.line(stamped=is_terminal(self.out)), file=self.out, flush=True)
        if alert.kind in LOUD and self.out is not sys.stderr:
            print(alert.line(stamped=is_terminal(sys.stderr)), file=sys.stderr, flush=True)
        if self.journal is not None:
            level = logging.WARNING if alert.kind in ("warning", "action", "problem") else logging.INFO
            level = logging.ERROR if alert.kind in LOUD else level
            try:
                self.journal.log(level, "%s: %s", alert.kind, visible(alert.message))
            except Exception as exc:  # logging reports its own errors; keep ours to one line
                self._problem(f"system journal: {exc}")
        if self.command:
            self._background(self._run_command, alert)
        if self.webhook:
            self._background(self._post, alert)

    def _background(self, work: Callable[[Alert], None], alert: Alert) -> None:
        thread = threading.Thread(target=work, args=(alert,), daemon=True, name="sparktop-guard-hook")
        thread.start()
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]

    def _run_command(self, alert: Alert) -> None:
        assert self.command is not None
        env = dict(os.environ)
        env.update(
            {
                "SPARKTOP_KIND": alert.kind,
                "SPARKTOP_MESSAGE": visible(alert.message),
                **{f"SPARKTOP_{k.upper()}": "" if v is None else str(v) for k, v in alert.readings.items()},
            }
        )
        try:
            done = subprocess.run(
                self.command, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=HOOK_TIMEOUT_S
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            self._problem(f"hook command {self.command[0]}: {getattr(exc, 'strerror', None) or exc}")
            return
        if done.returncode != 0:
            self._problem(f"hook command {self.command[0]} exited {done.returncode}")

    def _post(self, alert: Alert) -> None:
        assert self.webhook is not None
        body = json.dumps({"source": "sparktop-guard", **asdict(alert)}).encode()
        try:
            request(
                self.webhook,
                method="POST",
                body=body,
                headers={"Content-Type": "application/json"},
                timeout=WEBHOOK_TIMEOUT_S,
                max_body=MIB,  # what the hook answers is not read; a page of it is fine
            ).ok_body()
        except HttpError as exc:  # refused, timed out, a 4xx/5xx or a redirect (not followed): one line
            self._problem(f"webhook {self.webhook}: {exc}")

    def flush(self, timeout: float = 10.0) -> None:
        """Wait for hooks in flight (tests, and a clean exit)."""
        for thread in self._threads:
            thread.join(timeout)
