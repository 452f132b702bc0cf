"""`--once` on an output that is not UTF-8 (issue 13 item 11): ASCII glyphs, escapes, never a crash."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from sparktop.sources.demo import DemoSource
from sparktop.sources.recording import Recorder
from tests.fixtures.cli import run_main


def run_once(*args: str) -> subprocess.CompletedProcess[str]:
    """`sparktop --once ARGS` in this process, its output an ASCII stream as PYTHONIOENCODING=ascii makes it
    (strict: a character ASCII lacks raises into the test)."""
    return run_main("--once", *args, encoding="ascii")


def unicode_recording(path: Path) -> None:
    snapshot = DemoSource("default", seed=0).sample()
    biggest = max(snapshot.processes, key=lambda p: p.rss)
    biggest.name = "模型服务-café"
    snapshot.accounting = None  # accounted again on the way out, with the new name
    snapshot.containers = []
    with Recorder(path) as recorder:
        recorder.write(snapshot)


def test_once_text_on_an_ascii_output() -> None:
    done = run_once("--demo")
    assert done.returncode == 0, done.stderr
    out = done.stdout  # nothing but ASCII: it came through an ASCII stream
    assert "util 95 %, 71 C, 90 W" in out  # the degree sign fell back, the line is still readable


def test_once_text_with_a_name_outside_ascii(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    unicode_recording(path)
    done = run_once("--replay", str(path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "\\u6a21\\u578b\\u670d\\u52a1-caf\\xe9" in out


def test_once_json_with_a_name_outside_ascii_stays_valid_json(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    unicode_recording(path)
    done = run_once("--json", "--replay", str(path))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert "模型服务-café" in {p["name"] for p in document["processes"]}
    assert any(c["label"].startswith("模型服务-café") for c in document["accounting"]["consumers"])
