"""The dashboard at 60x18 and 80x24 (the latter on test_typing_ahead.py's dashboard) in a real terminal: a
part that does not fit is dropped whole or wrapped, never cut in the middle of a number or a word
(`aggressive 1┤` for `aggressive 100 GB`, `unified memory (A…` for `(ATS)`, `GPU side 37.4` in the stop
dialog)."""

from __future__ import annotations

import shutil

import pytest

from tests.terminal.cut_check import check_nothing_is_cut
from tests.terminal.tmux import TmuxPane

assert shutil.which("tmux"), "these tests need tmux: apt-get install tmux (.ci/run does)"


@pytest.fixture
def pane_size() -> tuple[int, int]:
    """60x18 here; the same check at 80x24 runs on test_typing_ahead.py's dashboard (one sparktop start
    fewer), through `check_nothing_is_cut`."""
    return 60, 18


def test_nothing_is_cut_mid_number_or_mid_word(pane: TmuxPane) -> None:
    check_nothing_is_cut(pane)
    pane.keys("q")
    assert pane.wait_for(lambda: pane.exit_status() == 0)
