"""lifeline.exit_with_parent: a browser session dies with `sparktop web` (issue #23, "Long sessions"). The
parent's death itself is tested with a real `sparktop web` (tests/integration/test_web_guard.py); here, the
race it cannot catch: a parent gone before the child asked for the signal."""

from __future__ import annotations

import os
import subprocess
import sys

CHILD = (
    "import sys\n"
    "from sparktop.web.lifeline import exit_with_parent\n"
    "exit_with_parent(int(sys.argv[1]))\n"
    "print('alive')\n"
)


def run_child(parent: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(parent)], capture_output=True, text=True, timeout=30
    )


def test_a_child_of_its_parent_runs_on() -> None:
    done = run_child(os.getpid())  # this test is the child's parent
    assert done.returncode == 0 and done.stdout == "alive\n", done.stderr


def test_a_child_whose_parent_is_already_gone_exits() -> None:
    done = run_child(1)  # not its parent: the one it was started for is gone (it was re-parented)
    assert done.returncode == 1 and done.stdout == ""
    assert "parent process 1 is gone" in done.stderr
