"""Every command's messages on stderr show a config file's text with its control characters made visible
(issue 13: text others control is never written raw to the terminal). `sparktop serve` and `sparktop
guard` printed a key named with an OSC title escape as it was: the terminal's title changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktop.commands.main import main
from sparktop.core.safe_text import has_raw_controls
from tests.fixtures.serving import serve_in_process

TITLE_ESCAPE = "\x1b]2;PWNED\x07"


@pytest.fixture
def hostile_config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    # A key and a value that carry escapes (TOML's \u escapes: the file itself is plain text).
    path.write_text('"k\\u001b]2;PWNED\\u0007" = 1\ntheme = "t\\u009b31m"\n')
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["--once", "--demo"],
        ["record", "{tmp}/run.jsonl", "--demo", "--duration", "0.3", "--interval", "0.1"],
        ["plan", "--machine=spark", "llama3.1:8b"],
        ["guard", "--demo", "--duration", "0.3", "--interval", "0.1", "--no-blackbox"],
    ],
    ids=["once", "record", "plan", "guard"],
)
def test_a_commands_messages_show_config_text_plainly(argv, hostile_config, tmp_path, capsys) -> None:
    main([a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--config", str(hostile_config)])
    err = capsys.readouterr().err
    assert "unknown key" in err  # the problem is reported...
    assert "k^[]2;PWNED^G" in err and not has_raw_controls(err), err  # ...as plain text


def test_serve_shows_config_text_plainly(hostile_config: Path) -> None:
    result, _ = serve_in_process(["--demo", "--config", str(hostile_config)], lambda url: None)
    assert "k^[]2;PWNED^G" in result.stderr and not has_raw_controls(result.stderr), result.stderr
