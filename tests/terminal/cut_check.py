"""What `test_small_terminals` checks on a dashboard in a real terminal, at whatever size the pane is: a part
that does not fit is dropped whole or wrapped, never cut in the middle of a number or a word. Shared with
test_typing_ahead.py, whose 80x24 dashboard it checks (one sparktop start fewer)."""

from __future__ import annotations

import re

from tests.terminal.tmux import TmuxPane, sparktop_command

# A number after a word that runs into a frame (`aggressive 1┤`; an axis tick `  0┤` is fine), into an
# ellipsis, or that ends in "." (`3.`).
CUT_NUMBER = re.compile(r"[A-Za-z] \d+[┤│]|\d…|\d\.(?!\d)")


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
