"""Measured footprints: the peak memory of every container, served model and long-running process this machine
has run, kept in a small SQLite file so the planner can learn from what really ran here.

`$XDG_STATE_HOME/sparktop/footprints.sqlite3` (platformdirs). Safe with two sparktop instances: WAL
journal, a short busy timeout, and writes that only ever raise a peak (`max()`), so two writers in any order
leave the same answer. Bounded: beyond `max_rows` the entries seen longest ago are dropped. Peaks are held in
memory and written every `flush_s` seconds, so a tick costs a dict update, and a locked file only delays a
write. A corrupt or locked file, or a read-only directory, never stops the dashboard: `status` says why, and
peaks are still kept in memory for this session.

Thread-safe: the headless commands open the store on one thread (their first tick) and sample on another,
and the planner reads it from the UI thread; one lock guards the connection and the dicts.
The file and its -wal/-shm/-journal are created 0600 by sparktop in a 0700 directory, never through a
symlink another user planted (sparktop/core/private_files.py).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sparktop.core.private_files import check_not_planted, open_private, private_dir
from sparktop.core.safe_text import one_line
from sparktop.core.snapshot import ProcessInfo, ServiceReport, Snapshot, process_key

FILENAME = "footprints.sqlite3"
BUSY_TIMEOUT_MS = 100  # a tick may wait this long for another instance's write, no more
LONG_RUNNING_S = 300.0  # a process counts once it has run this long (a compiler is not a workload)
SQLITE_FILES = ("", "-wal", "-shm", "-journal")  # the database and the files SQLite makes beside it
MIN_PROCESS_BYTES = 256 * 1024**2  # and holds this much: the planner has no use for the peak of `cron`
# A model server's figures are recorded only when what serves them measurably holds this share of them.
BACKED_FRACTION = 0.9
SCHEMA = """
CREATE TABLE IF NOT EXISTS footprint (
    kind TEXT NOT NULL,          -- container | image | model | process
    name TEXT NOT NULL,          -- container name, image, "server:model tag", process name
    peak_bytes INTEGER NOT NULL,
    peak_at REAL NOT NULL,       -- Unix time of the peak
    last_seen REAL NOT NULL,
    owner TEXT,                  -- what held the peak: "container NAME", "ollama (pid 812, user root)"
    first_seen REAL,             -- Unix time it was first seen (NULL: a row from before these columns)
    PRIMARY KEY (kind, name)
)
"""
# Measured slowdowns (analysis/slowdown.py): one row per model, kind of neighbour and stretch of contention
# (`since`), rewritten while the stretch lasts. A file from before this table gets it on open.
SLOWDOWN_SCHEMA = """
CREATE TABLE IF NOT EXISTS slowdown (
    model TEXT NOT NULL,            -- "server:model tag", as the footprint table names models
    neighbour_kind TEXT NOT NULL,   -- training | decoder | other
    since REAL NOT NULL,            -- Unix time the neighbour became busy
    ratio REAL NOT NULL,            -- solo / together: 2.1 = 2.1x slower
    neighbour TEXT,                 -- what it was: a container or process name
    solo_tokens_per_s REAL,         -- medians, per running request
    together_tokens_per_s REAL,
    measured_at REAL NOT NULL,
    PRIMARY KEY (model, neighbour_kind, since)
)
"""
SLOWDOWN_UPSERT = """
INSERT INTO slowdown (model, neighbour_kind, since, ratio, neighbour, solo_tokens_per_s,
                      together_tokens_per_s, measured_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (model, neighbour_kind, since) DO UPDATE SET
    ratio = CASE WHEN excluded.measured_at >= measured_at THEN excluded.ratio ELSE ratio END,
    solo_tokens_per_s = CASE WHEN excluded.measured_at >= measured_at
                             THEN excluded.solo_tokens_per_s ELSE solo_tokens_per_s END,
    together_tokens_per_s = CASE WHEN excluded.measured_at >= measured_at
                                 THEN excluded.together_tokens_per_s ELSE together_tokens_per_s END,
    measured_at = max(measured_at, excluded.measured_at)
"""
MAX_SLOWDOWN_ROWS = 2000
# Columns added since the first release: a file made by an older sparktop gets them on open.
ADDED_COLUMNS = (("owner", "TEXT"), ("first_seen", "REAL"))
UPSERT = """
INSERT INTO footprint (kind, name, peak_bytes, peak_at, last_seen, owner, first_seen)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (kind, name) DO UPDATE SET
    peak_at = CASE WHEN excluded.peak_bytes > peak_bytes THEN excluded.peak_at ELSE peak_at END,
    owner = CASE WHEN excluded.peak_bytes > peak_bytes THEN excluded.owner ELSE owner END,
    peak_bytes = max(peak_bytes, excluded.peak_bytes),
    last_seen = max(last_seen, excluded.last_seen),
    first_seen = coalesce(min(first_seen, excluded.first_seen), first_seen, excluded.first_seen)
"""


def default_path() -> Path:
    from sparktop.settings.files import state_dir

    return state_dir() / FILENAME


@dataclass(frozen=True)
class Footprint:
    kind: str
    name: str
    peak_bytes: int
    peak_at: float
    last_seen: float
    owner: str | None = None  # what held the peak (None: not recorded, a row from an older sparktop)
    first_seen: float | None = None

    @property
    def seen_s(self) -> float:
        """How long it has been seen, first to last (0 when not known)."""
        return 0.0 if self.first_seen is None else max(0.0, self.last_seen - self.first_seen)


@dataclass(frozen=True)
class MeasuredSlowdown:
    """One stretch of contention measured on this machine (analysis/slowdown.py's rule)."""

    model: str  # "server:model tag"
    neighbour_kind: str  # training | decoder | other
    since: float
    ratio: float
    neighbour: str | None
    solo_tokens_per_s: float | None
    together_tokens_per_s: float | None
    measured_at: float

    @property
    def key(self) -> tuple[str, str, float]:
        return (self.model, self.neighbour_kind, self.since)


# What a row read back must hold to be used: SQLite keeps any value in any column (text in a REAL one), and
# the file is the user's to edit. Times between 1970 and 2200; sizes under 1 PiB.
_LATEST_TIME = 7_258_118_400.0
_LARGEST_BYTES = 1024**5


def _is_time(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= _LATEST_TIME


def _is_rate(value: object) -> bool:
    return value is None or (isinstance(value, int | float) and 0 <= value < 1e12)


def _is_name(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _plausible_footprint(row: tuple[object, ...]) -> bool:
    kind, name, peak_bytes, peak_at, last_seen, owner, first_seen = row
    return (
        _is_name(kind)
        and _is_name(name)
        and isinstance(peak_bytes, int)
        and 0 <= peak_bytes <= _LARGEST_BYTES
        and _is_time(peak_at)
        and _is_time(last_seen)
        and (owner is None or isinstance(owner, str))
        and (first_seen is None or _is_time(first_seen))
    )


def _plausible_slowdown(row: tuple[object, ...]) -> bool:
    model, neighbour_kind, since, ratio, neighbour, solo, together, measured_at = row
    return (
        _is_name(model)
        and _is_name(neighbour_kind)
        and _is_time(since)
        and isinstance(ratio, int | float)
        and 0 < ratio < 1000
        and (neighbour is None or isinstance(neighbour, str))
        and _is_rate(solo)
        and _is_rate(together)
        and _is_time(measured_at)
    )


class FootprintStore:
    """Peaks by (kind, name). `record()` is cheap; `flush()` writes what grew since the last flush."""

    def __init__(
        self,
        path: Path | None = None,
        max_rows: int = 5000,
        flush_s: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.max_rows = max_rows
        self.flush_s = flush_s
        self._clock = clock
        self._db: sqlite3.Connection | None = None
        self._known: dict[tuple[str, str], Footprint] = {}  # what the file had, plus this session's peaks
        self._dirty: dict[tuple[str, str], Footprint] = {}
        self._slowdowns: dict[tuple[str, str, float], MeasuredSlowdown] = {}
        self._slowdowns_dirty: dict[tuple[str, str, float], MeasuredSlowdown] = {}
        self._last_flush = clock()
        self.status: str | None = None  # one line when the file cannot be used, or rows in it
        self._skipped: str | None = None  # the rows of the file that were not plausible, said once read
        self._lock = threading.RLock()
        with self._lock:
            self._open()

    # --- the file ---

    def _open(self) -> None:
        try:
            private_dir(self.path.parent)
            # SQLite opens these by name and follows symlinks: each must be missing or this user's own file.
            for suffix in SQLITE_FILES:
                check_not_planted(f"{self.path}{suffix}")
            os.close(open_private(self.path, "existing"))  # created 0600 by us, not SQLite
            # Opened on one thread, used on the sampling thread: access is serialised by self._lock.
            db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            try:
                db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                db.execute("PRAGMA journal_mode = WAL")
                db.execute(SCHEMA)
                have = {row[1] for row in db.execute("PRAGMA table_info(footprint)")}
                for column, kind in ADDED_COLUMNS:
                    if column not in have:
                        db.execute(f"ALTER TABLE footprint ADD COLUMN {column} {kind}")
                db.execute(SLOWDOWN_SCHEMA)
                rows = db.execute(
                    "SELECT kind, name, peak_bytes, peak_at, last_seen, owner, first_seen FROM footprint"
                ).fetchall()
                slow = db.execute(
                    "SELECT model, neighbour_kind, since, ratio, neighbour, solo_tokens_per_s, "
                    "together_tokens_per_s, measured_at FROM slowdown"
                ).fetchall()
            except BaseException:
                db.close()
                raise
        except (sqlite3.Error, OSError) as exc:
            self._unusable(exc)
            return
        self._db = db
        skipped: dict[str, int] = {}
        for row in rows:
            if not _plausible_footprint(row):
                skipped["footprint"] = skipped.get("footprint", 0) + 1
                continue
            fp = Footprint(*row)
            self._known[(fp.kind, fp.name)] = fp
        for row in slow:
            if not _plausible_slowdown(row):
                skipped["slowdown"] = skipped.get("slowdown", 0) + 1
                continue
            measured = MeasuredSlowdown(*row)
            self._slowdowns[measured.key] = measured
        if skipped:
            count = sum(skipped.values())
            self._skipped = (
                f"measured footprints: {self.path}: {count} row{'s' if count != 1 else ''} skipped "
                f"({', '.join(skipped)}: a value of the wrong type or out of range) — the others are used"
            )
            self.status = self._skipped

    def _unusable(self, exc: BaseException) -> None:
        detail = one_line(exc)
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in detail:
            detail = "file is corrupt (not a SQLite database); move it aside to start afresh"
        elif "locked" in detail or "busy" in detail:
            detail = "locked by another program"
        self.status = f"measured footprints: {self.path}: {detail} — peaks kept for this session only"

    # --- reading ---

    def peak(self, kind: str, name: str) -> Footprint | None:
        with self._lock:
            return self._known.get((kind, name))

    def all(self) -> list[Footprint]:
        with self._lock:
            found = list(self._known.values())
        return sorted(found, key=lambda f: (f.kind, f.name))

    def slowdowns(self) -> list[MeasuredSlowdown]:
        with self._lock:
            found = list(self._slowdowns.values())
        return sorted(found, key=lambda m: (m.model, m.neighbour_kind, m.since))

    # --- writing ---

    def record_slowdown(self, measured: MeasuredSlowdown) -> None:
        """A stretch's figure; the same stretch (model, kind, since) measured again replaces it."""
        if not measured.model or not measured.ratio > 0:
            return
        with self._lock:
            if self._slowdowns.get(measured.key) == measured:
                return
            self._slowdowns[measured.key] = measured
            self._slowdowns_dirty[measured.key] = measured
            if len(self._slowdowns) > MAX_SLOWDOWN_ROWS:  # bounded like the file: the oldest go
                oldest = min(self._slowdowns.values(), key=lambda m: m.measured_at)
                del self._slowdowns[oldest.key]
                self._slowdowns_dirty.pop(oldest.key, None)

    def record(self, kind: str, name: str, nbytes: int, owner: str | None = None) -> None:
        """`owner`: what holds the memory, as the machine shows it (kept with the peak)."""
        if not name or nbytes <= 0:
            return
        with self._lock:
            self._record(kind, name, nbytes, owner)

    def _record(self, kind: str, name: str, nbytes: int, owner: str | None) -> None:
        now = self._clock()
        key = (kind, name)
        known = self._known.get(key)
        first = known.first_seen if known is not None and known.first_seen is not None else now
        if known is None or nbytes > known.peak_bytes:
            fp = Footprint(kind, name, int(nbytes), now, now, owner, first)
        else:
            fp = Footprint(kind, name, known.peak_bytes, known.peak_at, now, known.owner, first)
            if now - known.last_seen < self.flush_s:
                self._known[key] = fp  # only last_seen moved: no write needed yet
                return
        self._known[key] = fp
        self._dirty[key] = fp

    def maybe_flush(self) -> None:
        with self._lock:
            dirty = self._dirty or self._slowdowns_dirty
            if dirty and self._clock() - self._last_flush >= self.flush_s:
                self._flush()

    def flush(self) -> None:
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        self._last_flush = self._clock()
        if self._db is None or not (self._dirty or self._slowdowns_dirty):
            return
        rows = [
            (f.kind, f.name, f.peak_bytes, f.peak_at, f.last_seen, f.owner, f.first_seen)
            for f in self._dirty.values()
        ]
        slow = [
            (m.model, m.neighbour_kind, m.since, m.ratio, m.neighbour, m.solo_tokens_per_s,
             m.together_tokens_per_s, m.measured_at)
            for m in self._slowdowns_dirty.values()
        ]  # fmt: skip
        try:
            with self._db:  # one transaction
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(UPSERT, rows)
                self._db.execute(
                    "DELETE FROM footprint WHERE rowid IN (SELECT rowid FROM footprint "
                    "ORDER BY last_seen DESC LIMIT -1 OFFSET ?)",
                    (self.max_rows,),
                )
                self._db.executemany(SLOWDOWN_UPSERT, slow)
                self._db.execute(
                    "DELETE FROM slowdown WHERE rowid IN (SELECT rowid FROM slowdown "
                    "ORDER BY measured_at DESC LIMIT -1 OFFSET ?)",
                    (MAX_SLOWDOWN_ROWS,),
                )
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                self.status = f"measured footprints: {self.path} is locked — will retry"
                return  # keep the rows dirty: the next flush writes them
            self._unusable(exc)
            self._close_db()
            return
        except sqlite3.Error as exc:
            self._unusable(exc)
            self._close_db()
            return
        self._dirty.clear()
        self._slowdowns_dirty.clear()
        self.status = self._skipped

    def _close_db(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None

    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(Exception):
                self._flush()
            self._close_db()


def observe(store: FootprintStore, snapshot: Snapshot, long_running_s: float = LONG_RUNNING_S) -> None:
    """Record this snapshot's containers (by name and image), served models and long-running processes."""
    totals = {c.key: c.total for c in snapshot.accounting.consumers} if snapshot.accounting else {}
    for container in snapshot.containers:
        nbytes = totals.get(f"container:{container.id}")
        if nbytes is None and container.memory is not None:
            nbytes = container.memory.working_set + container.gpu_bytes
        if nbytes:
            owner = f"container {container.label}"
            if container.name:
                store.record("container", container.name, nbytes, owner)
            if container.image:
                store.record("image", container.image, nbytes, owner)
    for report in snapshot.services:
        _observe_models(store, report, snapshot, totals)
    for proc in snapshot.processes:
        own = (proc.pss or proc.rss) + (proc.gpu_bytes or 0)
        if own < MIN_PROCESS_BYTES or proc.start_time is None or proc.container_id is not None:
            continue  # the cheap tests first: a tick sees a thousand processes
        if snapshot.timestamp - proc.start_time >= long_running_s:
            store.record("process", proc.name, totals.get(process_key(proc), own), _who(proc))


def _who(proc: ProcessInfo) -> str:
    return f"{proc.name} (pid {proc.pid}, user {proc.user if proc.user is not None else '?'})"


def _observe_models(
    store: FootprintStore, report: ServiceReport, snapshot: Snapshot, totals: dict[str, int]
) -> None:
    """A server's own figures are a claim, not a measurement: anyone can answer on :11434. Its models are
    recorded only when the machine shows their memory held by what serves them (its container, or its
    process and the children it loads models in), each at most what that holder measurably holds."""
    claims = [(m.name, m.total_bytes) for m in report.models if m.total_bytes and m.total_bytes > 0]
    if not claims or not report.server:
        return
    held = _held_by_owner(report, snapshot, totals)
    if held is None:
        return  # nothing on this machine is known to serve it
    nbytes, owner = held
    if nbytes < BACKED_FRACTION * sum(size for _, size in claims):
        return  # it claims more than its process or container holds
    for name, size in claims:
        store.record("model", model_key(report.server, name), min(size, nbytes), owner)


def _held_by_owner(
    report: ServiceReport, snapshot: Snapshot, totals: dict[str, int]
) -> tuple[int, str] | None:
    """(bytes the server's owner holds, as measured; who it is), or None when the owner is not known."""
    owner = report.owner or ""
    if owner.startswith("container:"):
        cid = owner.split(":", 1)[1]
        for container in snapshot.containers:
            if container.id == cid:
                nbytes = totals.get(owner)
                if nbytes is None:
                    memory = container.memory.working_set if container.memory is not None else 0
                    nbytes = memory + container.gpu_bytes
                return nbytes, f"container {container.label}"
        return None
    if owner.startswith("process:"):
        by_key = {process_key(p): p for p in snapshot.processes}
        proc = by_key.get(owner)
        if proc is None:
            return None
        # Ollama loads each model in an `ollama runner` child: the server and its children hold it.
        family = [proc, *(p for p in snapshot.processes if p.ppid == proc.pid and p.container_id is None)]
        nbytes = sum(totals.get(process_key(p), (p.pss or p.rss) + (p.gpu_bytes or 0)) for p in family)
        return nbytes, _who(proc)
    return None


def model_key(server: str, model: str) -> str:
    return f"{server}:{model}"


_shared: FootprintStore | None = None


def shared_store() -> FootprintStore:
    """The process's one store in the default place: the collector writes it, the planner reads it."""
    global _shared
    if _shared is None:
        _shared = FootprintStore()
    return _shared


class FootprintCollector:
    """The store as an add-on collector: records every tick, flushes now and then, reports trouble."""

    name = "footprints"

    def __init__(self, store: FootprintStore | None = None) -> None:
        self.store = store if store is not None else shared_store()

    def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
        observe(self.store, snapshot)
        self.store.maybe_flush()
        if self.store.status:
            where = str(self.store.path)
            return [ServiceReport(collector=self.name, endpoint=where, error=self.store.status)]
        return []

    def close(self) -> None:
        self.store.close()


def store_problem(snapshot: Snapshot) -> str | None:
    """The footprint store's trouble this tick (the line its collector reported), or None."""
    for report in snapshot.services:
        if report.collector == FootprintCollector.name and report.error:
            return report.error
    return None


class ProblemWatch:
    """For the headless commands, which have no screen to show the store's status on: `update()` returns a
    line to print when a problem starts, changes or ends, and None otherwise (one line, not one a tick). A
    write that only waits for another instance's lock is not worth a line."""

    def __init__(self) -> None:
        self.problem: str | None = None

    def update(self, snapshot: Snapshot) -> str | None:
        problem = store_problem(snapshot)
        if problem is not None and "will retry" in problem:
            return None
        if problem == self.problem:
            return None
        before, self.problem = self.problem, problem
        if problem is None:
            return "measured footprints: the database is written again" if before else None
        return problem
