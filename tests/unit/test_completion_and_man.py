"""Shell completion and the man page come from the parser itself (issue #25 item 11): completion offers the
real commands and options in a real bash, and man/sparktop.1 is current with what sparktop accepts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPARKTOP = [sys.executable, "-m", "sparktop"]


def completion(shell: str) -> str:
    from contextlib import redirect_stdout
    from io import StringIO

    from sparktop.commands.main import main

    out = StringIO()
    with redirect_stdout(out):
        assert main(["completion", shell]) == 0
    return out.getvalue()


def bash_completes(script: Path, words: list[str]) -> set[str]:
    """What a real bash offers after `words` (the last one being completed) with the script loaded."""
    quoted = " ".join(f"'{w}'" for w in words)
    line = " ".join(words)
    program = (
        f"source '{script}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
        f'COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; _shtab_sparktop; printf "%s\\n" "${{COMPREPLY[@]}}"'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return {line.strip() for line in done.stdout.splitlines() if line.strip()}


def test_bash_completes_commands_and_their_options(tmp_path: Path) -> None:
    script = tmp_path / "sparktop.bash"
    script.write_text(completion("bash"))
    assert {"serve", "guard"} <= bash_completes(script, ["sparktop", "se"]) | bash_completes(
        script, ["sparktop", "g"]
    )
    assert "--allow-actions" in bash_completes(script, ["sparktop", "web", "--allow"])
    assert "--dry-run" in bash_completes(script, ["sparktop", "guard", "--dry"])


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells_name_every_command(shell: str) -> None:
    script = completion(shell)
    for command in ("record", "plan", "serve", "web", "guard", "completion"):
        assert command in script, command


def test_an_unknown_shell_is_a_usage_error() -> None:
    from sparktop.commands.main import main

    with pytest.raises(SystemExit) as exited:
        main(["completion", "cmd.exe"])
    assert exited.value.code == 3


def test_the_man_page_is_current(tmp_path: Path) -> None:
    committed = (ROOT / "man" / "sparktop.1").read_text()
    date = re.search(r'^\.TH SPARKTOP "1" "([0-9\\-]+)"', committed, re.MULTILINE)
    assert date, committed[:200]
    epoch = subprocess.run(
        ["date", "-u", "-d", date.group(1).replace("\\-", "-"), "+%s"], capture_output=True, text=True
    ).stdout.strip()
    out = tmp_path / "sparktop.1"
    tool = Path(sys.executable).parent / "argparse-manpage"
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch, "ARGPARSE_MANPAGE": str(tool)}
    script = ROOT / "scripts" / "man_page.sh"
    done = subprocess.run(
        ["bash", str(script), str(out)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text() == committed, "man/sparktop.1 is stale: bash scripts/man_page.sh"


def test_the_man_page_renders_and_documents_the_environment() -> None:
    if shutil.which("man") is None:  # Debian's man-db: .ci/run installs it
        raise AssertionError("man is not installed")
    done = subprocess.run(
        ["man", "-l", str(ROOT / "man" / "sparktop.1")],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "MANPAGER": "cat", "MANWIDTH": "100"},
    )
    assert done.returncode == 0, done.stderr
    for section in ("SYNOPSIS", "COMMAND 'sparktop guard'", "ENVIRONMENT", "NO_COLOR", "FILES"):
        assert section in done.stdout, section


def test_completion_offers_the_values_options_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It offered no demo scenario, theme or workload (issue 32, Rough): the values each takes are in the
    script, for every command that has the option."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path))
    themes = tmp_path / "config" / "sparktop" / "themes"
    themes.mkdir(parents=True)
    dark = (ROOT / "themes" / "sparktop-dark.toml").read_text()
    (themes / "mine.toml").write_text(dark.replace('name = "sparktop-dark"', 'name = "mine-own"'))
    script = tmp_path / "sparktop.bash"
    script.write_text(completion("bash"))
    assert bash_completes(script, ["sparktop", "--demo", "d"]) == {"default", "discrete"}
    assert {"critical", "contention"} <= bash_completes(script, ["sparktop", "serve", "--demo", "c"])
    assert bash_completes(script, ["sparktop", "--units", ""]) == {"GiB", "GB"}
    assert {"sparktop-dark", "sparktop-light", "mine-own"} <= bash_completes(
        script, ["sparktop", "--theme", ""]
    )
    assert {"qwen3:8b", "qwen3:32b"} <= bash_completes(script, ["sparktop", "plan", "qwen3:"])
    for shell in ("zsh", "fish", "tcsh"):
        text = completion(shell)
        assert "discrete" in text and "sparktop-light" in text and "qwen3:8b" in text, shell


def test_every_shell_offered_is_documented() -> None:
    """`tcsh` was offered but neither the README nor `completion --help` said how to install it."""
    from sparktop.commands.completion import SHELLS
    from sparktop.commands.main import build_parser

    parser = build_parser(["completion"])
    described = parser.command_parsers["completion"].description or ""
    readme = (ROOT / "README.md").read_text()
    line = next(line for line in readme.splitlines() if "sparktop completion bash" in line)
    for shell in SHELLS:
        assert f"{shell}:" in described, (shell, described)
        assert shell in line, (shell, line)
