"""What the exporter serves: the latest analysed state of one node, published by a sampling thread.

The sampling loop is the only thing that touches the machine (`source.sample()` once per interval). It
analyses each snapshot through a `Session` (accounting, pressure, creep: as the dashboard does) and
publishes one immutable `NodeState` by swapping a reference, so an HTTP scrape only reads the last published
state: a scrape never collects, and any number of scrapes cannot slow the tick down beyond the CPU they take.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sparktop.analysis.history import History
from sparktop.analysis.pressure import PressureAssessment
from sparktop.analysis.trend import CreepAlert
from sparktop.core.safe_text import json_visible, say
from sparktop.core.snapshot import Snapshot
from sparktop.session.runner import SessionRunner
from sparktop.session.session import Session
from sparktop.sources.snapshot_source import SnapshotSource


def stale_after_s(interval: float | None) -> float:
    """A node's latest sample counts as stale after three missed ticks, and never before 10 s."""
    return max(10.0, 3 * (interval or 1.0))


@dataclass
class NodeState:
    """One tick, analysed. Never mutated after it is published."""

    snapshot: Snapshot
    assessment: PressureAssessment
    creep: list[CreepAlert]
    safe_bytes: int
    max_bytes: int
    received_at: float  # wall clock when the sample came back
    sequence: int  # 1 for the first published state, +1 each tick
    _json: dict[bool, bytes] = field(default_factory=dict, repr=False)

    def snapshot_json(self, command_lines: bool = True) -> bytes:
        """`--once --json`'s text for this snapshot, rendered once on first request (not every tick).
        Without `command_lines`, no process carries its `cmdline` (an argv may hold a password)."""
        text = self._json.get(command_lines)
        if text is None:
            # Two concurrent first requests may both render it: the same bytes, so no lock is needed.
            leave_out = None if command_lines else {"processes": {"__all__": {"cmdline"}}}
            dumped = self.snapshot.model_dump_json(indent=2, exclude=leave_out)
            text = self._json[command_lines] = (json_visible(dumped) + "\n").encode()
        return text


class SamplingLoop(SessionRunner):
    """The one sampling loop (`SessionRunner`: its thread, schedule and error lines) publishing each tick as
    an immutable `NodeState` in `latest`.

    A failing sample keeps the last state and records `last_error`; a finished replay keeps its last state
    and sets `ended`. `step()` takes one sample synchronously (tests, and the first state before serving).
    """

    def __init__(
        self,
        source: SnapshotSource,
        interval: float,
        safe_bytes: float | None = None,
        max_bytes: float | None = None,
        history_hours: float = 6.0,
        clock: Callable[[], float] = time.time,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        """`warn` prints a line a headless command has no screen for (default: `sparktop: ...` on
        stderr): the footprint database failing, once when it starts and once when it ends."""
        # The same analysis as the dashboard's (accounting, history, pressure, creep, the lines on this
        # machine's pool): one Session. safe/max None: the reference's lines, scaled to the pool.
        session = Session(safe_bytes, max_bytes, history_hours=history_hours, clock=clock, views=False)
        super().__init__(
            source,
            session,
            interval,
            on_snapshot=self._publish,
            warn=warn if warn is not None else (lambda line: say("sparktop", line)),
            clock=clock,
            thread_name="sparktop-sampler",
        )
        self.latest: NodeState | None = None
        self._sequence = 0

    @property
    def footprints_problem(self) -> str | None:
        """Why the measured-footprint database is not being written (None: it is, or there is none)."""
        return self.footprints.problem

    def step(self) -> NodeState | None:
        """One tick now, on the caller's thread; the state published last (this tick's when it succeeded)."""
        self.tick()
        return self.latest

    def publish(self, snapshot: Snapshot) -> NodeState:
        """Analyse one snapshot sampled elsewhere (another machine's exporter) and publish it as `latest`."""
        self.ingest(snapshot)
        assert self.latest is not None  # set by _publish, on this thread
        return self.latest

    @property
    def history(self) -> History:
        return self.session.history

    def _publish(self, snapshot: Snapshot) -> None:
        assert self.session.assessment is not None  # set by every ingest
        self._sequence += 1
        # one reference swap: readers see the old or the new state, never a mix
        self.latest = NodeState(
            snapshot=snapshot,
            assessment=self.session.assessment,
            creep=list(self.session.creep),
            safe_bytes=self.session.safe_bytes,  # where the lines are on this snapshot's pool
            max_bytes=self.session.max_bytes,
            received_at=self.clock(),
            sequence=self._sequence,
        )

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop the thread and close the source."""
        super().stop(timeout)
        with contextlib.suppress(Exception):
            self.source.close()

    def age_s(self) -> float | None:
        """Seconds since the latest state was published (None before the first)."""
        return None if self.latest is None else max(0.0, self.clock() - self.latest.received_at)
