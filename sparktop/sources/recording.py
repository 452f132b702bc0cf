"""Writing a recording: one `Snapshot.model_dump_json()` per line, gzip-compressed when the file's name ends
in `.gz` (sources/replay.py plays it back).

`Recorder` appends and flushes (and by default fsyncs) every line, because the reason to record on a Spark is
often the freeze that follows memory exhaustion and needs a power cycle: what was written before it must be
on disk. So a crash costs at most the line being written, and the reader skips such a line with a warning
instead of refusing the file. A compressed line is flushed with a sync point, so the same holds through gzip;
deflate finds most of a snapshot in the one before it, so a compressed recording is a fraction of the size
of a plain one (see README).

`sparktop record` (commands/record.py) and the dashboard's black box (guard/blackbox.py) write through it.
"""

from __future__ import annotations

import gzip
import os
import stat
from pathlib import Path
from typing import IO, Literal

from sparktop.core.private_files import OpenMode, UnsafeFileError, open_private
from sparktop.core.snapshot import Snapshot

RecordMode = Literal["new", "append", "overwrite"]


def is_compressed(path: Path) -> bool:
    """Whether a recording is read and written through gzip: its name ends in .gz."""
    return path.name.endswith(".gz")


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
        try:
            found: os.stat_result | None = os.lstat(self.path)
        except FileNotFoundError:
            found = None
        if found is not None and stat.S_ISLNK(found.st_mode):
            raise UnsafeFileError(self.path, "it is a symbolic link (not followed)")
        size = found.st_size if found is not None else 0
        if mode == "new" and size > 0:
            raise FileExistsError(
                f"{self.path} already exists ({size:,} bytes); "
                "choose another name, append to it (--append) or replace it (--overwrite)"
            )
        if is_compressed(self.path):
            # An appended gzip member starts with a blank line: the last one may have been cut off mid-line.
            needs_newline = mode == "append" and size > 0
        else:
            needs_newline = mode == "append" and size > 0 and not self._ends_with_newline()
        # A recording holds the command line of every process on the machine: a new file is the user's only
        # (0600, O_EXCL when new, never through a symlink, never another user's file: private_files).
        opening: OpenMode = "new" if found is None else "append" if mode == "append" else "overwrite"
        self._raw: IO[bytes] | None = os.fdopen(open_private(self.path, opening, own_dir=False), "wb")
        # gzip appends a new member to an existing file; `filename=""` keeps the path out of its header.
        self._file: IO[bytes] | None = (
            gzip.GzipFile(fileobj=self._raw, mode="wb", filename="")  # type: ignore[assignment]
            if is_compressed(self.path)
            else self._raw
        )
        if needs_newline:  # the last recording was cut off mid-line: do not glue the next one onto it
            assert self._file is not None  # just opened above
            self._file.write(b"\n")

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    def write(self, snapshot: Snapshot) -> None:
        if self._file is None:
            raise ValueError(f"{self.path}: the recorder is closed")
        self._file.write(snapshot.model_dump_json().encode() + b"\n")
        self._file.flush()  # gzip: a sync flush, so every line written so far can be read back
        if self.fsync:
            os.fsync(self._raw.fileno())  # type: ignore[union-attr]
        self.count += 1

    def sync(self) -> None:
        """Force what was written so far onto the disk (for a recorder made with fsync=False)."""
        if self._file is not None and self._raw is not None:
            self._file.flush()
            os.fsync(self._raw.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()  # gzip: writes the end marker (it leaves the file it was given open)
            self._file = None
        if self._raw is not None:
            self._raw.close()
            self._raw = None

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
