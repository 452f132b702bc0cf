"""Playing recordings back (sources/recording.py writes them).

A recording is one `Snapshot.model_dump_json()` per line, read through gzip when the file's name ends in
`.gz`. Every line was flushed as it was written, so a crash costs at most the line being written, and the
reader skips such a line with a warning instead of refusing the file.

Playback choices (`ReplaySource`):
- one snapshot per `sample()`; the viewer plays it at `recorded_interval`, the median gap between the first
  snapshots' timestamps, unless told otherwise;
- a line that is not a snapshot (cut off by a crash, garbage, another format, a time that is not a number)
  is skipped; the problem is reported with its line number in the next snapshot's `errors` and kept in
  `warnings`; a line longer than `MAX_LINE_BYTES` is skipped without being held in memory;
- a file someone else wrote may hold millions of bad lines: of a run of them only the first few are described,
  the rest counted in one line, and `warnings` keeps at most `MAX_WARNINGS` (the rest counted), so memory
  does not grow with their number; blank lines are read past in bulk (a GiB of newlines in seconds);
- after the last snapshot `sample()` raises `ReplayEnded` (a `SourceExhausted`) whose message gives the
  recording's length and any problem found after the last snapshot (a line cut off by a crash); `finished`
  is True from the moment the last snapshot has been handed out;
- `progress()` says where the playback is: position and length in time (the length comes from the file's
  last line, read from its end at open; a compressed file is read through once in the background);
- a file without a single valid snapshot is refused when opened: `EmptyRecording`, which is both a
  `SourceExhausted` and a `ValueError`;
- the file is read lazily, a few lines ahead, so an hours-long recording opens at once;
- `mark()` says where the next snapshot starts and `rewind_to(mark)` plays on from there, back or forward:
  the speed and seek of sparktop/session/playback.py stand on them (a bad line read again is one warning).
"""

from __future__ import annotations

import functools
import gzip
import io
import itertools
import json
import math
import os
import re
import threading
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from sparktop.core.safe_text import visible
from sparktop.core.snapshot import SNAPSHOT_VERSION, Snapshot
from sparktop.sources.recording import is_compressed
from sparktop.sources.snapshot_source import SnapshotSource, SourceExhausted


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


# A snapshot of a machine with ten thousand processes is a few MB; a line beyond this is not a snapshot, and
# reading it whole (a 2 GB line of garbage) would take that much memory. It is skipped in bounded pieces.
MAX_LINE_BYTES = 64 * 1024**2
_SKIP_CHUNK = 1024**2
# Of a run of bad lines, this many are described one by one; the rest of the run is counted in one line.
DESCRIBED_PER_RUN = 3
# Problems kept for the status line and the Messages screen; the ones beyond are counted in a last line.
MAX_WARNINGS = 100
_BLANK = b" \t\r\n"
_BLANK_PREFIX = re.compile(rb"[ \t\r\n]*")
# Snapshots read ahead at open to learn the recording's interval (the median gap between them).
_INTERVAL_PROBE = 6
MIN_PLAYBACK_INTERVAL = 0.1


def _open_for_reading(path: Path) -> io.BufferedReader:
    """The file for reading lines (the reader counts where each starts: tell() on a GzipFile costs more than
    reading the line, which a file of millions of bad lines multiplies)."""
    if is_compressed(path):
        # Its own buffer, not one more in front: a file cut off by a crash yields every line before the cut.
        return gzip.open(path, "rb")  # type: ignore[return-value]  # a GzipFile reads as a buffered file
    return path.open("rb")


class ReplayEnded(SourceExhausted):
    """Every snapshot of the recording has been played; str() says so for the user, with its length."""


@dataclass(frozen=True)
class ReplayProgress:
    """Where the playback is, for the status line: times are seconds since the first snapshot."""

    played: int  # snapshots handed out so far
    position_s: float
    length_s: float | None  # None when the end is not known without reading it all (a compressed file)
    recorded_interval: float | None
    ended: bool
    speed: int | None = None  # snapshots played per tick (a viewer's playback speed); None: not said

    def describe(self) -> str:
        length = format_clock(self.length_s) if self.length_s is not None else "?"
        where = f"{format_clock(self.position_s)} / {length}"
        parts = [where]
        if self.speed is not None:
            parts.append(f"{self.speed}×")
        if self.recorded_interval is not None:
            parts.append(f"recorded every {self.recorded_interval:g} s")
        return " · ".join(parts)


def format_clock(seconds: float) -> str:
    """0:05, 12:30, 1:02:03; `?` for a time that is not a number."""
    if not math.isfinite(seconds):
        return "?"
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def parse_clock(text: str) -> float:
    """A position as the status line writes it: `90` (seconds), `1:30`, `1:02:03`; a leading `-` counts from
    the end (the result is then negative). ValueError with a readable message otherwise."""
    raw = text.strip()
    sign = -1.0 if raw.startswith("-") else 1.0
    parts = (raw[1:] if raw[:1] in ("-", "+") else raw).split(":")
    try:
        if not 1 <= len(parts) <= 3 or any(not p.strip() for p in parts):
            raise ValueError
        values = [float(p) for p in parts]
    except ValueError:
        example = "say 90, 1:30 or 1:02:03; -5:00 is 5 min before the end"
        raise ValueError(f"not a time: {text!r} ({example})") from None
    if any(v < 0 or v != v or v == float("inf") for v in values) or any(v >= 60 for v in values[1:]):
        raise ValueError(f"not a time: {text!r} (minutes and seconds go up to 59)")
    seconds = 0.0
    for value in values:
        seconds = seconds * 60 + value
    return sign * seconds


@dataclass(frozen=True)
class ReplayMark:
    """Where the next snapshot of a recording starts: `ReplaySource.rewind_to` goes back (or on) to it."""

    offset: int  # byte offset of its line in the (uncompressed) file
    lineno: int  # its line number, 1-based
    played: int  # snapshots handed out before it


START = ReplayMark(offset=0, lineno=1, played=0)  # the beginning of every recording


class ReplaySource(SnapshotSource):
    """Plays a JSONL recording (gzip-compressed when its name ends in .gz) back, one snapshot per
    `sample()`. See the module docstring."""

    name = "replay"

    def __init__(
        self, path: str | os.PathLike[str], max_line_bytes: int = MAX_LINE_BYTES, *, find_length: bool = True
    ) -> None:
        """`find_length` False: a compressed file's length is not looked for (a second reader of a file
        whose first reader does)."""
        self.path = Path(path)
        self.max_line_bytes = max_line_bytes
        self.warnings: list[str] = []
        self._skipped: list[str] = []  # problems met while reading ahead to the next snapshot
        self._run: tuple[int, int, int] | None = None  # this run of bad lines: (first, last, count)
        self._unlisted_warnings = 0  # problems beyond MAX_WARNINGS
        self._furthest_lineno = 0  # the furthest line read: problems before it were warned of already
        self._pending: list[str] = []  # problems after the last snapshot, for the end message
        self._lineno = 0  # lines read so far
        self._last_lineno = 0  # line of the snapshot handed out last
        self._played = 0
        self._newer_seen = False
        self._file: io.BufferedReader | None = _open_for_reading(self.path)
        self._offset = 0  # where the next line starts, in the uncompressed file
        self._ahead: deque[tuple[int, int, Snapshot]] = deque()  # (line number, byte offset, snapshot)
        self._warned: set[str] = set()
        self._last: Snapshot | None = None
        while len(self._ahead) < _INTERVAL_PROBE and self._read_ahead():
            pass
        if not self._ahead:
            self.close()
            detail = f"{self._lineno} lines, none valid" if self._lineno else "the file is empty"
            problems = f": {self.warnings[0]}" if self.warnings else ""
            raise EmptyRecording(f"no snapshot in this recording ({detail}){problems}")
        self.first_timestamp = self._ahead[0][2].timestamp
        self.recorded_interval = _median_gap([s.timestamp for _, _, s in self._ahead])
        self.last_timestamp: float | None = None
        if self._file is None:  # the whole recording was read ahead: its end is known exactly
            self.last_timestamp = self._ahead[-1][2].timestamp
        elif is_compressed(self.path) and find_length:
            # A compressed file has no end to seek to: it is read through once, in the background (about
            # 0.1 s per hour of recording), and the header shows `?` until then.
            threading.Thread(target=self._find_compressed_end, name="replay-length", daemon=True).start()
        elif not is_compressed(self.path):
            self.last_timestamp = _last_timestamp(self.path, max_line_bytes)

    def _find_compressed_end(self) -> None:
        found = _last_compressed_timestamp(self.path, self.max_line_bytes)
        if found is not None and self.last_timestamp is None:
            self.last_timestamp = found

    def play_to_end(self) -> Snapshot:
        """The last snapshot of the recording (what a post-mortem wants), every one before it read past."""
        last = self._last
        while self._ahead:
            last = self.sample()
        assert last is not None  # a recording holds at least one snapshot (else EmptyRecording)
        return last

    @property
    def finished(self) -> bool:
        """True once the last snapshot in the file has been returned by `sample()`."""
        return not self._ahead and self._file is None and self._last is not None

    @property
    def position(self) -> int:
        """Line number of the snapshot returned last (1-based; 0 before the first sample)."""
        return self._last_lineno

    def progress(self, snapshot: Snapshot | None = None) -> ReplayProgress:
        """Where the playback stands; `snapshot`: the one on screen (default: the one handed out last)."""
        shown = snapshot or self._last
        position = shown.timestamp - self.first_timestamp if shown is not None else 0.0
        length = None if self.last_timestamp is None else self.last_timestamp - self.first_timestamp
        return ReplayProgress(self._played, position, length, self.recorded_interval, self.finished)

    def sample(self) -> Snapshot:
        """The next snapshot; raises `ReplayEnded` once all have been handed out."""
        if not self._ahead:
            raise ReplayEnded(self.end_message())
        self._last_lineno, _, self._last = self._ahead.popleft()
        self._played += 1
        if not self._ahead:
            self._read_ahead()
        if not self._ahead:  # that was the last one: its time is the recording's end
            self.last_timestamp = self._last.timestamp
        return self._last

    def mark(self) -> ReplayMark | None:
        """Where the next snapshot starts (None when every one has been handed out)."""
        if not self._ahead:
            return None
        lineno, offset, _ = self._ahead[0]
        return ReplayMark(offset, lineno, self._played)

    def next_timestamp(self) -> float | None:
        """The time of the snapshot the next `sample()` returns (None at the end)."""
        return self._ahead[0][2].timestamp if self._ahead else None

    def rewind_to(self, mark: ReplayMark, last: Snapshot | None = None) -> None:
        """Play on from `mark` (START: from the beginning), back or forward. `last`: the snapshot played
        just before it (what `finished` and `progress` go by until the next `sample()`). A compressed file
        is read again from its start up to the mark (gzip cannot seek back)."""
        if self._file is None:
            self._file = _open_for_reading(self.path)
        self._offset = self._file.seek(mark.offset)
        self._lineno = mark.lineno - 1
        self._played = mark.played
        self._last = last
        self._last_lineno = mark.lineno - 1 if last is not None else 0
        self._ahead.clear()
        self._pending = []
        self._read_ahead()

    def end_message(self) -> str:
        """'end of recording (…)' with its length and any problem found after the last snapshot."""
        length = self.progress().length_s
        facts = [f"{self._played} snapshot{'s' if self._played != 1 else ''}"]
        if length is not None:
            facts.insert(0, format_clock(length))
        text = f"end of recording ({', '.join(facts)})"
        if self._pending:
            text += f"; {self._pending[-1]}"
        return text

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _readline(self) -> tuple[int, bytes | None]:
        """Where the next line that is not blank starts, and that line, at most `max_line_bytes` of it; a
        longer one is skipped in bounded pieces and comes back as b"" with the problem recorded. None at the
        end of the file."""
        assert self._file is not None
        try:
            while True:
                offset = self._offset  # counted, not asked: tell() on a gzip file costs more than the line
                line = self._file.readline(self.max_line_bytes + 1)
                self._offset += len(line)
                if line and not line.strip(_BLANK) and line.endswith(b"\n"):
                    self._lineno += 1
                    self._skip_blank_lines()
                    continue
                if len(line) <= self.max_line_bytes or line.endswith(b"\n"):
                    return offset, line or None
                skipped = len(line)
                while True:
                    chunk = self._file.readline(_SKIP_CHUNK)
                    skipped += len(chunk)
                    if not chunk or chunk.endswith(b"\n"):
                        break
                self._offset += skipped - len(line)
                break
        except (EOFError, OSError, zlib.error) as exc:  # a compressed file cut off by a crash, or damaged
            why = "ends abruptly" if isinstance(exc, EOFError) else f"cannot be read further ({exc})"
            self._end_run()  # the bad lines before the damage come first
            self._problem(f"{self.path.name}: the compressed recording {why} after line {self._lineno}")
            return 0, None
        self._lineno += 1
        limit_mib = self.max_line_bytes // 1024**2
        self._bad_line(
            lambda: (
                f"{self.path.name} line {self._lineno}: skipped, longer than {limit_mib} MiB "
                f"({skipped / 1024**2:,.0f} MiB): not a snapshot"
            )
        )
        return offset, b""

    def _skip_blank_lines(self) -> None:
        """After a blank line, reads past the blank lines that follow in bulk, a buffer at a time, counting
        them: a file of a billion newlines costs a scan, not a billion readline calls. A line's own leading
        spaces stay with it."""
        assert self._file is not None
        while True:
            ahead = self._file.peek(_SKIP_CHUNK)
            blank = _BLANK_PREFIX.match(ahead).end()  # type: ignore[union-attr]  # `*` always matches
            whole_lines = ahead.rfind(b"\n", 0, blank) + 1
            if not whole_lines:
                return
            self._lineno += ahead.count(b"\n", 0, whole_lines)
            self._offset += len(self._file.read(whole_lines))
            if whole_lines < len(ahead):
                return

    def _problem(self, text: str) -> None:
        # It quotes the file's name and maybe its bytes: shown with control characters made visible.
        self._skipped.append(visible(text))

    def _bad_line(self, describe: Callable[[], str]) -> None:
        """Line `_lineno` is not a snapshot: described while the run of bad lines is short, and counted
        (`describe` is called only then: a message kept for each line is what made millions of bad lines
        cost a GB)."""
        first, _, count = self._run or (self._lineno, 0, 0)
        self._run = (first, self._lineno, count + 1)
        if count < DESCRIBED_PER_RUN:
            self._problem(describe())

    def _describing(self) -> bool:
        """Whether the next bad line would be described (not only counted)."""
        return self._run is None or self._run[2] < DESCRIBED_PER_RUN

    def _end_run(self) -> None:
        """A run longer than those described, as one more problem: where it is and how many lines."""
        if self._run is not None and self._run[2] > DESCRIBED_PER_RUN:
            first, last, count = self._run
            self._problem(
                f"{self.path.name} lines {first}–{last}: {count:,} lines that are not snapshots "
                f"(the first {DESCRIBED_PER_RUN} described above)"
            )
        self._run = None

    def _read_ahead(self) -> bool:
        """Read the next valid snapshot into the look-ahead, carrying the problems of the bad lines skipped
        on the way to it in its `errors`. False at the end of the file (problems met on the way wait in
        `_pending`, for the end message)."""
        self._skipped = []
        read_from = self._lineno
        while self._file is not None:
            offset, line = self._readline()
            if line is None:
                self.close()
                break
            if not line:
                continue  # too long, already reported
            self._lineno += 1
            if not line.strip():
                continue  # blank but for spaces (runs of blank lines were read past in bulk)
            if not line.lstrip().startswith(b"{") and not self._describing():
                self._bad_line(str)  # not JSON, and only counted: the parser is spared
                continue
            try:
                snapshot = Snapshot.model_validate_json(line)
            except ValueError as exc:  # pydantic's ValidationError included
                self._bad_line(functools.partial(self._why_line_is_bad, exc, line))
                continue
            self._end_run()
            if snapshot.version > SNAPSHOT_VERSION and not self._newer_seen:
                self._newer_seen = True
                self._problem(
                    f"{self.path.name} line {self._lineno}: recorded by a newer sparktop (snapshot version "
                    f"{snapshot.version}, this one reads {SNAPSHOT_VERSION}); unknown fields are ignored"
                )
            self._warn(self._skipped, read_from)
            update: dict[str, object] = {"source": "replay"}
            if self._skipped:
                update["errors"] = [*snapshot.errors, *self._skipped]
            self._ahead.append((self._lineno, offset, snapshot.model_copy(update=update)))
            return True
        self._end_run()
        self._warn(self._skipped, read_from)
        self._pending.extend(self._skipped)
        return False

    def _why_line_is_bad(self, exc: ValueError, line: bytes) -> str:
        if line.endswith(b"\n"):
            why = _why_not(exc)
        else:
            why = "cut off: the recording was interrupted in the middle of this line"
        return f"{self.path.name} line {self._lineno}: not a snapshot ({why})"

    def _warn(self, problems: list[str], read_from: int) -> None:
        """Keep each problem once (a seek back reads the same bad lines again), and at most MAX_WARNINGS
        of them: the ones beyond are counted in a last line. `read_from`: the line they were met after."""
        new_lines = self._lineno > self._furthest_lineno and read_from >= self._furthest_lineno
        self._furthest_lineno = max(self._furthest_lineno, self._lineno)
        for problem in problems:
            if problem in self._warned:
                continue
            if len(self.warnings) < MAX_WARNINGS:
                self._warned.add(problem)
                self.warnings.append(problem)
            elif new_lines:
                self._unlisted_warnings += 1
                unlisted = f"{self.path.name}: {self._unlisted_warnings:,} more problems not listed"
                self.warnings[MAX_WARNINGS:] = [unlisted]

    def __enter__(self) -> ReplaySource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _median_gap(timestamps: list[float]) -> float | None:
    """The recording's interval: the median gap between its first snapshots (None with fewer than two, or
    when time does not move forward), never below MIN_PLAYBACK_INTERVAL."""
    gaps = sorted(b - a for a, b in itertools.pairwise(timestamps) if b > a)
    if not gaps:
        return None
    return max(MIN_PLAYBACK_INTERVAL, round(gaps[len(gaps) // 2], 2))


def _last_compressed_timestamp(path: Path, max_line_bytes: int) -> float | None:
    """The time of the last complete snapshot of a compressed recording, read through once keeping only
    its tail; a file cut off by a crash gives the last snapshot before the cut."""
    # zlib rather than gzip.open: on a file cut off by a crash it still gives what precedes the cut (each
    # line was flushed with a sync point). An appended recording holds several gzip members.
    # Inflated a bounded piece at a time: 256 KiB of deflated newlines is 256 MiB of them.
    keep = max_line_bytes + 2
    tail = b""
    inflate = zlib.decompressobj(wbits=31)
    try:
        with path.open("rb") as f:
            while chunk := f.read(256 * 1024):
                while chunk:
                    piece = inflate.decompress(chunk, keep)
                    if piece.strip(_BLANK):
                        tail = (tail + piece)[-keep:]
                    elif b"\n" in piece:  # blank lines: one line end stands for them all
                        tail = tail[-keep:] + b"\n"
                    if inflate.unconsumed_tail:
                        chunk = inflate.unconsumed_tail
                    elif inflate.eof:
                        chunk = inflate.unused_data
                        inflate = zlib.decompressobj(wbits=31)
                    else:
                        chunk = b""
    except (OSError, zlib.error):
        pass  # damaged: what was read so far
    return _timestamp_of_last_line(tail)


def _timestamp_of_last_line(text: bytes) -> float | None:
    """The timestamp of the last of the last few complete lines of `text` that are not blank and hold one
    (what follows the last newline was cut off). Never split into all its lines: they may be millions of
    blank ones."""
    end = text.rfind(b"\n")
    for _ in range(3):
        end = len(text[:end].rstrip(_BLANK)) if end > 0 else 0
        if end == 0:
            return None
        start = text.rfind(b"\n", 0, end) + 1
        try:
            value = json.loads(text[start:end]).get("timestamp")
        except (ValueError, AttributeError):
            value = None
        if isinstance(value, int | float) and math.isfinite(value):
            return float(value)
        end = start
    return None


def _last_timestamp(path: Path, max_line_bytes: int) -> float | None:
    """The time of the last complete snapshot, read from the end of the file (so a long recording's length
    is known at once). None when the tail holds no readable snapshot."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            block = min(size, 256 * 1024)
            while True:
                f.seek(size - block)
                tail = f.read(block)
                # From the first line end on: the part before it may be the end of a longer line.
                complete = tail if block >= size else tail[tail.find(b"\n") + 1 :] if b"\n" in tail else b""
                found = _timestamp_of_last_line(complete)
                if found is not None or block >= min(size, max_line_bytes + 2):
                    return found
                block = min(size, block * 4, max_line_bytes + 2)
    except OSError:
        return None
