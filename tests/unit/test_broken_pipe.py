"""`sparktop --once --json | head`: a reader that stops early ends the output quietly, as SIGPIPE would end
a C program (exit 141, nothing on stderr), for the dashboard's --once and for the subcommands.

Each command runs in a child forked from one fresh interpreter (tests/fixtures/forked_main.py), its stdout a
pipe whose reader is gone before the first line, exiting through the interpreter's shutdown as the command
does (its last flush of stdout is where a second BrokenPipeError would show): four interpreters were ~1.2 s
of CPU."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.forked_main import CLOSED_PIPE, run_forked

COMMANDS = [["--demo", "--once", "--json"], ["--demo", "--once"], ["plan", "--list"], ["plan", "llama3.1:8b"]]


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    runs, _ = run_forked(tmp_path, COMMANDS, stdout=CLOSED_PIPE)
    for run in runs:
        assert run.status == 141, (run.argv, run.status, run.stderr)
        assert "Traceback" not in run.stderr and "BrokenPipeError" not in run.stderr, (run.argv, run.stderr)
