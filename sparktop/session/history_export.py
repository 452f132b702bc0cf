"""The dashboard's own short black box written out on demand (key `B`): the in-memory history (pool used and
every consumer's total, up to `history_hours`) as a recording `sparktop --replay FILE` plays back: one
snapshot per point, oldest first, in the format `sparktop record` writes.

A point holds what the history keeps and no more: the time, the pool's used bytes (against the pool total of
the latest snapshot) and each consumer's total with its label (as its CPU side: the history does not keep
the CPU/GPU split); no process list, containers or GPU readings, which each snapshot says in `notes` (a
note: nothing went wrong).

It holds process names, so the file is created 0600 in a 0700 directory, never through a symlink and never
over an existing file (sparktop/core/private_files.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import get_args

from sparktop.analysis.history import UNATTRIBUTED, History
from sparktop.core.private_files import open_private_file
from sparktop.core.snapshot import Accounting, Consumer, ConsumerKind, GpuReport, HostMemory, Snapshot

KINDS = set(get_args(ConsumerKind))
WHAT_IS_MISSING = (
    "written by the dashboard's B key from its in-memory history: pool used and consumer totals only "
    "(no processes, containers or GPU readings)"
)


def default_history_path(now: float | None = None) -> Path:
    from sparktop.settings.files import state_dir

    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(now if now is not None else time.time()))
    return state_dir() / f"history-{stamp}.jsonl"


def history_snapshots(history: History, latest: Snapshot | None = None) -> list[Snapshot]:
    """One snapshot per point of `history`. `latest` gives the pool total and host name (without it the
    largest used figure stands in for the total)."""
    keys = [k for k in history.known_keys() if k != UNATTRIBUTED]
    series = {key: history.series(key) for key in keys}
    unattributed = history.series(UNATTRIBUTED)
    times, used = history.times(), history.used()
    total = latest.memory.total if latest is not None else max(used, default=0)
    out = []
    for i, (t, u) in enumerate(zip(times, used, strict=True)):
        consumers = []
        for key, values in series.items():
            value = values[i]
            if value is not None:  # absent at this point
                consumers.append(
                    Consumer(key=key, label=history.label(key), kind=_kind(key), cpu_bytes=value)
                )
        out.append(
            Snapshot(
                timestamp=t,
                source=latest.source if latest is not None else "live",
                hostname=latest.hostname if latest is not None else "",
                memory=HostMemory(total=max(total, u), available=max(0, total - u), free=max(0, total - u)),
                gpu=GpuReport(available=False, reason="not kept in the dashboard's history"),
                accounting=Accounting(used=u, consumers=consumers, unattributed=unattributed[i] or 0),
                notes=[WHAT_IS_MISSING],
            )
        )
    return out


def write_history(history: History, path: Path, latest: Snapshot | None = None) -> int:
    """Write every point of `history` to a new file at `path` as a replayable recording; returns the number
    of points. Raises OSError (FileExistsError if it exists: nothing the user recorded is overwritten)."""
    snapshots = history_snapshots(history, latest)
    with open_private_file(path, "new") as fh:
        for snapshot in snapshots:
            fh.write(snapshot.model_dump_json() + "\n")
    return len(snapshots)


def _kind(key: str) -> ConsumerKind:
    kind = key.split(":", 1)[0]
    return kind if kind in KINDS else "host-other"  # type: ignore[return-value]
