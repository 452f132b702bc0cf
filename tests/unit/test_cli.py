"""The `sparktop` entry point: one-shot output, recording and replay, and its input errors."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from sparktop.commands.main import main
from sparktop.core.snapshot import Snapshot


def test_once_json_is_a_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--demo", "critical", "--once", "--json"]) == 0
    snap = Snapshot.model_validate(json.loads(capsys.readouterr().out))
    assert snap.source == "demo"
    assert snap.gpu.gpus[0].unified_memory
    assert snap.accounting is not None
    assert sum(c.total for c in snap.accounting.consumers) + snap.accounting.unattributed == snap.memory.used


def test_once_human_summary_follows_the_units(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--demo", "--once"]) == 0
    gib = capsys.readouterr().out
    assert gib.startswith("pool   ") and " GiB used, " in gib
    assert "unattributed (kernel, driver, cache)" in gib
    assert main(["--demo", "--once", "--units", "GB"]) == 0
    gb = capsys.readouterr().out.splitlines()[0]
    assert " GB used, " in gb and "GiB" not in gb


def test_record_then_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.jsonl"
    assert main(["record", str(path), "--demo", "--interval", "0.1", "--duration", "0.35"]) == 0
    lines = path.read_text().splitlines()
    assert len(lines) >= 2
    assert all(Snapshot.model_validate_json(line).source == "demo" for line in lines)
    capsys.readouterr()
    assert main(["--replay", str(path), "--once", "--json"]) == 0
    shown = Snapshot.model_validate(json.loads(capsys.readouterr().out))
    assert shown.source == "replay"
    assert shown.timestamp == Snapshot.model_validate_json(lines[-1]).timestamp  # the last: a post-mortem


def test_record_never_overwrites_unless_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("keep me\n")
    assert main(["record", str(path), "--demo", "--duration", "0.1"]) == 2
    assert "exists" in capsys.readouterr().err
    assert path.read_text() == "keep me\n"


def test_bad_source_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--replay", "/nonexistent/run.jsonl", "--once"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no such recording" in err and "\n" not in err


def test_json_needs_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--demo", "--json"])
    assert exc.value.code == 3  # bad input, as `plan` counts it
    assert "--json needs --once" in capsys.readouterr().err


@pytest.mark.automatic_gc
def test_dashboard_start_up_errors_leave_the_garbage_collector_on(capsys: pytest.CaptureFixture[str]) -> None:
    # The dashboard path pauses the GC for start-up; a start that fails must not leave it off.
    assert gc.isenabled()
    assert main(["--demo", "--safe", "120", "--max", "100"]) == 3
    assert "must be below" in capsys.readouterr().err
    assert gc.isenabled()
    assert main(["--replay", "/nonexistent/recording.jsonl"]) == 2
    assert gc.isenabled()


def test_once_writes_each_figure_in_its_own_unit(capsys: pytest.CaptureFixture[str]) -> None:
    """One unit per column wrote `0.00 GiB` for every small consumer beside a big one."""
    assert main(["--demo", "--once"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if " cpu " in line]
    assert len(rows) >= 5
    cpu = [" ".join(row[row.index("cpu") + 1 : row.index("cpu") + 3]) for row in rows]
    assert any(c.endswith(" GiB") for c in cpu) and any(c.endswith(" MiB") for c in cpu), cpu
    assert not any(c.startswith("0.0") for c in cpu), cpu


def test_readme_states_what_record_does_to_an_existing_file(capsys: pytest.CaptureFixture[str]) -> None:
    """The README said `record` never overwrites while `--overwrite` exists."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    lines = readme.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("sparktop record "))
    line = lines[at]
    for more in lines[at + 1 :]:  # the comment goes on, indented
        if not more.lstrip().startswith("#") or not more.startswith(" "):
            break
        line += more
    with pytest.raises(SystemExit):
        main(["record", "--help"])
    options = capsys.readouterr().out
    for flag in ("--append", "--overwrite"):
        assert flag in options and flag in line, (flag, line)
    assert "never overwrites" not in readme


@pytest.mark.parametrize(
    "argv",
    [
        ["--demo", "bogus"],  # exited 2, as if a data source were down
        ["--demo", "--replay", "x.jsonl"],
        ["--demo", "--exporter", "http://127.0.0.1:1"],
        ["--bogus"],
        ["--interval", "fast"],
        ["--demo", "--json"],
        ["record", "--demo", "bogus", "out.jsonl"],
        ["serve", "--demo", "bogus"],
        ["guard", "--demo", "bogus"],
        ["web", "--demo", "bogus"],
        ["plan", "--bogus"],
    ],
)
def test_every_usage_error_is_one_line_and_exit_3(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Usage errors printed argparse's whole usage block (and `--demo bogus` exited 2): one line, exit 3."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 3, argv
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "usage:" not in err, err
    assert err.startswith("sparktop") and "--help" in err, err


def test_the_plan_module_parser_gives_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    from sparktop.commands.plan import main as plan_main

    with pytest.raises(SystemExit) as exc:
        plan_main(["--bogus"])
    assert exc.value.code == 3
    assert (
        capsys.readouterr().err
        == "sparktop plan: unrecognized arguments: --bogus (see sparktop plan --help)\n"
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--demo", "--speed", "5"], "--speed needs --replay"),
        (["--replay", "x.jsonl", "--once", "--start", "1:00"], "--start needs --replay, without --once"),
        (["--replay", "x.jsonl", "--speed", "0"], "--speed must be 1 to 1000"),
        (["--replay", "x.jsonl", "--start", "1:75"], "--start: not a time: '1:75'"),
    ],
)
def test_replay_speed_and_start_are_checked(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 3
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err


def test_the_readme_names_every_demo_scenario_where_it_shows_demo() -> None:
    """README's `--demo` line under "Using it" left out `discrete` (issue 32, Rough)."""
    from sparktop.sources.demo import DEMO_SCENARIOS

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    using = readme[readme.index("## Using it") :]
    start = using.index("sparktop --demo ")
    end = using.index("sparktop --once", start)
    block = using[start:end]
    missing = [name for name in DEMO_SCENARIOS if name not in block]
    assert not missing, (missing, block)
