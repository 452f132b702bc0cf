"""The config file: defaults, valid settings, and every kind of mistake reported with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktop.commands.main import main
from sparktop.core.columns import CONTAINER_COLUMN_SPECS, PROCESS_COLUMN_SPECS
from sparktop.core.snapshot import GB
from sparktop.settings.config import (
    DEFAULT_CONTAINER_COLUMNS,
    DEFAULT_PROCESS_COLUMNS,
    Config,
    config_from_mapping,
    default_config_path,
    load_config,
)
from sparktop.settings.files import SettingsError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults():
    config = Config()
    assert config.interval == 1.0
    assert config.safe_bytes == 80 * GB and config.max_bytes == 100 * GB
    assert config.theme == "sparktop-dark" and config.units == "GiB"
    assert config.container_columns == list(DEFAULT_CONTAINER_COLUMNS)


def test_missing_default_file_is_silent(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_config_path() == tmp_path / "sparktop" / "config.toml"
    config, errors = load_config()
    assert config == Config() and errors == []


def test_missing_explicit_file_is_refused(tmp_path):
    # A file the user named must exist: not "using the defaults" (issue 23 item 10).
    with pytest.raises(SettingsError) as caught:
        load_config(tmp_path / "nope.toml")
    assert str(caught.value) == f"{tmp_path / 'nope.toml'}: no such file (named by --config)"


def test_valid_file(tmp_path):
    path = write(
        tmp_path,
        """
interval = 2
safe_gb = 70.5
max_gb = 95
theme = "sparktop-light"
units = "GB"
container_columns = ["name", "gpu", "total"]
process_columns = ["pid", "name", "rss"]
stop_timeout = 5
read_only = true
history_hours = 2
""",
    )
    config, errors = load_config(path)
    assert errors == []
    assert config.interval == 2.0 and isinstance(config.interval, float)
    assert config.safe_gb == 70.5 and config.max_gb == 95.0
    assert config.theme == "sparktop-light" and config.units == "GB"
    assert config.container_columns == ["name", "gpu", "total"]
    assert config.process_columns == ["pid", "name", "rss"]
    assert config.stop_timeout == 5.0 and config.read_only is True and config.history_hours == 2.0


def test_syntax_error_names_file_and_line_and_uses_defaults(tmp_path):
    path = write(tmp_path, 'interval = 2\nunits = "GB"\nsafe_gb = = 3\n')
    config, errors = load_config(path)
    assert config == Config()
    assert len(errors) == 1
    assert errors[0].startswith(f"{path}:3: ")
    assert errors[0].endswith("using the defaults")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('interval = "fast"', "interval: must be a number, not 'fast'"),
        ("interval = 0.01", "interval: must be at least 0.1 and at most 3600 seconds"),
        ("interval = 5000", "interval: must be at least 0.1 and at most 3600 seconds"),
        ("interval = inf", "interval: must be a finite number, not inf"),
        ("interval = nan", "interval: must be a finite number, not nan"),
        ("interval = true", "interval: must be a number, not True"),
        ('units = "MB"', "units: must be 'GiB' or 'GB', not 'MB'"),
        ("safe_gb = -1", "safe_gb: must be above 0"),
        ("safe_gb = nan", "safe_gb: must be a finite number"),
        ("max_gb = 1e400", "max_gb: must be a finite number"),
        ("stop_timeout = -inf", "stop_timeout: must be a finite number"),
        ("history_hours = 0", "history_hours: must be above 0 and at most 48 hours"),
        ('container_columns = ["name", "bogus"]', "container_columns: unknown column 'bogus'"),
        ("container_columns = []", "container_columns: needs at least one column"),
        ("process_columns = [1, 2]", "process_columns[0]: must be a string, not 1"),
        ("read_only = 1", "read_only: must be true or false, not 1"),
        ("colour = 3", "colour: unknown key"),
    ],
)
def test_bad_value_reports_file_line_and_keeps_default(tmp_path, line, message):
    path = write(tmp_path, f'theme = "sparktop-nvidia"\n{line}\n')
    config, errors = load_config(path)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{path}:2: ")
    assert message in errors[0]
    # The bad key keeps its default; the good one is used.
    assert config.theme == "sparktop-nvidia"
    key = line.split("=")[0].strip()
    if key == "read_only":  # a safety setting fails closed instead
        assert config.read_only is True and "read-only mode is on" in errors[0]
    elif key in Config.model_fields:
        assert getattr(config, key) == getattr(Config(), key)


@pytest.mark.parametrize(
    ("key", "specs", "defaults"),
    [
        ("container_columns", CONTAINER_COLUMN_SPECS, DEFAULT_CONTAINER_COLUMNS),
        ("process_columns", PROCESS_COLUMN_SPECS, DEFAULT_PROCESS_COLUMNS),
    ],
)
def test_the_config_takes_exactly_the_columns_the_tables_have(key, specs, defaults):
    """The column names were written twice (the config's lists, the tables' specs), kept in step by an
    assert at import; the specs are now the one list, and the defaults must be among them."""
    assert set(defaults) <= set(specs)
    config, errors = config_from_mapping({key: list(specs)})
    assert errors == [] and getattr(config, key) == list(specs)
    config, errors = config_from_mapping({key: ["name", "bogus"]})
    assert errors == [f"{key}: unknown column 'bogus' (choose from {', '.join(specs)})"]
    assert getattr(config, key) == list(defaults)


@pytest.mark.parametrize(("value", "shown"), [('"yes"', "'yes'"), ('"true"', "'true'"), ("1", "1")])
def test_an_unreadable_read_only_fails_closed(tmp_path, value, shown):
    # read_only = "yes" meant "yes": stopping and signals are off, and one line says why (issue 23 item 10).
    config, errors = load_config(write(tmp_path, f"read_only = {value}\n"))
    assert config.read_only is True
    assert errors == [
        f"{tmp_path / 'config.toml'}:1: read_only: must be true or false, not {shown}; "
        "read-only mode is on (stopping and signals are off) until it is fixed"
    ]


def test_a_file_that_does_not_parse_but_mentions_read_only_fails_closed(tmp_path):
    config, errors = load_config(write(tmp_path, "read_only = true\ninterval = = 2\n"))
    assert config.read_only is True
    assert errors[0].endswith(
        "using the defaults, and read-only mode is on (stopping and signals are off) until it is fixed"
    )
    config, _errors = load_config(write(tmp_path, "interval = = 2\n"))
    assert config.read_only is False  # nothing said about it: the default


def test_a_theme_name_of_only_whitespace_is_refused_and_the_default_kept(tmp_path):
    path = write(tmp_path, 'units = "GB"\ntheme = "\\r"\n')  # a carriage return, written as TOML's escape
    config, errors = load_config(path)
    assert errors == [f"{path}:2: theme: must not be empty"]
    assert config.theme == Config().theme and config.units == "GB"


def test_max_below_safe_falls_back_to_both_defaults(tmp_path):
    path = write(tmp_path, "safe_gb = 90\nmax_gb = 60\n")
    config, errors = load_config(path)
    assert config.safe_gb == 80.0 and config.max_gb == 100.0
    assert errors == [
        f"{path}:2: max_gb: the safe line (90 GB) must be below the aggressive line (60 GB); "
        "using the defaults for both"
    ]


def test_safe_equal_to_max_is_refused_in_the_file_as_on_the_command_line(tmp_path, capsys):
    # The file used to accept what the command line refused.
    path = write(tmp_path, "safe_gb = 90\nmax_gb = 90\n")
    config, errors = load_config(path)
    assert (config.safe_gb, config.max_gb) == (80.0, 100.0)
    assert len(errors) == 1 and errors[0].startswith(f"{path}:2: max_gb: the safe line (90 GB) must be below")
    assert main(["--demo", "--once", "--safe", "90", "--max", "90"]) == 3
    assert "--max: the safe line (90 GB) must be below the aggressive line (90 GB)" in capsys.readouterr().err


def test_interval_below_the_floor_is_refused_on_the_command_line_as_in_the_file(tmp_path, capsys):
    # The command line used to accept --interval 0.05, which the file refused.
    config, errors = load_config(write(tmp_path, "interval = 0.05\n"))
    assert config.interval == 1.0 and "interval: must be at least 0.1" in errors[0]
    assert main(["--demo", "--once", "--interval", "0.05"]) == 3
    assert "--interval: must be at least 0.1 and at most 3600 seconds, not 0.05" in capsys.readouterr().err


def test_file_is_never_written(tmp_path):
    path = write(tmp_path, "interval = 0.01\nbogus = 1\n")
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    load_config(path)
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime


def test_unreadable_file(tmp_path):
    path = tmp_path / "config.toml"
    path.write_bytes(b"interval = 2\n\xff\xfe not utf-8")
    config, errors = load_config(path)
    assert config == Config()
    assert errors == [f"{path}:2: not UTF-8 text (byte 0xff at offset 13); using the defaults"]


# --- [[servers]]: model servers probed besides the ones found without configuration ---


def test_servers_tables_are_read(tmp_path):
    path = write(
        tmp_path,
        """
[[servers]]
url = "http://10.0.0.5:11434"
kind = "ollama"

[[servers]]
url = "https://gpu-box.lan:8443/vllm"
""",
    )
    config, errors = load_config(path)
    assert errors == []
    assert [(s.url, s.kind) for s in config.servers] == [
        ("http://10.0.0.5:11434", "ollama"),
        ("https://gpu-box.lan:8443/vllm", None),
    ]
    assert Config().servers == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('url = "10.0.0.5:11434"', "servers.url: must start with http:// or https://, not '10.0.0.5:11434'"),
        ('url = "ftp://10.0.0.5:21"', "servers.url: must start with http:// or https://, not 'ftp://10.0.0.5:21'"),
        ('url = "http://:11434"', "servers.url: names no host: 'http://:11434'"),
        ('url = "http://10.0.0.5"', "servers.url: needs a port (http://10.0.0.5:11434, say), not 'http://10.0.0.5'"),
        ('url = "http://10.0.0.5:99999"', "servers.url: port must be 1-65535, not 'http://10.0.0.5:99999'"),
        ('url = "http://10.0.0.5:0"', "servers.url: port must be 1-65535, not 'http://10.0.0.5:0'"),
        ('url = "http://10.0.0.5:11x"', "servers.url: port must be 1-65535, not 'http://10.0.0.5:11x'"),
        ('url = "http://me:secret@10.0.0.5:11434"', "servers.url: must not hold a user name or password"),
        ('url = "http://10.0.0.5:11434/?x=1"', "servers.url: must not have a query or fragment"),
        ('url = "http://10.0.0.5 :11434"', "servers.url: must not contain spaces or control characters"),
        ("url = 11434", "servers.url: must be a string, not 11434"),
        ('url = "http://10.0.0.5:11434"\nkind = "tgi"',
         "servers.kind: must be 'ollama', 'vllm', 'sglang' or 'llamacpp', not 'tgi'"),
        ('kind = "ollama"', "servers.url: missing (required)"),
        ('url = "http://10.0.0.5:11434"\nport = 1', "servers.port: unknown key"),
    ],
)  # fmt: skip
def test_bad_server_entry_names_file_line_and_is_left_out(tmp_path, entry, message):
    path = write(
        tmp_path,
        f"""theme = "sparktop-nvidia"

[[servers]]
url = "http://127.0.0.1:8000"
kind = "vllm"

[[servers]]
{entry}
""",
    )
    config, errors = load_config(path)
    assert len(errors) == 1, errors
    lines = path.read_text().splitlines()
    bad_key = message.split(":")[0].split(".")[1]
    # The line of the bad key, or of its table when the key is missing.
    want = next((i for i, t in enumerate(lines, 1) if i > 6 and t.startswith(f"{bad_key} =")), 7)
    assert errors[0] == f"{path}:{want}: {message}"
    # Only that entry is left out: the good server and the other keys are used.
    assert [(s.url, s.kind) for s in config.servers] == [("http://127.0.0.1:8000", "vllm")]
    assert config.theme == "sparktop-nvidia"


def test_servers_not_a_list_of_tables(tmp_path):
    path = write(tmp_path, 'units = "GB"\nservers = "http://10.0.0.5:11434"\n')
    config, errors = load_config(path)
    assert errors == [f"{path}:2: servers: must be a list, not 'http://10.0.0.5:11434'"]
    assert config.servers == [] and config.units == "GB"
    path = write(tmp_path, 'servers = ["http://10.0.0.5:11434"]\n')
    config, errors = load_config(path)
    assert errors == [f"{path}:1: servers: each entry must be a table (url = ..., kind = ...), "
                      "not 'http://10.0.0.5:11434'"]  # fmt: skip
