"""Control characters from outside never reach stdout raw: `visible()`, `--once` and `plan` (issue 13 item 2).

The argv is the issue's: OSC 2 renames the terminal window, SGR 31 turns it red."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktop.commands import plan as plan_cli
from sparktop.commands.main import main
from sparktop.core.safe_text import has_raw_controls, json_visible, visible, visible_lines
from sparktop.sources.demo import DemoSource

HOSTILE = "\x1b]2;PWNED\x07\x1b[31mRED"
SHOWN = "^[]2;PWNED^G^[[31mRED"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (HOSTILE, SHOWN),
        ("csi\x9b31m", "csi\\x9b31m"),  # the one-byte C1 CSI
        ("abc\u202edcba", "abc<U+202E>dcba"),  # right-to-left override
        ("a\u2066b\u2069c\u200fd", "a<U+2066>b<U+2069>c<U+200F>d"),  # isolates and marks
        ("line\nbreak\ttab\rcr\x7fdel", "line^Jbreak^Itab^Mcr^?del"),
        ("sep\u2028par\u2029", "sep<U+2028>par<U+2029>"),
        ("bad\udcffbyte", "bad<U+DCFF>byte"),  # surrogateescape: would not even encode as UTF-8
        ("ok: ünïcödé 名前 😀 [/b]", "ok: ünïcödé 名前 😀 [/b]"),  # text, markup included, is left as it is
    ],
)
def test_visible(raw: str, shown: str) -> None:
    assert visible(raw) == shown
    assert visible(shown) == shown  # a second pass (a replayed recording) changes nothing
    assert not has_raw_controls(visible(raw))


def test_visible_lines_keeps_our_newlines_only() -> None:
    assert visible_lines(f"a\n{HOSTILE}\n") == f"a\n{SHOWN}\n"


def test_json_visible_is_the_same_data() -> None:
    data = {"name": f"{HOSTILE}\x9b\u202e"}
    text = json_visible(json.dumps(data, ensure_ascii=False))
    assert not has_raw_controls(text) and json.loads(text) == data


def _hostile_recording(path: Path) -> None:
    """A recording whose biggest process carries the hostile argv, written raw as an attacker would."""
    snap = json.loads(DemoSource().sample().model_dump_json())
    top = max(snap["processes"], key=lambda p: p["rss"])
    top["name"], top["cmdline"] = f"[/b]{HOSTILE}", f"python {HOSTILE}"
    snap["accounting"] = None
    snap["errors"] = [f"cannot read /proc/1/{HOSTILE}"]
    path.write_text(json.dumps(snap, ensure_ascii=False) + "\n")


def test_once_text_shows_controls_visibly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = tmp_path / "hostile.jsonl"
    _hostile_recording(rec)
    assert main(["--replay", str(rec), "--once"]) == 0
    out = capsys.readouterr().out
    assert not has_raw_controls(out)
    assert f"error  cannot read /proc/1/{SHOWN}" in out


def test_once_json_has_no_raw_controls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = tmp_path / "hostile.jsonl"
    _hostile_recording(rec)
    assert main(["--replay", str(rec), "--once", "--json"]) == 0
    out = capsys.readouterr().out
    assert not has_raw_controls(out)
    assert f"python {SHOWN}" in {p["cmdline"] for p in json.loads(out)["processes"]}


def test_plan_never_echoes_controls(capsys: pytest.CaptureFixture[str]) -> None:
    assert plan_cli.main(["--machine=spark", "--no-discover", HOSTILE]) == plan_cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert SHOWN in err and not has_raw_controls(err)
    assert plan_cli.main(["--machine=spark", "--no-discover", "--json", HOSTILE]) == plan_cli.EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert not has_raw_controls(captured.out) and not has_raw_controls(captured.err)
    assert HOSTILE in json.loads(captured.out)["error"]  # JSON keeps the data, escaped as JSON does


@pytest.mark.parametrize("entry", ["sparktop", "plan", "record"])
def test_argparse_errors_quote_bad_arguments_visibly(entry: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = {"sparktop": [], "plan": ["plan"], "record": ["record", "never-made.jsonl"]}[entry]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, f"--x{HOSTILE}"])
    assert exit_info.value.code in (2, 3)  # argparse's usage error; `plan` says 3, bad input
    err = capsys.readouterr().err
    assert SHOWN in err and not has_raw_controls(err)
