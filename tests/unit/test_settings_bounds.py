"""Every user file is read through settings/files.py with bounds (issue 27 item 4): only a regular file, at
most 1 MiB, nesting that does not blow the stack — each refusal one line, fast, without reading the whole
thing. And a --config file the user named must exist (issue 23 item 10)."""

from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path

import pytest

from sparktop.commands.main import main
from sparktop.plan.catalog.loader import load_catalog
from sparktop.plan.io import load_plan
from sparktop.plan.items import PlanError
from sparktop.settings.config import load_config
from sparktop.settings.files import MAX_FILE_BYTES, SettingsError, read_text
from sparktop.ui.themes import load_themes
from tests.fixtures.load import wall_limit


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_endless_devices_are_refused_at_once(device: str) -> None:
    before = _peak_rss_mib()
    started = time.monotonic()
    with pytest.raises(SettingsError) as caught:
        read_text(Path(device))
    assert time.monotonic() - started < wall_limit(1.0, defect=30)  # an endless read never ends
    assert str(caught.value) == f"{device}: cannot read: a character device, not a regular file"
    assert _peak_rss_mib() - before < 50  # nothing was read


def test_a_fifo_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    outcome: list[str] = []
    reader = threading.Thread(target=lambda: outcome.append(_refusal(fifo)), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO with no writer hung"
    assert outcome == [f"{fifo}: cannot read: a FIFO (named pipe), not a regular file"]


def _refusal(path: Path) -> str:
    try:
        read_text(path)
    except SettingsError as exc:
        return str(exc)
    return "read"


def test_a_big_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    with big.open("wb") as fh:  # 169 MB, sparse: its size is what counts
        fh.truncate(169_000_000)
    before = _peak_rss_mib()
    assert _refusal(big) == f"{big}: cannot read: 161.2 MiB, over the 1 MiB a settings file may have"
    assert _peak_rss_mib() - before < 50


def test_a_file_at_the_cap_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_bytes(b"#" * (MAX_FILE_BYTES - 1) + b"\n")
    assert len(read_text(path)) == MAX_FILE_BYTES


def test_a_directory_is_refused(tmp_path: Path) -> None:
    assert _refusal(tmp_path) == f"{tmp_path}: cannot read: a directory, not a regular file"


@pytest.mark.parametrize("opening", ["[", "{x = "])
def test_deep_nesting_is_one_line_not_a_traceback(tmp_path: Path, opening: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text("a = " + opening * 5000 + "\n", encoding="utf-8")
    _config, problems = load_config(path)
    assert problems == [f"{path}: invalid TOML: arrays or tables nested too deeply; using the defaults"]


# --- every reader goes through the same bounds ---


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def test_catalog_plan_and_theme_files_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    catalog = load_catalog(_fifo(tmp_path / "catalog.toml"), discover=False)
    assert any("catalog.toml: cannot read: a FIFO (named pipe)" in e for e in catalog.errors)

    deep = tmp_path / "plan.toml"
    deep.write_text("x = " + "[" * 5000, encoding="utf-8")
    with pytest.raises(PlanError, match="nested too deeply"):
        load_plan(deep, catalog)

    themes = tmp_path / "themes"
    themes.mkdir()
    _fifo(themes / "pipe.toml")
    with (themes / "huge.toml").open("wb") as fh:
        fh.truncate(2 * MAX_FILE_BYTES)
    _loaded, errors = load_themes(themes)
    assert any("pipe.toml: cannot read: a FIFO" in e for e in errors)
    assert any("huge.toml: cannot read: 2.0 MiB, over the 1 MiB" in e for e in errors)


# --- the command line: one line, exit 3, for a --config file that cannot be read ---


@pytest.mark.parametrize("name", ["/nonexistent.toml", "/dev/zero", "FIFO"])
def test_a_named_config_that_cannot_be_read_is_a_bad_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = _fifo(tmp_path / "pipe.toml") if name == "FIFO" else Path(name)
    assert main(["--demo", "default", "--once", "--config", str(path)]) == 3
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"sparktop: {path}: ")
    assert "using the defaults" not in err


@pytest.mark.parametrize(
    "command", [["plan", "--clean", "llama3.1:8b"], ["serve", "--demo", "default"], ["guard", "--dry-run"]]
)
def test_every_command_refuses_a_missing_config(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main([*command, "--config", "/nonexistent.toml"])
    except SystemExit as exc:  # serve and guard refuse through their argument parser
        code = exc.code
    assert code == 3
    assert "/nonexistent.toml: no such file (named by --config)" in capsys.readouterr().err
