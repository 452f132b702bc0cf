"""The black box: a bounded, rotating recording of the last hours, kept on disk through a freeze.

An exhausted pool on a Spark often ends in a power cycle, and then nothing tells what happened. The black
box records one snapshot per tick in the format `record` writes (JSONL, gzip-compressed: a `.jsonl.gz` file
replays with `sparktop --replay FILE`), so after the reboot the minutes before the hang can be played back.

- **Segments**: `blackbox-YYYYmmddTHHMMSS.jsonl.gz`, named by the time they were started. A new segment is
  started at every start (a segment that ended in a crash is never appended to, so it stays the record of
  that crash) and when the current one reaches `segment_bytes`.
- **Bounds**: the oldest segments are deleted while all of them together exceed `max_bytes` or are older
  than `max_age_s`; the current segment is never deleted.
- **Durability**: each line is flushed with a gzip sync point (a reader sees every complete line) and the
  file is fsync'd at most every `fsync_every_s`, so a power cut loses at most those last seconds; a kill
  loses nothing already flushed.
- **Failures** (a full disk, a read-only or missing directory, no permission): never raised. The problem is
  kept as one line in `problem` (the guard shows and logs it) and writing is retried every `retry_s`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from sparktop.core.private_files import private_dir
from sparktop.core.snapshot import Snapshot
from sparktop.sources.recording import Recorder

PREFIX = "blackbox-"
SUFFIX = ".jsonl.gz"
DEFAULT_MAX_BYTES = 256 * 1024**2
DEFAULT_MAX_AGE_S = 24 * 3600.0
DEFAULT_FSYNC_EVERY_S = 3.0
RETRY_S = 30.0


def segments(directory: Path) -> list[Path]:
    """The black box's segments in `directory`, oldest first."""
    try:
        return sorted(p for p in directory.glob(f"{PREFIX}*{SUFFIX}") if p.is_file() and not p.is_symlink())
    except OSError:
        return []


def latest_segment(directory: Path) -> Path | None:
    found = segments(directory)
    return found[-1] if found else None


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


class BlackBox:
    """See the module docstring. `write(snapshot)` once per tick; `close()` at the end."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        fsync_every_s: float = DEFAULT_FSYNC_EVERY_S,
        segment_bytes: int | None = None,
        clock: Callable[[], float] = time.time,
        retry_s: float = RETRY_S,
    ) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be greater than 0 (got {max_bytes})")
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self.fsync_every_s = max(0.0, fsync_every_s)
        # Four segments fill the bound: at most a quarter of it is lost to a rotation.
        self.segment_bytes = min(max_bytes, segment_bytes or max(64 * 1024, max_bytes // 4))
        self.clock = clock
        self.retry_s = retry_s
        self.problem: str | None = None
        self.written = 0
        self.current: Path | None = None
        self._recorder: Recorder | None = None
        self._last_sync = 0.0
        self._failed_at: float | None = None

    # -- writing -------------------------------------------------------------------------------------------

    def write(self, snapshot: Snapshot) -> bool:
        """Append one snapshot; False when it could not be written (see `problem`)."""
        now = self.clock()
        if self._failed_at is not None and now - self._failed_at < self.retry_s:
            return False
        try:
            if self._recorder is None:
                self._open(now)
            assert self._recorder is not None and self.current is not None
            self._recorder.write(snapshot)
            if now - self._last_sync >= self.fsync_every_s:
                self._recorder.sync()
                self._last_sync = now
            self.written += 1
            self.problem = None
            self._failed_at = None
            if self.current.stat().st_size >= self.segment_bytes:
                self._close_segment()
                self._prune()
            return True
        except OSError as exc:
            self.problem = f"black box: cannot write in {self.directory}: {_why(exc)}"
            self._failed_at = now
            self._close_segment(quiet=True)
            return False

    def _open(self, now: float) -> None:
        private_dir(self.directory)  # 0700, this user's: nobody else can plant a segment's name in it
        stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(now))
        path = self.directory / f"{PREFIX}{stamp}{SUFFIX}"
        n = 1
        # Two starts within a second: never append to a segment that may hold a crash. `lexists`: a name
        # taken by a symlink is skipped too (and the Recorder creates with O_EXCL, never through one).
        while os.path.lexists(path):
            path = self.directory / f"{PREFIX}{stamp}-{n}{SUFFIX}"
            n += 1
        self._recorder = Recorder(path, mode="new", fsync=False)
        self.current = path
        self._last_sync = now
        self._prune()

    def _close_segment(self, quiet: bool = False) -> None:
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return
        try:
            recorder.sync()
            recorder.close()
        except OSError:
            if not quiet:
                raise

    def _prune(self) -> None:
        """Delete the oldest segments beyond the size and age bounds (never the current one)."""
        found = segments(self.directory)
        sizes = {}
        for path in found:
            try:
                sizes[path] = path.stat()
            except OSError:
                continue
        # The older segments get what the current one may still grow into, so the whole stays in max_bytes.
        budget = max(0, self.max_bytes - self.segment_bytes)
        total = sum(st.st_size for path, st in sizes.items() if path != self.current)
        now = self.clock()
        for path in found:
            if path == self.current or path not in sizes:
                continue
            too_old = now - sizes[path].st_mtime > self.max_age_s
            if total <= budget and not too_old:
                break
            try:
                path.unlink()
                total -= sizes[path].st_size
            except OSError:
                pass

    def close(self) -> None:
        try:
            self._close_segment()
        except OSError as exc:
            self.problem = f"black box: cannot close {self.current}: {_why(exc)}"
