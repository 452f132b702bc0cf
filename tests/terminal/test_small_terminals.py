"""The dashboard at 60x18 and 80x24 (the latter on test_typing_ahead.py's dashboard) in a real terminal: a
part that does not fit is dropped whole or wrapped, never cut in the middle of a number or a word
(`aggressive 1┤` for `aggressive 100 GB`, `unified memory (A…` for `(ATS)`, `GPU side 37.4` in the stop
dialog)."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.terminal.tmux import TmuxPane, sparktop_command

assert shutil.which("tmux"), "these tests need tmux: apt-get install tmux (.ci/run does)"

# A number after a word that runs into a frame (`aggressive 1┤`; an axis tick `  0┤` is fine), into an
# ellipsis, or that ends in "." (`3.`).
CUT_NUMBER = re.compile(r"[A-Za-z] \d+[┤│]|\d…|\d\.(?!\d)")


@pytest.fixture
def pane_size() -> tuple[int, int]:
    """60x18 here; the same check at 80x24 runs on test_typing_ahead.py's dashboard (one sparktop start
    fewer), through `check_nothing_is_cut`."""
    return 60, 18


def check_nothing_is_cut(pane: TmuxPane) -> None:
    """Start the demo dashboard in `pane`: its screen and the container stop dialog cut no number or word.
    Leaves the dashboard running on the Containers tab, the dialog closed."""
    size = "x".join(pane.state_of("window_width", "window_height"))
    pane.run(sparktop_command("--demo"))
    assert pane.wait_for(lambda: "GPU 0" in pane.screen()), pane.screen()
    screen = pane.screen()
    lines = screen.splitlines()
    cut = [line for line in lines[:-1] if CUT_NUMBER.search(line)]  # the footer is Textual's
    assert not cut, f"at {size} a figure is cut: {screen}"
    title = next(line for line in lines if "GPU 0" in line).split("   ")[0].strip()
    assert re.fullmatch(r"GPU 0 NVIDIA GB10( · unified memory \(ATS\))?( · 48 SMs)?( · P0)?", title), (
        f"at {size} the GPU title is cut: {title}"
    )
    # The stop dialog: its lines wrap at words; the figures stay whole.
    pane.keys("2")
    assert pane.wait_for(lambda: "ollama" in pane.screen())
    for _ in range(3):  # the table takes the keys once drawn; `s` again in the dialog does nothing
        pane.keys("s")
        if pane.wait_for(lambda: "Stop container" in pane.screen(), timeout=3):
            break
    assert "Stop container" in pane.screen(), pane.screen()
    dialog = pane.screen()
    assert "GPU side 37." in dialog and not CUT_NUMBER.search(dialog.replace("▔", "").replace("▁", "")), (
        f"at {size} the stop dialog cuts a figure: {dialog}"
    )
    pane.keys("n")
    assert pane.wait_for(lambda: "Stop container" not in pane.screen()), pane.screen()


def test_nothing_is_cut_mid_number_or_mid_word(pane: TmuxPane) -> None:
    check_nothing_is_cut(pane)
    pane.keys("q")
    assert pane.wait_for(lambda: pane.exit_status() == 0)
