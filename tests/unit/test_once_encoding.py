"""`--once` on an output that is not UTF-8 (issue 13 item 11): ASCII glyphs, escapes, never a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sparktop.sources.demo import DemoSource
from sparktop.sources.recording import Recorder


def run_once(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    return subprocess.run(
        [sys.executable, "-m", "sparktop", "--once", *args],
        capture_output=True,
        env=env,
        timeout=60,
    )


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
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode("ascii")  # nothing but ASCII
    assert "util 95 %, 71 C, 90 W" in out  # the degree sign fell back, the line is still readable


def test_once_text_with_a_name_outside_ascii(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    unicode_recording(path)
    done = run_once("--replay", str(path))
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode("ascii")
    assert "\\u6a21\\u578b\\u670d\\u52a1-caf\\xe9" in out


def test_once_json_with_a_name_outside_ascii_stays_valid_json(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    unicode_recording(path)
    done = run_once("--json", "--replay", str(path))
    assert done.returncode == 0, done.stderr.decode()
    document = json.loads(done.stdout.decode("ascii"))
    assert "模型服务-café" in {p["name"] for p in document["processes"]}
    assert any(c["label"].startswith("模型服务-café") for c in document["accounting"]["consumers"])
