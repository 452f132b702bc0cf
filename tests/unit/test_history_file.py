"""Key B's file: every point of the in-memory history as a snapshot, consumers by label, created 0600, never
overwriting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktop.analysis.history import History
from sparktop.core.snapshot import Snapshot
from sparktop.session.history_export import write_history
from sparktop.session.session import Session
from sparktop.sources.demo import DemoSource


def test_history_is_written_point_by_point_and_never_overwrites(tmp_path: Path) -> None:
    session, demo = Session(), DemoSource(seed=9)
    for _ in range(30):
        session.ingest(demo.sample())
    path = tmp_path / "state" / "history.jsonl"
    assert write_history(session.history, path) == 30
    rows = [Snapshot.model_validate(json.loads(line)) for line in path.read_text().splitlines()]
    assert [r.timestamp for r in rows] == session.history.times()
    assert [r.memory.used for r in rows] == session.history.used()
    top = session.history.top_keys(1)[0]
    last = {c.label: c.total for c in rows[-1].accounting.consumers}
    assert last[session.history.label(top)] == session.history.latest(top)
    assert path.stat().st_mode & 0o777 == 0o600
    with pytest.raises(FileExistsError):
        write_history(History(), path)
