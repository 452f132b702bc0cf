"""The add-on collector that measures served models' slowdowns beside busy GPU neighbours
(analysis/slowdown.py has the rule) and keeps each figure in the footprint store, where the planner reads
it ("measured here").

It runs after the servers collector (registry.py), reads only the snapshot, and reports one ServiceReport
carrying the slowdowns measured now (none: no report), so `--once --json`, recordings and every view see
them. The demo runs it without a store: a simulated machine must not teach the planner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparktop.analysis.slowdown import SlowdownTracker
from sparktop.core.snapshot import ServiceReport, Snapshot

if TYPE_CHECKING:  # the store (sqlite3) is imported when one is kept: the demo keeps none
    from sparktop.footprints.store import FootprintStore

NAME = "slowdowns"


class SlowdownCollector:
    name = NAME

    def __init__(self, store: FootprintStore | None = None, keep: bool = True) -> None:
        """`store`: where figures are kept (None: the shared one, unless `keep` is False: nowhere)."""
        self.tracker = SlowdownTracker()
        if store is None and keep:
            from sparktop.footprints.store import shared_store

            store = shared_store()
        self.store = store if keep else None

    def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
        found = self.tracker.update(snapshot)
        if not found:
            return []
        if self.store is not None:
            from sparktop.footprints.store import MeasuredSlowdown, model_key

            for s in found:
                self.store.record_slowdown(
                    MeasuredSlowdown(
                        model=model_key(s.server or "server", s.model),
                        neighbour_kind=s.neighbour_kind,
                        since=round(s.since, 1),
                        ratio=s.ratio,
                        neighbour=s.neighbour,
                        solo_tokens_per_s=s.solo_tokens_per_s,
                        together_tokens_per_s=s.together_tokens_per_s,
                        measured_at=snapshot.timestamp,
                    )
                )
        return [ServiceReport(collector=NAME, slowdowns=found)]


def demo_collector() -> SlowdownCollector:
    """The demo's: measures, keeps nothing."""
    return SlowdownCollector(keep=False)
