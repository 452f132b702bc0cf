"""A footprint store someone else wrote: SQLite keeps text in REAL and INTEGER columns, and any number in
them. `sparktop plan` ended in a TypeError or OverflowError traceback (issue 32 item 10); a row that is not
plausible is now skipped and counted, as a corrupt file is reported."""

from __future__ import annotations

import sqlite3
import time

import pytest

from sparktop.core.snapshot import GB
from sparktop.footprints.store import FootprintStore, MeasuredSlowdown, default_path
from tests.fixtures.cli import run_main

NOW = time.time()
ARGV = ["plan", "--machine=spark", "--no-discover", "qwen3-8b,engine=vllm", "llama3.1:70b", "ssd-tetris"]


def write_store() -> None:
    """Good peaks and slowdowns for the models ARGV plans: one row of them is then spoiled."""
    store = FootprintStore(default_path(), clock=lambda: NOW)  # this test's own XDG_STATE_HOME
    store.record("model", "ollama:llama3.1:70b", int(46.8 * GB), "ollama (pid 812, user ollama)")
    store.record("model", "vllm:Qwen/Qwen3-8B", int(20 * GB), "vllm (pid 9, user me)")
    for since, ratio in ((1000.0, 1.5), (5000.0, 1.7)):
        store.record_slowdown(
            MeasuredSlowdown(
                "vllm:Qwen/Qwen3-8B", "training", since, ratio, "ssd-tetris-train-1", 9.0, 5.6, NOW
            )
        )
    store.close()


SPOILED = [
    ("slowdown", "ratio", "'abc'"),
    ("slowdown", "measured_at", "1e300"),
    ("slowdown", "since", "'yesterday'"),
    ("slowdown", "ratio", "-3.0"),
    ("slowdown", "solo_tokens_per_s", "x'00ff'"),
    ("footprint", "peak_bytes", "'lots'"),
    ("footprint", "peak_bytes", "-5"),
    ("footprint", "peak_bytes", "1e300"),
    ("footprint", "last_seen", "1e300"),
    ("footprint", "peak_at", "'noon'"),
    ("footprint", "first_seen", "'then'"),
    ("footprint", "owner", "x'00ff'"),
]


@pytest.mark.parametrize(("table", "column", "value"), SPOILED, ids=[f"{t}.{c}={v}" for t, c, v in SPOILED])
def test_plan_skips_and_counts_a_row_that_is_not_plausible(table: str, column: str, value: str) -> None:
    write_store()
    db = sqlite3.connect(default_path())
    with db:
        where = (
            "model = 'vllm:Qwen/Qwen3-8B' AND since = 1000.0" if table == "slowdown" else "name LIKE 'vllm:%'"
        )
        db.execute(f"UPDATE {table} SET {column} = {value} WHERE {where}")  # the test's own values
    db.close()
    done = run_main(*ARGV)  # in this process: a TypeError or OverflowError would end the test with it
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1, 2), done.stderr
    assert f"1 row skipped ({table}: a value of the wrong type or out of range)" in done.stderr
    # The other rows are used: the good peak of the 70b model, and the slowdown measured once.
    assert "measured here: peak 46.8 GB" in done.stdout
    if table == "slowdown":
        assert "measured here 1.7x slower beside training" in done.stdout


def test_a_store_with_plausible_rows_says_nothing() -> None:
    write_store()
    store = FootprintStore(default_path())
    assert store.status is None and len(store.all()) == 2 and len(store.slowdowns()) == 2
    store.close()
