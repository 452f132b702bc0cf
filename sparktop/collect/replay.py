"""Recording snapshots to JSONL and playing them back.

A recording is one `Snapshot.model_dump_json()` per line. `Recorder` appends and flushes (and by default
fsyncs) every line, because the reason to record on a Spark is often the freeze that follows memory
exhaustion and needs a power cycle: what was written before it must be on disk. So a crash costs at most the
line being written, and the reader skips such a line with a warning instead of refusing the file.

Playback choices (`ReplaySource`):
- one snapshot per `sample()`, whatever the timestamps: the viewer's refresh sets the pace;
- a line that is not a snapshot (cut off by a crash, garbage, another format) is skipped; the problem is
  reported with its line number in the next snapshot's `errors` and kept in `warnings`;
- at the end `sample()` keeps returning the last snapshot (so a dashboard can sit on it) and `finished` is
  True from the moment the last snapshot has been handed out;
- a file without a single valid snapshot is refused when opened: `EmptyRecording`, which is both a
  `SourceExhausted` and a `ValueError`;
- the file is read lazily, one line ahead, so an hours-long recording opens at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Literal

from pydantic import ValidationError

from sparktop.collect.source import SnapshotSource, SourceExhausted
from sparktop.model import SNAPSHOT_VERSION, Snapshot

RecordMode = Literal["new", "append", "overwrite"]


class EmptyRecording(SourceExhausted, ValueError):
    """The file holds no valid snapshot at all."""


def _why_not(exc: ValueError) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)
    first = exc.errors()[0]
    if first["type"] == "json_invalid":
        return f"invalid JSON: {first.get('ctx', {}).get('error', first['msg'])}"
    where = ".".join(str(p) for p in first["loc"]) or "snapshot"
    more = f" and {exc.error_count() - 1} more" if exc.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


class ReplaySource:
    """Plays a JSONL recording back, one snapshot per `sample()`. See the module docstring."""

    name = "replay"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []
        self._pending: list[str] = []  # problems after the last snapshot, not yet shown
        self._lineno = 0  # lines read so far
        self._next_lineno = 0  # line of the snapshot read ahead
        self._last_lineno = 0  # line of the snapshot handed out last
        self._newer_seen = False
        self._file: IO[str] | None = self.path.open(encoding="utf-8", errors="replace")
        self._last: Snapshot | None = None
        self._next = self._read_next()
        if self._next is None:
            self.close()
            detail = f"{self._lineno} lines, none valid" if self._lineno else "the file is empty"
            problems = f": {self.warnings[0]}" if self.warnings else ""
            raise EmptyRecording(f"no snapshot in this recording ({detail}){problems}")

    @property
    def finished(self) -> bool:
        """True once the last snapshot in the file has been returned by `sample()`."""
        return self._next is None and self._last is not None

    @property
    def position(self) -> int:
        """Line number of the snapshot returned last (1-based; 0 before the first sample)."""
        return self._last_lineno

    def sample(self) -> Snapshot:
        if self._next is not None:
            self._last, self._last_lineno = self._next, self._next_lineno
            self._next = self._read_next()
            return self._last
        assert self._last is not None  # the constructor refuses a file without a snapshot
        if self._pending:  # bad lines at the very end: shown once on the snapshot the viewer sits on
            errors = [*self._last.errors, *self._pending]
            self._pending = []
            return self._last.model_copy(update={"errors": errors})
        return self._last

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _read_next(self) -> Snapshot | None:
        """The next valid snapshot, carrying the problems of the bad lines skipped on the way to it in its
        `errors`; None at the end of the file (problems met on the way wait in `_pending`)."""
        skipped: list[str] = []
        while self._file is not None:
            line = self._file.readline()
            if not line:
                self.close()
                break
            self._lineno += 1
            if not line.strip():
                continue
            try:
                snapshot = Snapshot.model_validate_json(line)
            except ValueError as exc:  # pydantic's ValidationError included
                if line.endswith("\n"):
                    why = _why_not(exc)
                else:
                    why = "cut off: the recording was interrupted in the middle of this line"
                skipped.append(f"{self.path.name} line {self._lineno}: not a snapshot ({why})")
                continue
            if snapshot.version > SNAPSHOT_VERSION and not self._newer_seen:
                self._newer_seen = True
                skipped.append(
                    f"{self.path.name} line {self._lineno}: recorded by a newer sparktop (snapshot version "
                    f"{snapshot.version}, this one reads {SNAPSHOT_VERSION}); unknown fields are ignored"
                )
            self.warnings.extend(skipped)
            self._next_lineno = self._lineno
            update: dict[str, object] = {"source": "replay"}
            if skipped:
                update["errors"] = [*snapshot.errors, *skipped]
            return snapshot.model_copy(update=update)
        self.warnings.extend(skipped)
        self._pending.extend(skipped)
        return None

    def __enter__(self) -> ReplaySource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Recorder:
    """Appends snapshots to a JSONL file, one flushed line each.

    mode "new" refuses a file that exists and is not empty (FileExistsError), "append" adds to it,
    "overwrite" replaces it. `fsync` (default on) forces every line to disk, so even a machine freeze that
    ends in a power cycle keeps the recording up to the last tick.
    """

    def __init__(self, path: str | os.PathLike[str], mode: RecordMode = "new", fsync: bool = True) -> None:
        if mode not in ("new", "append", "overwrite"):
            raise ValueError(f"mode must be 'new', 'append' or 'overwrite', not {mode!r}")
        self.path = Path(path)
        self.fsync = fsync
        self.count = 0
        size = self.path.stat().st_size if self.path.exists() else 0
        if mode == "new" and size > 0:
            raise FileExistsError(
                f"{self.path} already exists ({size:,} bytes); "
                "choose another name, append to it (--append) or replace it (--overwrite)"
            )
        needs_newline = mode == "append" and size > 0 and not self._ends_with_newline()
        # A recording holds the command line of every process on the machine: a new file is the user's only.
        flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_TRUNC if mode == "overwrite" else os.O_APPEND)
        self._file: IO[str] | None = os.fdopen(os.open(self.path, flags, 0o600), "w", encoding="utf-8")
        if needs_newline:  # the last recording was cut off mid-line: do not glue the next one onto it
            self._file.write("\n")

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    def write(self, snapshot: Snapshot) -> None:
        if self._file is None:
            raise ValueError(f"{self.path}: the recorder is closed")
        self._file.write(snapshot.model_dump_json() + "\n")
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())
        self.count += 1

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def record(
    source: SnapshotSource,
    path: str | os.PathLike[str],
    interval: float = 1.0,
    duration: float | None = None,
    mode: RecordMode = "new",
    on_tick: Callable[[Snapshot], None] | None = None,
    *,
    fsync: bool = True,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Sample `source` every `interval` seconds into `path` until `duration` has passed (None: until Ctrl-C,
    or until a replayed recording ends). Returns the number of snapshots written. Ctrl-C stops it cleanly:
    every line written so far is complete and on disk. `clock` and `sleep` are for tests."""
    if interval <= 0:
        raise ValueError("interval must be greater than 0")
    with Recorder(path, mode=mode, fsync=fsync) as recorder:
        start = clock()
        tick = 0
        try:
            while duration is None or tick * interval < duration:
                snapshot = source.sample()
                recorder.write(snapshot)
                if on_tick is not None:
                    on_tick(snapshot)
                if getattr(source, "finished", False):
                    break
                tick += 1
                if duration is not None and tick * interval >= duration:
                    break
                # sleep to the next tick on the schedule, so slow samples do not make the recording drift
                delay = start + tick * interval - clock()
                if delay > 0:
                    sleep(delay)
        except KeyboardInterrupt:
            pass
        return recorder.count
