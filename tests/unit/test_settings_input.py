"""Bad values from the command line and the user's files: refused with the field's name and exit 3, never a
traceback, never a wrong exit code (plan's 1 and 2 are verdicts), never silently replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktop.commands.main import main as sparktop
from sparktop.commands.plan import EXIT_BAD_INPUT
from sparktop.plan import Plan, PlanError, load_plan
from sparktop.plan.catalog import load_catalog
from sparktop.settings.files import KeyLines, format_problem
from tests.unit.model_files import tiny_llama_metadata, tiny_llama_tensors, write_gguf, write_ollama_model


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """No user config, catalog or local models from the machine running the tests."""
    for key in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "LLAMA_CACHE", "SPARKTOP_GGUF_PATH",
                "XDG_CACHE_HOME"):  # fmt: skip
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "no-ollama"))
    return tmp_path


def user_file(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / "config" / "sparktop" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# --- the dashboard's flags ---


@pytest.mark.parametrize(
    ("argv", "flag", "words"),
    [
        (["--safe", "nan"], "--safe", "finite"),
        (["--safe", "inf"], "--safe", "finite"),
        (["--max", "1e400"], "--max", "finite"),
        (["--safe", "-5"], "--safe", "above 0"),
        (["--safe", "0"], "--safe", "above 0"),
        (["--interval", "nan"], "--interval", "finite"),
        (["--interval", "1e-6"], "--interval", "at least 0.1"),
        (["--interval", "7200"], "--interval", "at most 3600"),
        (["--interval", "inf"], "--interval", "finite"),
        (["--safe", "100", "--max", "80"], "--max", "must be below"),
        (["--max", "50"], "--max", "safe line (80 GB) must be below the aggressive line (50 GB)"),
    ],
)
def test_bad_numbers_on_the_command_line_exit_3_naming_the_flag(capsys, argv, flag, words):
    assert sparktop(["--demo", "--once", *argv]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"sparktop: {flag}: ") and words in err and "\n" not in err
    # The dashboard refuses them the same way, before any screen is drawn.
    assert sparktop(["--demo", *argv]) == 3


def test_a_flag_that_contradicts_the_config_file_names_both(tmp_path, capsys):
    user_file(tmp_path, "config.toml", "safe_gb = 90\nmax_gb = 120\n")
    assert sparktop(["--demo", "--once", "--max", "85"]) == 3
    err = capsys.readouterr().err
    assert "--max: the safe line (90 GB) must be below the aggressive line (85 GB)" in err


def test_config_file_problems_are_reported_by_once_and_in_its_json(tmp_path, capsys):
    path = user_file(tmp_path, "config.toml", 'units = "GB"\nsafe_gb = nan\n')
    assert sparktop(["--demo", "--once", "--json"]) == 0
    captured = capsys.readouterr()
    expected = f"{path}:2: safe_gb: must be a finite number, not nan"
    assert expected in captured.err
    assert f"config: {expected}" in json.loads(captured.out)["errors"]
    assert sparktop(["--demo", "--once"]) == 0
    captured = capsys.readouterr()
    assert expected in captured.err and "GB used" in captured.out  # the good key is still used


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exc:
        sparktop(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "record" in out and "plan" in out and "COMMAND" in out


def test_record_refuses_bad_numbers(tmp_path, capsys):
    for argv in (["--interval", "nan"], ["--interval", "0.01"], ["--duration", "inf"], ["--duration", "-1"]):
        assert sparktop(["record", str(tmp_path / "r.jsonl"), "--demo", *argv]) == 3
        assert f"sparktop record: {argv[0]}: " in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


# --- plan's flags ---


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--max", "5"], "--max"),  # safe (80) above max: was `lines 80 / 5 GB`, exit 0 (FITS)
        (["--safe", "0"], "--safe"),  # was silently 80
        (["--safe", "-5"], "--safe"),  # was accepted, exit 1 (TIGHT)
        (["--safe", "nan"], "--safe"),
        (["--max", "inf"], "--max"),
        (["--safe", "90", "--max", "80"], "--max"),
    ],
)
def test_plan_validates_its_lines_as_the_dashboard_does(capsys, argv, flag):
    assert sparktop(["plan", "--machine=spark", *argv, "llama3.1:8b"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"sparktop plan: {flag}: ") and "Traceback" not in err


def test_plan_reports_config_problems_in_its_json(tmp_path, capsys):
    path = user_file(tmp_path, "config.toml", "max_gb = -3\n")
    assert sparktop(["plan", "--machine=spark", "--json", "llama3.1:8b"]) == 0
    captured = capsys.readouterr()
    message = f"config: {path}:1: max_gb: must be above 0 and at most 1e+06 GB, not -3"
    assert message in captured.err and message in json.loads(captured.out)["errors"]


def test_plan_help_has_the_exit_status_table(capsys):
    with pytest.raises(SystemExit):
        sparktop(["plan", "--help"])
    out = capsys.readouterr().out
    for line in ("0  fits", "1  tight", "2  OOM risk", "3  bad input"):
        assert line in out


def test_usage_errors_exit_3_everywhere(capsys):
    for argv in (["--demo", "--json"], ["plan", "--bogus"], ["record"], ["--interval", "fast"]):
        with pytest.raises(SystemExit) as exc:
            sparktop(argv)
        assert exc.value.code == 3, argv
    capsys.readouterr()


# --- plan files ---


@pytest.mark.parametrize(
    ("content", "line", "words"),
    [
        (b"workload = [1, 2]\n", 1, "workload[0]: must be a table, not 1"),
        (b"workload = 5\n", 1, "workload: must be a list"),
        (b'[[workload]]\nname = "llama3.1:8b"\n\n[[workload]]\nname = "ll\xffama"\n', 5, "not UTF-8"),
        (b'[[workload]]\nname = "llama3.1:8b"\ncontext = inf\n', 3, "context: "),
        (b'[[workload]]\nkind = "other"\nmemory_gb = nan\n', 3, "memory_gb: must be finite"),
        (b'[[workload]]\nkind = "other"\nmemory_gb = 1e400\n', 3, "memory_gb: must be finite"),
        (b'[[workload]]\nname = "llama3.1:8b"\nparallel = "-4"\n', 3, "parallel: must be at least 1"),
        (b"[plan]\nx = 1\n", 1, "plan: unknown table"),
    ],
)
def test_every_plan_file_problem_is_file_line_and_exit_3(tmp_path, capsys, content, line, words):
    path = tmp_path / "plan.toml"
    path.write_bytes(content)
    assert sparktop(["plan", "--machine=spark", "--file", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"sparktop plan: {path}:{line}: " in err and words in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_load_plan_raises_plan_error_for_what_used_to_crash(tmp_path):
    catalog = load_catalog(False, discover=False)
    path = tmp_path / "plan.toml"
    path.write_bytes(b"workload = [1, 2]\n")
    with pytest.raises(PlanError, match=r"plan.toml:1: workload\[0\]: must be a table"):
        load_plan(path, catalog)
    with pytest.raises(PlanError):
        Plan(catalog).add("llama3.1:8b", context="inf")


# --- the catalog's [discovery] ---


def test_one_bad_discovery_key_loses_only_that_source(tmp_path):
    # `ollama_models = 5` used to raise TypeError out of load_catalog: What-if said `loading…` forever.
    models = tmp_path / "gguf"
    write_gguf(models / "tiny.gguf", tiny_llama_metadata(), tiny_llama_tensors(), data_bytes=10_000)
    store = (
        tmp_path / "no-ollama"
    )  # $OLLAMA_MODELS: the default store, which a bad setting must not fall back to
    write_ollama_model(store, "tiny", "1b", models / "tiny.gguf")
    path = user_file(
        tmp_path,
        "catalog.toml",
        '[[workload]]\nname = "mine"\nkind = "other"\nmemory_gb = 2\n\n[discovery]\nollama_models = 5\n'
        f'gguf_dirs = ["{models}"]\n',
    )
    cat = load_catalog(discover=True)
    assert cat.find("mine") is not None and cat.find("llama3.1:8b") is not None
    assert {e.source for e in cat.entries.values() if e.local} == {"local:gguf"}
    assert [e for e in cat.errors if "ollama_models" in e] == [
        f"{path}:7: discovery.ollama_models: must be a string, not 5; ollama models are not looked for"
    ]


def test_a_bad_discovery_table_is_reported_and_the_rest_loads(tmp_path):
    path = user_file(tmp_path, "catalog.toml", 'discovery = 3\n[[workload]]\nname = "m"\nmemory_gb = 1\n')
    cat = load_catalog(discover=False)
    assert cat.find("m") is not None
    assert f"{path}:1: discovery: must be a table, not 3" in cat.errors


# --- the one wording and the key lines ---


def test_key_lines_follow_tables_arrays_and_dotted_keys():
    text = (
        'interval = 1\n[colors]\nprimary = "#fff"\n[[workload]]\nname = "a"\n[[workload]]\nname = "b"\n'
        'batch = 4\n[[model]]\nname = "m"\n[[model.ollama]]\ntag = "x"\n[[model.ollama]]\nquant = "q"\n'
        "[sparktop]\nsegments.0 = 1\n"
    )
    lines = KeyLines(text)
    assert lines.line(("interval",)) == 1
    assert lines.line(("colors", "primary")) == 3
    assert lines.line(("workload", 1, "batch")) == 8
    assert lines.line(("workload", 1, "context")) == 6  # not there: the table it would be in
    assert lines.line(("model", 0, "ollama", 1, "quant")) == 14
    assert lines.line(("nothing",)) is None


def test_format_problem_is_one_line():
    assert format_problem("f.toml", 3, "batch", "bad\nvalue") == "f.toml:3: batch: bad value"
    assert format_problem("f.toml", None, None, "cannot read") == "f.toml: cannot read"
    assert format_problem(None, None, "--max", "too low") == "--max: too low"


def test_plan_list_understands_the_filter_words_the_whatif_tab_advertises(capsys):
    assert sparktop(["plan", "--no-discover", "--list", "kind:training"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert rows and all(row.split()[1] == "training" for row in rows)
    assert sparktop(["plan", "--no-discover", "--list", "kind:train tetris"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert rows and all("tetris" in row and row.split()[1] == "training" for row in rows)


def test_a_capped_value_is_said_without_verbose(capsys):
    assert sparktop(["plan", "--machine=spark", "--no-discover", "llama3.1:8b,context=1000000"]) in (0, 1, 2)
    out = capsys.readouterr().out
    assert "context 1000000 capped at the model's trained 131072" in out


def test_catalog_tables_are_checked_by_their_models(tmp_path):
    # bits = inf used to reach the estimates (an infinite footprint, int(inf) in the What-if bar).
    path = user_file(
        tmp_path,
        "catalog.toml",
        '[[quant]]\nname = "Q9"\nbits = inf\n\n[[kv_dtype]]\nname = "k"\nbytes = -1\n\n'
        '[[model]]\nname = "m"\nlike = "llama-3.1-8b"\nlayers = -3\n\n'
        '[[model]]\nname = "n"\nlike = "llama-3.1-8b"\n'
        "params = nan\nshiny = 1\n",
    )
    cat = load_catalog(discover=False)
    assert f"{path}:3: bits: must be a finite number above 0, not inf" in cat.errors
    assert f"{path}:7: bytes: must be a finite number above 0, not -1.0" in cat.errors
    assert any(e.startswith(f"{path}:12: layers: ") for e in cat.errors), cat.errors
    assert any(e.startswith(f"{path}:17: params: must be a finite number") for e in cat.errors), cat.errors
    assert f"{path}:18: shiny: unknown key" in cat.errors
    assert cat.quant("Q9") is None and cat.model("m") is None and cat.model("n") is None
    assert cat.model("llama-3.1-8b") is not None


def test_an_ollama_tag_is_checked_by_its_model(tmp_path):
    path = user_file(
        tmp_path,
        "catalog.toml",
        '[[model]]\nname = "mine"\nlike = "llama-3.1-8b"\n\n'
        '[[model.ollama]]\ntag = "mine:q4"\nfile_gb = inf\n\n'
        '[[model.ollama]]\ntag = "mine:q8"\nquant = "Q8_0"\nfile_gb = 8.5\n',
    )
    cat = load_catalog(discover=False)
    assert f"{path}:7: file_gb: must be a finite number above 0, not inf" in cat.errors
    assert cat.find("mine:q4") is None
    assert cat.find("mine:q8").weights_bytes == 8.5e9
