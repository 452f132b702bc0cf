"""No threshold marker is drawn over a label: the budget bar (dashboard and What-if's projected bar)."""

from __future__ import annotations

import pytest

from sparktop.core.snapshot import GB, GIB
from sparktop.session.session import Session
from sparktop.sources.demo import DEMO_SCENARIOS, DemoSource
from sparktop.ui.themes import load_themes
from sparktop.ui.widgets.budget_bar import BudgetBar, Segment

PALETTE = load_themes()[0]["sparktop-dark"].palette


def _bar_rows(scenario: str, planned: tuple[Segment, ...] = ()) -> dict[int, str]:
    source, session = DemoSource(scenario=scenario, seed=0), Session()
    for _ in range(30):
        snapshot = session.ingest(source.sample())
    bar = BudgetBar()
    bar.show(snapshot.accounting, snapshot.memory.total, 80 * GB, 100 * GB, "GiB", PALETTE, planned)
    out = {}
    for width in (*range(40, 201, 3), 120):
        out[width] = bar._bar(snapshot.memory.total, 80 * GB, 100 * GB, PALETTE, width, labels=True).plain
    return out


def _assert_markers_stand_alone(row: str) -> None:
    for i, char in enumerate(row):
        if char == "┃":
            for j in (i - 1, i + 1):
                if 0 <= j < len(row):
                    assert row[j] in " ┃", f"a line is drawn against a label: {row!r}"


@pytest.mark.parametrize("scenario", sorted(DEMO_SCENARIOS))
def test_no_marker_over_a_segment_name(scenario: str) -> None:
    for row in _bar_rows(scenario).values():
        _assert_markers_stand_alone(row)


def test_no_marker_over_a_planned_workload_name() -> None:
    planned = (Segment("plan:0", "+llama3.1:70b", 45 * GIB, "#884488"),)
    rows = _bar_rows("audio", planned)
    for row in rows.values():
        _assert_markers_stand_alone(row)
    assert any("+llama3.1:70b" in row for row in rows.values())


def test_a_name_moves_beside_the_line_rather_than_vanish() -> None:
    rows = _bar_rows("default")
    assert "free" in rows[120]  # `┃ree` on main: the aggressive line sat on the F


def test_the_above_the_pool_note_leaves_the_other_lines_label_whole() -> None:
    bar = BudgetBar()
    for pool_gb in (82, 85, 90, 95, 99):
        for width in (40, 60, 80, 120):
            marks = bar._marks(pool_gb * GB, 80 * GB, 100 * GB, PALETTE, width).plain
            assert "▼" in marks, (pool_gb, width, marks)
            assert len(marks) == width
            assert "≥ pool" not in marks or marks.rstrip().endswith("≥ pool")
            label = marks.split("▼")[0].strip()
            assert label in ("safe 80 GB", "80 GB", "80") or not label, (pool_gb, width, marks)
