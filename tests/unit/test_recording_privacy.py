"""A recording holds every command line on the machine: created 0600, and `record --help` says so."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sparktop.commands.main import main
from sparktop.sources.demo import DemoSource
from sparktop.sources.recording import Recorder


@pytest.fixture
def open_umask():
    old = os.umask(0o022)  # the usual umask: files 0644 unless made otherwise
    yield
    os.umask(old)


@pytest.mark.parametrize("mode", ["new", "append", "overwrite"])
def test_a_new_recording_is_readable_by_its_owner_only(tmp_path: Path, open_umask, mode: str) -> None:
    path = tmp_path / f"{mode}.jsonl"
    with Recorder(path, mode=mode) as recorder:  # type: ignore[arg-type]
        recorder.write(DemoSource().sample())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().count("\n") == 1


def test_record_cli_makes_a_private_file(tmp_path: Path, open_umask) -> None:
    path = tmp_path / "run.jsonl"
    assert main(["record", str(path), "--demo", "--interval", "0.1", "--duration", "0.05"]) == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_record_help_says_what_a_recording_holds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["record", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "command line" in text and "every process on the machine" in text and "0600" in text
