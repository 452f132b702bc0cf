"""Speed and seek for a replayed recording: what the viewer of `sparktop --replay` expects of a player.

- Speed: each tick plays `speed` snapshots (1×, 2×, 5× … 600× the recorded pace when the viewer ticks at the
  recorded interval). A tick's batch goes into the session whole, `analyse=False` for all but the last, so
  the history, the creep slope and the trends see every sample; only the last is analysed and drawn.
- Seek: `seek()` makes a new session that has taken in every snapshot up to the target, exactly as playing
  from the start would have (`Session.catch_up`); the source plays on after it. Parsing a
  snapshot costs a millisecond or more, so an hour at 1 s is seconds of work from the start: a
  `CheckpointIndex` reads the recording through once in the background and keeps the session's state every
  `CHECKPOINT_EVERY` snapshots (`Session.checkpoint`, ~0.25 MB each), from the first seek asked for on (a
  viewer that only plays reads the file once); a seek restores the nearest one
  before the target and plays at most that many snapshots on to it. The checkpoints are thinned (every
  other one dropped) to stay within `CHECKPOINT_BUDGET` bytes, so a day-long recording costs a seek a few
  hundred snapshots at most.
- Seeks can be asked for faster than they finish (a key held down): `request_seek` only says where to go,
  relative seeks count from there, and `seek` goes to the newest request (the viewer calls it where it
  would sample, so a tick and a seek never overlap).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from sparktop.core.snapshot import Snapshot
from sparktop.session.session import Session
from sparktop.sources.replay import START, ReplayMark, ReplayProgress, ReplaySource
from sparktop.sources.snapshot_source import take_sample

SPEEDS = (1, 2, 5, 10, 30, 60, 300, 600)  # snapshots per tick the speed keys step through
MAX_SPEED = 1000  # the most `--speed` takes: a tick's batch is ingested on the viewer's event loop
CHECKPOINT_EVERY = 30  # snapshots between checkpoints (two a minute of a 1 s recording)
CHECKPOINT_BUDGET = 64 * 1024**2  # bytes of checkpoints kept at most


@dataclass(frozen=True)
class Batch:
    """One tick's snapshots (oldest first); `ended`: the recording has no more (what it said about its end);
    `error`: a sample failed (the recording cannot be read further)."""

    snapshots: list[Snapshot]
    ended: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Checkpoint:
    timestamp: float  # of the last snapshot taken in
    count: int  # snapshots taken in
    mark: ReplayMark  # where the next one starts
    state: bytes  # Session.checkpoint()


class CheckpointIndex:
    """Reads a recording through once, on a thread of its own and with a reader of its own, into a session
    of its own (`analyse=False`, as a seek plays), keeping a checkpoint every `every` snapshots. See the
    module docstring."""

    def __init__(
        self,
        path: Path,
        new_session: Callable[[], Session],
        every: int = CHECKPOINT_EVERY,
        budget: int = CHECKPOINT_BUDGET,
    ) -> None:
        self.path = path
        self._new_session = new_session
        self.every = max(1, every)
        self.budget = budget
        self._checkpoints: list[Checkpoint] = []
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.done = False  # read to its end (or given up: `problem` says why)
        self.problem: str | None = None
        self.last_timestamp: float | None = None  # of the last snapshot, once done

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="replay-index", daemon=True)
            self._thread.start()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def close(self) -> None:
        self._stop.set()

    def best(self, timestamp: float) -> Checkpoint | None:
        """The latest checkpoint at or before `timestamp`."""
        with self._cond:
            found = [c for c in self._checkpoints if c.timestamp <= timestamp]
        return found[-1] if found else None

    def wait_past(self, timestamp: float, give_up: Callable[[], bool]) -> None:
        """Until a checkpoint at or after `timestamp` exists or the whole file is read (or `give_up()`)."""
        with self._cond:
            while not self.done and not give_up():
                if self._checkpoints and self._checkpoints[-1].timestamp >= timestamp:
                    return
                self._cond.wait(0.05)

    @property
    def nbytes(self) -> int:
        with self._cond:
            return sum(len(c.state) for c in self._checkpoints)

    def _run(self) -> None:
        try:
            with ReplaySource(self.path, find_length=False) as source:
                session = self._new_session()
                count = 0
                while not source.finished and not self._stop.is_set():
                    snapshot = source.sample()
                    session.ingest(snapshot, analyse=False)
                    count += 1
                    mark = source.mark()
                    if count % self.every == 0 and mark is not None:
                        self._keep(Checkpoint(snapshot.timestamp, count, mark, session.checkpoint()))
                self.last_timestamp = session.latest.timestamp if session.latest is not None else None
        except Exception as exc:  # a file that changed under us, or a bug: seeks then play from the start
            self.problem = f"{type(exc).__name__}: {exc}"
        finally:
            with self._cond:
                self.done = True
                self._cond.notify_all()

    def _keep(self, checkpoint: Checkpoint) -> None:
        with self._cond:
            self._checkpoints.append(checkpoint)
            if sum(len(c.state) for c in self._checkpoints) > self.budget:
                self.every *= 2  # every other one goes: the kept ones are those at the new spacing
                self._checkpoints = [c for c in self._checkpoints if c.count % self.every == 0]
            self._cond.notify_all()


class Playback:
    """A recording played with speed and seek, for a viewer that ingests each tick's batch into its session.
    `new_session` makes an empty session with the viewer's settings. See the module docstring."""

    def __init__(
        self,
        source: ReplaySource,
        new_session: Callable[[], Session],
        speed: int = 1,
        checkpoint_every: int = CHECKPOINT_EVERY,
    ) -> None:
        self.source = source
        self.speed = max(1, min(MAX_SPEED, int(speed)))
        self._new_session = new_session
        self.index = CheckpointIndex(source.path, new_session, every=checkpoint_every)
        self._lock = threading.Lock()  # the source is read by one tick or one seek at a time
        self.pending_s: float | None = None  # where the newest seek asked for goes (until it is done)

    def start(self) -> None:
        """Start reading the checkpoints now; the first `request_seek` starts it otherwise. A viewer that only
        plays never pays for them (a pass over the whole file: 15–27 s of a core and ~23 MiB for an hour)."""
        self.index.start()

    def close(self) -> None:
        self.index.close()

    # -- speed ---------------------------------------------------------------------------------------------

    def faster(self) -> int:
        self.speed = next((s for s in SPEEDS if s > self.speed), self.speed)
        return self.speed

    def slower(self) -> int:
        self.speed = next((s for s in reversed(SPEEDS) if s < self.speed), self.speed)
        return self.speed

    def take_batch(self) -> Batch:
        """The next tick's snapshots: `speed` of them, fewer at the end of the recording."""
        with self._lock:
            snapshots: list[Snapshot] = []
            for _ in range(self.speed):
                sampled = take_sample(self.source)
                if sampled.snapshot is None:
                    if sampled.ended:
                        return Batch(snapshots, ended=sampled.error or "end of recording")
                    return Batch(snapshots, error=sampled.error)
                snapshots.append(sampled.snapshot)
                if self.source.finished:
                    break
            return Batch(snapshots)

    # -- position and seek ----------------------------------------------------------------------------------

    def position_s(self, shown: Snapshot | None) -> float:
        """Seconds from the start: where the newest seek goes, else the snapshot on show."""
        if self.pending_s is not None:
            return self.pending_s
        return shown.timestamp - self.source.first_timestamp if shown is not None else 0.0

    def length_s(self) -> float | None:
        last = self.source.last_timestamp or self.index.last_timestamp
        return None if last is None else last - self.source.first_timestamp

    def progress(self, shown: Snapshot | None) -> ReplayProgress:
        progress = replace(self.source.progress(shown), speed=self.speed)
        if progress.length_s is None and self.index.last_timestamp is not None:  # a compressed file
            progress = replace(progress, length_s=self.index.last_timestamp - self.source.first_timestamp)
        return progress

    @property
    def seek_wanted(self) -> bool:
        return self.pending_s is not None

    def request_seek(self, target_s: float) -> None:
        """Ask for a seek to `target_s` (seconds from the start; `math.inf`: the end; negative: that far
        before the end), done by the next `seek()`; a newer request replaces it. Called where the keys are
        read; the positions of further relative seeks count from there."""
        self.index.start()
        length = self.length_s()
        if target_s < 0 and length is not None:
            target_s = length + target_s
        if length is not None:
            target_s = min(target_s, length)
        self.pending_s = target_s if target_s < 0 and length is None else max(0.0, target_s)

    def seek(self, cancelled: Callable[[], bool] = lambda: False) -> Session | None:
        """A new session holding every snapshot up to the requested position, exactly as playing from the
        start with analyse=False would have, then analysed; the source set to play on after it. None when
        no seek is wanted, or a newer one was asked for while this one waited (call again for it). Blocks
        until the checkpoints reach the target: call it off the event loop, one call at a time."""
        wanted = self.pending_s
        if wanted is None:
            return None

        def superseded() -> bool:
            return self.pending_s != wanted or cancelled()

        try:
            return self._seek(wanted, superseded)
        except Exception:
            if self.pending_s == wanted:
                self.pending_s = None  # not tried again at every tick
            raise

    def _seek(self, wanted: float, superseded: Callable[[], bool]) -> Session | None:
        target_s = wanted
        if target_s < 0:  # from the end of a compressed file whose end was not known yet
            self.index.wait_past(math.inf, superseded)
            target_s = max(0.0, (self.length_s() or 0.0) + target_s)
        target = self.source.first_timestamp + target_s
        self.index.wait_past(target, superseded)
        if superseded():
            return None
        with self._lock:
            session = self._new_session()
            # From a checkpoint before the creep hold's reach of the target: catch_up analyses those
            # snapshots as ticking did, so a seek shows the alerts playing there showed.
            checkpoint = self.index.best(target - session.creep_hold_s)
            mark = START
            if checkpoint is not None:
                session.restore(checkpoint.state)
                mark = checkpoint.mark
            self.source.rewind_to(mark, session.latest)

            def upcoming() -> Iterator[Snapshot]:
                while (at := self.source.next_timestamp()) is not None and (
                    at <= target or session.latest is None
                ):
                    yield self.source.sample()

            session.catch_up(upcoming(), until=target)
            if session.latest is None:
                raise ValueError(f"{self.source.path.name}: no snapshot there any more (the file changed?)")
        if self.pending_s == wanted:
            self.pending_s = None
        return session
