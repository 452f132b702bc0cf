"""Keys typed in one go in a real terminal (a fast typist, a paste): what follows `/` is the find text.
The same 80x24 dashboard first shows that nothing is cut (tests/terminal/cut_check.py, as
test_small_terminals does at 60x18).

`focus()` moves the focus after the keys already queued, so `/gemma2:27b` lost its first letters to the
catalog's keys (`e` edit, `m` measured) and the box showed `mma2:27b`.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.terminal.cut_check import check_nothing_is_cut
from tests.terminal.tmux import TmuxPane

assert shutil.which("tmux"), "these tests need tmux: apt-get install tmux (.ci/run does)"


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[TmuxPane]:
    pane = TmuxPane(tmp_path, width=80, height=24, env={"TERM": "xterm-256color"})
    try:
        yield pane
    finally:
        pane.close()


def find_text(pane: TmuxPane) -> str | None:
    """What the find box shows: the line above the catalog's top border, up to the cursor (or the plan)."""
    lines = pane.screen().splitlines()
    at = next((i for i, line in enumerate(lines) if "Catalog" in line), None)
    shown = re.match(r"\s*([!-~]*)", lines[at - 1]) if at else None
    return shown.group(1) if shown else None


def test_at_80x24_nothing_is_cut_and_find_text_typed_in_one_go_reaches_the_find_box(pane: TmuxPane) -> None:
    # test_small_terminals.py's check at 80x24, on this dashboard (one sparktop start for both).
    check_nothing_is_cut(pane)
    pane.keys("4")
    assert pane.wait_for(lambda: "find:" in pane.screen()), pane.screen()
    pane.keys("-l", "/gemma2:27b")
    assert pane.wait_for(lambda: find_text(pane) == "gemma2:27b"), pane.screen()
    pane.keys("-l", "/")  # in the box, `/` is a character like any other
    assert pane.wait_for(lambda: find_text(pane) == "gemma2:27b/"), pane.screen()
    pane.keys("Escape")  # alone: Esc and a key at once read as alt+key
    assert pane.wait_for(lambda: find_text(pane) == "find:"), pane.screen()
    pane.keys("3")
    assert pane.wait_for(lambda: "PID" in pane.screen()), pane.screen()
    pane.keys("-l", "/ollama")  # `o` is sort, `a` all rows: they must reach the filter

    def process_rows(lines: list[str]) -> list[str]:
        # process rows (a PID first): not a scrollbar's row of ▃ under the table
        return [line for line in lines[4:-5] if re.match(r"\s*\d+\s", line)]

    def filtered() -> bool:
        """The box says ollama and the table shows it: the table is drawn a frame after the box (a capture
        between the two, in a full run, saw the box filtered and the rows not yet)."""
        lines = pane.screen().splitlines()
        rows = process_rows(lines)
        return "ollama" in lines[-2] and bool(rows) and all("ollama" in row for row in rows)

    assert pane.wait_for(filtered), pane.screen()
    lines = pane.screen().splitlines()
    assert "total ▼" in lines[2], lines[2]  # `o` did not sort
    pane.keys("Escape")
    assert pane.wait_for(lambda: "PID" in pane.screen() and "ollama" not in pane.screen().splitlines()[-2])
    pane.keys("q")
    assert pane.wait_for(lambda: pane.exit_status() == 0)
